//! The live file system's state: the view (a real tree in scratch that
//! every change reaches at once, as a page cache holds it), the pending
//! ops each change made, the durable tree the syncs feed, and the crash
//! that keeps what the model allows of what is pending.
//!
//! Every request names inodes by the live file system's own numbers (the
//! backing directory's root is 0), the numbers the pending ops and the
//! durable tree use. The FUSE adapter turns requests into calls here.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::fs::{self, File};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::sync::Arc;

use blackout_explore::enumerate::{Cut, Tear};
use blackout_oplog::ops::{Ino, InodeKind, Name, OpKind, Part, ROOT_INO};
use blackout_oplog::store::Halves;

use crate::durable::Durable;
use crate::faults::{
    refused_line, CrashReport, CrashSpec, PendingFile, PendingReport, Refused, Torn, Trigger, When,
};
use crate::limits::Limits;
use crate::pending::{kept, named, Keep, Pending, PendingOp, Rng, Taken};
use crate::tree::{self, Meta};

/// An errno for a request.
pub type Errno = i32;

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

/// One inode of the view.
#[derive(Debug, Clone)]
struct Node {
    kind: InodeKind,
    names: Vec<(Ino, Name)>,
    entries: BTreeMap<Name, Ino>,
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

    /// The inode's path in the view.
    fn view_path(&self, ino: Ino) -> Result<PathBuf, Errno> {
        let mut p = self.view.clone();
        for n in self.names_down(ino)? {
            p.push(OsStr::from_bytes(&n.0));
        }
        Ok(p)
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

    fn entry_path(&self, dir: Ino, name: &OsStr) -> Result<PathBuf, Errno> {
        Ok(self.view_path(dir)?.join(name))
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

    /// The power fails now (every request fails with `EIO` until the view
    /// is [`Live::reset`]).
    pub fn freeze(&mut self) {
        self.frozen = true;
    }

    /// The pending ops the backing directory refused, in order, with why.
    pub fn refused(&self) -> Vec<Refused> {
        self.refused
            .iter()
            .filter_map(|(&seq, error)| {
                let op = self.pending.view(seq, blackout_oplog::ops::Part::Whole)?;
                Some(Refused {
                    op,
                    error: error.clone(),
                })
            })
            .collect()
    }

    /// The refused ops in one line ([`refused_line`]), if there are any.
    pub fn refused_text(&self) -> Option<String> {
        let refused = self.refused();
        (!refused.is_empty()).then(|| refused_line(&refused))
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
    pub fn entries(&self, dir: Ino) -> Result<Vec<(Name, Ino, InodeKind)>, Errno> {
        self.powered()?;
        Ok(self
            .dir(dir)?
            .entries
            .iter()
            .map(|(n, &i)| (n.clone(), i, self.nodes[i as usize].kind))
            .collect())
    }

    /// The parent of a directory (the root's is itself).
    pub fn parent(&self, dir: Ino) -> Ino {
        self.nodes
            .get(dir as usize)
            .and_then(|n| n.names.first())
            .map_or(ROOT_INO, |(p, _)| *p)
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

    fn push(
        &mut self,
        kind: OpKind,
        call: &'static str,
        path: impl Into<Arc<str>>,
        sync_path: impl Into<Arc<str>>,
    ) {
        let sync_path: Arc<str> = sync_path.into();
        self.pending.push(PendingOp {
            kind,
            call,
            source_sync_path: sync_path.clone(),
            path: path.into(),
            to: None,
            sync_path,
            data: Box::default(),
            left: Halves::BOTH,
        });
    }

    /// A new inode named `name` in `dir`, made in the view by `make`, its
    /// entry pending.
    fn add(
        &mut self,
        dir: Ino,
        name: &OsStr,
        meta: Meta,
        call: &'static str,
        make: impl FnOnce(&Path) -> io::Result<()>,
    ) -> Result<(Ino, PathBuf), Errno> {
        self.dir(dir)?;
        self.limits.name(name.as_bytes())?;
        let n = Name(name.as_bytes().to_vec());
        let dir_rel = self.rel(dir);
        let rel = rel_join(&dir_rel, &n);
        let fire = self.gate(call, &rel, None)?;
        let path = self.entry_path(dir, name)?;
        make(&path).map_err(|e| errno(&e))?;
        let _ = tree::finish(&path, &meta);
        let ino = Ino::try_from(self.nodes.len()).map_err(|_| libc::ENOSPC)?;
        let kind = meta.kind;
        self.nodes.push(Node {
            kind,
            names: vec![(dir, n.clone())],
            entries: BTreeMap::new(),
        });
        self.nodes[dir as usize].entries.insert(n.clone(), ino);
        self.durable.declare(ino, meta);
        self.push(
            OpKind::Link {
                dir,
                name: n,
                ino,
                new: true,
            },
            call,
            rel,
            dir_rel,
        );
        self.after(fire);
        Ok((ino, path))
    }

    /// mkdir.
    ///
    /// # Errors
    ///
    /// The view's mkdir.
    pub fn mkdir(&mut self, dir: Ino, name: &OsStr, meta: Meta) -> Result<Ino, Errno> {
        self.add(dir, name, meta, "mkdir", |p| fs::create_dir(p))
            .map(|(i, _)| i)
    }

    /// symlink.
    ///
    /// # Errors
    ///
    /// The view's symlink.
    pub fn symlink(&mut self, dir: Ino, name: &OsStr, meta: Meta) -> Result<Ino, Errno> {
        let target = meta.target.clone();
        self.add(dir, name, meta, "symlink", |p| {
            std::os::unix::fs::symlink(OsStr::from_bytes(&target), p)
        })
        .map(|(i, _)| i)
    }

    /// create (a new file, opened with `flags`): its inode and handle.
    ///
    /// # Errors
    ///
    /// The view's create (`EEXIST` when the name is taken: the kernel
    /// asks only when it was not).
    pub fn create(
        &mut self,
        dir: Ino,
        name: &OsStr,
        meta: Meta,
        flags: i32,
    ) -> Result<(Ino, u64), Errno> {
        let (ino, path) = self.add(dir, name, meta, "create", |p| {
            File::create_new(p).map(|_| ())
        })?;
        let fh = self.open_path(ino, &path, flags)?;
        Ok((ino, fh))
    }

    fn open_path(&mut self, ino: Ino, path: &Path, flags: i32) -> Result<u64, Errno> {
        let write = flags & libc::O_ACCMODE != libc::O_RDONLY;
        let file = fs::OpenOptions::new()
            .read(true)
            .write(write)
            .open(path)
            .or_else(|_| fs::OpenOptions::new().read(!write).write(write).open(path))
            .map_err(|e| errno(&e))?;
        let fh = self.next_fh;
        self.next_fh += 1;
        let rel = self.rel(ino);
        self.handles.insert(
            fh,
            Handle {
                file,
                ino,
                path: rel.into(),
                sync: flags & libc::O_DSYNC != 0,
            },
        );
        Ok(fh)
    }

    /// open.
    ///
    /// # Errors
    ///
    /// The view's open.
    pub fn open(&mut self, ino: Ino, flags: i32) -> Result<u64, Errno> {
        self.powered()?;
        let path = self.view_path(ino)?;
        self.open_path(ino, &path, flags)
    }

    /// release (close).
    pub fn release(&mut self, fh: u64) {
        self.handles.remove(&fh);
    }

    /// read.
    ///
    /// # Errors
    ///
    /// `EBADF`, the view's pread.
    pub fn read(&self, fh: u64, off: u64, size: u32) -> Result<Vec<u8>, Errno> {
        self.powered()?;
        let h = self.handles.get(&fh).ok_or(libc::EBADF)?;
        let mut buf = vec![0u8; size as usize];
        let mut got = 0;
        while got < buf.len() {
            match h.file.read_at(&mut buf[got..], off + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(errno(&e)),
            }
        }
        buf.truncate(got);
        Ok(buf)
    }

    /// write: the bytes reach the view, and a pending write remembers
    /// them (synced at once through an `O_SYNC` or `O_DSYNC` handle).
    ///
    /// # Errors
    ///
    /// `EBADF`, the view's pwrite.
    pub fn write(&mut self, fh: u64, off: u64, data: &[u8]) -> Result<u32, Errno> {
        let h = self.handles.get(&fh).ok_or(libc::EBADF)?;
        let (ino, path, sync) = (h.ino, h.path.clone(), h.sync);
        self.limits.size(off, data.len() as u64)?;
        // While the power is off, the kernel's writeback (what programs
        // wrote before, held in its page cache) is still taken, as pending
        // writes only: the crash drops them, and says so.
        let frozen = self.frozen;
        let fire = if frozen {
            false
        } else {
            self.gate("write", &path, None)?
        };
        if !frozen {
            let h = self.handles.get(&fh).ok_or(libc::EBADF)?;
            h.file.write_all_at(data, off).map_err(|e| errno(&e))?;
        }
        self.pending.push(PendingOp {
            kind: OpKind::Write {
                ino,
                off,
                data: Default::default(),
            },
            call: "write",
            sync_path: path.clone(),
            source_sync_path: path.clone(),
            path,
            to: None,
            data: data.into(),
            left: Halves::BOTH,
        });
        if sync && !frozen {
            self.sync_inode(ino)?;
        }
        self.after(fire);
        Ok(data.len() as u32)
    }

    /// setattr: a size change is a pending truncate; modes, owners and
    /// times reach the view (and the durable copy, if any) at once.
    ///
    /// # Errors
    ///
    /// The view's calls.
    pub fn setattr(
        &mut self,
        ino: Ino,
        fh: Option<u64>,
        size: Option<u64>,
        mode: Option<u32>,
        owner: (Option<u32>, Option<u32>),
        times: (Option<fs::FileTimes>, bool),
    ) -> Result<(), Errno> {
        self.powered()?;
        let handle_path = fh
            .and_then(|f| self.handles.get(&f))
            .map(|h| h.path.clone());
        let rel: Arc<str> = handle_path.unwrap_or_else(|| self.rel(ino).into());
        if let Some(size) = size {
            self.limits.size(size, 0)?;
            let fire = self.gate("truncate", &rel, None)?;
            match fh.and_then(|f| self.handles.get(&f)) {
                Some(h) => h.file.set_len(size),
                None => fs::OpenOptions::new()
                    .write(true)
                    .open(self.view_path(ino)?)
                    .and_then(|f| f.set_len(size)),
            }
            .map_err(|e| errno(&e))?;
            self.push(OpKind::Truncate { ino, size }, "truncate", rel.clone(), rel);
            self.after(fire);
        }
        let path = self.view_path(ino).ok();
        if let (Some(mode), Some(p)) = (mode, &path) {
            if self.kind(ino) != Some(InodeKind::Symlink) {
                use std::os::unix::fs::PermissionsExt;
                fs::set_permissions(p, fs::Permissions::from_mode(mode & 0o7777))
                    .map_err(|e| errno(&e))?;
            }
        }
        if let (Some(p), true) = (&path, owner.0.is_some() || owner.1.is_some()) {
            std::os::unix::fs::lchown(p, owner.0, owner.1).map_err(|e| errno(&e))?;
        }
        if let (Some(t), Some(p), false) = (times.0, &path, times.1) {
            if let Ok(f) = File::options()
                .write(true)
                .open(p)
                .or_else(|_| File::open(p))
            {
                let _ = f.set_times(t);
            }
        }
        if mode.is_some() || owner.0.is_some() || owner.1.is_some() {
            if let Ok(md) = self.metadata(ino, fh) {
                self.durable
                    .set_meta(ino, md.mode() & 0o7777, md.uid(), md.gid());
            }
        }
        Ok(())
    }

    /// fallocate: a pending fallocate (the modes that change what a reader
    /// sees; collapsing or inserting a range is refused).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` for a mode the model does not have, the view's call.
    pub fn fallocate(&mut self, fh: u64, off: u64, len: u64, mode: i32) -> Result<(), Errno> {
        let known =
            libc::FALLOC_FL_KEEP_SIZE | libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_ZERO_RANGE;
        if mode & !known != 0 {
            return Err(libc::EOPNOTSUPP);
        }
        let h = self.handles.get(&fh).ok_or(libc::EBADF)?;
        let (ino, path) = (h.ino, h.path.clone());
        self.limits.size(off, len)?;
        let fire = self.gate("fallocate", &path, None)?;
        let h = self.handles.get(&fh).ok_or(libc::EBADF)?;
        let flags = rustix::fs::FallocateFlags::from_bits_retain(mode as u32);
        rustix::fs::fallocate(&h.file, flags, off, len).map_err(|e| e.raw_os_error())?;
        let zero = mode & (libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_ZERO_RANGE) != 0;
        let keep_size = mode & libc::FALLOC_FL_KEEP_SIZE != 0;
        self.push(
            OpKind::Fallocate {
                ino,
                off,
                len,
                zero,
                keep_size,
            },
            "fallocate",
            path.clone(),
            path,
        );
        self.after(fire);
        Ok(())
    }

    /// link: a new name for a file.
    ///
    /// # Errors
    ///
    /// The view's link.
    pub fn link(&mut self, ino: Ino, dir: Ino, name: &OsStr) -> Result<(), Errno> {
        self.dir(dir)?;
        self.limits.name(name.as_bytes())?;
        let n = Name(name.as_bytes().to_vec());
        let dir_rel = self.rel(dir);
        let rel = rel_join(&dir_rel, &n);
        let fire = self.gate("link", &rel, None)?;
        let from = self.view_path(ino)?;
        fs::hard_link(from, self.entry_path(dir, name)?).map_err(|e| errno(&e))?;
        self.nodes[ino as usize].names.push((dir, n.clone()));
        self.nodes[dir as usize].entries.insert(n.clone(), ino);
        self.push(
            OpKind::Link {
                dir,
                name: n,
                ino,
                new: false,
            },
            "link",
            rel,
            dir_rel,
        );
        self.after(fire);
        Ok(())
    }

    /// unlink or rmdir.
    ///
    /// # Errors
    ///
    /// `ENOENT`, the view's call (`ENOTEMPTY`, `EISDIR`, ...).
    pub fn remove(&mut self, dir: Ino, name: &OsStr, rmdir: bool) -> Result<(), Errno> {
        let n = Name(name.as_bytes().to_vec());
        let ino = *self.dir(dir)?.entries.get(&n).ok_or(libc::ENOENT)?;
        let dir_rel = self.rel(dir);
        let rel = rel_join(&dir_rel, &n);
        let call = if rmdir { "rmdir" } else { "unlink" };
        let fire = self.gate(call, &rel, None)?;
        let path = self.entry_path(dir, name)?;
        if rmdir {
            fs::remove_dir(path)
        } else {
            fs::remove_file(path)
        }
        .map_err(|e| errno(&e))?;
        self.nodes[dir as usize].entries.remove(&n);
        self.nodes[ino as usize]
            .names
            .retain(|(d, x)| !(*d == dir && *x == n));
        self.push(OpKind::Unlink { dir, name: n, ino }, call, rel, dir_rel);
        self.after(fire);
        Ok(())
    }

    /// rename (`flags`: `RENAME_NOREPLACE`, `RENAME_EXCHANGE`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for other flags, `ENOENT`, the view's rename.
    pub fn rename(
        &mut self,
        dir: Ino,
        name: &OsStr,
        to_dir: Ino,
        to_name: &OsStr,
        flags: u32,
    ) -> Result<(), Errno> {
        let known = libc::RENAME_NOREPLACE | libc::RENAME_EXCHANGE;
        if flags & !known != 0 {
            return Err(libc::EINVAL);
        }
        let exchange = flags & libc::RENAME_EXCHANGE != 0;
        self.limits.name(to_name.as_bytes())?;
        let (from_n, to_n) = (
            Name(name.as_bytes().to_vec()),
            Name(to_name.as_bytes().to_vec()),
        );
        let ino = *self.dir(dir)?.entries.get(&from_n).ok_or(libc::ENOENT)?;
        let replaced = self.dir(to_dir)?.entries.get(&to_n).copied();
        let (dir_rel, to_dir_rel) = (self.rel(dir), self.rel(to_dir));
        let (rel, to_rel) = (rel_join(&dir_rel, &from_n), rel_join(&to_dir_rel, &to_n));
        let call = if exchange { "exchange" } else { "rename" };
        let fire = self.gate(call, &rel, Some(&to_rel))?;
        let (from_p, to_p) = (
            self.entry_path(dir, name)?,
            self.entry_path(to_dir, to_name)?,
        );
        let rflags = rustix::fs::RenameFlags::from_bits_retain(flags);
        rustix::fs::renameat_with(rustix::fs::CWD, &from_p, rustix::fs::CWD, &to_p, rflags)
            .map_err(|e| e.raw_os_error())?;
        if replaced == Some(ino) {
            // Two names of one file: rename does nothing.
            return Ok(());
        }
        self.nodes[dir as usize].entries.remove(&from_n);
        let moved = &mut self.nodes[ino as usize].names;
        moved.retain(|(d, x)| !(*d == dir && *x == from_n));
        moved.push((to_dir, to_n.clone()));
        self.nodes[to_dir as usize]
            .entries
            .insert(to_n.clone(), ino);
        if let Some(r) = replaced {
            let names = &mut self.nodes[r as usize].names;
            names.retain(|(d, x)| !(*d == to_dir && *x == to_n));
            if exchange {
                names.push((dir, from_n.clone()));
                self.nodes[dir as usize].entries.insert(from_n.clone(), r);
            }
        }
        self.pending.push(PendingOp {
            kind: OpKind::Rename {
                from_dir: dir,
                from_name: from_n,
                to_dir,
                to_name: to_n,
                ino,
                replaced,
                exchange,
            },
            call,
            path: rel.into(),
            to: Some(to_rel),
            sync_path: to_dir_rel.into(),
            source_sync_path: dir_rel.into(),
            data: Box::default(),
            left: Halves::BOTH,
        });
        self.after(fire);
        Ok(())
    }

    /// Applies one taken op to the durable tree.
    fn apply_taken(&mut self, t: &Taken) -> io::Result<()> {
        let nodes = &self.nodes;
        let pending = &self.pending;
        let alive = |i: Ino| {
            i == ROOT_INO
                || nodes.get(i as usize).is_some_and(|n| !n.names.is_empty())
                || pending.names(i)
        };
        self.durable
            .apply(&t.op.kind, &t.op.data, t.halves, t.size_only, &alive)
    }

    /// Applies the ops a sync took to the durable tree, in order. An op the
    /// backing directory refuses goes back on the pending list, and so does
    /// every later one on an inode it names (their order kept); every other
    /// op is applied. The sync then fails with the first refusal's error.
    fn apply(&mut self, taken: Vec<Taken>) -> Result<(), Errno> {
        let mut failed: Option<Errno> = None;
        let mut held: HashMap<Ino, u64> = HashMap::new();
        for t in taken {
            let inos = named(&t.op.kind);
            let behind = inos.iter().find_map(|i| held.get(i).copied());
            let error = match behind {
                Some(first) => Err(format!("waits for op {first}, refused before it")),
                None => self.apply_taken(&t).map_err(|e| {
                    failed.get_or_insert(sync_errno(&e));
                    e.to_string()
                }),
            };
            match error {
                Ok(()) => {
                    self.refused.remove(&t.seq);
                }
                Err(why) => {
                    for i in inos {
                        held.entry(i).or_insert(t.seq);
                    }
                    self.refused.insert(t.seq, why);
                    self.pending.restore(t);
                }
            }
        }
        self.durable.close();
        failed.map_or(Ok(()), Err)
    }

    fn sync_inode(&mut self, ino: Ino) -> Result<(), Errno> {
        let taken = self.pending.take_synced(ino);
        self.apply(taken)
    }

    /// fsync or fdatasync of a file, fsync of a directory: what it covers
    /// becomes durable.
    ///
    /// # Errors
    ///
    /// `EIO` when the backing directory could not be changed.
    pub fn fsync(&mut self, ino: Ino, fh: Option<u64>, datasync: bool) -> Result<(), Errno> {
        let rel = fh
            .and_then(|f| self.handles.get(&f))
            .map(|h| h.path.clone())
            .unwrap_or_else(|| self.rel(ino).into());
        let call = match (self.kind(ino), datasync) {
            (Some(InodeKind::Dir), _) => "fsyncdir",
            (_, true) => "fdatasync",
            (_, false) => "fsync",
        };
        let fire = self.gate(call, &rel, None)?;
        self.sync_inode(ino)?;
        self.after(fire);
        Ok(())
    }

    /// sync: everything pending becomes durable. Returns how many ops.
    ///
    /// # Errors
    ///
    /// `EIO` when the backing directory could not be changed.
    pub fn sync_all(&mut self) -> Result<usize, Errno> {
        let taken = self.pending.take_all();
        let n = taken.len();
        self.apply(taken)?;
        Ok(n)
    }

    /// What is pending now, per path.
    pub fn pending_report(&self) -> PendingReport {
        let mut files: Vec<PendingFile> = Vec::new();
        let mut at: HashMap<String, usize> = HashMap::new();
        let mut bytes = 0;
        let units = self.pending.units();
        for &(seq, part) in &units {
            let Some(v) = self.pending.view(seq, part) else {
                continue;
            };
            if v.call == "write" {
                bytes += v.length.unwrap_or(0);
            }
            let i = *at.entry(v.path.clone()).or_insert_with(|| {
                files.push(PendingFile {
                    path: v.path.clone(),
                    ops: Vec::new(),
                });
                files.len() - 1
            });
            files[i].ops.push(v);
        }
        PendingReport {
            files,
            units: units.len(),
            bytes,
        }
    }

    /// The crash: the power is off; what `spec` keeps of the pending units
    /// reaches the backing directory (torn as it says), the rest is
    /// dropped, the orphans are freed. The view still shows the old state
    /// until [`Live::reset`].
    ///
    /// # Errors
    ///
    /// Changing the backing directory.
    pub fn crash(&mut self, spec: &CrashSpec) -> io::Result<CrashReport> {
        self.frozen = true;
        self.trigger = None;
        let units = self.pending.units();
        let keep: std::collections::HashSet<(u64, Part)> =
            kept(&units, spec.keep, spec.seed).into_iter().collect();
        // With a prefix, the unit right after it is the one a tear cuts.
        let boundary = units.iter().position(|u| !keep.contains(u));
        let mut rng = Rng::new(spec.seed.wrapping_add(1));
        let mut report = CrashReport::default();
        for (i, &(seq, part)) in units.iter().enumerate() {
            let view = self.pending.view(seq, part).expect("listed");
            let is_write = matches!(
                self.pending.get(seq).map(|o| &o.kind),
                Some(OpKind::Write { .. })
            );
            let kept_whole = keep.contains(&(seq, part));
            let tear = spec.tear
                && is_write
                && match spec.keep {
                    Keep::None => true,
                    Keep::Random => kept_whole,
                    Keep::Prefix => Some(i) == boundary,
                };
            if !kept_whole && !tear {
                report.dropped.push(view);
                continue;
            }
            let mut taken = self.pending.take_unit(seq, part).expect("listed");
            let torn = if tear {
                self.tear(&mut taken, &mut rng)
            } else {
                None
            };
            if torn.is_none() && !kept_whole {
                // Inside one sector: storage writes it whole or not at all.
                report.dropped.push(view);
                continue;
            }
            match (self.apply_taken(&taken), torn) {
                // Kept by the crash, refused by the disk: lost after all.
                (Err(e), _) => report.refused.push(Refused {
                    op: view,
                    error: e.to_string(),
                }),
                (Ok(()), Some(tear)) => report.torn.push(Torn { op: view, tear }),
                (Ok(()), None) => report.kept.push(view),
            }
        }
        self.pending.clear();
        self.refused.clear();
        self.durable.free_orphans()?;
        Ok(report)
    }

    /// Tears a write a crash lets reach the disk as storage tears it (a
    /// tear the seed picks): what reached the disk, for people, or `None`
    /// when it cannot be torn (not a write, or inside one sector).
    fn tear(&self, taken: &mut Taken, rng: &mut Rng) -> Option<String> {
        let OpKind::Write { ino, off, .. } = taken.op.kind else {
            return None;
        };
        let size_before = self
            .durable
            .location(ino)
            .and_then(|p| fs::symlink_metadata(p).ok())
            .map_or(0, |m| m.len());
        let len = taken.op.data.len() as u64;
        let offered = Tear::offered(off, len, size_before, SECTOR);
        if offered.is_empty() {
            return None;
        }
        let t = offered[rng.below(offered.len() as u64) as usize];
        match t.cut(off, len, size_before, SECTOR) {
            Some(Cut::Prefix(n)) => {
                let mut d = std::mem::take(&mut taken.op.data).into_vec();
                d.truncate(n as usize);
                taken.op.data = d.into_boxed_slice();
            }
            Some(Cut::SizeOnly) => taken.size_only = true,
            None => {}
        }
        Some(t.describe().to_string())
    }

    /// The backing directory.
    pub fn backing_root(&self) -> &Path {
        &self.backing
    }
}
