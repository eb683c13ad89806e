//! Decoding: a completed strace call → a typed [`SyscallEvent`].
//!
//! All reading of strace's argument text happens here: numbers, escaped
//! strings and iovecs, flag names, `-y` path annotations. The file-system
//! model ([`crate::fsmodel`]) gets values and never sees the text, so a
//! change in how strace prints a call is a change to this module alone.
//!
//! A call is decoded as far as the model will look at it, and in the order
//! the model looks: a failed call's arguments are not decoded (they may be
//! addresses, not strings), and bytes a write carries are decoded up front
//! but a failure to decode them is kept in the event, as it only matters when
//! the bytes land somewhere replay keeps them.

use blackout_oplog::origin::Frame;
use memchr::memmem;

use crate::error::{Fault, ReplayErrorKind};
use crate::strace::{self, Call, Ret};
use crate::syscall::{
    CallSite, FallocateMode, Link, Open, OpenFlags, Outcome, ProcFd, ProcFdOwner, Rename, Spawn,
    Syscall, SyscallEvent, Touched, Transfer, Write, AT_FDCWD,
};

type R<T> = Result<T, Fault>;

/// Decodes a completed call. Fails when an argument the model needs is not
/// what strace prints for the call (or was cut short by strace).
pub fn decode<'c>(c: &'c Call<'_>) -> R<SyscallEvent<'c>> {
    let ret = c.ret();
    let call = syscall(c, &ret)?;
    Ok(SyscallEvent {
        site: site(c),
        result: outcome(&ret),
        call,
    })
}

/// Where the call was made, with its stack frames parsed.
fn site<'c>(c: &'c Call<'_>) -> CallSite<'c> {
    let stack: Vec<Frame> = c
        .stack
        .iter()
        .filter_map(|l| crate::stacks::parse_frame(l))
        .collect();
    CallSite {
        pid: c.pid,
        line: c.line,
        end_line: c.end_line,
        name: c.name_str(),
        stack,
    }
}

fn outcome(ret: &Ret<'_>) -> Outcome {
    match ret {
        Ret::Ok(v, _) => Outcome::Ok(*v),
        Ret::Err(e) => Outcome::Err(String::from_utf8_lossy(e).into_owned()),
        Ret::Unknown => Outcome::Unknown,
    }
}

fn is_spawn(name: &[u8]) -> bool {
    matches!(name, b"clone" | b"clone3" | b"fork" | b"vfork")
}

/// What a clone, clone3, fork or vfork made; `None` for any other call.
pub fn spawn(c: &Call<'_>) -> Option<Spawn> {
    let name = c.name();
    if !is_spawn(name) {
        return None;
    }
    let args = c.args_text();
    let flag = |f: &[u8]| memmem::find(args, f).is_some();
    let threadish = matches!(name, b"clone" | b"clone3");
    Some(Spawn {
        child: c.ret().ok().and_then(|v| u32::try_from(v).ok()),
        share_files: threadish && flag(b"CLONE_FILES"),
        share_fs: threadish && flag(b"CLONE_FS"),
    })
}

/// The fds and paths a call that never returned names, for the calls that
/// change the directory under test; nothing for the others. Arguments that
/// do not decode are left out.
pub fn touched(c: &Call<'_>) -> Touched {
    // (fd argument positions, (dirfd, path) argument positions)
    let (fds, paths): (&[usize], &[(Option<usize>, usize)]) = match c.name() {
        b"write" | b"writev" | b"pwrite64" | b"pwritev" | b"pwritev2" | b"ftruncate"
        | b"fallocate" | b"vmsplice" => (&[0], &[]),
        b"copy_file_range" | b"splice" => (&[2], &[]),
        b"sendfile" | b"sendfile64" => (&[0], &[]),
        b"rename" | b"link" => (&[], &[(None, 0), (None, 1)]),
        b"renameat" | b"renameat2" | b"linkat" => (&[], &[(Some(0), 1), (Some(2), 3)]),
        b"unlink" | b"rmdir" | b"truncate" | b"mkdir" => (&[], &[(None, 0)]),
        b"unlinkat" | b"mkdirat" => (&[], &[(Some(0), 1)]),
        b"symlink" => (&[], &[(None, 1)]),
        b"symlinkat" => (&[], &[(Some(1), 2)]),
        _ => return Touched::default(),
    };
    let args = c.args();
    let int = |i: usize| args.get(i).and_then(|a| strace::parse_int(a));
    let fds = fds.iter().filter_map(|&i| int(i)).collect();
    let paths = paths
        .iter()
        .filter_map(|&(dirfd, p)| {
            let dirfd = match dirfd {
                Some(i) => int(i)?,
                None => AT_FDCWD,
            };
            let path = strace::decode_string(args.get(p)?)?;
            Some((dirfd, path.bytes))
        })
        .collect();
    Touched { fds, paths }
}

// ---- arguments ------------------------------------------------------------

fn arg<'a>(args: &[&'a [u8]], i: usize) -> R<&'a [u8]> {
    args.get(i)
        .copied()
        .ok_or_else(|| Fault::malformed(format!("argument {} is missing", i + 1)))
}

fn int_arg(args: &[&[u8]], i: usize) -> R<i64> {
    let a = arg(args, i)?;
    if a.starts_with(b"~") {
        // close_range's `~0U`.
        return Ok(i64::from(u32::MAX));
    }
    strace::parse_int(a).ok_or_else(|| {
        Fault::malformed(format!(
            "argument {} is not a number: `{}`",
            i + 1,
            strace::show(a)
        ))
    })
}

fn str_arg(args: &[&[u8]], i: usize) -> R<Vec<u8>> {
    let a = arg(args, i)?;
    let d = strace::decode_string(a).ok_or_else(|| {
        Fault::malformed(format!(
            "argument {} is not a string: `{}`",
            i + 1,
            strace::show(a)
        ))
    })?;
    if d.truncated {
        return Err(Fault::new(
            ReplayErrorKind::Truncated,
            format!(
                "argument {} was cut short by strace's string limit (-s)",
                i + 1
            ),
        ));
    }
    // Every string argument replay reads is a path or a symlink target: a
    // C string, which cannot hold a NUL (a hostile or damaged log can).
    if d.bytes.contains(&0) {
        return Err(Fault::malformed(format!(
            "argument {} holds a NUL byte, which no path can",
            i + 1
        )));
    }
    Ok(d.bytes)
}

/// A non-negative number argument; `what` names it in the error.
fn unsigned_arg(args: &[&[u8]], i: usize, what: &str) -> R<u64> {
    u64::try_from(int_arg(args, i)?).map_err(|_| Fault::malformed(format!("negative {what}")))
}

/// The value inside `[N]` or `[N => M]` (an in/out offset), `None` for NULL.
fn offset_arg(args: &[&[u8]], i: usize) -> R<Option<u64>> {
    let a = arg(args, i)?;
    if a == b"NULL" {
        return Ok(None);
    }
    let not_offset = || {
        Fault::malformed(format!(
            "argument {} is not an offset: `{}`",
            i + 1,
            strace::show(a)
        ))
    };
    let inner = a.strip_prefix(b"[").ok_or_else(not_offset)?;
    let v = strace::parse_int(inner).ok_or_else(not_offset)?;
    u64::try_from(v)
        .map(Some)
        .map_err(|_| Fault::malformed(format!("argument {} is a negative offset", i + 1)))
}

/// An fd argument read with `what` naming it in the error (`the fd`).
fn fd_arg(a: &[u8], what: &str) -> R<i64> {
    strace::parse_int(a).ok_or_else(|| Fault::malformed(format!("{what} is not a number")))
}

/// The path strace's `-y` annotation shows for an fd argument, decoded.
fn fd_path(a: &[u8]) -> Option<Vec<u8>> {
    strace::arg_annotation(a).and_then(strace::decode_annotation)
}

fn data_arg(a: &[u8], n: u64) -> R<Vec<u8>> {
    let d = strace::decode_string(a).ok_or_else(|| {
        Fault::malformed(format!(
            "the data argument is not a string: `{}`",
            strace::show(a)
        ))
    })?;
    take(d, n)
}

fn iov_arg(a: &[u8], n: u64) -> R<Vec<u8>> {
    let d = strace::decode_iovecs(a).ok_or_else(|| {
        Fault::malformed(format!(
            "the iovec argument is not understood: `{}`",
            strace::show(a)
        ))
    })?;
    take(d, n)
}

fn take(mut d: strace::Decoded, n: u64) -> R<Vec<u8>> {
    if (d.bytes.len() as u64) < n {
        return Err(if d.truncated {
            Fault::new(
                ReplayErrorKind::Truncated,
                format!(
                    "wrote {n} bytes but strace kept only {} (raise its string limit, -s)",
                    d.bytes.len()
                ),
            )
        } else {
            Fault::malformed(format!(
                "returned {n} but its data holds only {} bytes",
                d.bytes.len()
            ))
        });
    }
    d.bytes.truncate(n as usize);
    Ok(d.bytes)
}

/// The open flags named in a flags argument (`O_WRONLY|O_CREAT`).
fn open_flags(arg: &[u8]) -> OpenFlags {
    let has = |f: &[u8]| strace::has_flag(arg, f);
    OpenFlags {
        creat: has(b"O_CREAT"),
        excl: has(b"O_EXCL"),
        trunc: has(b"O_TRUNC"),
        append: has(b"O_APPEND"),
        tmpfile: has(b"O_TMPFILE"),
        sync: has(b"O_SYNC"),
        dsync: has(b"O_DSYNC"),
        nofollow: has(b"O_NOFOLLOW"),
        cloexec: has(b"O_CLOEXEC"),
        writable: has(b"O_WRONLY") || has(b"O_RDWR"),
    }
}

/// The fd a `/proc/self/fd/N` (or `/proc/PID/fd/N`) path names.
pub(crate) fn proc_fd(path: &[u8]) -> Option<ProcFd> {
    let rest = path.strip_prefix(b"/proc/")?;
    let mut parts = rest.split(|&b| b == b'/');
    let who = parts.next()?;
    if parts.next()? != b"fd" {
        return None;
    }
    let fd = strace::parse_int(parts.next()?)?;
    if parts.next().is_some() {
        return None;
    }
    let owner = match who {
        b"self" | b"thread-self" => ProcFdOwner::Caller,
        n => ProcFdOwner::Pid(std::str::from_utf8(n).ok()?.parse().ok()?),
    };
    Some(ProcFd { owner, fd })
}

// ---- calls ----------------------------------------------------------------

/// What the call asked, decoded as far as the model looks at it.
fn syscall(c: &Call<'_>, ret: &Ret<'_>) -> R<Syscall> {
    let name = c.name();
    // Fork-like calls are handled whether or not they succeeded.
    if let Some(s) = spawn(c) {
        return Ok(Syscall::Clone(s));
    }
    if let Ret::Err(_) = ret {
        if matches!(name, b"fsync" | b"fdatasync") {
            return sync_call(name, &c.args());
        }
        return Ok(Syscall::Failed);
    }
    if *ret == Ret::Unknown && !matches!(name, b"execve" | b"execveat") {
        return Ok(Syscall::Vanished(touched(c)));
    }
    let args = c.args();
    // The byte count of a successful read, write or copy.
    let n = ret.ok().and_then(|v| u64::try_from(v).ok()).unwrap_or(0);
    match name {
        b"open" | b"openat" | b"openat2" | b"creat" => open_call(name, &args, ret),
        b"close" | b"close_range" => close_call(name, &args),
        b"dup" | b"dup2" | b"dup3" | b"fcntl" | b"fcntl64" => fd_call(name, &args, ret),
        b"read" | b"readv" | b"preadv2" => read_call(name, &args, n),
        b"write" | b"writev" | b"pwrite64" | b"pwritev" | b"pwritev2" | b"vmsplice" => {
            write_call(name, &args, n).map(Syscall::Write)
        }
        b"lseek" => Ok(Syscall::Seek {
            fd: int_arg(&args, 0)?,
            offset: ret.ok().map(|v| v as u64),
        }),
        b"truncate" | b"ftruncate" | b"fallocate" => size_call(name, &args),
        b"rename" | b"renameat" | b"renameat2" => rename_call(name, &args).map(Syscall::Rename),
        b"unlink" | b"unlinkat" | b"rmdir" | b"link" | b"linkat" => link_call(name, &args),
        b"symlink" | b"symlinkat" | b"mkdir" | b"mkdirat" | b"mknod" | b"mknodat" => {
            create_call(name, &args)
        }
        b"fsync" | b"fdatasync" | b"sync" | b"syncfs" | b"sync_file_range" => {
            sync_call(name, &args)
        }
        b"copy_file_range" | b"sendfile" | b"sendfile64" | b"splice" | b"tee" => {
            copy_call(name, &args, n)
        }
        b"execve" | b"execveat" => Ok(Syscall::Exec),
        b"chdir" | b"fchdir" => chdir_call(name, &args),
        b"mmap" => mmap_call(&args),
        b"io_uring_setup" => Ok(Syscall::IoUringSetup),
        b"pipe" | b"pipe2" => pipe_call(&args),
        b"ioctl" => ioctl_call(&args),
        _ => Ok(Syscall::NoEffect),
    }
}

fn open_call(name: &[u8], args: &[&[u8]], ret: &Ret<'_>) -> R<Syscall> {
    let (dirfd, path, flags) = match name {
        b"open" => {
            let path = str_arg(args, 0)?;
            (AT_FDCWD, path, open_flags(arg(args, 1)?))
        }
        b"openat" => {
            let dirfd = int_arg(args, 0)?;
            let path = str_arg(args, 1)?;
            (dirfd, path, open_flags(arg(args, 2)?))
        }
        b"openat2" => {
            let dirfd = int_arg(args, 0)?;
            let path = str_arg(args, 1)?;
            let how = arg(args, 2)?;
            let inner = how
                .strip_prefix(b"{")
                .and_then(|h| h.strip_suffix(b"}"))
                .ok_or_else(|| Fault::malformed("the open_how argument is not a struct"))?;
            let flags = strace::split_args(inner)
                .into_iter()
                .find_map(|f| f.strip_prefix(b"flags="))
                .unwrap_or(b"O_RDONLY");
            (dirfd, path, open_flags(flags))
        }
        _ => {
            let path = str_arg(args, 0)?;
            (AT_FDCWD, path, open_flags(b"O_WRONLY|O_CREAT|O_TRUNC"))
        }
    };
    let Ret::Ok(fd, ann) = ret else {
        return Ok(Syscall::NoEffect);
    };
    Ok(Syscall::Open(Open {
        dirfd,
        path,
        flags,
        fd: *fd,
        fd_path: ann.and_then(strace::decode_annotation),
    }))
}

fn close_call(name: &[u8], args: &[&[u8]]) -> R<Syscall> {
    let first = int_arg(args, 0)?;
    if name == b"close" {
        return Ok(Syscall::Close { fd: first });
    }
    let last = int_arg(args, 1)?;
    let flags = arg(args, 2)?;
    Ok(Syscall::CloseRange {
        first,
        last,
        unshare: strace::has_flag(flags, b"CLOSE_RANGE_UNSHARE"),
        cloexec: strace::has_flag(flags, b"CLOSE_RANGE_CLOEXEC"),
    })
}

/// dup, dup2, dup3, fcntl.
fn fd_call(name: &[u8], args: &[&[u8]], ret: &Ret<'_>) -> R<Syscall> {
    let fd = int_arg(args, 0)?;
    let returned = ret.ok().unwrap_or(-1);
    match name {
        b"dup" => Ok(Syscall::Dup {
            old: fd,
            new: returned,
            cloexec: false,
        }),
        b"dup2" | b"dup3" => {
            let new = int_arg(args, 1)?;
            let cloexec = name == b"dup3" && strace::has_flag(arg(args, 2)?, b"O_CLOEXEC");
            Ok(Syscall::DupTo {
                old: fd,
                new,
                cloexec,
            })
        }
        _ => {
            let cmd = arg(args, 1)?;
            match cmd {
                b"F_DUPFD" | b"F_DUPFD_CLOEXEC" => Ok(Syscall::Dup {
                    old: fd,
                    new: returned,
                    cloexec: cmd == b"F_DUPFD_CLOEXEC",
                }),
                b"F_SETFL" => Ok(Syscall::SetStatusFlags {
                    fd,
                    append: strace::has_flag(arg(args, 2)?, b"O_APPEND"),
                }),
                b"F_SETFD" => {
                    let a = arg(args, 2)?;
                    let cloexec = strace::has_flag(a, b"FD_CLOEXEC")
                        || strace::parse_int(a).unwrap_or(0) & 1 == 1;
                    Ok(Syscall::SetFdFlags { fd, cloexec })
                }
                _ => Ok(Syscall::NoEffect),
            }
        }
    }
}

fn read_call(name: &[u8], args: &[&[u8]], n: u64) -> R<Syscall> {
    let fd = int_arg(args, 0)?;
    let positioned = name == b"preadv2" && int_arg(args, 3)? != -1;
    Ok(Syscall::Read {
        fd,
        count: n,
        positioned,
    })
}

/// write, writev, pwrite64, pwritev, pwritev2, vmsplice.
fn write_call(name: &[u8], args: &[&[u8]], n: u64) -> R<Write> {
    let fd_text = arg(args, 0)?;
    let data_text = arg(args, 1)?;
    let negative = || Fault::malformed("negative offset");
    let at = match name {
        b"pwrite64" => Some(u64::try_from(int_arg(args, 3)?).map_err(|_| negative())?),
        b"pwritev" | b"pwritev2" => {
            let off = int_arg(args, 3)?;
            if off == -1 && name == b"pwritev2" {
                None
            } else {
                Some(u64::try_from(off).map_err(|_| negative())?)
            }
        }
        _ => None,
    };
    let flags: &[u8] = match name {
        b"pwritev2" => args.get(4).copied().unwrap_or(b"0"),
        _ => b"0",
    };
    let fd = fd_arg(fd_text, "the fd")?;
    let data = match name {
        b"write" | b"pwrite64" => data_arg(data_text, n),
        _ => iov_arg(data_text, n),
    };
    Ok(Write {
        fd,
        fd_path: fd_path(fd_text),
        count: n,
        data,
        at,
        append: strace::has_flag(flags, b"RWF_APPEND"),
        sync: strace::has_flag(flags, b"RWF_SYNC"),
        dsync: strace::has_flag(flags, b"RWF_DSYNC"),
    })
}

/// truncate, ftruncate, fallocate.
fn size_call(name: &[u8], args: &[&[u8]]) -> R<Syscall> {
    match name {
        b"truncate" => {
            let path = str_arg(args, 0)?;
            let size = unsigned_arg(args, 1, "size")?;
            Ok(Syscall::Truncate { path, size })
        }
        b"ftruncate" => {
            let fd = int_arg(args, 0)?;
            let size = unsigned_arg(args, 1, "size")?;
            Ok(Syscall::Ftruncate {
                fd,
                fd_path: fd_path(arg(args, 0)?),
                size,
            })
        }
        _ => {
            let fd = int_arg(args, 0)?;
            let mode = arg(args, 1)?;
            let off = unsigned_arg(args, 2, "offset")?;
            let len = unsigned_arg(args, 3, "length")?;
            let has = |f: &[u8]| strace::has_flag(mode, f);
            Ok(Syscall::Fallocate {
                fd,
                fd_path: fd_path(arg(args, 0)?),
                mode: FallocateMode {
                    collapse_or_insert: has(b"FALLOC_FL_COLLAPSE_RANGE")
                        || has(b"FALLOC_FL_INSERT_RANGE"),
                    punch_hole: has(b"FALLOC_FL_PUNCH_HOLE"),
                    zero_range: has(b"FALLOC_FL_ZERO_RANGE"),
                    keep_size: has(b"FALLOC_FL_KEEP_SIZE"),
                },
                off,
                len,
            })
        }
    }
}

/// Two paths, each with its directory fd, and a flags argument.
struct TwoPaths<'a> {
    from_dirfd: i64,
    from: Vec<u8>,
    to_dirfd: i64,
    to: Vec<u8>,
    flags: &'a [u8],
}

/// `rename(from, to)` or `renameat(fd1, from, fd2, to, flags)` (and the
/// same for link and linkat).
fn two_paths<'a>(name: &[u8], args: &[&'a [u8]]) -> R<TwoPaths<'a>> {
    if matches!(name, b"rename" | b"link") {
        let from = str_arg(args, 0)?;
        let to = str_arg(args, 1)?;
        return Ok(TwoPaths {
            from_dirfd: AT_FDCWD,
            from,
            to_dirfd: AT_FDCWD,
            to,
            flags: b"0",
        });
    }
    let from_dirfd = int_arg(args, 0)?;
    let from = str_arg(args, 1)?;
    let to_dirfd = int_arg(args, 2)?;
    let to = str_arg(args, 3)?;
    let flags = args.get(4).copied().unwrap_or(b"0");
    Ok(TwoPaths {
        from_dirfd,
        from,
        to_dirfd,
        to,
        flags,
    })
}

fn rename_call(name: &[u8], args: &[&[u8]]) -> R<Rename> {
    let p = two_paths(name, args)?;
    Ok(Rename {
        from_dirfd: p.from_dirfd,
        from: p.from,
        to_dirfd: p.to_dirfd,
        to: p.to,
        exchange: strace::has_flag(p.flags, b"RENAME_EXCHANGE"),
        whiteout: strace::has_flag(p.flags, b"RENAME_WHITEOUT"),
    })
}

/// unlink, unlinkat, rmdir, link, linkat.
fn link_call(name: &[u8], args: &[&[u8]]) -> R<Syscall> {
    match name {
        b"unlink" | b"rmdir" => Ok(Syscall::Unlink {
            dirfd: AT_FDCWD,
            path: str_arg(args, 0)?,
        }),
        b"unlinkat" => {
            let dirfd = int_arg(args, 0)?;
            let path = str_arg(args, 1)?;
            Ok(Syscall::Unlink { dirfd, path })
        }
        _ => {
            let p = two_paths(name, args)?;
            Ok(Syscall::Link(Link {
                from_dirfd: p.from_dirfd,
                from_proc_fd: proc_fd(&p.from),
                from: p.from,
                to_dirfd: p.to_dirfd,
                to: p.to,
                empty_path: strace::has_flag(p.flags, b"AT_EMPTY_PATH"),
                follow: strace::has_flag(p.flags, b"AT_SYMLINK_FOLLOW"),
            }))
        }
    }
}

/// symlink, symlinkat, mkdir, mkdirat, mknod, mknodat.
fn create_call(name: &[u8], args: &[&[u8]]) -> R<Syscall> {
    match name {
        b"symlink" => {
            let target = str_arg(args, 0)?;
            let path = str_arg(args, 1)?;
            Ok(Syscall::Symlink {
                target,
                dirfd: AT_FDCWD,
                path,
            })
        }
        b"symlinkat" => {
            let target = str_arg(args, 0)?;
            let dirfd = int_arg(args, 1)?;
            let path = str_arg(args, 2)?;
            Ok(Syscall::Symlink {
                target,
                dirfd,
                path,
            })
        }
        b"mkdir" => Ok(Syscall::Mkdir {
            dirfd: AT_FDCWD,
            path: str_arg(args, 0)?,
        }),
        b"mkdirat" => {
            let dirfd = int_arg(args, 0)?;
            let path = str_arg(args, 1)?;
            Ok(Syscall::Mkdir { dirfd, path })
        }
        _ => {
            let (dirfd, pi, mi) = if name == b"mknod" {
                (AT_FDCWD, 0, 1)
            } else {
                (int_arg(args, 0)?, 1, 2)
            };
            let path = str_arg(args, pi)?;
            let mode = arg(args, mi)?;
            let regular = !mode.starts_with(b"S_IF")
                || strace::has_flag(mode, b"S_IFREG")
                || mode.starts_with(b"S_IFREG");
            Ok(Syscall::Mknod {
                dirfd,
                path,
                regular,
            })
        }
    }
}

/// fsync, fdatasync, sync, syncfs, sync_file_range.
fn sync_call(name: &[u8], args: &[&[u8]]) -> R<Syscall> {
    if name == b"sync" {
        return Ok(Syscall::Sync);
    }
    let fd = int_arg(args, 0)?;
    Ok(match name {
        b"syncfs" => Syscall::Syncfs { fd },
        b"sync_file_range" => Syscall::SyncFileRange { fd },
        _ => Syscall::Fsync {
            fd,
            data_only: name == b"fdatasync",
        },
    })
}

/// copy_file_range, sendfile, splice, tee.
fn copy_call(name: &[u8], args: &[&[u8]], n: u64) -> R<Syscall> {
    if name == b"tee" {
        let in_fd = int_arg(args, 0)?;
        let out_fd = int_arg(args, 1)?;
        return Ok(Syscall::Tee {
            in_fd,
            out_fd,
            count: n,
        });
    }
    let (in_text, in_at, out_text, out_at) = if matches!(name, b"sendfile" | b"sendfile64") {
        let in_at = offset_arg(args, 2)?;
        (arg(args, 1)?, in_at, arg(args, 0)?, None)
    } else {
        let in_at = offset_arg(args, 1)?;
        let out_at = offset_arg(args, 3)?;
        (arg(args, 0)?, in_at, arg(args, 2)?, out_at)
    };
    let in_fd = fd_arg(in_text, "the input fd")?;
    let out_fd = fd_arg(out_text, "the output fd")?;
    Ok(Syscall::Copy(Transfer {
        in_fd,
        in_at,
        out_fd,
        out_path: fd_path(out_text),
        out_at,
        count: n,
    }))
}

/// chdir, fchdir.
fn chdir_call(name: &[u8], args: &[&[u8]]) -> R<Syscall> {
    if name == b"chdir" {
        return Ok(Syscall::Chdir {
            path: str_arg(args, 0)?,
        });
    }
    let fd = int_arg(args, 0)?;
    Ok(Syscall::Fchdir {
        fd,
        fd_path: fd_path(arg(args, 0)?),
    })
}

fn mmap_call(args: &[&[u8]]) -> R<Syscall> {
    let prot = arg(args, 2)?;
    let flags = arg(args, 3)?;
    let fd = int_arg(args, 4)?;
    let shared =
        strace::has_flag(flags, b"MAP_SHARED") || strace::has_flag(flags, b"MAP_SHARED_VALIDATE");
    let shared_writable = shared && strace::has_flag(prot, b"PROT_WRITE");
    Ok(Syscall::Mmap {
        fd,
        fd_path: if shared_writable {
            fd_path(arg(args, 4)?)
        } else {
            None
        },
        shared_writable,
    })
}

fn pipe_call(args: &[&[u8]]) -> R<Syscall> {
    let fds = arg(args, 0)?;
    let inner = fds
        .strip_prefix(b"[")
        .and_then(|f| f.strip_suffix(b"]"))
        .ok_or_else(|| Fault::malformed("the fd pair is not a list"))?;
    let pair = strace::split_args(inner);
    let bad = || Fault::malformed("bad pipe fd");
    let read_fd = strace::parse_int(arg(&pair, 0)?).ok_or_else(bad)?;
    let write_fd = strace::parse_int(arg(&pair, 1)?).ok_or_else(bad)?;
    let cloexec = args
        .get(1)
        .map(|f| strace::has_flag(f, b"O_CLOEXEC"))
        .unwrap_or(false);
    Ok(Syscall::Pipe {
        read_fd,
        write_fd,
        cloexec,
    })
}

fn ioctl_call(args: &[&[u8]]) -> R<Syscall> {
    let fd = int_arg(args, 0)?;
    let req = arg(args, 1)?;
    if matches!(req, b"FICLONE" | b"FICLONERANGE" | b"FIDEDUPERANGE") {
        return Ok(Syscall::Reflink {
            fd,
            fd_path: fd_path(arg(args, 0)?),
        });
    }
    Ok(Syscall::NoEffect)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Result<Syscall, Fault> {
        let parsed = strace::parse_log(line.as_bytes()).unwrap();
        let strace::Event::Call(c) = &parsed.events[0] else {
            panic!("not a call")
        };
        decode(c).map(|e| e.call)
    }

    #[test]
    fn at_fdcwd_is_straces() {
        assert_eq!(AT_FDCWD, strace::AT_FDCWD);
    }

    #[test]
    fn decodes_an_open() {
        let call = one("1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT|O_EXCL, 0644) = 3<\\x2f\\x64\\x2f\\x61>\n")
            .unwrap();
        let Syscall::Open(o) = call else {
            panic!("{call:?}")
        };
        assert_eq!((o.dirfd, o.path.as_slice(), o.fd), (AT_FDCWD, &b"a"[..], 3));
        assert!(o.flags.creat && o.flags.excl && o.flags.writable && !o.flags.trunc);
        assert_eq!(o.fd_path.as_deref(), Some(&b"/d/a"[..]));
    }

    #[test]
    fn keeps_a_write_whose_data_is_cut_short() {
        let call = one("1 write(3, \"\\x61\"..., 2) = 2\n").unwrap();
        let Syscall::Write(w) = call else {
            panic!("{call:?}")
        };
        let e = w.data.unwrap_err();
        assert_eq!(e.kind, ReplayErrorKind::Truncated);
    }

    #[test]
    fn a_failed_call_is_not_decoded_but_a_failed_fsync_is() {
        let call = one("1 openat(AT_FDCWD, 0x1234, O_RDONLY) = -1 EFAULT (Bad address)\n");
        assert_eq!(call, Ok(Syscall::Failed));
        let call = one("1 fdatasync(3) = -1 EIO (Input/output error)\n");
        assert_eq!(
            call,
            Ok(Syscall::Fsync {
                fd: 3,
                data_only: true
            })
        );
    }

    #[test]
    fn errors_name_the_argument() {
        let e = one("1 unlinkat(x, \"\\x61\", 0) = 0\n").unwrap_err();
        assert_eq!(e.kind, ReplayErrorKind::Malformed);
        assert_eq!(e.message, "argument 1 is not a number: `x`");
        let e = one("1 pwrite64(3, \"\\x61\", 1, -4) = 1\n").unwrap_err();
        assert_eq!(e.message, "negative offset");
    }

    #[test]
    fn reads_proc_fd_paths() {
        assert_eq!(
            proc_fd(b"/proc/self/fd/3"),
            Some(ProcFd {
                owner: ProcFdOwner::Caller,
                fd: 3
            })
        );
        assert_eq!(
            proc_fd(b"/proc/12/fd/4"),
            Some(ProcFd {
                owner: ProcFdOwner::Pid(12),
                fd: 4
            })
        );
        assert_eq!(proc_fd(b"/proc/self/fd/3/x"), None);
        assert_eq!(proc_fd(b"/proc/self/cwd"), None);
    }
}
