//! Starting the workload under the tracer: everything it needs is made
//! before the fork (the program, its arguments and environment as C
//! strings, its standard fds and the output fd, the seccomp filter), so
//! that the child does only async-signal-safe calls: its own process
//! group, its fds, the directory under test, the signal state a fresh
//! program expects, then it waits until the tracer has seized it,
//! installs the filter (with `no_new_privs`, as strace's `--seccomp-bpf`
//! does) and execs. A step that fails is reported through a pipe
//! (`[step, errno]`) and the child exits.

use std::ffi::{CString, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::ptrace;

/// What the child needs, made before the fork.
pub(super) struct Launch {
    program: CString,
    /// Kept alive for `argv`'s pointers.
    _args: Vec<CString>,
    argv: Vec<*const libc::c_char>,
    /// Kept alive for `envp`'s pointers.
    _env: Vec<CString>,
    envp: Vec<*const libc::c_char>,
    dir: CString,
    stdin: File,
    stdout: File,
    stderr: File,
    output: Option<(File, i32)>,
    filter: Vec<libc::sock_filter>,
}

/// The workload's standard output, standard error, and the file handed
/// down on an fd of the config's choosing.
pub(super) struct Stdio {
    /// Standard output.
    pub(super) stdout: File,
    /// Standard error.
    pub(super) stderr: File,
    /// The output fd and its file.
    pub(super) output: Option<(File, i32)>,
}

fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "an argument, a variable or the directory holds a NUL byte",
        )
    })
}

fn pointers(strings: &[CString]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

impl Launch {
    /// `command` (its program resolved) in `dir`, with `env` added to this
    /// process's environment.
    pub(super) fn new(
        command: &[OsString],
        dir: &Path,
        env: &[(OsString, OsString)],
        stdio: Stdio,
    ) -> io::Result<Launch> {
        let args: Vec<CString> = command
            .iter()
            .map(|a| cstring(a.as_bytes()))
            .collect::<io::Result<_>>()?;
        let mut vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        for (k, v) in env {
            match vars.iter_mut().find(|(key, _)| key == k) {
                Some(slot) => slot.1 = v.clone(),
                None => vars.push((k.clone(), v.clone())),
            }
        }
        let env: Vec<CString> = vars
            .iter()
            .map(|(k, v)| cstring(&[k.as_bytes(), b"=", v.as_bytes()].concat()))
            .collect::<io::Result<_>>()?;
        Ok(Launch {
            program: cstring(command[0].as_bytes())?,
            argv: pointers(&args),
            _args: args,
            envp: pointers(&env),
            _env: env,
            dir: cstring(dir.as_os_str().as_bytes())?,
            stdin: File::open("/dev/null")?,
            stdout: stdio.stdout,
            stderr: stdio.stderr,
            output: stdio.output,
            filter: super::filter::filter(),
        })
    }
}

/// A pipe's two ends, close-on-exec.
fn pipe() -> io::Result<(File, File)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two fds pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both fds were just made and are owned by nothing else.
    let ends = unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
    Ok(ends)
}

/// A started workload: its first process, seized and let go towards its
/// exec, and the read end of the pipe its child side reports failures on.
pub(super) struct Started {
    /// The first process (it leads its own process group).
    pub(super) pid: i32,
    report: File,
}

impl Started {
    /// Why the child never ran the program: the step that failed and its
    /// error, as the child reported it (call once it is gone).
    pub(super) fn failure(&mut self) -> Option<String> {
        let mut buf = Vec::new();
        self.report.read_to_end(&mut buf).ok()?;
        let (&step, errno) = buf.split_first()?;
        let errno = i32::from_le_bytes(errno.get(..4)?.try_into().ok()?);
        let err = nix::errno::Errno::from_raw(errno);
        let what = match step {
            STEP_EXEC => return Some(format!("{err:?} ({})", err.desc())),
            STEP_SECCOMP => "installing the seccomp filter",
            STEP_CHDIR => "entering the directory under test",
            _ => "setting up its process",
        };
        Some(format!("{what}: {err:?} ({})", err.desc()))
    }
}

const STEP_SETUP: u8 = 1;
const STEP_CHDIR: u8 = 2;
const STEP_SECCOMP: u8 = 3;
const STEP_EXEC: u8 = 4;

/// Forks the workload, seizes it and lets it exec.
pub(super) fn start(l: &Launch) -> io::Result<Started> {
    let (report_r, report_w) = pipe()?;
    let (go_r, go_w) = pipe()?;
    let pid = blackout_sys::proc::own(|| {
        // SAFETY: the child runs `child`, which makes only
        // async-signal-safe calls on memory made before the fork, and never
        // returns.
        match unsafe { libc::fork() } {
            -1 => Err(io::Error::last_os_error()),
            0 => child(l, &report_w, &go_r),
            pid => Ok((pid, pid as u32)),
        }
    })?;
    drop(report_w);
    drop(go_r);
    if let Err(e) = ptrace::seize(pid) {
        // SAFETY: kill and waitpid take no pointers but the status.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
        blackout_sys::proc::forget(pid as u32);
        return Err(io::Error::new(
            e.kind(),
            format!("cannot trace the workload (PTRACE_SEIZE): {e}"),
        ));
    }
    // The child goes on once it reads the end of this pipe.
    drop(go_w);
    Ok(Started {
        pid,
        report: report_r,
    })
}

/// Writes `[step, errno]` on the report pipe and exits.
fn fail(report: i32, step: u8) -> ! {
    let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
    let e = errno.to_le_bytes();
    let msg = [step, e[0], e[1], e[2], e[3]];
    // SAFETY: async-signal-safe calls on a local buffer.
    unsafe {
        libc::write(report, msg.as_ptr().cast(), msg.len());
        libc::_exit(127)
    }
}

/// The child's side, between fork and exec.
fn child(l: &Launch, report: &File, go_r: &File) -> ! {
    let report = report.as_raw_fd();
    // SAFETY: async-signal-safe calls only, on fds and memory made before
    // the fork; every pointer passed lives in `l`.
    unsafe {
        if libc::setpgid(0, 0) != 0 {
            fail(report, STEP_SETUP);
        }
        let stdio = [&l.stdin, &l.stdout, &l.stderr];
        for (target, file) in stdio.iter().enumerate() {
            if libc::dup2(file.as_raw_fd(), target as i32) < 0 {
                fail(report, STEP_SETUP);
            }
        }
        if let Some((file, fd)) = &l.output {
            let src = file.as_raw_fd();
            let ok = if src == *fd {
                libc::fcntl(src, libc::F_SETFD, 0) == 0
            } else {
                libc::dup2(src, *fd) >= 0
            };
            if !ok {
                fail(report, STEP_SETUP);
            }
        }
        let output = l.output.as_ref().map_or(-1, |(_, fd)| *fd);
        close_others([output, report, go_r.as_raw_fd()]);
        if libc::chdir(l.dir.as_ptr()) != 0 {
            fail(report, STEP_CHDIR);
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        // Wait until the tracer has seized this process.
        let mut byte = 0u8;
        while libc::read(go_r.as_raw_fd(), std::ptr::addr_of_mut!(byte).cast(), 1) < 0 {}
        install_filter(&l.filter, report);
        libc::execve(l.program.as_ptr(), l.argv.as_ptr(), l.envp.as_ptr());
        fail(report, STEP_EXEC)
    }
}

/// Closes every fd of the calling (child) process above the standard
/// three but `keep` (`-1` for none). Another thread of the recorder may
/// have been starting a workload of its own when this child was forked:
/// its copy of that workload's go-ahead pipe would hold it up, and that
/// workload's child could hold up this one the same way.
///
/// # Safety
///
/// Between fork and exec only: async-signal-safe calls.
unsafe fn close_others(mut keep: [i32; 3]) {
    keep.sort_unstable();
    let mut next: u32 = 3;
    for fd in keep {
        let Ok(fd) = u32::try_from(fd) else { continue };
        if fd < next {
            continue;
        }
        if fd > next {
            libc::syscall(libc::SYS_close_range, next, fd - 1, 0);
        }
        next = fd + 1;
    }
    libc::syscall(libc::SYS_close_range, next, u32::MAX, 0);
}

/// Installs the seccomp filter on the calling (child) process.
///
/// # Safety
///
/// Between fork and exec only: async-signal-safe calls.
unsafe fn install_filter(filter: &[libc::sock_filter], report: i32) {
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr().cast_mut(),
    };
    if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
        fail(report, STEP_SECCOMP);
    }
    let mode_filter = 2; // SECCOMP_MODE_FILTER
    if libc::prctl(libc::PR_SET_SECCOMP, mode_filter, std::ptr::addr_of!(prog)) != 0 {
        fail(report, STEP_SECCOMP);
    }
}

/// Whether this kernel and container let the recorder trace: a child is
/// forked, seized with the recorder's ptrace options, installs the seccomp
/// filter and exits. `Err` says which step was refused and why (ptrace
/// forbidden by a security policy or a container's seccomp profile, no
/// seccomp filters), before anything of the workload's is run.
pub(super) fn probe() -> Result<(), String> {
    let filter = super::filter::filter();
    let (report_r, report_w) = pipe().map_err(|e| e.to_string())?;
    let (go_r, go_w) = pipe().map_err(|e| e.to_string())?;
    let pid = blackout_sys::proc::own(|| {
        // SAFETY: the child makes only async-signal-safe calls on memory
        // made before the fork, and exits.
        match unsafe { libc::fork() } {
            -1 => Err(io::Error::last_os_error()),
            0 => unsafe {
                close_others([-1, report_w.as_raw_fd(), go_r.as_raw_fd()]);
                let mut byte = 0u8;
                while libc::read(go_r.as_raw_fd(), std::ptr::addr_of_mut!(byte).cast(), 1) < 0 {}
                install_filter(&filter, report_w.as_raw_fd());
                libc::_exit(0)
            },
            pid => Ok((pid, pid as u32)),
        }
    })
    .map_err(|e| format!("fork: {e}"))?;
    drop(report_w);
    drop(go_r);
    let seized = ptrace::seize(pid);
    if seized.is_err() {
        // SAFETY: kill takes no pointers.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    drop(go_w);
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status it is given.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::__WALL) };
        if r == -1 || libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
            break;
        }
        // SAFETY: a stop of the probe: let it go on (no pointers).
        unsafe { libc::ptrace(libc::PTRACE_CONT, pid, 0, 0) };
    }
    blackout_sys::proc::forget(pid as u32);
    if let Err(e) = seized {
        return Err(format!("ptrace (PTRACE_SEIZE) is refused: {e}"));
    }
    let mut started = Started {
        pid,
        report: report_r,
    };
    match started.failure() {
        Some(why) => Err(why),
        None => Ok(()),
    }
}
