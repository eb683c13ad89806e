//! The live file system's state: the view (a real tree in scratch that
//! every change reaches at once, as a page cache holds it), the pending
//! ops each change made, the durable tree the syncs feed, and the crash
//! that keeps what the model allows of what is pending.
//!
//! Every request names inodes by the live file system's own numbers (the
//! backing directory's root is 0), the numbers the pending ops and the
//! durable tree use. The FUSE adapter turns requests into calls here.
//!
//! Here: the state, its view's paths, the trigger, and the requests that
//! only read; `requests` has those that change the view, `durability` the
//! syncs, the pending report and the crash.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::fs::{self, File};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::sync::Arc;

use blackout_oplog::ops::{Ino, InodeKind, Name, ROOT_INO};

mod durability;
mod requests;

use crate::durable::Durable;
use crate::faults::{SyncFailure, Trigger, When};
use crate::limits::Limits;
use crate::pending::Pending;
use crate::tree::{self, Meta, Reach};

pub use blackout_sys::fuse::Errno;

/// The largest extended attribute value (or list of names) Linux has.
const XATTR_BYTES_MAX: usize = 64 * 1024;

/// What `read` puts in a buffer, the buffer grown while it is too small
/// (`ERANGE`), up to [`XATTR_BYTES_MAX`].
fn read_growing(
    mut read: impl FnMut(&mut [u8]) -> rustix::io::Result<usize>,
) -> Result<Vec<u8>, Errno> {
    let mut buf = vec![0u8; 256];
    loop {
        match read(&mut buf[..]) {
            Ok(n) => {
                buf.truncate(n);
                return Ok(buf);
            }
            Err(rustix::io::Errno::RANGE) if buf.len() < XATTR_BYTES_MAX => {
                buf.resize(buf.len() * 4, 0);
            }
            Err(e) => return Err(e.raw_os_error()),
        }
    }
}

/// Sectors a pending write may tear at, in bytes (as the posix model's
/// default).
pub const SECTOR: u64 = 512;

fn errno(e: &io::Error) -> Errno {
    e.raw_os_error().unwrap_or(libc::EIO)
}

/// What a sync answers when the backing directory refused what it covers:
/// a full disk or quota as itself (as fsync reports them), else `EIO`.
fn sync_errno(e: &io::Error) -> Errno {
    match e.raw_os_error() {
        Some(n) if n == libc::ENOSPC || n == libc::EDQUOT => n,
        _ => libc::EIO,
    }
}

/// A time a request sets: now, or `(seconds, nanoseconds)` since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetTime {
    /// The time the view sets it.
    Now,
    /// This time.
    At(i64, i64),
}

/// One inode of the view.
#[derive(Debug, Clone)]
struct Node {
    kind: InodeKind,
    /// Its file type bits (`S_IFREG`, `S_IFDIR`, `S_IFIFO`, ...).
    file_type: u32,
    names: Vec<(Ino, Name)>,
    entries: BTreeMap<Name, Ino>,
}

/// The file type bits of an inode made as `meta` says.
fn file_type(meta: &Meta) -> u32 {
    match (meta.kind, meta.special) {
        (_, Some(sp)) => sp.file_type,
        (InodeKind::Dir, None) => libc::S_IFDIR,
        (InodeKind::Symlink, None) => libc::S_IFLNK,
        (InodeKind::File, None) => libc::S_IFREG,
    }
}

/// An open file of the view.
#[derive(Debug)]
struct Handle {
    file: File,
    ino: Ino,
    /// The path it was opened by, relative to the mount.
    path: Arc<str>,
    /// Opened `O_SYNC` or `O_DSYNC`: each write is synced (as the model
    /// has it: an implied fsync).
    sync: bool,
}

/// The live file system's state.
#[derive(Debug)]
pub struct Live {
    view: PathBuf,
    nodes: Vec<Node>,
    handles: HashMap<u64, Handle>,
    next_fh: u64,
    pending: Pending,
    durable: Durable,
    backing: PathBuf,
    orphans: PathBuf,
    /// The power is off: every request fails with `EIO`.
    frozen: bool,
    trigger: Option<(Trigger, Sender<()>)>,
    /// A sync failure armed: the next sync it matches fails with `EIO`.
    failing: Option<(Trigger, Sender<SyncFailure>)>,
    /// The pending ops the backing directory refused when a sync took them
    /// (by number), with its error: they stay pending, and every sync that
    /// covers them fails until they are made durable.
    refused: BTreeMap<u64, String>,
    /// The backing file system's limits, enforced at each request.
    limits: Limits,
}

fn rel_join(dir: &str, name: &Name) -> String {
    if dir == "." {
        name.display()
    } else {
        format!("{dir}/{}", name.display())
    }
}

impl Live {
    /// The state of a mount of `backing`, its view made at `view` (which
    /// must not exist) and its orphans kept in `orphans` (an empty
    /// directory).
    ///
    /// # Errors
    ///
    /// Reading `backing` or writing the view; an inode in it that is not a
    /// file, a directory or a symlink.
    pub fn new(backing: &Path, view: &Path, orphans: &Path) -> io::Result<Live> {
        let limits = Limits::probe(backing)?;
        let scanned = tree::scan(backing, Some(view))?;
        let durable = Durable::new(backing, orphans, &scanned);
        let nodes = scanned
            .into_iter()
            .map(|s| Node {
                kind: s.meta.kind,
                file_type: file_type(&s.meta),
                names: s.names,
                entries: s.entries,
            })
            .collect();
        Ok(Live {
            view: view.to_path_buf(),
            nodes,
            handles: HashMap::new(),
            next_fh: 1,
            pending: Pending::default(),
            durable,
            backing: backing.to_path_buf(),
            orphans: orphans.to_path_buf(),
            frozen: false,
            trigger: None,
            failing: None,
            refused: BTreeMap::new(),
            limits,
        })
    }

    /// The view shows the durable tree again, as after a reboot: the view
    /// rebuilt from the backing directory, nothing pending, no file open.
    ///
    /// # Errors
    ///
    /// As [`Live::new`].
    pub fn reset(&mut self) -> io::Result<()> {
        blackout_sys::scratch::remove_tree(&self.view)?;
        let fresh = Live::new(&self.backing, &self.view, &self.orphans)?;
        *self = fresh;
        Ok(())
    }

    fn node(&self, ino: Ino) -> Result<&Node, Errno> {
        self.nodes.get(ino as usize).ok_or(libc::ESTALE)
    }

    fn dir(&self, ino: Ino) -> Result<&Node, Errno> {
        let n = self.node(ino)?;
        if n.kind == InodeKind::Dir {
            Ok(n)
        } else {
            Err(libc::ENOTDIR)
        }
    }

    /// The names from the root down to inode `ino` (by each inode's first
    /// name): `ESTALE` for an inode the view does not have, `ENOENT` for
    /// one with no name left.
    fn names_down(&self, ino: Ino) -> Result<Vec<&Name>, Errno> {
        let mut parts = Vec::new();
        let mut at = ino;
        while at != ROOT_INO {
            let (up, n) = self.node(at)?.names.first().ok_or(libc::ENOENT)?;
            parts.push(n);
            at = *up;
        }
        parts.reverse();
        Ok(parts)
    }

    /// The inode's path in the view (reachable however long it is).
    fn view_path(&self, ino: Ino) -> Result<Reach, Errno> {
        let mut p = self.view.clone();
        for n in self.names_down(ino)? {
            p.push(OsStr::from_bytes(&n.0));
        }
        tree::reach(p).map_err(|e| errno(&e))
    }

    /// The inode's path relative to the mount, for people (`.` for the
    /// root; an inode with no name left is `(deleted inode N)`).
    pub fn rel(&self, ino: Ino) -> String {
        match self.names_down(ino) {
            Ok(parts) if parts.is_empty() => ".".to_string(),
            Ok(parts) => parts
                .iter()
                .map(|n| n.display())
                .collect::<Vec<_>>()
                .join("/"),
            Err(_) => format!("(deleted inode {ino})"),
        }
    }

    fn entry_path(&self, dir: Ino, name: &OsStr) -> Result<Reach, Errno> {
        let mut p = self.view.clone();
        for n in self.names_down(dir)? {
            p.push(OsStr::from_bytes(&n.0));
        }
        tree::reach(p.join(name)).map_err(|e| errno(&e))
    }

    /// Fails every request while the power is off.
    fn powered(&self) -> Result<(), Errno> {
        if self.frozen {
            Err(libc::EIO)
        } else {
            Ok(())
        }
    }

    /// Checks an op against the armed trigger before it is made: `Err`
    /// when the crash goes off before it, `Ok(true)` when it goes off
    /// after it.
    fn gate(&mut self, call: &str, path: &str, to: Option<&str>) -> Result<bool, Errno> {
        self.powered()?;
        let Some((t, _)) = &self.trigger else {
            return Ok(false);
        };
        if !t.matches(call, path, to) {
            return Ok(false);
        }
        if t.when == When::Before {
            self.fire();
            return Err(libc::EIO);
        }
        Ok(true)
    }

    /// The power fails now: the armed crash goes off.
    fn fire(&mut self) {
        self.frozen = true;
        if let Some((_, tx)) = self.trigger.take() {
            let _ = tx.send(());
        }
    }

    fn after(&mut self, fire: bool) {
        if fire {
            self.fire();
        }
    }

    /// Arms a crash at the next op `trigger` matches; `fired` hears when
    /// it goes off (the power is off from then).
    pub fn arm(&mut self, trigger: Trigger, fired: Sender<()>) {
        self.trigger = Some((trigger, fired));
    }

    /// Takes the armed trigger away.
    pub fn disarm(&mut self) {
        self.trigger = None;
    }

    /// Arms a sync failure at the next fsync, fdatasync or directory fsync
    /// `trigger` matches: it fails with `EIO` and what it covered is
    /// dropped for good; `failed` hears what.
    pub fn arm_sync_failure(&mut self, trigger: Trigger, failed: Sender<SyncFailure>) {
        self.failing = Some((trigger, failed));
    }

    /// Takes an armed sync failure away.
    pub fn disarm_sync_failure(&mut self) {
        self.failing = None;
    }

    /// The power fails now (every request fails with `EIO` until the view
    /// is [`Live::reset`]).
    pub fn freeze(&mut self) {
        self.frozen = true;
    }

    /// The backing file system's limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The inode `name` names in directory `dir`, with its view metadata.
    ///
    /// # Errors
    ///
    /// `ENOENT`, or the view's `lstat`.
    pub fn lookup(&self, dir: Ino, name: &OsStr) -> Result<(Ino, fs::Metadata), Errno> {
        self.powered()?;
        self.limits.name(name.as_bytes())?;
        let ino = *self
            .dir(dir)?
            .entries
            .get(&Name(name.as_bytes().to_vec()))
            .ok_or(libc::ENOENT)?;
        Ok((ino, self.metadata(ino, None)?))
    }

    /// An inode's view metadata (through an open handle when it has no
    /// name left).
    ///
    /// # Errors
    ///
    /// `lstat`, or `ESTALE` for an inode the view no longer has.
    pub fn metadata(&self, ino: Ino, fh: Option<u64>) -> Result<fs::Metadata, Errno> {
        self.powered()?;
        if let Some(h) = fh.and_then(|f| self.handles.get(&f)) {
            return h.file.metadata().map_err(|e| errno(&e));
        }
        match self.view_path(ino) {
            Ok(p) => fs::symlink_metadata(p).map_err(|e| errno(&e)),
            Err(e) => self
                .handles
                .values()
                .find(|h| h.ino == ino)
                .map(|h| h.file.metadata().map_err(|e| errno(&e)))
                .unwrap_or(Err(e)),
        }
    }

    /// The kind of an inode.
    pub fn kind(&self, ino: Ino) -> Option<InodeKind> {
        self.nodes.get(ino as usize).map(|n| n.kind)
    }

    /// A directory's entries, `(name, inode, kind)`, in name order.
    ///
    /// # Errors
    ///
    /// `ENOTDIR`, `ESTALE`.
    pub fn entries(&self, dir: Ino) -> Result<Vec<(Name, Ino, u32)>, Errno> {
        self.powered()?;
        Ok(self
            .dir(dir)?
            .entries
            .iter()
            .map(|(n, &i)| (n.clone(), i, self.nodes[i as usize].file_type))
            .collect())
    }

    /// The parent of a directory (the root's is itself).
    pub fn parent(&self, dir: Ino) -> Ino {
        self.nodes
            .get(dir as usize)
            .and_then(|n| n.names.first())
            .map_or(ROOT_INO, |(p, _)| *p)
    }

    /// An extended attribute's value, as the view holds it.
    ///
    /// # Errors
    ///
    /// `ENODATA`, the view's call.
    pub fn getxattr(&self, ino: Ino, name: &OsStr) -> Result<Vec<u8>, Errno> {
        self.powered()?;
        let path = self.view_path(ino)?;
        read_growing(|buf| rustix::fs::lgetxattr(&*path, name, buf))
    }

    /// The names of an inode's extended attributes, each ended by a NUL.
    ///
    /// # Errors
    ///
    /// The view's call.
    pub fn listxattr(&self, ino: Ino) -> Result<Vec<u8>, Errno> {
        self.powered()?;
        let path = self.view_path(ino)?;
        read_growing(|buf| rustix::fs::llistxattr(&*path, buf))
    }

    /// A symlink's target.
    ///
    /// # Errors
    ///
    /// `readlink`.
    pub fn readlink(&self, ino: Ino) -> Result<Vec<u8>, Errno> {
        self.powered()?;
        let p = self.view_path(ino)?;
        fs::read_link(p)
            .map(|t| t.as_os_str().as_bytes().to_vec())
            .map_err(|e| errno(&e))
    }

    /// The backing directory.
    pub fn backing_root(&self) -> &Path {
        &self.backing
    }
}
