//! The FUSE view of crash states: one mount per worker, showing one state
//! at a time straight from its inodes, so a state costs what the checker
//! reads and writes, not what the program stored.
//!
//! A state is shown by swapping the inodes the daemon serves (a clone of
//! the built [`FsState`]: its contents share the trace's bytes, so no file
//! is copied). Bytes are produced only when the checker reads them; what
//! the checker writes (SQLite rolling back a hot journal) goes into that
//! clone alone and is dropped with it, so no state sees another's writes.
//!
//! Every state gets node ids of its own (`epoch << 33 | ino + 1`; the root
//! is always 1), and nothing is cached by the kernel across requests (entry
//! and attribute timeouts of zero): a path looked up by the next state's
//! checker can never reach a page or an attribute of the previous state,
//! and a request for a node of a state no longer shown is answered
//! `ESTALE` (a checker's straggler cannot write into the next state).
//! File locks are the kernel's (POSIX locks are not asked for), which is
//! what SQLite needs; a shared writable `mmap` (SQLite's `-shm`) works
//! through the page cache.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use blackout_explore::state::{FsState, InodeState};
use blackout_oplog::contents::{Contents, Data};
use blackout_oplog::ops::{Ino, InodeKind, ROOT_INO};
use blackout_sys::fuse::{list, lock, offset, tree_options, Errno, Served, MAX_WRITE_BYTES};
use fuser::{
    FileAttr, FileType, Filesystem, KernelConfig, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow,
};

/// Nothing is cached: every lookup and attribute comes from the state
/// shown now.
const TTL: Duration = Duration::ZERO;

/// The FUSE node id of the mount's root.
const ROOT_NODE: u64 = 1;

/// Node ids of a state: its epoch above this many bits, an inode below.
const EPOCH_SHIFT: u32 = 33;

/// What the views of one run have cost, summed over every worker.
#[derive(Debug, Default)]
pub struct Counters {
    /// States shown.
    pub states: AtomicU64,
    /// Bytes written to show them (the directory materializer's copies),
    /// and bytes checkers wrote into them (the FUSE view sees those).
    pub written: AtomicU64,
    /// Bytes checkers read through the FUSE view.
    pub read: AtomicU64,
}

/// A state's files and what its checker changed of them.
struct Shown {
    epoch: u64,
    inodes: Vec<InodeState>,
    /// Entries naming each inode (a file's link count).
    links: HashMap<Ino, u32>,
    /// Modes and times a checker set; every other inode has the defaults.
    meta: HashMap<Ino, Meta>,
    /// When the state was shown: every inode's times unless set.
    since: SystemTime,
}

#[derive(Debug, Clone, Copy)]
struct Meta {
    mode: Option<u16>,
    atime: Option<SystemTime>,
    mtime: Option<SystemTime>,
}

/// What the daemon serves and the worker swaps.
#[derive(Default)]
struct Current {
    shown: Option<Shown>,
    epoch: u64,
}

/// The file system the daemon runs.
struct ViewFs {
    current: Arc<Mutex<Current>>,
    counters: Arc<Counters>,
    uid: u32,
    gid: u32,
}

/// One worker's FUSE mount of crash states.
pub struct FuseView {
    current: Arc<Mutex<Current>>,
    counters: Arc<Counters>,
    served: Option<Served>,
}

impl FuseView {
    /// Mounts an empty view at `dir`, an existing empty directory, in the
    /// calling thread's mount namespace.
    ///
    /// # Errors
    ///
    /// No `/dev/fuse`, no right to mount, or the daemon's thread.
    pub fn mount(dir: &Path, counters: Arc<Counters>) -> io::Result<FuseView> {
        let current = Arc::new(Mutex::new(Current::default()));
        let fs = ViewFs {
            current: current.clone(),
            counters: counters.clone(),
            uid: rustix::process::geteuid().as_raw(),
            gid: rustix::process::getegid().as_raw(),
        };
        let options = tree_options("blackout-state");
        let mut served = Served::start(fs, dir, &options, false)?;
        // Only a checker's leftover process can hold the view (its group
        // was killed): detached at once, it goes with that process.
        served.set_patience(Duration::from_millis(100));
        Ok(FuseView {
            current,
            counters,
            served: Some(served),
        })
    }

    /// Shows `fs` (the view must be empty).
    pub fn show(&mut self, fs: &FsState) {
        let mut links: HashMap<Ino, u32> = HashMap::new();
        for node in &fs.inodes {
            if node.kind == InodeKind::Dir {
                for &ino in node.entries.values() {
                    *links.entry(ino).or_default() += 1;
                }
            }
        }
        let mut current = lock(&self.current);
        current.epoch += 1;
        current.shown = Some(Shown {
            epoch: current.epoch,
            inodes: fs.inodes.clone(),
            links,
            meta: HashMap::new(),
            since: SystemTime::now(),
        });
        self.counters.states.fetch_add(1, Ordering::Relaxed);
    }

    /// Takes the state away, with everything its checker wrote.
    pub fn clear(&mut self) {
        // Taken under the lock, dropped after it.
        let shown = lock(&self.current).shown.take();
        drop(shown);
    }

    /// Unmounts the view and stops its thread.
    ///
    /// # Errors
    ///
    /// The unmount (the mount was detached and aborted all the same).
    pub fn unmount(&mut self) -> io::Result<()> {
        self.clear();
        match self.served.take() {
            Some(mut s) => s.stop(),
            None => Ok(()),
        }
    }
}

impl Drop for FuseView {
    fn drop(&mut self) {
        let _ = self.unmount();
    }
}

impl Shown {
    fn node_id(&self, ino: Ino) -> u64 {
        if ino == ROOT_INO {
            ROOT_NODE
        } else {
            (self.epoch << EPOCH_SHIFT) | (u64::from(ino) + 1)
        }
    }

    /// The inode behind a node id of this state.
    fn ino(&self, node: u64) -> Result<Ino, Errno> {
        if node == ROOT_NODE {
            return Ok(ROOT_INO);
        }
        if node >> EPOCH_SHIFT != self.epoch {
            return Err(libc::ESTALE);
        }
        let ino = (node & ((1 << EPOCH_SHIFT) - 1)) - 1;
        match Ino::try_from(ino) {
            Ok(i) if (i as usize) < self.inodes.len() => Ok(i),
            _ => Err(libc::ESTALE),
        }
    }

    fn node(&self, ino: Ino) -> &InodeState {
        &self.inodes[ino as usize]
    }

    fn dir(&self, node: u64) -> Result<Ino, Errno> {
        let ino = self.ino(node)?;
        match self.node(ino).kind {
            InodeKind::Dir => Ok(ino),
            _ => Err(libc::ENOTDIR),
        }
    }

    fn child(&self, dir: Ino, name: &OsStr) -> Option<Ino> {
        self.node(dir).entries.get(name.as_bytes()).copied()
    }

    fn attr(&self, ino: Ino, uid: u32, gid: u32) -> FileAttr {
        let node = self.node(ino);
        let meta = self.meta.get(&ino);
        let (kind, perm, size, nlink) = match node.kind {
            InodeKind::File => (
                FileType::RegularFile,
                0o644,
                node.size,
                self.links.get(&ino).copied().unwrap_or(0),
            ),
            InodeKind::Dir => (FileType::Directory, 0o755, 4096, 2),
            InodeKind::Symlink => (FileType::Symlink, 0o777, node.data.len(), 1),
        };
        let perm = meta.and_then(|m| m.mode).unwrap_or(perm);
        let mtime = meta.and_then(|m| m.mtime).unwrap_or(self.since);
        FileAttr {
            ino: self.node_id(ino),
            size,
            blocks: size.div_ceil(512),
            atime: meta.and_then(|m| m.atime).unwrap_or(self.since),
            mtime,
            ctime: mtime,
            crtime: self.since,
            kind,
            perm,
            nlink,
            uid,
            gid,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    /// A new inode of `kind`, named `name` in `dir` (which must not hold
    /// it yet).
    fn add(&mut self, dir: Ino, name: &OsStr, kind: InodeKind, mode: u32) -> Result<Ino, Errno> {
        if self.child(dir, name).is_some() {
            return Err(libc::EEXIST);
        }
        let ino = Ino::try_from(self.inodes.len()).map_err(|_| libc::ENOSPC)?;
        if u64::from(ino) + 1 >= 1 << EPOCH_SHIFT {
            return Err(libc::ENOSPC);
        }
        self.inodes.push(InodeState {
            kind,
            data: Contents::default(),
            size: 0,
            entries: Default::default(),
        });
        self.link(dir, name, ino);
        if kind != InodeKind::Symlink {
            self.meta_mut(ino).mode = Some((mode & 0o7777) as u16);
        }
        Ok(ino)
    }

    fn link(&mut self, dir: Ino, name: &OsStr, ino: Ino) {
        self.inodes[dir as usize]
            .entries
            .insert(name.as_bytes().to_vec(), ino);
        *self.links.entry(ino).or_default() += 1;
    }

    fn unlink(&mut self, dir: Ino, name: &OsStr) -> Option<Ino> {
        let ino = self.inodes[dir as usize].entries.remove(name.as_bytes())?;
        if let Some(n) = self.links.get_mut(&ino) {
            *n = n.saturating_sub(1);
        }
        Some(ino)
    }

    fn meta_mut(&mut self, ino: Ino) -> &mut Meta {
        self.meta.entry(ino).or_insert(Meta {
            mode: None,
            atime: None,
            mtime: None,
        })
    }

    fn touch(&mut self, ino: Ino) {
        self.meta_mut(ino).mtime = Some(SystemTime::now());
    }

    fn rename(
        &mut self,
        (from, name): (Ino, &OsStr),
        (to, new_name): (Ino, &OsStr),
        flags: u32,
    ) -> Result<(), Errno> {
        let src = self.child(from, name).ok_or(libc::ENOENT)?;
        let dst = self.child(to, new_name);
        if flags & libc::RENAME_EXCHANGE != 0 {
            let dst = dst.ok_or(libc::ENOENT)?;
            self.inodes[from as usize]
                .entries
                .insert(name.as_bytes().to_vec(), dst);
            self.inodes[to as usize]
                .entries
                .insert(new_name.as_bytes().to_vec(), src);
            return Ok(());
        }
        if let Some(dst) = dst {
            if flags & libc::RENAME_NOREPLACE != 0 {
                return Err(libc::EEXIST);
            }
            if dst == src {
                return Ok(());
            }
            match (self.node(src).kind, self.node(dst).kind) {
                (InodeKind::Dir, InodeKind::Dir) if !self.node(dst).entries.is_empty() => {
                    return Err(libc::ENOTEMPTY)
                }
                (InodeKind::Dir, InodeKind::Dir) => {}
                (InodeKind::Dir, _) => return Err(libc::ENOTDIR),
                (_, InodeKind::Dir) => return Err(libc::EISDIR),
                _ => {}
            }
            self.unlink(to, new_name);
        }
        self.unlink(from, name);
        self.link(to, new_name, src);
        Ok(())
    }
}

impl ViewFs {
    /// Runs `f` on the state shown now (`ESTALE` when none is).
    fn with<T>(&self, f: impl FnOnce(&mut Shown) -> Result<T, Errno>) -> Result<T, Errno> {
        let mut current = lock(&self.current);
        match current.shown.as_mut() {
            Some(shown) => f(shown),
            None => Err(libc::ESTALE),
        }
    }

    fn entry(&self, reply: ReplyEntry, f: impl FnOnce(&mut Shown) -> Result<Ino, Errno>) {
        let (uid, gid) = (self.uid, self.gid);
        match self.with(|s| f(s).map(|ino| s.attr(ino, uid, gid))) {
            Ok(attr) => reply.entry(&TTL, &attr, 0),
            Err(e) => reply.error(e),
        }
    }

    fn data(&self, reply: ReplyData, f: impl FnOnce(&mut Shown) -> Result<Vec<u8>, Errno>) {
        match self.with(f) {
            Ok(bytes) => reply.data(&bytes),
            Err(e) => reply.error(e),
        }
    }

    fn empty(&self, reply: ReplyEmpty, f: impl FnOnce(&mut Shown) -> Result<(), Errno>) {
        match self.with(f) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }
}

/// An empty root while no state is shown (between two states).
fn empty_root(uid: u32, gid: u32) -> FileAttr {
    let now = SystemTime::now();
    FileAttr {
        ino: ROOT_NODE,
        size: 4096,
        blocks: 8,
        atime: now,
        mtime: now,
        ctime: now,
        crtime: now,
        kind: FileType::Directory,
        perm: 0o755,
        nlink: 2,
        uid,
        gid,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

impl Filesystem for ViewFs {
    fn init(&mut self, _req: &Request<'_>, config: &mut KernelConfig) -> Result<(), i32> {
        let _ = config.set_max_write(MAX_WRITE_BYTES);
        Ok(())
    }

    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        self.entry(reply, |s| {
            let dir = s.dir(parent)?;
            s.child(dir, name).ok_or(libc::ENOENT)
        });
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        let (uid, gid) = (self.uid, self.gid);
        match self.with(|s| s.ino(ino).map(|i| s.attr(i, uid, gid))) {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(_) if ino == ROOT_NODE => reply.attr(&TTL, &empty_root(uid, gid)),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        let (uid, gid) = (self.uid, self.gid);
        let at = |t: TimeOrNow| match t {
            TimeOrNow::SpecificTime(t) => t,
            TimeOrNow::Now => SystemTime::now(),
        };
        let done = self.with(|s| {
            let i = s.ino(ino)?;
            if let Some(size) = size {
                let node = &mut s.inodes[i as usize];
                match node.kind {
                    InodeKind::File => node.data.truncate(&mut node.size, size),
                    InodeKind::Dir => return Err(libc::EISDIR),
                    InodeKind::Symlink => return Err(libc::EINVAL),
                }
                s.touch(i);
            }
            let meta = s.meta_mut(i);
            if let Some(mode) = mode {
                meta.mode = Some((mode & 0o7777) as u16);
            }
            if let Some(t) = atime {
                meta.atime = Some(at(t));
            }
            if let Some(t) = mtime {
                meta.mtime = Some(at(t));
            }
            Ok(s.attr(i, uid, gid))
        });
        match done {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&mut self, _req: &Request<'_>, ino: u64, reply: ReplyData) {
        self.data(reply, |s| {
            let node = s.node(s.ino(ino)?);
            match node.kind {
                InodeKind::Symlink => Ok(node.data.to_vec()),
                _ => Err(libc::EINVAL),
            }
        });
    }

    fn mknod(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        // Regular files only: a crash state holds no devices, FIFOs or
        // sockets, and the directory materializer could not make them.
        if mode & libc::S_IFMT != libc::S_IFREG {
            return reply.error(libc::EPERM);
        }
        self.entry(reply, |s| {
            let dir = s.dir(parent)?;
            s.add(dir, name, InodeKind::File, mode & !umask)
        });
    }

    fn mkdir(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        self.entry(reply, |s| {
            let dir = s.dir(parent)?;
            s.add(dir, name, InodeKind::Dir, mode & !umask)
        });
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        self.empty(reply, |s| {
            let dir = s.dir(parent)?;
            let ino = s.child(dir, name).ok_or(libc::ENOENT)?;
            if s.node(ino).kind == InodeKind::Dir {
                return Err(libc::EISDIR);
            }
            s.unlink(dir, name);
            Ok(())
        });
    }

    fn rmdir(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        self.empty(reply, |s| {
            let dir = s.dir(parent)?;
            let ino = s.child(dir, name).ok_or(libc::ENOENT)?;
            match s.node(ino) {
                n if n.kind != InodeKind::Dir => Err(libc::ENOTDIR),
                n if !n.entries.is_empty() => Err(libc::ENOTEMPTY),
                _ => {
                    s.unlink(dir, name);
                    Ok(())
                }
            }
        });
    }

    fn symlink(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        self.entry(reply, |s| {
            let dir = s.dir(parent)?;
            let ino = s.add(dir, link_name, InodeKind::Symlink, 0o777)?;
            let node = &mut s.inodes[ino as usize];
            node.data = Contents::from_bytes(target.as_os_str().as_bytes());
            node.size = node.data.len();
            Ok(ino)
        });
    }

    fn rename(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
        reply: ReplyEmpty,
    ) {
        self.empty(reply, |s| {
            let (from, to) = (s.dir(parent)?, s.dir(newparent)?);
            s.rename((from, name), (to, newname), flags)
        });
    }

    fn link(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        newparent: u64,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        self.entry(reply, |s| {
            let (i, dir) = (s.ino(ino)?, s.dir(newparent)?);
            if s.node(i).kind == InodeKind::Dir {
                return Err(libc::EPERM);
            }
            if s.child(dir, newname).is_some() {
                return Err(libc::EEXIST);
            }
            s.link(dir, newname, i);
            Ok(i)
        });
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        match self.with(|s| s.ino(ino).map(|i| s.node(i).kind)) {
            Ok(InodeKind::Dir) => reply.error(libc::EISDIR),
            Ok(_) => reply.opened(0, 0),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset_: i64,
        size: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyData,
    ) {
        let counters = &self.counters;
        self.data(reply, |s| {
            let off = offset(offset_)?;
            let node = s.node(s.ino(ino)?);
            if node.kind == InodeKind::Dir {
                return Err(libc::EISDIR);
            }
            let n = node.size.saturating_sub(off).min(u64::from(size));
            let mut buf = vec![0u8; n as usize];
            node.data.read_into(off, &mut buf);
            counters.read.fetch_add(n, Ordering::Relaxed);
            Ok(buf)
        });
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset_: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyWrite,
    ) {
        let counters = &self.counters;
        match self.with(|s| {
            let off = offset(offset_)?;
            let i = s.ino(ino)?;
            let node = &mut s.inodes[i as usize];
            if node.kind != InodeKind::File {
                return Err(libc::EISDIR);
            }
            node.data.write(&mut node.size, off, Data::Bytes(data));
            s.touch(i);
            counters
                .written
                .fetch_add(data.len() as u64, Ordering::Relaxed);
            Ok(data.len() as u32)
        }) {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(e),
        }
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _owner: u64, reply: ReplyEmpty) {
        reply.ok();
    }

    fn fsync(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _data: bool, reply: ReplyEmpty) {
        reply.ok();
    }

    fn fsyncdir(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _d: bool, reply: ReplyEmpty) {
        reply.ok();
    }

    fn opendir(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        if ino == ROOT_NODE {
            return reply.opened(0, 0);
        }
        match self.with(|s| s.dir(ino)) {
            Ok(_) => reply.opened(0, 0),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset_: i64,
        reply: ReplyDirectory,
    ) {
        let listed = self.with(|s| {
            let dir = s.dir(ino)?;
            let me = s.node_id(dir);
            let mut all = vec![(me, FileType::Directory, b".".to_vec())];
            all.push((me, FileType::Directory, b"..".to_vec()));
            for (name, &child) in &s.node(dir).entries {
                let kind = match s.node(child).kind {
                    InodeKind::File => FileType::RegularFile,
                    InodeKind::Dir => FileType::Directory,
                    InodeKind::Symlink => FileType::Symlink,
                };
                all.push((s.node_id(child), kind, name.clone()));
            }
            Ok(all)
        });
        let all = match listed {
            Ok(all) => all,
            // Between two states the root lists nothing.
            Err(_) if ino == ROOT_NODE => Vec::new(),
            Err(e) => return reply.error(e),
        };
        let named = all
            .iter()
            .map(|(node, kind, name)| (*node, *kind, OsStr::from_bytes(name)));
        list(reply, offset_, named);
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: ReplyStatfs) {
        reply.statfs(1 << 28, 1 << 27, 1 << 27, 1 << 24, 1 << 23, 4096, 255, 4096);
    }

    fn create(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let (uid, gid) = (self.uid, self.gid);
        let made = self.with(|s| {
            let dir = s.dir(parent)?;
            let ino = match s.child(dir, name) {
                Some(_) if flags & libc::O_EXCL != 0 => return Err(libc::EEXIST),
                Some(i) => i,
                None => s.add(dir, name, InodeKind::File, mode & !umask)?,
            };
            if s.node(ino).kind == InodeKind::Dir {
                return Err(libc::EISDIR);
            }
            if flags & libc::O_TRUNC != 0 {
                let node = &mut s.inodes[ino as usize];
                node.data.truncate(&mut node.size, 0);
            }
            Ok(s.attr(ino, uid, gid))
        });
        match made {
            Ok(attr) => reply.created(&TTL, &attr, 0, 0, 0),
            Err(e) => reply.error(e),
        }
    }

    fn fallocate(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset_: i64,
        length: i64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let known =
            libc::FALLOC_FL_KEEP_SIZE | libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_ZERO_RANGE;
        if mode & !known != 0 {
            return reply.error(libc::EOPNOTSUPP);
        }
        self.empty(reply, |s| {
            let (off, len) = (offset(offset_)?, offset(length)?);
            let i = s.ino(ino)?;
            let node = &mut s.inodes[i as usize];
            if node.kind != InodeKind::File {
                return Err(libc::ENODEV);
            }
            let zero = mode & (libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_ZERO_RANGE) != 0;
            let keep = mode & libc::FALLOC_FL_KEEP_SIZE != 0;
            node.data.fallocate(&mut node.size, off, len, zero, keep);
            s.touch(i);
            Ok(())
        });
    }
}
