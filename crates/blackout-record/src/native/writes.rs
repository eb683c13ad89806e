//! Writes the tracer makes for the workload, so that a write costs one
//! stop instead of two.
//!
//! A traced call stops the workload at its start (the seccomp stop) and,
//! to learn what it returned, again at its end. For `write` and
//! `pwrite64` to a regular file in the directory under test the tracer
//! does the second half itself: at the seccomp stop it reads the buffer
//! (which it reads for the trace anyway), takes a duplicate of the
//! workload's fd (`pidfd_getfd`: the same open file description, so the
//! same offset, `O_APPEND` and locks), writes the bytes through it, and
//! makes the workload's call return what that write returned, skipped in
//! the kernel. The file gets the same bytes at the same offset and the
//! workload sees the same result; the model sees the call complete at
//! that stop, while every tracee of the calling thread is held.
//!
//! What a write does differently when another process makes it is what
//! is checked for, and such a write is left to the kernel (two stops):
//! a file that is not regular, one opened `O_DIRECT` (the buffer's
//! alignment would be the tracer's), a buffer that cannot be read whole,
//! more than [`WRITE_BYTES_MAX`] bytes. The workload's limits and
//! credentials must be the tracer's: it inherits them, and the first time
//! any tracee changes its file-size limit (`setrlimit`, `prlimit64`) or
//! its credentials (the `set*id` calls, `setgroups`, `capset`), the
//! tracer stops writing for the rest of the recording. A kernel without
//! `pidfd_getfd` or thread pidfds (Linux 6.9) gets the two stops too.
//! Left unmodelled: a security module that would deny the workload a
//! write to a file it already has open for writing.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::calls::{Entry, Ret};
use super::memory;

/// The most bytes one write the tracer makes for the workload carries;
/// a larger write is left to the kernel.
pub(super) const WRITE_BYTES_MAX: u64 = 64 << 20;

/// `PIDFD_THREAD`: a pidfd for a thread, not its thread group.
const PIDFD_THREAD: libc::c_uint = libc::O_EXCL as libc::c_uint;

/// The tracer's side of the writes it makes: whether it may, and a pidfd
/// per thread.
#[derive(Debug)]
pub(super) struct Writer {
    enabled: bool,
    pidfds: HashMap<i32, OwnedFd>,
}

impl Writer {
    /// A writer, enabled when this process may write any size (the
    /// workload inherits its file-size limit).
    pub(super) fn new() -> Writer {
        // SAFETY: getrlimit writes one struct it is given.
        let unlimited = unsafe {
            let mut lim: libc::rlimit = std::mem::zeroed();
            libc::getrlimit(libc::RLIMIT_FSIZE, &mut lim) == 0
                && lim.rlim_cur == libc::RLIM_INFINITY
        };
        Writer {
            enabled: unlimited,
            pidfds: HashMap::new(),
        }
    }

    /// A call that may change the credentials or a limit
    /// ([`super::filter::changes_limits_or_credentials`]) with `args`: the
    /// tracer stops writing for the workload if it changes the file-size
    /// limit or the credentials.
    pub(super) fn changing(&mut self, name: &str, args: &[u64; 6]) {
        let fsize = libc::RLIMIT_FSIZE as u64;
        let changes = match name {
            "setrlimit" => args[0] as u32 as u64 == fsize,
            "prlimit64" => args[1] as u32 as u64 == fsize && args[2] != 0,
            _ => true,
        };
        if changes {
            self.enabled = false;
        }
    }

    /// Thread `pid` is gone (or took another id): its pidfd is closed.
    pub(super) fn forget(&mut self, pid: i32) {
        self.pidfds.remove(&pid);
    }

    /// Makes the write `e` (thread `pid`, stopped at its seccomp stop) for
    /// the workload: what it returned and the bytes it was given, or `None`
    /// when it is to be left to the kernel. The caller makes the call
    /// return that value ([`super::ptrace::skip_returning`]).
    pub(super) fn write(&mut self, pid: i32, e: &Entry) -> Option<(Ret, Vec<u8>)> {
        if !self.enabled || !matches!(e.name, "write" | "pwrite64") {
            return None;
        }
        let (fd, buf, count) = (e.args[0] as u32 as i32, e.args[1], e.args[2]);
        if count == 0 || count > WRITE_BYTES_MAX || e.name == "pwrite64" && (e.args[3] as i64) < 0 {
            return None;
        }
        let file = self.file(pid, fd)?;
        let bytes = memory::read_bytes(pid, buf, count as usize).ok()?;
        let raw = file.as_raw_fd();
        // SAFETY: `bytes` outlives the call, which reads `bytes.len()`.
        let r = unsafe {
            match e.name {
                "write" => libc::write(raw, bytes.as_ptr().cast(), bytes.len()),
                _ => libc::pwrite(raw, bytes.as_ptr().cast(), bytes.len(), e.args[3] as i64),
            }
        };
        let ret = match r {
            -1 => Ret::of(
                -i64::from(std::io::Error::last_os_error().raw_os_error()?),
                true,
            ),
            n => Ret::of(n as i64, false),
        };
        Some((ret, bytes))
    }

    /// A duplicate of `pid`'s fd `fd`, when it is a regular file opened
    /// without `O_DIRECT`.
    fn file(&mut self, pid: i32, fd: i32) -> Option<OwnedFd> {
        let pidfd = match self.pidfds.get(&pid) {
            Some(p) => p.as_raw_fd(),
            None => {
                let p = syscall_fd(libc::SYS_pidfd_open, pid, PIDFD_THREAD as i32, 0);
                let Some(p) = p else {
                    // No thread pidfds here: every write goes to the kernel.
                    self.enabled = false;
                    return None;
                };
                let raw = p.as_raw_fd();
                self.pidfds.insert(pid, p);
                raw
            }
        };
        let file = syscall_fd(libc::SYS_pidfd_getfd, pidfd, fd, 0)?;
        // SAFETY: fstat writes one struct it is given; fcntl takes no pointer.
        let (regular, direct) = unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            let regular = libc::fstat(file.as_raw_fd(), &mut st) == 0
                && st.st_mode & libc::S_IFMT == libc::S_IFREG;
            let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
            (regular, flags == -1 || flags & libc::O_DIRECT != 0)
        };
        (regular && !direct).then_some(file)
    }
}

/// A call that returns a new fd (`pidfd_open`, `pidfd_getfd`), owned.
fn syscall_fd(nr: libc::c_long, a: i32, b: i32, c: i32) -> Option<OwnedFd> {
    // SAFETY: both calls take three integers and return an fd or -1.
    let fd = unsafe { libc::syscall(nr, a, b, c) };
    let fd = i32::try_from(fd).ok().filter(|&fd| fd >= 0)?;
    // SAFETY: the kernel just made `fd`, and nothing else owns it.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}
