//! The FUSE adapter: each request of the kernel turned into a call on the
//! shared [`Live`] state (node id = inode + 1; the root is 1).
//!
//! Every change goes through this process before the reply, so the kernel
//! may cache attributes and entries for a second: nothing else changes the
//! view. File data is cached by the kernel (its writeback cache): written
//! pages reach the view, as pending writes, when the kernel writes them
//! back, always before an fsync or fdatasync of the file is answered.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use blackout_oplog::ops::{Ino, InodeKind};
use blackout_sys::fuse::{list, lock, offset, MAX_WRITE_BYTES};
use fuser::{
    FileAttr, FileType, Filesystem, KernelConfig, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr,
    Request, TimeOrNow,
};

use crate::state::{Errno, Live, SetTime};
use crate::tree::{Meta, Special};

/// How long the kernel may keep an entry or attributes.
const TTL: Duration = Duration::from_secs(1);

/// FUSE's `FUSE_HANDLE_KILLPRIV_V2` (protocol 7.33), which the FUSE
/// crate's constants stop before.
const FUSE_HANDLE_KILLPRIV_V2: u32 = 1 << 28;

/// A write's flag: the caller may not keep the file's set-ID bits.
const FUSE_WRITE_KILL_SUIDGID: u32 = 1 << 2;

/// The FUSE file system over a shared [`Live`].
#[derive(Debug)]
pub struct LiveFs {
    live: Arc<Mutex<Live>>,
    root: bool,
}

fn ino_of(node: u64) -> Ino {
    Ino::try_from(node.saturating_sub(1)).unwrap_or(Ino::MAX)
}

fn node_of(ino: Ino) -> u64 {
    u64::from(ino) + 1
}

/// The FUSE file type of file type bits (`S_IFMT` of a mode).
fn file_type(bits: u32) -> FileType {
    match bits & libc::S_IFMT {
        libc::S_IFDIR => FileType::Directory,
        libc::S_IFLNK => FileType::Symlink,
        libc::S_IFIFO => FileType::NamedPipe,
        libc::S_IFSOCK => FileType::Socket,
        libc::S_IFCHR => FileType::CharDevice,
        libc::S_IFBLK => FileType::BlockDevice,
        _ => FileType::RegularFile,
    }
}

fn time(secs: i64, nsecs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nsecs.clamp(0, 999_999_999) as u32)
    } else {
        UNIX_EPOCH
    }
}

fn attr(ino: Ino, md: &fs::Metadata) -> FileAttr {
    let kind = file_type(md.mode());
    FileAttr {
        ino: node_of(ino),
        size: md.size(),
        blocks: md.blocks(),
        atime: time(md.atime(), md.atime_nsec()),
        mtime: time(md.mtime(), md.mtime_nsec()),
        ctime: time(md.ctime(), md.ctime_nsec()),
        crtime: time(md.ctime(), md.ctime_nsec()),
        kind,
        perm: (md.mode() & 0o7777) as u16,
        nlink: md.nlink() as u32,
        uid: md.uid(),
        gid: md.gid(),
        rdev: md.rdev() as u32,
        blksize: md.blksize() as u32,
        flags: 0,
    }
}

impl LiveFs {
    /// The adapter over `live`.
    pub fn new(live: Arc<Mutex<Live>>) -> LiveFs {
        LiveFs {
            live,
            root: rustix::process::geteuid().is_root(),
        }
    }

    fn meta(&self, req: &Request<'_>, kind: InodeKind, mode: u32, target: &[u8]) -> Meta {
        let special =
            (kind == InodeKind::File && mode & libc::S_IFMT != libc::S_IFREG).then_some(Special {
                file_type: mode & libc::S_IFMT,
                rdev: 0,
            });
        let (uid, gid) = if self.root {
            (req.uid(), req.gid())
        } else {
            (
                rustix::process::geteuid().as_raw(),
                rustix::process::getegid().as_raw(),
            )
        };
        Meta {
            kind,
            mode: mode & 0o7777,
            uid,
            gid,
            target: target.to_vec(),
            special,
        }
    }

    fn entry(&self, reply: ReplyEntry, f: impl FnOnce(&mut Live) -> Result<Ino, Errno>) {
        let mut live = lock(&self.live);
        match f(&mut live).and_then(|ino| Ok((ino, live.metadata(ino, None)?))) {
            Ok((ino, md)) => reply.entry(&TTL, &attr(ino, &md), 0),
            Err(e) => reply.error(e),
        }
    }

    fn empty(&self, reply: ReplyEmpty, f: impl FnOnce(&mut Live) -> Result<(), Errno>) {
        match f(&mut lock(&self.live)) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }
}

fn set_time(t: TimeOrNow) -> SetTime {
    match t {
        TimeOrNow::Now => SetTime::Now,
        TimeOrNow::SpecificTime(t) => match t.duration_since(UNIX_EPOCH) {
            Ok(d) => SetTime::At(d.as_secs() as i64, i64::from(d.subsec_nanos())),
            Err(e) => {
                // Before the epoch: whole seconds down, nanoseconds up.
                let d = e.duration();
                let (secs, nanos) = (d.as_secs() as i64, i64::from(d.subsec_nanos()));
                if nanos == 0 {
                    SetTime::At(-secs, 0)
                } else {
                    SetTime::At(-secs - 1, 1_000_000_000 - nanos)
                }
            }
        },
    }
}

/// Answers an extended attribute's request for `size` bytes (0: how many).
fn xattr_reply(reply: ReplyXattr, size: u32, got: Result<Vec<u8>, Errno>) {
    match got {
        Err(e) => reply.error(e),
        Ok(v) if size == 0 => reply.size(v.len() as u32),
        Ok(v) if v.len() > size as usize => reply.error(libc::ERANGE),
        Ok(v) => reply.data(&v),
    }
}

impl Filesystem for LiveFs {
    fn init(&mut self, _req: &Request<'_>, config: &mut KernelConfig) -> Result<(), i32> {
        // The kernel's writeback cache, as on any file system: writes wait
        // in its page cache and reach this process (as pending writes) when
        // written back: at the latest at fsync, fdatasync and close, and
        // when `LiveMount` drains the cache before a report, a sync or a
        // crash. It merges a program's small writes into few requests.
        let _ = config.set_max_write(MAX_WRITE_BYTES);
        let _ = config.add_capabilities(fuser::consts::FUSE_WRITEBACK_CACHE);
        // This process clears the set-user-ID and set-group-ID bits a write
        // or truncate by an unprivileged caller clears: the kernel then
        // does not ask for `security.capability` before every write (a
        // round trip per write, since getxattr is served).
        let _ = config.add_capabilities(FUSE_HANDLE_KILLPRIV_V2);
        Ok(())
    }

    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        let live = lock(&self.live);
        match live.lookup(ino_of(parent), name) {
            Ok((ino, md)) => reply.entry(&TTL, &attr(ino, &md), 0),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, fh: Option<u64>, reply: ReplyAttr) {
        let live = lock(&self.live);
        match live.metadata(ino_of(ino), fh) {
            Ok(md) => reply.attr(&TTL, &attr(ino_of(ino), &md)),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &mut self,
        req: &Request<'_>,
        ino: u64,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        let times = [atime.map(set_time), mtime.map(set_time)];
        let i = ino_of(ino);
        let mut live = lock(&self.live);
        let done = live
            .setattr(i, fh, size, mode, (uid, gid), times)
            // A truncate by an unprivileged caller clears the set-ID bits
            // (the kernel leaves it to this process: see `init`).
            .and_then(|()| match size {
                Some(_) if req.uid() != 0 => live.kill_suidgid(i),
                _ => Ok(()),
            })
            .and_then(|()| live.metadata(i, fh));
        match done {
            Ok(md) => reply.attr(&TTL, &attr(i, &md)),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&mut self, _req: &Request<'_>, ino: u64, reply: ReplyData) {
        match lock(&self.live).readlink(ino_of(ino)) {
            Ok(t) => reply.data(&t),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let file_type = mode & libc::S_IFMT;
        let mut meta = self.meta(req, InodeKind::File, file_type | (mode & !umask), b"");
        match file_type {
            libc::S_IFREG => self.entry(reply, |live| {
                let (ino, fh) = live.create(ino_of(parent), name, meta, libc::O_RDONLY)?;
                live.release(fh);
                Ok(ino)
            }),
            // A fifo, a unix socket (bind), a device node: an entry like any
            // file's, durable by its directory's fsync.
            libc::S_IFIFO | libc::S_IFSOCK | libc::S_IFCHR | libc::S_IFBLK => {
                if let Some(sp) = meta.special.as_mut() {
                    sp.rdev = u64::from(rdev);
                }
                self.entry(reply, |live| live.mknod(ino_of(parent), name, meta));
            }
            _ => reply.error(libc::EINVAL),
        }
    }

    fn mkdir(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let meta = self.meta(req, InodeKind::Dir, mode & !umask, b"");
        self.entry(reply, |live| live.mkdir(ino_of(parent), name, meta));
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        self.empty(reply, |live| live.remove(ino_of(parent), name, false));
    }

    fn rmdir(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        self.empty(reply, |live| live.remove(ino_of(parent), name, true));
    }

    fn symlink(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let meta = self.meta(
            req,
            InodeKind::Symlink,
            0o777,
            target.as_os_str().as_bytes(),
        );
        self.entry(reply, |live| live.symlink(ino_of(parent), link_name, meta));
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
        self.empty(reply, |live| {
            live.rename(ino_of(parent), name, ino_of(newparent), newname, flags)
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
        self.entry(reply, |live| {
            live.link(ino_of(ino), ino_of(newparent), newname)?;
            Ok(ino_of(ino))
        });
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, flags: i32, reply: ReplyOpen) {
        match lock(&self.live).open(ino_of(ino), flags) {
            Ok(fh) => reply.opened(fh, 0),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        off: i64,
        size: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyData,
    ) {
        match offset(off).and_then(|o| lock(&self.live).read(fh, o, size)) {
            Ok(d) => reply.data(&d),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        fh: u64,
        off: i64,
        data: &[u8],
        write_flags: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyWrite,
    ) {
        let mut live = lock(&self.live);
        let written = offset(off).and_then(|o| live.write(fh, o, data));
        if written.is_ok() && write_flags & FUSE_WRITE_KILL_SUIDGID != 0 {
            let _ = live.kill_suidgid(ino_of(ino));
        }
        match written {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(e),
        }
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _owner: u64, reply: ReplyEmpty) {
        reply.ok();
    }

    fn release(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        _flags: i32,
        _lock_owner: Option<u64>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        lock(&self.live).release(fh);
        reply.ok();
    }

    fn fsync(&mut self, _req: &Request<'_>, ino: u64, fh: u64, datasync: bool, reply: ReplyEmpty) {
        self.empty(reply, |live| live.fsync(ino_of(ino), Some(fh), datasync));
    }

    fn opendir(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        match lock(&self.live).entries(ino_of(ino)) {
            Ok(_) => reply.opened(0, 0),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(&mut self, _req: &Request<'_>, ino: u64, _fh: u64, off: i64, reply: ReplyDirectory) {
        let live = lock(&self.live);
        let dir = ino_of(ino);
        let entries = match live.entries(dir) {
            Ok(e) => e,
            Err(e) => {
                reply.error(e);
                return;
            }
        };
        let dots = [
            (ino, FileType::Directory, OsStr::new(".")),
            (
                node_of(live.parent(dir)),
                FileType::Directory,
                OsStr::new(".."),
            ),
        ];
        let all = dots.into_iter().chain(
            entries
                .iter()
                .map(|(n, i, t)| (node_of(*i), file_type(*t), OsStr::from_bytes(&n.0))),
        );
        list(reply, off, all);
    }

    fn fsyncdir(&mut self, _req: &Request<'_>, ino: u64, _fh: u64, _d: bool, reply: ReplyEmpty) {
        self.empty(reply, |live| live.fsync(ino_of(ino), None, false));
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: ReplyStatfs) {
        // The disk's room and limits are the backing directory's.
        let live = lock(&self.live);
        match rustix::fs::statvfs(live.backing_root()) {
            Ok(s) => reply.statfs(
                s.f_blocks,
                s.f_bfree,
                s.f_bavail,
                s.f_files,
                s.f_ffree,
                s.f_bsize as u32,
                s.f_namemax as u32,
                s.f_frsize as u32,
            ),
            Err(e) => reply.error(e.raw_os_error()),
        }
    }

    fn setxattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        self.empty(reply, |live| live.setxattr(ino_of(ino), name, value, flags));
    }

    fn getxattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        name: &OsStr,
        size: u32,
        reply: ReplyXattr,
    ) {
        xattr_reply(reply, size, lock(&self.live).getxattr(ino_of(ino), name));
    }

    fn listxattr(&mut self, _req: &Request<'_>, ino: u64, size: u32, reply: ReplyXattr) {
        xattr_reply(reply, size, lock(&self.live).listxattr(ino_of(ino)));
    }

    fn removexattr(&mut self, _req: &Request<'_>, ino: u64, name: &OsStr, reply: ReplyEmpty) {
        self.empty(reply, |live| live.removexattr(ino_of(ino), name));
    }

    fn access(&mut self, _req: &Request<'_>, _ino: u64, _mask: i32, reply: ReplyEmpty) {
        // The kernel checks permissions (default_permissions).
        reply.ok();
    }

    fn create(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let meta = self.meta(req, InodeKind::File, mode & !umask, b"");
        let mut live = lock(&self.live);
        let made = live
            .create(ino_of(parent), name, meta, flags)
            .and_then(|(ino, fh)| Ok((ino, fh, live.metadata(ino, Some(fh))?)));
        match made {
            Ok((ino, fh, md)) => reply.created(&TTL, &attr(ino, &md), 0, fh, 0),
            Err(e) => reply.error(e),
        }
    }

    fn fallocate(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        off: i64,
        length: i64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        self.empty(reply, |live| {
            live.fallocate(fh, offset(off)?, offset(length)?, mode)
        });
    }
}
