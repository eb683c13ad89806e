//! A traced call's registers and memory → the [`Syscall`] the strace path
//! decodes from text ([`crate::decode`]), value for value.
//!
//! A call is read in two steps. When it starts ([`Entry::read`]) its
//! arguments are kept with the strings and offsets it passes by pointer:
//! the kernel may change an offset, and a call whose process ends inside
//! it can only be judged by what it named then. When it returns
//! ([`syscall`]) the rest is read: the bytes a write wrote (as many as it
//! returned) straight into the event, never as text, and the path an fd
//! names. Bytes and paths are read only where the model will look at
//! them, which the caller says through a [`Keeps`] (what the model knows
//! of an fd): the bytes of a write through an fd whose bytes are not kept
//! are not read, and an fd's path only matters when the model does not
//! know the fd.

use crate::error::{Fault, ReplayErrorKind};
use crate::syscall::{
    FallocateMode, Link, Open, OpenFlags, Outcome, Rename, Syscall, Touched, Transfer, Write,
    AT_FDCWD,
};

use super::memory;

type R<T> = Result<T, Fault>;

/// What the model knows of an fd of the calling process: `None` for an fd
/// it does not know, else whether bytes written through it are kept.
pub(super) type Keeps<'a> = &'a dyn Fn(i64) -> Option<bool>;

/// A call as it started.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    /// Its name.
    pub(super) name: &'static str,
    /// Its six argument registers.
    pub(super) args: [u64; 6],
    /// When it started, in the recording's order of calls.
    pub(super) line: u32,
    /// Its string arguments (paths, a symlink's target), in the order
    /// [`string_args`] lists them; `None` where one could not be read.
    strings: Vec<Option<Vec<u8>>>,
    /// The offsets a copy passes by pointer (`None` for NULL), read before
    /// the kernel moves them; `Err` where one could not be read.
    offsets: [Result<Option<u64>, ()>; 2],
}

/// How a call returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ret {
    /// Success, with the value.
    Ok(i64),
    /// Failure, with the errno.
    Err(i32),
    /// Interrupted, to be restarted (`ERESTARTSYS` and its kin): strace
    /// prints `= ?`, and the restarted call comes as a new one.
    Restart,
}

impl Ret {
    /// How a call that returned `rval` (`is_error` as the kernel says)
    /// returned.
    pub(super) fn of(rval: i64, is_error: bool) -> Ret {
        if !is_error {
            return Ret::Ok(rval);
        }
        match -rval {
            512..=516 => Ret::Restart,
            e => Ret::Err(i32::try_from(e).unwrap_or(libc::EINVAL)),
        }
    }

    /// The outcome an event carries.
    pub(super) fn outcome(self) -> Outcome {
        match self {
            Ret::Ok(v) => Outcome::Ok(v),
            Ret::Err(e) => Outcome::Err(errno_name(e)),
            Ret::Restart => Outcome::Unknown,
        }
    }
}

/// An errno's name as strace prints it (`ENOENT`).
pub(super) fn errno_name(e: i32) -> String {
    format!("{:?}", nix::errno::Errno::from_raw(e))
}

/// The arguments of a call that are strings, by position.
fn string_args(name: &str) -> &'static [usize] {
    match name {
        "open" | "creat" | "truncate" | "unlink" | "rmdir" | "mkdir" | "mknod" | "chdir" => &[0],
        "openat" | "openat2" | "unlinkat" | "mkdirat" | "mknodat" => &[1],
        "rename" | "link" | "symlink" => &[0, 1],
        "renameat" | "renameat2" | "linkat" => &[1, 3],
        "symlinkat" => &[0, 2],
        _ => &[],
    }
}

/// The arguments of a copy that point at offsets.
fn offset_args(name: &str) -> &'static [usize] {
    match name {
        "copy_file_range" | "splice" => &[1, 3],
        "sendfile" => &[2],
        _ => &[],
    }
}

impl Entry {
    /// A call of thread `pid` starting with `args`: its strings and offsets
    /// read now.
    pub(super) fn read(pid: i32, name: &'static str, args: [u64; 6], line: u32) -> Entry {
        let strings = string_args(name)
            .iter()
            .map(|&i| memory::read_cstr(pid, args[i]).ok())
            .collect();
        let mut offsets = [Ok(None), Ok(None)];
        for (slot, &i) in offsets.iter_mut().zip(offset_args(name)) {
            if args[i] != 0 {
                *slot = memory::read_u64(pid, args[i]).map(Some).map_err(|_| ());
            }
        }
        Entry {
            name,
            args,
            line,
            strings,
            offsets,
        }
    }

    /// Argument `i` as the C `int` it is (an fd, a dirfd, a command).
    pub(super) fn int(&self, i: usize) -> i64 {
        i64::from(self.args[i] as u32 as i32)
    }

    /// Argument `i` as a signed 64-bit value (an offset, a size).
    fn long(&self, i: usize) -> i64 {
        self.args[i] as i64
    }

    /// The string argument at position `i`.
    fn string(&self, i: usize) -> R<Vec<u8>> {
        let k = string_args(self.name).iter().position(|&a| a == i);
        match k.and_then(|k| self.strings.get(k)).cloned().flatten() {
            Some(s) => Ok(s),
            None => Err(Fault::malformed(format!(
                "argument {} is not a string: `{:#x}`",
                i + 1,
                self.args[i]
            ))),
        }
    }

    /// The offset at position `k` of [`offset_args`].
    fn offset(&self, k: usize) -> R<Option<u64>> {
        self.offsets[k]
            .map_err(|()| Fault::malformed(format!("offset {} could not be read", k + 1)))
    }

    /// A non-negative argument; `what` names it in the error.
    fn unsigned(&self, i: usize, what: &str) -> R<u64> {
        u64::try_from(self.long(i)).map_err(|_| Fault::malformed(format!("negative {what}")))
    }
}

/// The fds and paths a call that never returned names, for the calls that
/// change the directory under test (as [`crate::decode::touched`]).
pub(super) fn touched(e: &Entry) -> Touched {
    let (fds, paths): (&[usize], &[(Option<usize>, usize)]) = match e.name {
        "write" | "writev" | "pwrite64" | "pwritev" | "pwritev2" | "ftruncate" | "fallocate"
        | "vmsplice" | "sendfile" => (&[0], &[]),
        "copy_file_range" | "splice" => (&[2], &[]),
        "rename" | "link" => (&[], &[(None, 0), (None, 1)]),
        "renameat" | "renameat2" | "linkat" => (&[], &[(Some(0), 1), (Some(2), 3)]),
        "unlink" | "rmdir" | "truncate" | "mkdir" => (&[], &[(None, 0)]),
        "unlinkat" | "mkdirat" => (&[], &[(Some(0), 1)]),
        "symlink" => (&[], &[(None, 1)]),
        "symlinkat" => (&[], &[(Some(1), 2)]),
        _ => return Touched::default(),
    };
    let fds = fds.iter().map(|&i| e.int(i)).collect();
    let paths = paths
        .iter()
        .filter_map(|&(dirfd, p)| {
            let dirfd = dirfd.map_or(AT_FDCWD, |i| e.int(i));
            Some((dirfd, e.string(p).ok()?))
        })
        .collect();
    Touched { fds, paths }
}

/// What a call of thread `pid` that returned `ret` asked, read as far as
/// the model will look at it (the process is still stopped).
pub(super) fn syscall(pid: i32, e: &Entry, ret: Ret, keeps: Keeps<'_>) -> R<Syscall> {
    let name = e.name;
    let v = match ret {
        Ret::Err(_) if matches!(name, "fsync" | "fdatasync") => return Ok(sync_call(e)),
        Ret::Err(_) => return Ok(Syscall::Failed),
        Ret::Restart => return Ok(Syscall::Vanished(touched(e))),
        Ret::Ok(v) => v,
    };
    // The byte count of a successful read, write or copy.
    let n = u64::try_from(v).unwrap_or(0);
    match name {
        "open" | "openat" | "openat2" | "creat" => open_call(pid, e, v),
        "close" => Ok(Syscall::Close { fd: e.int(0) }),
        "close_range" => Ok(Syscall::CloseRange {
            first: i64::from(e.args[0] as u32),
            last: i64::from(e.args[1] as u32),
            unshare: e.args[2] & 2 != 0,
            cloexec: e.args[2] & 4 != 0,
        }),
        "dup" | "dup2" | "dup3" | "fcntl" => Ok(fd_call(e, v)),
        "read" | "readv" => Ok(Syscall::Read {
            fd: e.int(0),
            count: n,
            positioned: false,
        }),
        "preadv2" => Ok(Syscall::Read {
            fd: e.int(0),
            count: n,
            positioned: e.long(3) != -1,
        }),
        "write" | "writev" | "pwrite64" | "pwritev" | "pwritev2" | "vmsplice" => {
            write_call(pid, e, n, keeps, None).map(Syscall::Write)
        }
        "lseek" => Ok(Syscall::Seek {
            fd: e.int(0),
            offset: Some(v as u64),
        }),
        "truncate" | "ftruncate" | "fallocate" => size_call(pid, e, keeps),
        "rename" | "renameat" | "renameat2" => rename_call(e).map(Syscall::Rename),
        "unlink" | "unlinkat" | "rmdir" | "link" | "linkat" => link_call(e),
        "symlink" | "symlinkat" | "mkdir" | "mkdirat" | "mknod" | "mknodat" => create_call(e),
        "fsync" | "fdatasync" | "sync" | "syncfs" | "sync_file_range" => Ok(sync_call(e)),
        "copy_file_range" | "sendfile" | "splice" | "tee" => copy_call(pid, e, n, keeps),
        "chdir" => Ok(Syscall::Chdir { path: e.string(0)? }),
        "fchdir" => Ok(Syscall::Fchdir {
            fd: e.int(0),
            fd_path: memory::fd_path(pid, e.int(0)),
        }),
        "mmap" => Ok(mmap_call(pid, e, keeps)),
        "io_uring_setup" => Ok(Syscall::IoUringSetup),
        "pipe" | "pipe2" => pipe_call(pid, e),
        "ioctl" => Ok(ioctl_call(pid, e)),
        _ => Ok(Syscall::NoEffect),
    }
}

/// The open flags the model looks at, from the flags argument.
fn open_flags(f: u64) -> OpenFlags {
    let f = f as u32 as i32;
    let has = |bits: i32| f & bits == bits;
    let sync = has(libc::O_SYNC);
    OpenFlags {
        creat: has(libc::O_CREAT),
        excl: has(libc::O_EXCL),
        trunc: has(libc::O_TRUNC),
        append: has(libc::O_APPEND),
        tmpfile: has(libc::O_TMPFILE),
        sync,
        dsync: !sync && has(libc::O_DSYNC),
        nofollow: has(libc::O_NOFOLLOW),
        cloexec: has(libc::O_CLOEXEC),
        writable: matches!(f & libc::O_ACCMODE, libc::O_WRONLY | libc::O_RDWR),
    }
}

fn open_call(pid: i32, e: &Entry, fd: i64) -> R<Syscall> {
    let (dirfd, path, flags) = match e.name {
        "open" => (AT_FDCWD, e.string(0)?, open_flags(e.args[1])),
        "openat" => (e.int(0), e.string(1)?, open_flags(e.args[2])),
        "openat2" => {
            let how = memory::read_u64(pid, e.args[2])
                .map_err(|_| Fault::malformed("the open_how argument is not a struct"))?;
            (e.int(0), e.string(1)?, open_flags(how))
        }
        _ => {
            let creat = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC;
            (AT_FDCWD, e.string(0)?, open_flags(creat as u64))
        }
    };
    Ok(Syscall::Open(Open {
        dirfd,
        path,
        flags,
        fd,
        fd_path: memory::fd_path(pid, fd),
    }))
}

/// dup, dup2, dup3, fcntl.
fn fd_call(e: &Entry, returned: i64) -> Syscall {
    let fd = e.int(0);
    match e.name {
        "dup" => Syscall::Dup {
            old: fd,
            new: returned,
            cloexec: false,
        },
        "dup2" | "dup3" => Syscall::DupTo {
            old: fd,
            new: e.int(1),
            cloexec: e.name == "dup3" && e.int(2) & i64::from(libc::O_CLOEXEC) != 0,
        },
        _ => match e.int(1) as i32 {
            libc::F_DUPFD | libc::F_DUPFD_CLOEXEC => Syscall::Dup {
                old: fd,
                new: returned,
                cloexec: e.int(1) as i32 == libc::F_DUPFD_CLOEXEC,
            },
            libc::F_SETFL => Syscall::SetStatusFlags {
                fd,
                append: e.int(2) & i64::from(libc::O_APPEND) != 0,
            },
            libc::F_SETFD => Syscall::SetFdFlags {
                fd,
                cloexec: e.int(2) & 1 == 1,
            },
            _ => Syscall::NoEffect,
        },
    }
}

/// The path of an fd the model does not know (the only case in which it
/// reads one).
fn unknown_fd_path(pid: i32, fd: i64, keeps: Keeps<'_>) -> Option<Vec<u8>> {
    match keeps(fd) {
        None => memory::fd_path(pid, fd),
        Some(_) => None,
    }
}

/// A write the tracer made for the workload ([`super::writes`]): `ret`
/// is what it returned, `given` the bytes it was given.
pub(super) fn written(
    pid: i32,
    e: &Entry,
    ret: Ret,
    given: Vec<u8>,
    keeps: Keeps<'_>,
) -> R<Syscall> {
    match ret {
        Ret::Ok(v) => {
            let n = u64::try_from(v).unwrap_or(0);
            write_call(pid, e, n, keeps, Some(given)).map(Syscall::Write)
        }
        _ => syscall(pid, e, ret, keeps),
    }
}

/// write, writev, pwrite64, pwritev, pwritev2, vmsplice that wrote `n`
/// bytes: the bytes `given` (all the call was given) or read from the
/// process.
fn write_call(pid: i32, e: &Entry, n: u64, keeps: Keeps<'_>, given: Option<Vec<u8>>) -> R<Write> {
    let negative = || Fault::malformed("negative offset");
    let at = match e.name {
        "pwrite64" | "pwritev" => Some(u64::try_from(e.long(3)).map_err(|_| negative())?),
        "pwritev2" if e.long(3) == -1 => None,
        "pwritev2" => Some(u64::try_from(e.long(3)).map_err(|_| negative())?),
        _ => None,
    };
    // pwritev2(fd, iov, iovcnt, pos_l, pos_h, flags).
    let flags = if e.name == "pwritev2" { e.args[5] } else { 0 };
    let fd = e.int(0);
    let data = match keeps(fd) {
        Some(true) if n == 0 => Ok(Vec::new()),
        Some(true) if given.is_some() => {
            let mut bytes = given.unwrap_or_default();
            bytes.truncate(n as usize);
            Ok(bytes)
        }
        Some(true) => {
            let read = match e.name {
                "write" | "pwrite64" => memory::read_bytes(pid, e.args[1], n as usize),
                _ => memory::read_iovecs(pid, e.args[1], e.args[2], n),
            };
            read.map_err(|err| {
                Fault::new(
                    ReplayErrorKind::Truncated,
                    format!("wrote {n} bytes that could not be read from the process: {err}"),
                )
            })
        }
        _ => Err(Fault::new(
            ReplayErrorKind::Truncated,
            "the bytes were not read: the fd is not one whose bytes are kept",
        )),
    };
    Ok(Write {
        fd,
        fd_path: unknown_fd_path(pid, fd, keeps),
        count: n,
        data,
        at,
        append: flags & 0x10 != 0,
        sync: flags & 0x4 != 0,
        dsync: flags & 0x2 != 0,
    })
}

/// truncate, ftruncate, fallocate.
fn size_call(pid: i32, e: &Entry, keeps: Keeps<'_>) -> R<Syscall> {
    match e.name {
        "truncate" => Ok(Syscall::Truncate {
            path: e.string(0)?,
            size: e.unsigned(1, "size")?,
        }),
        "ftruncate" => Ok(Syscall::Ftruncate {
            fd: e.int(0),
            fd_path: unknown_fd_path(pid, e.int(0), keeps),
            size: e.unsigned(1, "size")?,
        }),
        _ => {
            let mode = e.int(1);
            let has = |bit: i64| mode & bit != 0;
            Ok(Syscall::Fallocate {
                fd: e.int(0),
                fd_path: unknown_fd_path(pid, e.int(0), keeps),
                mode: FallocateMode {
                    collapse_or_insert: has(0x08) || has(0x20),
                    punch_hole: has(0x02),
                    zero_range: has(0x10),
                    keep_size: has(0x01),
                },
                off: e.unsigned(2, "offset")?,
                len: e.unsigned(3, "length")?,
            })
        }
    }
}

/// `(from_dirfd, from, to_dirfd, to, flags)` of a rename or link.
type TwoPaths = (i64, Vec<u8>, i64, Vec<u8>, i64);

/// The two paths of a rename or link, each with its directory fd, and
/// the flags.
fn two_paths(e: &Entry) -> R<TwoPaths> {
    if matches!(e.name, "rename" | "link") {
        return Ok((AT_FDCWD, e.string(0)?, AT_FDCWD, e.string(1)?, 0));
    }
    let flags = if matches!(e.name, "renameat2" | "linkat") {
        e.int(4)
    } else {
        0
    };
    Ok((e.int(0), e.string(1)?, e.int(2), e.string(3)?, flags))
}

fn rename_call(e: &Entry) -> R<Rename> {
    let (from_dirfd, from, to_dirfd, to, flags) = two_paths(e)?;
    Ok(Rename {
        from_dirfd,
        from,
        to_dirfd,
        to,
        exchange: flags & 2 != 0,
        whiteout: flags & 4 != 0,
    })
}

/// unlink, unlinkat, rmdir, link, linkat.
fn link_call(e: &Entry) -> R<Syscall> {
    match e.name {
        "unlink" | "rmdir" => Ok(Syscall::Unlink {
            dirfd: AT_FDCWD,
            path: e.string(0)?,
        }),
        "unlinkat" => Ok(Syscall::Unlink {
            dirfd: e.int(0),
            path: e.string(1)?,
        }),
        _ => {
            let (from_dirfd, from, to_dirfd, to, flags) = two_paths(e)?;
            Ok(Syscall::Link(Link {
                from_dirfd,
                from_proc_fd: crate::decode::proc_fd(&from),
                from,
                to_dirfd,
                to,
                empty_path: flags & i64::from(libc::AT_EMPTY_PATH) != 0,
                follow: flags & i64::from(libc::AT_SYMLINK_FOLLOW) != 0,
            }))
        }
    }
}

/// symlink, symlinkat, mkdir, mkdirat, mknod, mknodat.
fn create_call(e: &Entry) -> R<Syscall> {
    match e.name {
        "symlink" => Ok(Syscall::Symlink {
            target: e.string(0)?,
            dirfd: AT_FDCWD,
            path: e.string(1)?,
        }),
        "symlinkat" => Ok(Syscall::Symlink {
            target: e.string(0)?,
            dirfd: e.int(1),
            path: e.string(2)?,
        }),
        "mkdir" => Ok(Syscall::Mkdir {
            dirfd: AT_FDCWD,
            path: e.string(0)?,
        }),
        "mkdirat" => Ok(Syscall::Mkdir {
            dirfd: e.int(0),
            path: e.string(1)?,
        }),
        _ => {
            let (dirfd, p, m) = if e.name == "mknod" {
                (AT_FDCWD, 0, 1)
            } else {
                (e.int(0), 1, 2)
            };
            let kind = e.args[m] as u32 & libc::S_IFMT;
            Ok(Syscall::Mknod {
                dirfd,
                path: e.string(p)?,
                regular: kind == 0 || kind == libc::S_IFREG,
            })
        }
    }
}

/// fsync, fdatasync, sync, syncfs, sync_file_range.
fn sync_call(e: &Entry) -> Syscall {
    let fd = e.int(0);
    match e.name {
        "sync" => Syscall::Sync,
        "syncfs" => Syscall::Syncfs { fd },
        "sync_file_range" => Syscall::SyncFileRange { fd },
        _ => Syscall::Fsync {
            fd,
            data_only: e.name == "fdatasync",
        },
    }
}

/// copy_file_range, sendfile, splice, tee.
fn copy_call(pid: i32, e: &Entry, n: u64, keeps: Keeps<'_>) -> R<Syscall> {
    if e.name == "tee" {
        return Ok(Syscall::Tee {
            in_fd: e.int(0),
            out_fd: e.int(1),
            count: n,
        });
    }
    let (in_fd, in_at, out_fd, out_at) = if e.name == "sendfile" {
        (e.int(1), e.offset(0)?, e.int(0), None)
    } else {
        (e.int(0), e.offset(0)?, e.int(2), e.offset(1)?)
    };
    Ok(Syscall::Copy(Transfer {
        in_fd,
        in_at,
        out_fd,
        out_path: unknown_fd_path(pid, out_fd, keeps),
        out_at,
        count: n,
    }))
}

fn mmap_call(pid: i32, e: &Entry, keeps: Keeps<'_>) -> Syscall {
    let fd = e.int(4);
    let shared = e.args[3] & 0x01 != 0;
    let shared_writable = shared && e.args[2] & 0x02 != 0;
    Syscall::Mmap {
        fd,
        fd_path: if shared_writable {
            unknown_fd_path(pid, fd, keeps)
        } else {
            None
        },
        shared_writable,
    }
}

fn pipe_call(pid: i32, e: &Entry) -> R<Syscall> {
    let fds = memory::read_bytes(pid, e.args[0], 8)
        .map_err(|_| Fault::malformed("the fd pair could not be read"))?;
    let fd = |i: usize| {
        i64::from(i32::from_le_bytes([
            fds[i],
            fds[i + 1],
            fds[i + 2],
            fds[i + 3],
        ]))
    };
    Ok(Syscall::Pipe {
        read_fd: fd(0),
        write_fd: fd(4),
        cloexec: e.name == "pipe2" && e.int(1) & i64::from(libc::O_CLOEXEC) != 0,
    })
}

fn ioctl_call(pid: i32, e: &Entry) -> Syscall {
    if super::filter::REFLINK_IOCTLS.contains(&(e.args[1] as u32)) {
        return Syscall::Reflink {
            fd: e.int(0),
            fd_path: memory::fd_path(pid, e.int(0)),
        };
    }
    Syscall::NoEffect
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_flags_are_straces() {
        let f = open_flags((libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_SYNC) as u64);
        assert!(f.creat && f.excl && f.writable && f.sync && !f.dsync && !f.trunc);
        let f = open_flags((libc::O_RDONLY | libc::O_DSYNC) as u64);
        assert!(f.dsync && !f.sync && !f.writable);
        assert!(open_flags(libc::O_TMPFILE as u64 | 2).tmpfile);
        assert!(!open_flags(libc::O_DIRECTORY as u64).tmpfile);
    }

    #[test]
    fn restarted_calls_vanish_and_errors_are_named() {
        assert_eq!(Ret::of(-512, true), Ret::Restart);
        assert_eq!(Ret::of(-2, true).outcome(), Outcome::Err("ENOENT".into()));
        assert_eq!(Ret::of(3, false).outcome(), Outcome::Ok(3));
    }
}
