//! The real-file-system backend's states as a [`Source`] of the shared
//! work loop ([`crate::workers`]): each worker keeps its own cursor image
//! (carried forward through the block log: the states come in crash-point
//! order) and its own mount point in its slot. A state's image is the
//! cursor at its window's start with the window's kept writes applied; it
//! is mounted through a loop device (the file system's own recovery runs),
//! its files read into a [`Listing`], and checked in place unless a state
//! with the same files and promises was. Distinct states are found by
//! [`listing_key`]; whichever worker meets a key first checks it, and the
//! state filed under it is the first in enumeration order, so a report
//! does not depend on `-j`. A state whose image has the same bytes as one
//! mounted before (the same writes applied: [`image_id`]) is not built or
//! mounted again unless its promises make it new.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use blackout_block::image::Cursor;
use blackout_block::log::BlockLog;
use blackout_block::mount::{fsck, FsckSaid, MountedImage};
use blackout_block::recording::{DeviceRecording, DATA_FILE};
use blackout_block::session::FsKind;
use blackout_block::states::{image_id, write_state, BlockState, ImageId, Window};
use blackout_oplog::outcome::Timings;

use crate::outcome::Outcome;
use crate::slot::{at, Slot};
use crate::workers::{Scratch, Source, Step};
use crate::{lock, Checker};

/// A directory as a reader sees it: every path (relative, bytes) with what
/// it is and holds (a file by its length and the hash of its bytes, read a
/// piece at a time). Symlinks are never followed.
pub type Listing = BTreeMap<Vec<u8>, Node>;

/// One entry of a [`Listing`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Node {
    /// A directory.
    Dir,
    /// A file: its length and the hash of its bytes.
    File(u64, [u8; 32]),
    /// A symlink and its target.
    Symlink(Vec<u8>),
    /// A FIFO, socket or device node: never opened (a FIFO would block).
    Special(String),
}

/// A file's length and the hash of its bytes.
fn file_node(path: &Path) -> io::Result<Node> {
    let mut h = blake3::Hasher::new();
    let len = io::copy(&mut fs::File::open(path)?, &mut h)?;
    Ok(Node::File(len, *h.finalize().as_bytes()))
}

/// Reads `root` into a [`Listing`] (iteratively, symlinks not followed).
pub fn listing(root: &Path) -> io::Result<Listing> {
    let mut out = Listing::new();
    let mut stack: Vec<Vec<u8>> = vec![Vec::new()];
    while let Some(rel) = stack.pop() {
        let dir = root.join(OsStr::from_bytes(&rel));
        for entry in fs::read_dir(&dir)? {
            let entry = entry?;
            let mut path = rel.clone();
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(entry.file_name().as_bytes());
            let kind = entry.file_type()?;
            let node = if kind.is_dir() {
                stack.push(path.clone());
                Node::Dir
            } else if kind.is_symlink() {
                Node::Symlink(fs::read_link(entry.path())?.as_os_str().as_bytes().to_vec())
            } else if kind.is_file() {
                file_node(&entry.path())?
            } else {
                use std::os::unix::fs::FileTypeExt;
                let special = if kind.is_fifo() {
                    "fifo"
                } else if kind.is_socket() {
                    "socket"
                } else if kind.is_char_device() {
                    "char device"
                } else {
                    "block device"
                };
                Node::Special(special.to_string())
            };
            out.insert(path, node);
        }
    }
    Ok(out)
}

/// The key of a state after recovery: what its files hold and the
/// promises it is checked with.
pub fn listing_key(l: &Listing, promises: &[u8]) -> blake3::Hash {
    let mut h = blake3::Hasher::new();
    for (path, node) in l {
        h.update(&(path.len() as u64).to_le_bytes());
        h.update(path);
        let len_bytes;
        let (tag, bytes): (u8, &[u8]) = match node {
            Node::Dir => (0, &[]),
            Node::File(len, hash) => {
                len_bytes = [&len.to_le_bytes()[..], hash].concat();
                (1, &len_bytes)
            }
            Node::Symlink(b) => (2, b),
            Node::Special(kind) => (3, kind.as_bytes()),
        };
        h.update(&[tag]);
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    }
    h.update(promises);
    h.finalize()
}

/// One distinct state after recovery.
#[derive(Debug, Clone)]
pub struct Found {
    /// The first state (in enumeration order) that recovered to it.
    pub first: usize,
    /// How many states did.
    pub states: usize,
    /// What its files hold.
    pub files: Listing,
    /// The checker's outcome (`None`: its check was stopped by the
    /// deadline).
    pub outcome: Option<Outcome>,
}

/// What checking a device's states found.
#[derive(Debug, Default)]
pub struct ImageTally {
    /// The distinct states, by key.
    pub found: HashMap<blake3::Hash, Found>,
    /// States the file system did not mount: their index and why.
    pub unmounted: Vec<(usize, String)>,
    /// With fsck: the states its checker complained about.
    pub fsck: Vec<(usize, FsckSaid)>,
    /// States visited (built, mounted and read).
    pub visited: usize,
    /// Where the time went.
    pub time: Timings,
}

/// A device recording's states, checked by a [`crate::workers::Workers`].
pub struct ImageSource<'a> {
    /// The recording.
    pub device: &'a DeviceRecording,
    /// The file system.
    pub fs: FsKind,
    /// Mount options (`mount -o` text).
    pub mount_opts: String,
    /// The states, in enumeration order (each crash point's together, the
    /// crash points in log order).
    pub states: &'a [BlockState],
    /// Each crash point's window.
    pub windows: &'a [Window],
    /// Each crash point's promises (one per line).
    pub promises: &'a [Vec<u8>],
    /// The checker.
    pub checker: &'a dyn Checker,
    /// Also run the file system's checker on each state.
    pub fsck: bool,
    /// What was found so far.
    pub tally: Mutex<ImageTally>,
    /// How each image recovered, for the states whose image is the same.
    pub images: Images,
}

/// How a state's image recovered: its files (`Err`: why it did not mount)
/// and, with fsck, what the file system's checker said.
#[derive(Debug, Clone)]
struct Recovery {
    files: Result<Listing, String>,
    fsck: Option<FsckSaid>,
}

/// The images mounted so far, by [`ImageId`]: a state whose image another
/// state already had is not built or mounted again (the same bytes recover
/// the same way) unless its promises make it a new state to check. A
/// worker meeting an image another worker is mounting waits for it.
#[derive(Debug, Default)]
pub struct Images {
    known: Mutex<HashMap<ImageId, Option<Recovery>>>,
    settled: Condvar,
}

/// What [`Images::claim`] found.
enum Claim {
    /// Another state had this image.
    Known(Recovery),
    /// This state's worker mounts it (and must [`Images::settle`] it).
    Mine,
}

impl Images {
    /// The image's recovery if known; else the caller's to find out (while
    /// another worker finds it out, waits).
    fn claim(&self, id: &ImageId) -> Claim {
        let mut known = lock(&self.known);
        loop {
            match known.get(id) {
                Some(Some(r)) => return Claim::Known(r.clone()),
                Some(None) => {
                    known = self.settled.wait(known).unwrap_or_else(|e| e.into_inner());
                }
                None => {
                    known.insert(id.clone(), None);
                    return Claim::Mine;
                }
            }
        }
    }

    /// Files a claimed image's recovery (`None`: not found out after all;
    /// the next state with this image mounts it).
    fn settle(&self, id: &ImageId, recovery: Option<Recovery>) {
        let mut known = lock(&self.known);
        match recovery {
            Some(r) => known.insert(id.clone(), Some(r)),
            None => known.remove(id),
        };
        self.settled.notify_all();
    }
}

/// A claimed image, given up if its state ends before its recovery is
/// known (an error, a stop).
struct Claimed<'a> {
    images: &'a Images,
    id: Option<ImageId>,
}

impl Claimed<'_> {
    fn settle(mut self, recovery: Recovery) {
        if let Some(id) = self.id.take() {
            self.images.settle(&id, Some(recovery));
        }
    }
}

impl Drop for Claimed<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.images.settle(&id, None);
        }
    }
}

/// A worker's own: its cursor image and the log's data.
pub struct ImageWorker<'a> {
    cursor: Cursor<'a>,
    data: fs::File,
}

impl<'a> ImageSource<'a> {
    fn log(&self) -> &'a BlockLog {
        self.device.log()
    }

    /// What was found, once the workers are done.
    pub fn into_tally(self) -> ImageTally {
        self.tally.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    /// Checks the mounted state, whose files are `files`, unless the same
    /// files and promises were: a new key is claimed before its check runs, so no
    /// other worker checks it too.
    fn check_mounted(
        &self,
        slot: &Slot,
        i: usize,
        files: &Listing,
        halt: Option<&AtomicBool>,
    ) -> io::Result<Step> {
        let promises = &self.promises[self.states[i].point];
        let key = listing_key(files, promises);
        {
            let mut tally = lock(&self.tally);
            if let Some(f) = tally.found.get_mut(&key) {
                f.states += 1;
                f.first = f.first.min(i);
                return Ok(Step::Skipped);
            }
            tally.found.insert(
                key,
                Found {
                    first: i,
                    states: 1,
                    files: files.clone(),
                    outcome: None,
                },
            );
        }
        for name in ["acks", "output"] {
            fs::write(slot.root.join(name), promises)?;
        }
        let id = self.states[i].id();
        let t = Instant::now();
        let outcome = self.checker.check(slot, &slot.files(&id, promises), halt)?;
        let mut tally = lock(&self.tally);
        tally.time.check += t.elapsed().as_secs_f64();
        let Some(outcome) = outcome else {
            // Stopped: the key is left unjudged (and not counted).
            tally.found.remove(&key);
            return Ok(Step::Stopped);
        };
        if let Some(f) = tally.found.get_mut(&key) {
            f.outcome = Some(outcome.clone());
        }
        Ok(Step::Checked(outcome))
    }
}

impl<'a> Source for ImageSource<'a> {
    type Worker = ImageWorker<'a>;

    fn start(&self, scratch: &Scratch) -> io::Result<(Slot, ImageWorker<'a>)> {
        // Each worker mounts in a mount namespace of its own where it can
        // (its checkers see only its slot; its mounts only it).
        let slot = scratch.slot()?;
        let cursor = self.device.cursor(&slot.root.join("work.img"))?;
        let data = fs::File::open(self.device.dir().join(DATA_FILE))?;
        Ok((slot, ImageWorker { cursor, data }))
    }

    fn step(
        &self,
        w: &mut ImageWorker<'a>,
        slot: &Slot,
        i: usize,
        halt: Option<&AtomicBool>,
    ) -> io::Result<Step> {
        let state = &self.states[i];
        let window = &self.windows[state.point];
        let id = image_id(&self.log().records, window, &state.lost);
        let mut claimed = match self.images.claim(&id) {
            Claim::Known(recovery) => match self.reuse(i, &recovery) {
                Some(step) => return Ok(step),
                None => None,
            },
            Claim::Mine => Some(Claimed {
                images: &self.images,
                id: Some(id),
            }),
        };
        let image = slot.root.join("state.img");
        let t = Instant::now();
        write_state(
            &mut w.cursor,
            &self.log().records,
            &w.data,
            window,
            &state.lost,
            &image,
        )
        .map_err(|e| at("writing the state's image", &image, e))?;
        let build = t.elapsed().as_secs_f64();
        let target = slot.fs();
        fs::create_dir(&target).map_err(|e| at("creating the mount point", &target, e))?;
        let t = Instant::now();
        let mounted = MountedImage::mount(&image, &target, self.fs, &self.mount_opts);
        let mount = t.elapsed().as_secs_f64();
        {
            let mut tally = lock(&self.tally);
            tally.time.build += build;
            tally.time.mount += mount;
        }
        let checked = match mounted {
            Err(e) => {
                let why = format!(
                    "{} did not mount it (its recovery failed): {e}",
                    self.fs.name()
                );
                lock(&self.tally).unmounted.push((i, why.clone()));
                self.settle_early(&mut claimed, &Err(why.clone()));
                Ok((Step::Skipped, Err(why)))
            }
            Ok(mounted) => {
                let checked = self.read_and_check(slot, i, &mut claimed, halt);
                let t = Instant::now();
                let unmounted = mounted.unmount();
                lock(&self.tally).time.unmount += t.elapsed().as_secs_f64();
                unmounted.and(checked.map(|(step, files)| (step, Ok(files))))
            }
        };
        // An unmount that failed says why before the mount point that could
        // then not be removed does.
        let removed =
            fs::remove_dir(&target).map_err(|e| at("removing the mount point", &target, e));
        let (step, files) = checked?;
        removed?;
        if !matches!(step, Step::Stopped) {
            let fsck = self.after(i, &image)?;
            if let Some(claimed) = claimed {
                claimed.settle(Recovery { files, fsck });
            }
        }
        fs::remove_file(&image).map_err(|e| at("removing the state's image", &image, e))?;
        Ok(step)
    }
}

impl ImageSource<'_> {
    /// A state visited: counted, and fsck'd when asked (what fsck said of
    /// it, returned).
    fn after(&self, i: usize, image: &Path) -> io::Result<Option<FsckSaid>> {
        let said = if self.fsck {
            let t = Instant::now();
            let said = fsck(self.fs, image)?;
            lock(&self.tally).time.fsck += t.elapsed().as_secs_f64();
            said
        } else {
            None
        };
        let mut tally = lock(&self.tally);
        tally.visited += 1;
        tally.fsck.extend(said.clone().map(|s| (i, s)));
        Ok(said)
    }

    /// Without fsck, an image's recovery is known once its files are read:
    /// filed then, so a worker waiting for it does not wait for the check.
    fn settle_early(&self, claimed: &mut Option<Claimed<'_>>, files: &Result<Listing, String>) {
        if !self.fsck {
            if let Some(c) = claimed.take() {
                c.settle(Recovery {
                    files: files.clone(),
                    fsck: None,
                });
            }
        }
    }

    /// A state whose image another state had: counted as visited with
    /// that image's recovery, unless its files and promises make a key not
    /// met yet (`None`: it is mounted and checked).
    fn reuse(&self, i: usize, r: &Recovery) -> Option<Step> {
        let mut tally = lock(&self.tally);
        match &r.files {
            Err(why) => tally.unmounted.push((i, why.clone())),
            Ok(files) => {
                let key = listing_key(files, &self.promises[self.states[i].point]);
                let f = tally.found.get_mut(&key)?;
                f.states += 1;
                f.first = f.first.min(i);
            }
        }
        tally.visited += 1;
        tally.fsck.extend(r.fsck.clone().map(|s| (i, s)));
        Some(Step::Skipped)
    }

    /// Reads the mounted state and checks it (see `check_mounted`).
    fn read_and_check(
        &self,
        slot: &Slot,
        i: usize,
        claimed: &mut Option<Claimed<'_>>,
        halt: Option<&AtomicBool>,
    ) -> io::Result<(Step, Listing)> {
        let t = Instant::now();
        let files = listing(&slot.fs()).map_err(|e| at("reading the state", &slot.fs(), e))?;
        lock(&self.tally).time.read += t.elapsed().as_secs_f64();
        self.settle_early(claimed, &Ok(files.clone()));
        let step = self.check_mounted(slot, i, &files, halt)?;
        Ok((step, files))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn a_listing_sees_every_path_and_what_it_holds_and_keys_by_promises() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("d")).unwrap();
        fs::write(dir.path().join("d/f"), b"hi").unwrap();
        std::os::unix::fs::symlink("../nowhere", dir.path().join("l")).unwrap();
        // A FIFO is listed, never opened (opening it would block).
        let made = Command::new("mkfifo").arg(dir.path().join("p")).status();
        assert!(made.unwrap().success());
        let l = listing(dir.path()).unwrap();
        let got: Vec<(&[u8], &Node)> = l.iter().map(|(k, v)| (k.as_slice(), v)).collect();
        assert_eq!(
            got,
            [
                (&b"d"[..], &Node::Dir),
                (&b"d/f"[..], &Node::File(2, *blake3::hash(b"hi").as_bytes())),
                (&b"l"[..], &Node::Symlink(b"../nowhere".to_vec())),
                (&b"p"[..], &Node::Special("fifo".into())),
            ]
        );
        assert_ne!(listing_key(&l, b"saved\n"), listing_key(&l, b""));
        fs::remove_file(dir.path().join("p")).unwrap();
        fs::write(dir.path().join("d/f"), b"ho").unwrap();
        assert_ne!(
            listing_key(&listing(dir.path()).unwrap(), b""),
            listing_key(&l, b"")
        );
    }
}
