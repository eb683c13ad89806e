//! Typed system calls: what a call asked of the kernel and what it returned,
//! as values.
//!
//! The decoder (module `decode`) turns each completed strace call into a
//! [`SyscallEvent`]; the file-system model (module `fsmodel`) applies these
//! and never sees strace's text. The split keeps the two concerns apart: how
//! strace prints an argument (escapes, annotations, flag names) is decided in
//! one place, and what a call does to the directory under test in another. A
//! recorder that is not strace would produce the same events.
//!
//! A variant carries what the model needs of its call, already decoded:
//! numbers, path bytes, flags as booleans. A call of several names (`write`,
//! `pwrite64`, `writev`) is one variant; the name itself stays in the
//! [`CallSite`], for the ops and errors that name it.

use blackout_oplog::origin::Frame;

use crate::error::Fault;

/// The value `AT_FDCWD` has on Linux: a directory fd meaning "the working
/// directory".
pub const AT_FDCWD: i64 = -100;

/// One decoded call: where it was made, what it returned, what it asked.
#[derive(Debug, Clone)]
pub struct SyscallEvent<'c> {
    /// The process, log lines, name and stack of the call.
    pub site: CallSite<'c>,
    /// What the call returned.
    pub result: Outcome,
    /// What the call asked.
    pub call: Syscall,
}

/// Where a call was made.
#[derive(Debug, Clone)]
pub struct CallSite<'c> {
    /// Thread id that made the call.
    pub pid: u32,
    /// Log line where the call started (1-based).
    pub line: u32,
    /// Log line where the call completed.
    pub end_line: u32,
    /// The system call's name as the log spells it (`pwrite64`).
    pub name: &'c str,
    /// The stack frames strace printed for the call (`-k`; empty without).
    pub stack: Vec<Frame>,
}

/// What a call returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Success, with the value.
    Ok(i64),
    /// Failure, with the errno name (`ENOENT`).
    Err(String),
    /// The call never returned (its process ended inside it).
    Unknown,
}

impl Outcome {
    /// The value of a successful call.
    pub fn value(&self) -> Option<i64> {
        match self {
            Outcome::Ok(v) => Some(*v),
            _ => None,
        }
    }
}

/// The flags of an open that the model looks at.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct OpenFlags {
    /// `O_CREAT`.
    pub creat: bool,
    /// `O_EXCL`.
    pub excl: bool,
    /// `O_TRUNC`.
    pub trunc: bool,
    /// `O_APPEND`.
    pub append: bool,
    /// `O_TMPFILE`.
    pub tmpfile: bool,
    /// `O_SYNC`.
    pub sync: bool,
    /// `O_DSYNC`.
    pub dsync: bool,
    /// `O_NOFOLLOW`.
    pub nofollow: bool,
    /// `O_CLOEXEC`.
    pub cloexec: bool,
    /// `O_WRONLY` or `O_RDWR`.
    pub writable: bool,
}

/// open, openat, openat2, creat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Open {
    /// The directory fd the path is relative to ([`AT_FDCWD`] for `open`).
    pub dirfd: i64,
    /// The path, as the program passed it.
    pub path: Vec<u8>,
    /// The flags (`creat` implies `O_WRONLY|O_CREAT|O_TRUNC`).
    pub flags: OpenFlags,
    /// The fd the call returned.
    pub fd: i64,
    /// The absolute path strace showed for the returned fd (`-y`), if any.
    pub fd_path: Option<Vec<u8>>,
}

/// write, writev, pwrite64, pwritev, pwritev2, vmsplice; also the writing
/// half of a copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    /// The fd written to.
    pub fd: i64,
    /// The path strace showed for the fd (`-y`), if any.
    pub fd_path: Option<Vec<u8>>,
    /// The byte count the call returned.
    pub count: u64,
    /// The bytes written (`count` of them), or why the log does not hold
    /// them; only an error when the bytes matter (a file inside the directory
    /// under test, standard output, a pipe).
    pub data: Result<Vec<u8>, Fault>,
    /// The explicit offset (pwrite), `None` to write at the fd's offset.
    pub at: Option<u64>,
    /// `RWF_APPEND`: write at the end of the file whatever the fd says.
    pub append: bool,
    /// `RWF_SYNC`: the write is durable, data and metadata, when it returns.
    pub sync: bool,
    /// `RWF_DSYNC`: the write's data is durable when it returns.
    pub dsync: bool,
}

/// copy_file_range, sendfile, splice: bytes from one fd to another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfer {
    /// The fd read from.
    pub in_fd: i64,
    /// The explicit offset read at, `None` to read at the fd's offset.
    pub in_at: Option<u64>,
    /// The fd written to.
    pub out_fd: i64,
    /// The path strace showed for the output fd (`-y`), if any.
    pub out_path: Option<Vec<u8>>,
    /// The explicit offset written at, `None` to write at the fd's offset.
    pub out_at: Option<u64>,
    /// The byte count the call returned.
    pub count: u64,
}

/// The mode bits of a fallocate that the model looks at.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FallocateMode {
    /// `FALLOC_FL_COLLAPSE_RANGE` or `FALLOC_FL_INSERT_RANGE`.
    pub collapse_or_insert: bool,
    /// `FALLOC_FL_PUNCH_HOLE`.
    pub punch_hole: bool,
    /// `FALLOC_FL_ZERO_RANGE`.
    pub zero_range: bool,
    /// `FALLOC_FL_KEEP_SIZE`.
    pub keep_size: bool,
}

/// rename, renameat, renameat2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rename {
    /// The directory fd `from` is relative to.
    pub from_dirfd: i64,
    /// The path renamed.
    pub from: Vec<u8>,
    /// The directory fd `to` is relative to.
    pub to_dirfd: i64,
    /// The new path.
    pub to: Vec<u8>,
    /// `RENAME_EXCHANGE`.
    pub exchange: bool,
    /// `RENAME_WHITEOUT`.
    pub whiteout: bool,
}

/// Whose fd table a `/proc/…/fd/N` path looks in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcFdOwner {
    /// `/proc/self` or `/proc/thread-self`: the calling process.
    Caller,
    /// `/proc/PID`.
    Pid(u32),
}

/// A `/proc/self/fd/N` (or `/proc/PID/fd/N`) path: the file fd `N` has open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcFd {
    /// The process whose fd it is.
    pub owner: ProcFdOwner,
    /// The fd.
    pub fd: i64,
}

/// link, linkat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The directory fd `from` is relative to (the file itself with
    /// `AT_EMPTY_PATH` and an empty `from`).
    pub from_dirfd: i64,
    /// The existing path.
    pub from: Vec<u8>,
    /// `from` read as a `/proc/…/fd/N` path, when it is one.
    pub from_proc_fd: Option<ProcFd>,
    /// The directory fd `to` is relative to.
    pub to_dirfd: i64,
    /// The new path.
    pub to: Vec<u8>,
    /// `AT_EMPTY_PATH`.
    pub empty_path: bool,
    /// `AT_SYMLINK_FOLLOW`.
    pub follow: bool,
}

/// What a clone, clone3, fork or vfork made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spawn {
    /// The child's id, when the call returned one.
    pub child: Option<u32>,
    /// `CLONE_FILES`: the child shares the fd table.
    pub share_files: bool,
    /// `CLONE_FS`: the child shares the working directory.
    pub share_fs: bool,
}

/// What a call that never returned names: enough to tell whether it may have
/// changed the directory under test. Arguments that do not decode are left
/// out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Touched {
    /// Fds it writes through.
    pub fds: Vec<i64>,
    /// Paths it changes, each with the directory fd it is relative to.
    pub paths: Vec<(i64, Vec<u8>)>,
}

/// A system call the model handles, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Syscall {
    /// open, openat, openat2, creat.
    Open(Open),
    /// close.
    Close {
        /// The fd.
        fd: i64,
    },
    /// close_range.
    CloseRange {
        /// The first fd.
        first: i64,
        /// The last fd (`~0U` is `u32::MAX`).
        last: i64,
        /// `CLOSE_RANGE_UNSHARE`: the process gets its own fd table first.
        unshare: bool,
        /// `CLOSE_RANGE_CLOEXEC`: the fds are marked close-on-exec, not
        /// closed.
        cloexec: bool,
    },
    /// dup, fcntl `F_DUPFD`/`F_DUPFD_CLOEXEC`: a copy at the fd the call
    /// returned.
    Dup {
        /// The fd copied.
        old: i64,
        /// The new fd (-1 when the call returned none).
        new: i64,
        /// The new fd is close-on-exec.
        cloexec: bool,
    },
    /// dup2, dup3: a copy at a chosen fd; nothing when the two are equal.
    DupTo {
        /// The fd copied.
        old: i64,
        /// The new fd.
        new: i64,
        /// `O_CLOEXEC` (dup3).
        cloexec: bool,
    },
    /// fcntl `F_SETFL`.
    SetStatusFlags {
        /// The fd.
        fd: i64,
        /// `O_APPEND` is set.
        append: bool,
    },
    /// fcntl `F_SETFD`.
    SetFdFlags {
        /// The fd.
        fd: i64,
        /// `FD_CLOEXEC` is set.
        cloexec: bool,
    },
    /// read, readv, preadv2.
    Read {
        /// The fd.
        fd: i64,
        /// The byte count the call returned.
        count: u64,
        /// Read at an explicit offset: the fd's offset does not move.
        positioned: bool,
    },
    /// write, writev, pwrite64, pwritev, pwritev2, vmsplice.
    Write(Write),
    /// lseek.
    Seek {
        /// The fd.
        fd: i64,
        /// The offset the call returned.
        offset: Option<u64>,
    },
    /// truncate.
    Truncate {
        /// The path.
        path: Vec<u8>,
        /// The new size.
        size: u64,
    },
    /// ftruncate.
    Ftruncate {
        /// The fd.
        fd: i64,
        /// The path strace showed for the fd (`-y`), if any.
        fd_path: Option<Vec<u8>>,
        /// The new size.
        size: u64,
    },
    /// fallocate.
    Fallocate {
        /// The fd.
        fd: i64,
        /// The path strace showed for the fd (`-y`), if any.
        fd_path: Option<Vec<u8>>,
        /// The mode.
        mode: FallocateMode,
        /// Start of the range.
        off: u64,
        /// Length of the range.
        len: u64,
    },
    /// rename, renameat, renameat2.
    Rename(Rename),
    /// unlink, unlinkat, rmdir.
    Unlink {
        /// The directory fd the path is relative to.
        dirfd: i64,
        /// The path.
        path: Vec<u8>,
    },
    /// link, linkat.
    Link(Link),
    /// symlink, symlinkat.
    Symlink {
        /// What the link points at.
        target: Vec<u8>,
        /// The directory fd the path is relative to.
        dirfd: i64,
        /// The path of the link.
        path: Vec<u8>,
    },
    /// mkdir, mkdirat.
    Mkdir {
        /// The directory fd the path is relative to.
        dirfd: i64,
        /// The path.
        path: Vec<u8>,
    },
    /// mknod, mknodat.
    Mknod {
        /// The directory fd the path is relative to.
        dirfd: i64,
        /// The path.
        path: Vec<u8>,
        /// The node is a regular file (not a device, fifo or socket).
        regular: bool,
    },
    /// fsync, fdatasync (also when it failed: a failed sync is an op).
    Fsync {
        /// The fd.
        fd: i64,
        /// fdatasync.
        data_only: bool,
    },
    /// sync.
    Sync,
    /// syncfs.
    Syncfs {
        /// An fd on the file system.
        fd: i64,
    },
    /// sync_file_range.
    SyncFileRange {
        /// The fd.
        fd: i64,
    },
    /// copy_file_range, sendfile, splice.
    Copy(Transfer),
    /// tee: bytes from one pipe to another, left in the first.
    Tee {
        /// The fd read from.
        in_fd: i64,
        /// The fd written to.
        out_fd: i64,
        /// The byte count the call returned.
        count: u64,
    },
    /// clone, clone3, fork, vfork.
    Clone(Spawn),
    /// execve, execveat.
    Exec,
    /// chdir.
    Chdir {
        /// The path.
        path: Vec<u8>,
    },
    /// fchdir.
    Fchdir {
        /// The fd.
        fd: i64,
        /// The path strace showed for the fd (`-y`), if any.
        fd_path: Option<Vec<u8>>,
    },
    /// mmap.
    Mmap {
        /// The fd mapped.
        fd: i64,
        /// The path strace showed for the fd (`-y`), if any; only decoded
        /// for a shared writable mapping.
        fd_path: Option<Vec<u8>>,
        /// `MAP_SHARED` (or `MAP_SHARED_VALIDATE`) with `PROT_WRITE`.
        shared_writable: bool,
    },
    /// io_uring_setup.
    IoUringSetup,
    /// pipe, pipe2.
    Pipe {
        /// The read end.
        read_fd: i64,
        /// The write end.
        write_fd: i64,
        /// `O_CLOEXEC`.
        cloexec: bool,
    },
    /// ioctl `FICLONE`, `FICLONERANGE`, `FIDEDUPERANGE`: extents shared into
    /// the fd's file.
    Reflink {
        /// The fd the extents go to.
        fd: i64,
        /// The path strace showed for the fd (`-y`), if any.
        fd_path: Option<Vec<u8>>,
    },
    /// A call the model has nothing to do for (an fcntl or ioctl command it
    /// does not look at).
    NoEffect,
    /// A call that failed (other than a sync): nothing changed. Its arguments
    /// are not decoded, as a failed call's may not be readable.
    Failed,
    /// A call that returned no result (its process ended inside it), other
    /// than an execve: what it names.
    Vanished(Touched),
}
