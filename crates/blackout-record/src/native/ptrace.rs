//! The ptrace requests and wait statuses the tracer uses, on `libc`
//! directly: a stop can carry any signal, real-time ones included, which a
//! typed signal enum cannot hold.

use std::io;

/// `PTRACE_O_*`: syscall stops marked, every kind of child followed, exec
/// and seccomp stops, and the tracees killed when the tracer goes.
pub(super) const OPTIONS: libc::c_long = 0x01 // TRACESYSGOOD
    | 0x02 // TRACEFORK
    | 0x04 // TRACEVFORK
    | 0x08 // TRACECLONE
    | 0x10 // TRACEEXEC
    | 0x80 // TRACESECCOMP
    | 0x0010_0000; // EXITKILL

/// `PTRACE_EVENT_*` as a stop reports them (`status >> 16`).
pub(super) mod event {
    pub(in super::super) const FORK: i32 = 1;
    pub(in super::super) const VFORK: i32 = 2;
    pub(in super::super) const CLONE: i32 = 3;
    pub(in super::super) const EXEC: i32 = 4;
    pub(in super::super) const SECCOMP: i32 = 7;
    pub(in super::super) const STOP: i32 = 128;
}

const PTRACE_CONT: libc::c_uint = 7;
const PTRACE_SYSCALL: libc::c_uint = 24;
const PTRACE_GETREGS: libc::c_uint = 12;
const PTRACE_SETREGS: libc::c_uint = 13;
const PTRACE_SEIZE: libc::c_uint = 0x4206;
const PTRACE_LISTEN: libc::c_uint = 0x4208;
const PTRACE_GETEVENTMSG: libc::c_uint = 0x4201;
const PTRACE_GET_SYSCALL_INFO: libc::c_uint = 0x420e;

/// `PTRACE_SYSCALL_INFO_SECCOMP` and `PTRACE_SYSCALL_INFO_EXIT`.
pub(super) const INFO_SECCOMP: u8 = 3;
/// See [`INFO_SECCOMP`].
pub(super) const INFO_EXIT: u8 = 2;

fn request(req: libc::c_uint, pid: i32, addr: usize, data: usize) -> io::Result<libc::c_long> {
    // SAFETY: every request made here either takes no pointer or points
    // `data` at a buffer of the size the request writes (see callers).
    let r = unsafe { libc::ptrace(req as _, pid, addr, data) };
    if r == -1 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(0) {
            return Err(e);
        }
    }
    Ok(r)
}

/// Attaches to `pid` without stopping it, with [`OPTIONS`].
pub(super) fn seize(pid: i32) -> io::Result<()> {
    request(PTRACE_SEIZE, pid, 0, OPTIONS as usize).map(drop)
}

/// How a stopped tracee goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Resume {
    /// Until the next event or seccomp stop.
    Cont,
    /// Until the current call returns (after a seccomp stop).
    Syscall,
    /// Stays in its group-stop until a SIGCONT, without holding the
    /// tracer.
    Listen,
}

/// Restarts `pid`, delivering `sig` (0 for none). A tracee that died in
/// the meantime (`ESRCH`) is not an error: its exit is waited for next.
pub(super) fn resume(pid: i32, how: Resume, sig: i32) -> io::Result<()> {
    let req = match how {
        Resume::Cont => PTRACE_CONT,
        Resume::Syscall => PTRACE_SYSCALL,
        Resume::Listen => PTRACE_LISTEN,
    };
    match request(req, pid, 0, sig as usize) {
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
        r => r.map(drop),
    }
}

/// The message of the event `pid` stopped at (a new child's id, the id a
/// thread had before its execve).
pub(super) fn event_message(pid: i32) -> io::Result<u64> {
    let mut msg: libc::c_ulong = 0;
    request(
        PTRACE_GETEVENTMSG,
        pid,
        0,
        std::ptr::addr_of_mut!(msg) as usize,
    )?;
    Ok(msg)
}

/// What `pid` is stopped in: the call and its arguments at a seccomp stop,
/// its return at a syscall-exit stop.
pub(super) fn syscall_info(pid: i32) -> io::Result<libc::ptrace_syscall_info> {
    // SAFETY: a plain C struct, all zeros is a valid value.
    let mut info: libc::ptrace_syscall_info = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::ptrace_syscall_info>();
    request(
        PTRACE_GET_SYSCALL_INFO,
        pid,
        size,
        std::ptr::addr_of_mut!(info) as usize,
    )?;
    Ok(info)
}

/// `pid`'s registers (it is stopped).
#[cfg(target_arch = "x86_64")]
fn regs(pid: i32) -> io::Result<libc::user_regs_struct> {
    // SAFETY: a plain C struct, all zeros is a valid value.
    let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    request(
        PTRACE_GETREGS,
        pid,
        0,
        std::ptr::addr_of_mut!(regs) as usize,
    )?;
    Ok(regs)
}

/// The call `pid` is in at an event stop and its first argument:
/// `(orig_rax, rdi)`.
#[cfg(target_arch = "x86_64")]
pub(super) fn call_and_first_arg(pid: i32) -> io::Result<(u64, u64)> {
    let regs = regs(pid)?;
    Ok((regs.orig_rax, regs.rdi))
}

/// At a seccomp stop: the call `pid` is about to make is skipped, and
/// returns `ret` (a value, or `-errno`) as if the kernel had made it.
#[cfg(target_arch = "x86_64")]
pub(super) fn skip_returning(pid: i32, ret: i64) -> io::Result<()> {
    let mut regs = regs(pid)?;
    // A call number of -1 at a seccomp stop skips the call; the value in
    // rax is then what it returns (seccomp(2), SECCOMP_RET_TRACE).
    regs.orig_rax = u64::MAX;
    regs.rax = ret as u64;
    request(PTRACE_SETREGS, pid, 0, std::ptr::addr_of!(regs) as usize).map(drop)
}

/// Not recorded on other architectures (the recorder refuses them first).
#[cfg(not(target_arch = "x86_64"))]
pub(super) fn skip_returning(_pid: i32, _ret: i64) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Not recorded on other architectures (the recorder refuses them first).
#[cfg(not(target_arch = "x86_64"))]
pub(super) fn call_and_first_arg(_pid: i32) -> io::Result<(u64, u64)> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// A wait status, taken apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Status {
    /// Exited or killed (the raw status).
    Gone(i32),
    /// A syscall-exit stop (`SIGTRAP | 0x80`).
    SyscallStop,
    /// A ptrace event stop, with the event and the stop signal.
    Event(i32, i32),
    /// A signal-delivery stop.
    Signal(i32),
    /// Anything else (continued).
    Other,
}

/// What a raw wait status says.
pub(super) fn status(raw: i32) -> Status {
    if libc::WIFEXITED(raw) || libc::WIFSIGNALED(raw) {
        return Status::Gone(raw);
    }
    if !libc::WIFSTOPPED(raw) {
        return Status::Other;
    }
    let sig = libc::WSTOPSIG(raw);
    let event = (raw >> 16) & 0xffff;
    if sig == libc::SIGTRAP | 0x80 {
        Status::SyscallStop
    } else if event != 0 {
        Status::Event(event, sig)
    } else {
        Status::Signal(sig)
    }
}

/// The next status of any of this thread's children and tracees (only
/// this thread's: other threads' children are theirs to wait for); `None`
/// when it has none left.
pub(super) fn wait_any() -> io::Result<Option<(i32, i32)>> {
    loop {
        let mut raw = 0;
        // SAFETY: `raw` is a valid place for the status.
        let pid = unsafe { libc::waitpid(-1, &mut raw, libc::__WALL | libc::__WNOTHREAD) };
        if pid > 0 {
            return Ok(Some((pid, raw)));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::ECHILD) => return Ok(None),
            _ => return Err(e),
        }
    }
}
