//! Waiting for a child that leads its own process group: without polling
//! latency (a pidfd wakes the waiter the moment the child exits), with a
//! deadline and a cancel flag, and always ending the whole group so nothing
//! the child started outlives it in a directory blackout is about to remove.

use std::collections::BTreeSet;
use std::io;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags};
use rustix::process::{pidfd_open, Pid, PidfdFlags};

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// The child exited (its group was then killed).
    Exited(ExitStatus),
    /// The deadline passed; the group was killed.
    TimedOut,
    /// The cancel flag was set; the group was killed.
    Cancelled,
}

/// How often a waiter with a cancel flag looks at it. The child's exit wakes
/// it at once; this only bounds how long a Ctrl-C takes to act.
const CANCEL_SLICE: Duration = Duration::from_millis(100);

/// Waits for `child`, which must have been spawned with
/// `process_group(0)`. On exit, timeout or cancel the child's whole process
/// group gets SIGKILL (before the child is reaped, so its group id cannot
/// have been reused).
pub fn wait_group(
    child: &mut Child,
    timeout: Option<Duration>,
    cancel: Option<&AtomicBool>,
) -> io::Result<Waited> {
    let deadline = timeout.map(|t| Instant::now() + t);
    let raw = Pid::from_child(child);
    let pidfd = pidfd_open(raw, PidfdFlags::empty()).map_err(io::Error::from)?;
    let outcome = loop {
        if cancel.is_some_and(|c| c.load(Ordering::SeqCst)) {
            break Waited::Cancelled;
        }
        let Some(ts) = next_slice(deadline, cancel.is_some()) else {
            break Waited::TimedOut;
        };
        let mut fds = [PollFd::new(&pidfd, PollFlags::IN)];
        match poll(&mut fds, Some(&ts)) {
            Ok(0) => continue,
            Ok(_) => {
                // Exited (a zombie until reaped): end its group, then reap.
                kill_group(child);
                let status = child.wait()?;
                spawned().remove(&child.id());
                wait_group_gone(child);
                return Ok(Waited::Exited(status));
            }
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    };
    kill_group(child);
    child.wait()?;
    spawned().remove(&child.id());
    wait_group_gone(child);
    Ok(outcome)
}

/// How long the next poll may wait: until the deadline, and no longer than
/// [`CANCEL_SLICE`] when a cancel flag is to be looked at. `None` once the
/// deadline has passed.
fn next_slice(deadline: Option<Instant>, cancel: bool) -> Option<rustix::event::Timespec> {
    let mut slice = if cancel {
        CANCEL_SLICE
    } else {
        Duration::from_secs(3600)
    };
    if let Some(d) = deadline {
        let left = d.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        slice = slice.min(left);
    }
    Some(rustix::event::Timespec {
        tv_sec: slice.as_secs() as i64,
        tv_nsec: slice.subsec_nanos().into(),
    })
}

/// How long [`wait_group_gone`] waits for a killed group's members to die.
const GROUP_GONE_WAIT: Duration = Duration::from_secs(5);

/// Waits until no process is left in the group the (reaped) child led, so
/// that nothing it started is still alive when blackout goes on or exits:
/// SIGKILL is delivered at once, but a process takes a moment to die. A
/// group id is not reused while the group has members, so the child's pid
/// still names its group.
fn wait_group_gone(child: &Child) {
    end_group(child.id());
}

/// Kills the process group `group` and waits (up to 5 s) until none of
/// its members is left, reaping those orphaned to this process: for a
/// group whose leader was started and reaped some other way than
/// [`wait_group`] (a traced workload, reaped by its tracer).
pub fn end_group(group: u32) {
    let group = nix::unistd::Pid::from_raw(group as i32);
    let deadline = Instant::now() + GROUP_GONE_WAIT;
    let any_member = nix::unistd::Pid::from_raw(-group.as_raw());
    let no_hang = Some(nix::sys::wait::WaitPidFlag::WNOHANG);
    while nix::sys::signal::killpg(group, None).is_ok() && Instant::now() < deadline {
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        // Members orphaned to us (a child subreaper) are reaped here: only
        // this group's, so other children's statuses are left for their
        // waiters. Elsewhere init reaps them.
        while let Ok(
            nix::sys::wait::WaitStatus::Exited(..) | nix::sys::wait::WaitStatus::Signaled(..),
        ) = nix::sys::wait::waitpid(any_member, no_hang)
        {}
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The children blackout started itself and has not reaped yet: every other
/// child it has is an orphan it inherited as a subreaper (something a
/// workload or checker left running).
static SPAWNED: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

fn spawned() -> std::sync::MutexGuard<'static, BTreeSet<u32>> {
    SPAWNED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Spawns `cmd` and notes it as blackout's own child (under the same lock
/// [`reap_orphans`] takes, so a child just spawned is never taken for an
/// orphan). [`wait_group`] forgets it once reaped.
pub fn spawn(cmd: &mut Command) -> io::Result<Child> {
    let mut own = spawned();
    let child = cmd.spawn()?;
    own.insert(child.id());
    Ok(child)
}

/// Runs `fork` (which makes a child process some other way than
/// [`spawn`], and returns it with its pid) under the lock [`reap_orphans`]
/// takes, and notes the child as blackout's own: a process forked to serve
/// something is not an orphan. [`forget`] it once reaped.
///
/// # Errors
///
/// Whatever `fork` returns.
pub fn own<T>(fork: impl FnOnce() -> io::Result<(T, u32)>) -> io::Result<T> {
    let mut own = spawned();
    let (made, pid) = fork()?;
    own.insert(pid);
    Ok(made)
}

/// Forgets a child noted by [`own`], once reaped.
pub fn forget(pid: u32) {
    spawned().remove(&pid);
}

/// Kills and reaps every orphan blackout inherited (processes that a
/// workload or checker detached, e.g. with `setsid cmd &`, whose parent
/// has exited), and returns how many were still running. Does nothing
/// unless this process is a subreaper ([`become_subreaper`]): in a program
/// that uses blackout as a library (a test binary, say), an unregistered
/// child is that program's own, not an orphan.
pub fn reap_orphans() -> usize {
    if !nix::sys::prctl::get_child_subreaper().unwrap_or(false) {
        return 0;
    }
    let own = spawned();
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut running = 0;
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Some(Stat { state, ppid, .. }) = stat_of(pid) else {
            continue;
        };
        if ppid != me || own.contains(&pid) {
            continue;
        }
        if state != 'Z' {
            running += 1;
        }
        let p = nix::unistd::Pid::from_raw(pid as i32);
        let _ = nix::sys::signal::kill(p, nix::sys::signal::Signal::SIGKILL);
        let _ = nix::sys::wait::waitpid(p, None);
    }
    running
}

/// What `/proc/PID/stat` says of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// Its state letter (`R`, `S`, `Z` for a zombie, ...).
    pub state: char,
    /// Its parent.
    pub ppid: u32,
    /// Its process group.
    pub pgrp: u32,
}

/// A process's state, parent and group, from `/proc/PID/stat` (its name,
/// which may hold anything, sits in parentheses before them); `None` when
/// it is gone.
///
/// ```
/// let me = blackout_sys::proc::stat_of(std::process::id()).unwrap();
/// assert_eq!(me.state, 'R');
/// ```
pub fn stat_of(pid: u32) -> Option<Stat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    let pgrp = rest.next()?.parse().ok()?;
    Some(Stat { state, ppid, pgrp })
}

/// Makes this process the reaper of its orphaned descendants
/// (`PR_SET_CHILD_SUBREAPER`), so that what a workload or checker leaves
/// running is reparented to blackout, not to init, and can be found.
pub fn become_subreaper() -> io::Result<()> {
    nix::sys::prctl::set_child_subreaper(true).map_err(io::Error::from)
}

/// Sends SIGKILL to the process group the child leads (errors ignored: the
/// group may already be empty).
pub fn kill_group(child: &Child) {
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
}

/// How a wait for a pipe ended ([`wait_fd`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ready {
    /// The pipe can be read (data or end of file) or written, or its other
    /// end is closed.
    Ready,
    /// The deadline passed first.
    TimedOut,
    /// The cancel flag was set first.
    Cancelled,
}

/// Waits until `fd` can be read (or, with `write`, written), the deadline
/// passes, or the cancel flag is set (looked at every 100 ms).
pub fn wait_fd(
    fd: std::os::fd::BorrowedFd<'_>,
    write: bool,
    deadline: Option<Instant>,
    cancel: Option<&AtomicBool>,
) -> io::Result<Ready> {
    let flags = if write { PollFlags::OUT } else { PollFlags::IN };
    loop {
        if cancel.is_some_and(|c| c.load(Ordering::SeqCst)) {
            return Ok(Ready::Cancelled);
        }
        let Some(ts) = next_slice(deadline, cancel.is_some()) else {
            return Ok(Ready::TimedOut);
        };
        let mut fds = [PollFd::new(&fd, flags)];
        match poll(&mut fds, Some(&ts)) {
            Ok(0) | Err(rustix::io::Errno::INTR) => continue,
            Ok(_) => return Ok(Ready::Ready),
            Err(e) => return Err(e.into()),
        }
    }
}

/// Makes reads and writes on `fd` return `WouldBlock` instead of waiting
/// (for pipes used with [`wait_fd`]).
pub fn set_nonblocking(fd: std::os::fd::BorrowedFd<'_>) -> io::Result<()> {
    let flags = rustix::fs::fcntl_getfl(fd)?;
    rustix::fs::fcntl_setfl(fd, flags | rustix::fs::OFlags::NONBLOCK)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    fn spawn(script: &str) -> Child {
        Command::new("sh")
            .arg("-c")
            .arg(script)
            .process_group(0)
            .spawn()
            .unwrap()
    }

    #[test]
    fn reports_the_exit_status() {
        let mut c = spawn("exit 3");
        match wait_group(&mut c, Some(Duration::from_secs(30)), None).unwrap() {
            Waited::Exited(s) => assert_eq!(s.code(), Some(3)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn kills_the_whole_group_at_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("late");
        // A grandchild that would write a file after the deadline.
        let mut c = spawn(&format!("(sleep 1; touch {}) & sleep 30", marker.display()));
        let t = Instant::now();
        let w = wait_group(&mut c, Some(Duration::from_millis(200)), None).unwrap();
        assert_eq!(w, Waited::TimedOut);
        assert!(t.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(1500));
        assert!(!marker.exists(), "the grandchild survived the group kill");
    }

    #[test]
    fn cancel_stops_the_wait() {
        let flag = AtomicBool::new(true);
        let mut c = spawn("sleep 30");
        let w = wait_group(&mut c, None, Some(&flag)).unwrap();
        assert_eq!(w, Waited::Cancelled);
    }
}
