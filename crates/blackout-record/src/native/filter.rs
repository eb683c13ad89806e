//! Which system calls stop the workload, and the seccomp filter that says
//! so in the kernel.
//!
//! The filter returns `SECCOMP_RET_TRACE` for the calls replay reads (the
//! ones [`crate::decode`] turns into events that change the model) and
//! `SECCOMP_RET_ALLOW` for every other call, so an untraced call costs the
//! workload no stop at all. Process creation and `execve` are not in it:
//! the tracer learns of them from ptrace's fork, clone and exec events.
//! Some calls matter only with some arguments, and the filter looks at
//! those itself: `mmap` only when shared and writable, `ioctl` only for the
//! reflink requests, `fcntl` only for the commands that change fd tables.
//! A call of another ABI (i386 through `int 0x80`, x32) stops the workload
//! marked [`FOREIGN`], and the recording is refused.

/// The seccomp data a call of another ABI stops with.
pub(super) const FOREIGN: u32 = 1;

/// `AUDIT_ARCH_X86_64`: the architecture seccomp reports for the 64-bit
/// ABI.
pub(super) const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;

/// The bit x32 system call numbers carry.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// `FICLONE`, `FICLONERANGE`, `FIDEDUPERANGE`: the ioctls that share
/// extents into a file.
pub(super) const REFLINK_IOCTLS: [u32; 3] = [0x4004_9409, 0x4020_940d, 0xc018_9436];

/// The fcntl commands the model looks at: `F_DUPFD`, `F_SETFD`, `F_SETFL`,
/// `F_DUPFD_CLOEXEC`.
const FCNTL_COMMANDS: [u32; 4] = [0, 2, 4, 1030];

/// The calls stopped at whatever their arguments, by number, with the
/// name strace gives each (which is the name ops and errors carry).
#[cfg(target_arch = "x86_64")]
const ALWAYS: &[(i64, &str)] = &[
    (libc::SYS_open, "open"),
    (libc::SYS_openat, "openat"),
    (libc::SYS_openat2, "openat2"),
    (libc::SYS_creat, "creat"),
    (libc::SYS_close, "close"),
    (libc::SYS_close_range, "close_range"),
    (libc::SYS_dup, "dup"),
    (libc::SYS_dup2, "dup2"),
    (libc::SYS_dup3, "dup3"),
    (libc::SYS_read, "read"),
    (libc::SYS_readv, "readv"),
    (libc::SYS_preadv2, "preadv2"),
    (libc::SYS_write, "write"),
    (libc::SYS_writev, "writev"),
    (libc::SYS_pwrite64, "pwrite64"),
    (libc::SYS_pwritev, "pwritev"),
    (libc::SYS_pwritev2, "pwritev2"),
    (libc::SYS_lseek, "lseek"),
    (libc::SYS_truncate, "truncate"),
    (libc::SYS_ftruncate, "ftruncate"),
    (libc::SYS_fallocate, "fallocate"),
    (libc::SYS_rename, "rename"),
    (libc::SYS_renameat, "renameat"),
    (libc::SYS_renameat2, "renameat2"),
    (libc::SYS_unlink, "unlink"),
    (libc::SYS_unlinkat, "unlinkat"),
    (libc::SYS_rmdir, "rmdir"),
    (libc::SYS_link, "link"),
    (libc::SYS_linkat, "linkat"),
    (libc::SYS_symlink, "symlink"),
    (libc::SYS_symlinkat, "symlinkat"),
    (libc::SYS_mkdir, "mkdir"),
    (libc::SYS_mkdirat, "mkdirat"),
    (libc::SYS_mknod, "mknod"),
    (libc::SYS_mknodat, "mknodat"),
    (libc::SYS_fsync, "fsync"),
    (libc::SYS_fdatasync, "fdatasync"),
    (libc::SYS_sync, "sync"),
    (libc::SYS_syncfs, "syncfs"),
    (libc::SYS_sync_file_range, "sync_file_range"),
    (libc::SYS_copy_file_range, "copy_file_range"),
    (libc::SYS_sendfile, "sendfile"),
    (libc::SYS_splice, "splice"),
    (libc::SYS_tee, "tee"),
    (libc::SYS_vmsplice, "vmsplice"),
    (libc::SYS_chdir, "chdir"),
    (libc::SYS_fchdir, "fchdir"),
    (libc::SYS_io_uring_setup, "io_uring_setup"),
    (libc::SYS_pipe, "pipe"),
    (libc::SYS_pipe2, "pipe2"),
];

/// The calls that change a process's credentials, stopped so that the
/// tracer knows when it may no longer write for the workload
/// ([`super::writes`]).
#[cfg(target_arch = "x86_64")]
const CREDENTIALS: &[(i64, &str)] = &[
    (libc::SYS_setuid, "setuid"),
    (libc::SYS_setgid, "setgid"),
    (libc::SYS_setreuid, "setreuid"),
    (libc::SYS_setregid, "setregid"),
    (libc::SYS_setresuid, "setresuid"),
    (libc::SYS_setresgid, "setresgid"),
    (libc::SYS_setfsuid, "setfsuid"),
    (libc::SYS_setfsgid, "setfsgid"),
    (libc::SYS_setgroups, "setgroups"),
    (libc::SYS_capset, "capset"),
];

/// The calls in [`SOMETIMES`] that set a resource limit.
#[cfg(target_arch = "x86_64")]
const LIMITS: [i64; 2] = [libc::SYS_setrlimit, libc::SYS_prlimit64];
#[cfg(not(target_arch = "x86_64"))]
const LIMITS: [i64; 0] = [];

/// The calls stopped only for some arguments (the filter checks them):
/// `setrlimit` and `prlimit64` only for the file-size limit.
#[cfg(target_arch = "x86_64")]
const SOMETIMES: &[(i64, &str)] = &[
    (libc::SYS_mmap, "mmap"),
    (libc::SYS_ioctl, "ioctl"),
    (libc::SYS_fcntl, "fcntl"),
    (libc::SYS_setrlimit, "setrlimit"),
    (libc::SYS_prlimit64, "prlimit64"),
];

/// The process-creating calls, known from ptrace's events.
#[cfg(target_arch = "x86_64")]
const SPAWNS: &[(i64, &str)] = &[
    (libc::SYS_clone, "clone"),
    (libc::SYS_clone3, "clone3"),
    (libc::SYS_fork, "fork"),
    (libc::SYS_vfork, "vfork"),
    (libc::SYS_execve, "execve"),
    (libc::SYS_execveat, "execveat"),
];

#[cfg(not(target_arch = "x86_64"))]
const ALWAYS: &[(i64, &str)] = &[];
#[cfg(not(target_arch = "x86_64"))]
const SOMETIMES: &[(i64, &str)] = &[];
#[cfg(not(target_arch = "x86_64"))]
const CREDENTIALS: &[(i64, &str)] = &[];
#[cfg(not(target_arch = "x86_64"))]
const SPAWNS: &[(i64, &str)] = &[];

/// Whether this build can record natively (the call table is x86_64's).
pub(super) const SUPPORTED: bool = cfg!(target_arch = "x86_64");

/// Whether call `nr` is stopped only so that the tracer knows the
/// workload changed its credentials or its file-size limit
/// ([`CREDENTIALS`], `setrlimit`, `prlimit64`).
pub(super) fn changes_limits_or_credentials(nr: u64) -> bool {
    let Ok(nr) = i64::try_from(nr) else {
        return false;
    };
    CREDENTIALS.iter().any(|(n, _)| *n == nr) || LIMITS.contains(&nr)
}

/// The name of a traced call (or of a process-creating call), by number.
pub(super) fn name_of(nr: u64) -> Option<&'static str> {
    let nr = i64::try_from(nr).ok()?;
    ALWAYS
        .iter()
        .chain(CREDENTIALS)
        .chain(SOMETIMES)
        .chain(SPAWNS)
        .find(|(n, _)| *n == nr)
        .map(|(_, name)| *name)
}

/// One instruction before its jumps are resolved.
enum Ins {
    /// `ld [k]`: a word of `struct seccomp_data`.
    Load(u32),
    /// `jeq #k, label`.
    JumpEq(u32, Label),
    /// `jge #k, label`.
    JumpGe(u32, Label),
    /// `jset #k, label`.
    JumpSet(u32, Label),
    /// `ret #k`.
    Ret(u32),
    /// Where a label points (no instruction).
    At(Label),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Label {
    Native,
    Trace,
    Foreign,
    Mmap,
    MmapProt,
    Ioctl,
    Fcntl,
    Setrlimit,
    Prlimit,
}

/// Offsets in `struct seccomp_data`.
const NR: u32 = 0;
const ARCH: u32 = 4;
/// The low word of argument `i` (little-endian).
const fn arg(i: u32) -> u32 {
    16 + 8 * i
}

const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_TRACE: u32 = 0x7ff0_0000;
const MAP_SHARED: u32 = 0x01;
const PROT_WRITE: u32 = 0x02;
const RLIMIT_FSIZE: u32 = 1;

fn program() -> Vec<Ins> {
    use Ins::*;
    let mut p = vec![
        Load(ARCH),
        JumpEq(AUDIT_ARCH_X86_64, Label::Native),
        Ret(SECCOMP_RET_TRACE | FOREIGN),
        At(Label::Native),
        Load(NR),
        JumpGe(X32_SYSCALL_BIT, Label::Foreign),
    ];
    for (nr, _) in ALWAYS.iter().chain(CREDENTIALS) {
        p.push(JumpEq(*nr as u32, Label::Trace));
    }
    let special = [
        Label::Mmap,
        Label::Ioctl,
        Label::Fcntl,
        Label::Setrlimit,
        Label::Prlimit,
    ];
    for ((nr, _), label) in SOMETIMES.iter().zip(special) {
        p.push(JumpEq(*nr as u32, label));
    }
    p.extend([
        Ret(SECCOMP_RET_ALLOW),
        At(Label::Mmap),
        Load(arg(3)),
        JumpSet(MAP_SHARED, Label::MmapProt),
        Ret(SECCOMP_RET_ALLOW),
        At(Label::MmapProt),
        Load(arg(2)),
        JumpSet(PROT_WRITE, Label::Trace),
        Ret(SECCOMP_RET_ALLOW),
        At(Label::Ioctl),
        Load(arg(1)),
    ]);
    p.extend(REFLINK_IOCTLS.map(|r| JumpEq(r, Label::Trace)));
    p.extend([Ret(SECCOMP_RET_ALLOW), At(Label::Fcntl), Load(arg(1))]);
    p.extend(FCNTL_COMMANDS.map(|c| JumpEq(c, Label::Trace)));
    p.extend([
        Ret(SECCOMP_RET_ALLOW),
        At(Label::Setrlimit),
        Load(arg(0)),
        JumpEq(RLIMIT_FSIZE, Label::Trace),
        Ret(SECCOMP_RET_ALLOW),
        At(Label::Prlimit),
        Load(arg(1)),
        JumpEq(RLIMIT_FSIZE, Label::Trace),
    ]);
    // The returns every jump reaches last (BPF jumps only forward).
    p.extend([
        Ret(SECCOMP_RET_ALLOW),
        At(Label::Trace),
        Ret(SECCOMP_RET_TRACE),
        At(Label::Foreign),
        Ret(SECCOMP_RET_TRACE | FOREIGN),
    ]);
    p
}

/// The filter as the kernel takes it.
///
/// # Panics
///
/// Never for the program above: every jump is forward and short.
pub(super) fn filter() -> Vec<libc::sock_filter> {
    let prog = program();
    let mut at = Vec::new();
    let mut n = 0usize;
    for ins in &prog {
        match ins {
            Ins::At(l) => at.push((*l, n)),
            _ => n += 1,
        }
    }
    let target = |l: &Label| at.iter().find(|(m, _)| m == l).map(|(_, i)| *i);
    let mut out = Vec::with_capacity(n);
    for ins in &prog {
        let here = out.len();
        let jump = |code: u32, k: u32, l: &Label| {
            let to = target(l).expect("every label is placed");
            let off = u8::try_from(to - here - 1).expect("jumps are short");
            bpf(code, off, 0, k)
        };
        out.push(match ins {
            Ins::Load(k) => bpf(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, *k),
            Ins::JumpEq(k, l) => jump(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, *k, l),
            Ins::JumpGe(k, l) => jump(libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K, *k, l),
            Ins::JumpSet(k, l) => jump(libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K, *k, l),
            Ins::Ret(k) => bpf(libc::BPF_RET | libc::BPF_K, 0, 0, *k),
            Ins::At(_) => continue,
        });
    }
    out
}

fn bpf(code: u32, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_traced_call_strace_traces_is_in_the_table() {
        if !SUPPORTED {
            return;
        }
        for name in crate::strace::TRACED_SYSCALLS.split(',') {
            let known = ALWAYS.iter().chain(SOMETIMES).chain(SPAWNS);
            assert!(
                known.clone().any(|(_, n)| *n == name),
                "{name} is traced by strace but not here"
            );
        }
    }

    #[test]
    fn the_filter_ends_in_returns_and_jumps_forward() {
        let f = filter();
        assert!(f.len() < 120, "{}", f.len());
        let last = f.last().unwrap();
        assert_eq!(u32::from(last.code), libc::BPF_RET | libc::BPF_K);
        for (i, ins) in f.iter().enumerate() {
            if u32::from(ins.code) & 0x07 == libc::BPF_JMP {
                assert!(i + 1 + usize::from(ins.jt) < f.len(), "jump {i}");
            }
        }
    }
}
