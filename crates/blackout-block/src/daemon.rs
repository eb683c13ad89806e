//! The FUSE daemon: one regular file, `disk.img`, served from a real image
//! file, every change logged in the order it is answered.
//!
//! Which FUSE requests carry what (a loop device on `disk.img`):
//! - WRITE: a block write (the loop device writes through its backing
//!   file; the file is opened `direct_io`, so no page cache batches or
//!   reorders them, and writeback caching is never asked for). FUSE splits
//!   a request larger than its `max_write` (at most 1 MiB), so one block
//!   write may be several records.
//! - FSYNC: a block flush (a cache flush, or the flush a FUA write becomes):
//!   loop turns it into `vfs_fsync` of the backing file. It is answered,
//!   always — a daemon answering ENOSYS once never sees another.
//! - FALLOCATE with punch-hole or zero-range: a discard or write-zeroes,
//!   logged as a zeroed range. Plain allocation changes no byte and is not
//!   logged.
//! - FLUSH is sent on every `close(2)` of the file and promises nothing
//!   durable: answered, not logged.
//!
//! A second file, `stdout` ([`OUTPUT_NAME`]), is where a workload's
//! standard output goes: each `write(2)` to it is a WRITE the daemon
//! answers in turn with the block requests, so every completed line is
//! logged as a mark exactly where it was printed (the writer waits for the
//! answer), and the bytes are kept for the caller.
//!
//! The session loop is single-threaded: requests are answered one at a
//! time, so the image always equals the logged records applied in order.
//! The thread asks to be an I/O flusher (`PR_SET_IO_FLUSHER`), so under
//! memory pressure it does not wait on the writeback it is serving; best
//! effort: the kernel refuses it without `CAP_SYS_RESOURCE`.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

pub use blackout_sys::fuse::MAX_WRITE_BYTES;
use blackout_sys::fuse::{list, Served};
use fuser::{
    FileAttr, FileType, Filesystem, KernelConfig, MountOption, ReplyAttr, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request,
};

use crate::image::zero_range;
use crate::log::LiveLog;

/// The one file the daemon serves.
///
/// # Examples
///
/// ```
/// assert_eq!(blackout_block::daemon::IMAGE_NAME, "disk.img");
/// ```
pub const IMAGE_NAME: &str = "disk.img";

/// The file a workload's standard output is written to.
///
/// # Examples
///
/// ```
/// assert_eq!(blackout_block::daemon::OUTPUT_NAME, "stdout");
/// ```
pub const OUTPUT_NAME: &str = "stdout";

/// The most standard output kept (beyond it, writes fail with EFBIG).
///
/// # Examples
///
/// ```
/// assert_eq!(blackout_block::daemon::OUTPUT_BYTES_MAX, 64 << 20);
/// ```
pub const OUTPUT_BYTES_MAX: usize = 64 << 20;

const ROOT_INO: u64 = 1;
const FILE_INO: u64 = 2;
const OUTPUT_INO: u64 = 3;
const TTL: Duration = Duration::from_secs(1);

/// The first error the daemon met serving a request (the image or the
/// data file could not be written): after one, the log no longer
/// describes the image.
type Failure = Arc<Mutex<Option<String>>>;

/// What was printed to `stdout`, and where the unfinished line starts.
#[derive(Debug, Default)]
struct Printed {
    bytes: Vec<u8>,
    line_start: usize,
}

type Output = Arc<Mutex<Printed>>;

struct ImageFs {
    image: File,
    size: u64,
    log: LiveLog,
    failure: Failure,
    output: Output,
}

impl ImageFs {
    fn attr(&self, ino: u64) -> FileAttr {
        let (kind, perm, size, nlink) = match ino {
            ROOT_INO => (FileType::Directory, 0o700, 0, 2),
            OUTPUT_INO => (FileType::RegularFile, 0o600, self.printed_len(), 1),
            _ => (FileType::RegularFile, 0o600, self.size, 1),
        };
        let now = SystemTime::now();
        FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: now,
            mtime: now,
            ctime: now,
            crtime: now,
            kind,
            perm,
            nlink,
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    fn printed(&self) -> std::sync::MutexGuard<'_, Printed> {
        self.output.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn printed_len(&self) -> u64 {
        self.printed().bytes.len() as u64
    }

    /// Appends `data` to the output (whatever the offset: standard output
    /// is a stream) and marks every line it completes.
    fn print(&self, data: &[u8]) -> Result<(), i32> {
        let mut out = self.printed();
        if out.bytes.len() + data.len() > OUTPUT_BYTES_MAX {
            return Err(libc::EFBIG);
        }
        out.bytes.extend_from_slice(data);
        while let Some(nl) = out.bytes[out.line_start..].iter().position(|b| *b == b'\n') {
            let end = out.line_start + nl;
            self.log
                .mark(&String::from_utf8_lossy(&out.bytes[out.line_start..end]));
            out.line_start = end + 1;
        }
        Ok(())
    }

    fn fail(&self, what: &str, e: &io::Error) -> i32 {
        let mut f = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        f.get_or_insert_with(|| format!("{what}: {e}"));
        libc::EIO
    }

    /// The byte range `[offset, offset + len)` if it lies on the device.
    fn range(&self, offset: i64, len: u64) -> Result<u64, i32> {
        let off = u64::try_from(offset).map_err(|_| libc::EINVAL)?;
        match off.checked_add(len) {
            Some(end) if end <= self.size => Ok(off),
            _ => Err(libc::ENOSPC),
        }
    }
}

impl Filesystem for ImageFs {
    fn init(&mut self, _req: &Request<'_>, config: &mut KernelConfig) -> Result<(), i32> {
        // Never FUSE_WRITEBACK_CACHE: it would batch and reorder writes.
        let _ = config.set_max_write(MAX_WRITE_BYTES);
        Ok(())
    }

    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        if parent == ROOT_INO && name == IMAGE_NAME {
            reply.entry(&TTL, &self.attr(FILE_INO), 0);
        } else if parent == ROOT_INO && name == OUTPUT_NAME {
            reply.entry(&Duration::ZERO, &self.attr(OUTPUT_INO), 0);
        } else {
            reply.error(libc::ENOENT);
        }
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        match ino {
            ROOT_INO | FILE_INO => reply.attr(&TTL, &self.attr(ino)),
            OUTPUT_INO => reply.attr(&Duration::ZERO, &self.attr(ino)),
            _ => reply.error(libc::ENOENT),
        }
    }

    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        // The device's size is fixed, the output only grows (a truncation,
        // as `>` asks, changes nothing); times and modes are not kept.
        match (ino, size) {
            (FILE_INO, Some(s)) if s != self.size => reply.error(libc::EPERM),
            (OUTPUT_INO, _) => reply.attr(&Duration::ZERO, &self.attr(ino)),
            (ROOT_INO | FILE_INO, _) => reply.attr(&TTL, &self.attr(ino)),
            _ => reply.error(libc::ENOENT),
        }
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        if ino == FILE_INO || ino == OUTPUT_INO {
            reply.opened(0, fuser::consts::FOPEN_DIRECT_IO);
        } else {
            reply.error(libc::EISDIR);
        }
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyData,
    ) {
        let Ok(off) = u64::try_from(offset) else {
            return reply.error(libc::EINVAL);
        };
        if ino == OUTPUT_INO {
            let out = self.printed();
            let from = (off as usize).min(out.bytes.len());
            let to = from.saturating_add(size as usize).min(out.bytes.len());
            return reply.data(&out.bytes[from..to]);
        }
        let len = u64::from(size).min(self.size.saturating_sub(off));
        let mut buf = vec![0; len as usize];
        match self.image.read_exact_at(&mut buf, off) {
            Ok(()) => reply.data(&buf),
            Err(_) => reply.error(libc::EIO),
        }
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyWrite,
    ) {
        if ino == OUTPUT_INO {
            return match self.print(data) {
                Ok(()) => reply.written(data.len() as u32),
                Err(e) => reply.error(e),
            };
        }
        let off = match self.range(offset, data.len() as u64) {
            Ok(off) => off,
            Err(e) => return reply.error(e),
        };
        if let Err(e) = self.image.write_all_at(data, off) {
            return reply.error(self.fail("writing the image", &e));
        }
        if let Err(e) = self.log.write(off, data) {
            return reply.error(self.fail("writing the data file", &e));
        }
        reply.written(data.len() as u32);
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _owner: u64, reply: ReplyEmpty) {
        reply.ok();
    }

    fn fsync(&mut self, _req: &Request<'_>, ino: u64, _fh: u64, _data: bool, reply: ReplyEmpty) {
        // The image is scratch: what matters is where the flush falls. An
        // fsync of the output is no block flush.
        if ino == FILE_INO {
            self.log.flush();
        }
        reply.ok();
    }

    fn fsyncdir(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _d: bool, reply: ReplyEmpty) {
        reply.ok();
    }

    fn fallocate(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        length: i64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        if ino != FILE_INO {
            return reply.error(libc::EOPNOTSUPP);
        }
        let zeroing = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_ZERO_RANGE;
        let allowed = zeroing | libc::FALLOC_FL_KEEP_SIZE;
        let Ok(len) = u64::try_from(length) else {
            return reply.error(libc::EINVAL);
        };
        let off = match self.range(offset, len) {
            Ok(off) => off,
            Err(e) => return reply.error(e),
        };
        if mode & !allowed != 0 {
            return reply.error(libc::EOPNOTSUPP);
        }
        if mode & zeroing != 0 {
            if let Err(e) = zero_range(&self.image, off, len) {
                return reply.error(self.fail("zeroing the image", &e));
            }
            self.log.zero(off, len);
        }
        reply.ok();
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        reply: ReplyDirectory,
    ) {
        if ino != ROOT_INO {
            return reply.error(libc::ENOTDIR);
        }
        let entries = [
            (ROOT_INO, FileType::Directory, "."),
            (ROOT_INO, FileType::Directory, ".."),
            (FILE_INO, FileType::RegularFile, IMAGE_NAME),
            (OUTPUT_INO, FileType::RegularFile, OUTPUT_NAME),
        ];
        list(reply, offset, entries);
    }
}

/// A running daemon: `disk.img` served at a mount point by a thread of
/// this process, named [`Daemon::thread_name`].
///
/// # Examples
///
/// ```no_run
/// use blackout_block::daemon::Daemon;
/// use blackout_block::log::LiveLog;
/// use std::path::Path;
/// let log = LiveLog::create(Path::new("/scratch/writes.data")).unwrap();
/// let mut daemon = Daemon::start(Path::new("/scratch/backing.img"), log, Path::new("/scratch/fuse")).unwrap();
/// // /scratch/fuse/disk.img is the device's backing file now.
/// daemon.stop().unwrap();
/// ```
#[derive(Debug)]
pub struct Daemon {
    served: Served,
    failure: Failure,
    output: Output,
}

impl Daemon {
    /// Mounts a FUSE file system at `mountpoint` (an empty directory)
    /// serving `image` (its size is the device's) as `disk.img`, every
    /// change logged to `log`, and starts the thread that answers it.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::daemon::Daemon;
    /// # use blackout_block::log::LiveLog;
    /// # use std::path::Path;
    /// # let log = LiveLog::create(Path::new("/scratch/writes.data")).unwrap();
    /// let daemon = Daemon::start(Path::new("/scratch/backing.img"), log, Path::new("/scratch/fuse"))?;
    /// assert!(Path::new("/scratch/fuse/disk.img").exists());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start(image: &Path, log: LiveLog, mountpoint: &Path) -> io::Result<Daemon> {
        let file = File::options().read(true).write(true).open(image)?;
        let size = file.metadata()?.len();
        let failure = Failure::default();
        let output = Output::default();
        let fs = ImageFs {
            image: file,
            size,
            log,
            failure: failure.clone(),
            output: output.clone(),
        };
        let options = [
            MountOption::FSName("blackout-block".into()),
            MountOption::RW,
            MountOption::NoAtime,
        ];
        // It serves the disk the kernel may be flushing to free memory: its
        // allocations must not wait on that same I/O.
        let served = Served::start(fs, mountpoint, &options, true)?;
        Ok(Daemon {
            served,
            failure,
            output,
        })
    }

    /// The name of the thread answering requests (unique in the process).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::daemon::Daemon;
    /// # fn f(daemon: &Daemon) {
    /// assert!(daemon.thread_name().starts_with("bofuse-"));
    /// # }
    /// ```
    pub fn thread_name(&self) -> &str {
        self.served.thread_name()
    }

    /// The first error the daemon met writing the image or the data file,
    /// if any: after one, the log no longer describes the image.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::daemon::Daemon;
    /// # fn f(daemon: &Daemon) {
    /// assert_eq!(daemon.failure(), None);
    /// # }
    /// ```
    pub fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Everything written to [`OUTPUT_NAME`] so far.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::daemon::Daemon;
    /// # fn f(daemon: &Daemon) {
    /// println!("{}", String::from_utf8_lossy(&daemon.output()));
    /// # }
    /// ```
    pub fn output(&self) -> Vec<u8> {
        self.output
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .bytes
            .clone()
    }

    /// Unmounts the FUSE file system and waits for the thread to end.
    /// Nothing may hold `disk.img` open any more (detach the loop device
    /// first); a mount still busy after a few seconds is detached lazily
    /// and its FUSE connection aborted, so the thread always ends.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::daemon::Daemon;
    /// # fn f(mut daemon: Daemon) -> std::io::Result<()> {
    /// daemon.stop()?;
    /// # Ok(()) }
    /// ```
    pub fn stop(&mut self) -> io::Result<()> {
        self.served.stop()
    }
}
