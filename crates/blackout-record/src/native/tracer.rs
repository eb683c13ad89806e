//! The tracing loop: every stop of every tracee, per thread, until none is
//! left.
//!
//! A traced call stops the workload twice: at its seccomp stop, where its
//! arguments are read ([`Entry::read`]) and the thread is restarted with
//! `PTRACE_SYSCALL`, and at its syscall-exit stop, where its return and
//! the rest are read and it is applied to the model ([`Feed::call`])
//! after the thread was let go. A thread has at most one call in flight;
//! one whose thread ends inside it never completed
//! ([`Feed::unfinished`]). Processes and threads are learned of from
//! ptrace's fork, vfork and clone events, before the child runs (a child
//! that reports its first stop before its parent's event waits for it);
//! an execve from the exec event (a thread that execs takes over its
//! leader's id, and its own id ends there); signals are delivered again
//! as they came, and a group-stop is kept with `PTRACE_LISTEN`. As strace
//! does, the loop goes on while any tracee lives, after the workload's
//! first process exits too.

use std::collections::{HashMap, HashSet};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::error::Fault;
use crate::syscall::Spawn;

use super::calls::{self, Entry, Ret};
use super::feed::{site, Feed};
use super::filter;
use super::ptrace::{self, event, Resume, Status};
use super::writes::Writer;

/// What the tracer shares with the watchdog that stops a run.
#[derive(Debug, Default)]
pub(super) struct Shared {
    /// Every tracee alive.
    tracees: Mutex<HashSet<i32>>,
    /// Set once the run is being stopped: every tracee seen is killed.
    killing: AtomicBool,
}

impl Shared {
    fn tracees(&self) -> std::sync::MutexGuard<'_, HashSet<i32>> {
        self.tracees.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Kills every tracee, and the process group `group`, and every
    /// tracee seen from now on.
    pub(super) fn kill_all(&self, group: i32) {
        self.killing.store(true, Ordering::SeqCst);
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(group),
            nix::sys::signal::Signal::SIGKILL,
        );
        for &pid in self.tracees().iter() {
            // SAFETY: kill takes no pointers.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// The tracer's view of the tracees.
pub(super) struct Tracer<'a> {
    feed: &'a mut Feed,
    shared: &'a Shared,
    root: i32,
    /// Each thread, with the call it is in.
    threads: HashMap<i32, Option<Entry>>,
    /// New children whose first stop came before their parent's event.
    early: HashSet<i32>,
    /// The workload's first process ran its program (before that, it is
    /// the recorder's child still setting up).
    exec_seen: bool,
    /// How the first process ended (a raw wait status).
    root_status: Option<i32>,
    /// The writes the tracer makes for the workload.
    writer: Writer,
}

impl<'a> Tracer<'a> {
    /// A tracer of `root`, seized and about to exec the workload.
    pub(super) fn new(feed: &'a mut Feed, shared: &'a Shared, root: i32) -> Tracer<'a> {
        shared.tracees().insert(root);
        Tracer {
            feed,
            shared,
            root,
            threads: HashMap::from([(root, None)]),
            early: HashSet::new(),
            exec_seen: false,
            root_status: None,
            writer: Writer::new(),
        }
    }

    /// Follows every tracee until none is left; how the first process
    /// ended and whether it ever ran the workload's program. On an
    /// unexpected ptrace failure every tracee is killed and waited for.
    pub(super) fn run(mut self) -> io::Result<(i32, bool)> {
        if let Err(e) = self.follow() {
            self.shared.kill_all(self.root);
            while let Ok(Some((pid, raw))) = ptrace::wait_any() {
                if pid == self.root && matches!(ptrace::status(raw), Status::Gone(_)) {
                    self.root_status = Some(raw);
                }
            }
            return Err(e);
        }
        let status = self.root_status.unwrap_or(libc::SIGKILL);
        Ok((status, self.exec_seen))
    }

    fn follow(&mut self) -> io::Result<()> {
        while let Some((pid, raw)) = ptrace::wait_any()? {
            let st = ptrace::status(raw);
            if let Status::Gone(raw) = st {
                self.gone(pid, raw);
                continue;
            }
            if self.shared.killing.load(Ordering::SeqCst) {
                // SAFETY: kill takes no pointers.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                continue;
            }
            match st {
                Status::SyscallStop => self.returned(pid)?,
                Status::Event(event::SECCOMP, _) => self.entered(pid)?,
                Status::Event(event::FORK | event::VFORK | event::CLONE, _) => self.spawned(pid)?,
                Status::Event(event::EXEC, _) => self.execed(pid)?,
                Status::Event(event::STOP, sig) => self.event_stop(pid, sig)?,
                Status::Event(_, _) | Status::Other => self.resume(pid, 0)?,
                Status::Signal(sig) => self.resume(pid, sig)?,
                Status::Gone(_) => {}
            }
        }
        Ok(())
    }

    /// Restarts `pid` with `sig`: to the end of its call if it is in one.
    fn resume(&self, pid: i32, sig: i32) -> io::Result<()> {
        let how = match self.threads.get(&pid) {
            Some(Some(_)) => Resume::Syscall,
            _ => Resume::Cont,
        };
        ptrace::resume(pid, how, sig)
    }

    /// A seccomp stop: a traced call starts.
    fn entered(&mut self, pid: i32) -> io::Result<()> {
        let info = match ptrace::syscall_info(pid) {
            Ok(i) if i.op == ptrace::INFO_SECCOMP => i,
            Ok(_) => return self.resume(pid, 0),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Ok(()),
            Err(e) => return Err(e),
        };
        // SAFETY: the kernel filled the seccomp member (op says so).
        let seccomp = unsafe { info.u.seccomp };
        if !self.exec_seen {
            return ptrace::resume(pid, Resume::Cont, 0);
        }
        if info.arch != filter::AUDIT_ARCH_X86_64 || seccomp.ret_data & 0xffff == filter::FOREIGN {
            let line = self.feed.next_line();
            self.feed.refuse(
                Fault::unmodelable(
                    "a system call of another ABI (i386 or x32), which the native recorder does not decode (record with --recorder strace)",
                ),
                line,
                None,
            );
            return ptrace::resume(pid, Resume::Cont, 0);
        }
        let Some(name) = filter::name_of(seccomp.nr) else {
            return ptrace::resume(pid, Resume::Cont, 0);
        };
        if filter::changes_limits_or_credentials(seccomp.nr) {
            self.writer.changing(name, &seccomp.args);
            return ptrace::resume(pid, Resume::Cont, 0);
        }
        let line = self.feed.next_line();
        let entry = Entry::read(pid, name, seccomp.args, line);
        if self.feed.keeps(pid as u32, entry.int(0)) == Some(true) {
            if let Some((ret, bytes)) = self.writer.write(pid, &entry) {
                return self.wrote(pid, entry, ret, bytes);
            }
        }
        self.threads.insert(pid, Some(entry));
        ptrace::resume(pid, Resume::Syscall, 0)
    }

    /// The tracer made the write `entry` of `pid` for it ([`Writer`]): the
    /// call is skipped, returns `ret`, and is complete.
    fn wrote(&mut self, pid: i32, entry: Entry, ret: Ret, bytes: Vec<u8>) -> io::Result<()> {
        let value = match ret {
            Ret::Ok(v) => v,
            Ret::Err(e) => -i64::from(e),
            Ret::Restart => -i64::from(libc::EINTR),
        };
        // The write is made: it goes into the model even if the thread was
        // killed in the meantime (`ESRCH`; its exit is waited for next).
        let skipped = ptrace::skip_returning(pid, value);
        let feed = &*self.feed;
        let keeps = |fd: i64| feed.keeps(pid as u32, fd);
        let call = calls::written(pid, &entry, ret, bytes, &keeps);
        match skipped {
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
            r => {
                r?;
                ptrace::resume(pid, Resume::Cont, 0)?;
            }
        }
        let at = site(pid as u32, entry.line, entry.line, entry.name);
        self.feed.call(at, ret.outcome(), call);
        Ok(())
    }

    /// A syscall-exit stop: the call `pid` is in returns.
    fn returned(&mut self, pid: i32) -> io::Result<()> {
        let info = match ptrace::syscall_info(pid) {
            Ok(i) => i,
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Ok(()),
            Err(e) => return Err(e),
        };
        let entry = self.threads.get_mut(&pid).and_then(Option::take);
        let (Some(entry), ptrace::INFO_EXIT) = (entry, info.op) else {
            return ptrace::resume(pid, Resume::Cont, 0);
        };
        // SAFETY: the kernel filled the exit member (op says so).
        let exit = unsafe { info.u.exit };
        let ret = Ret::of(exit.sval, exit.is_error != 0);
        let end_line = self.feed.line();
        let feed = &*self.feed;
        let keeps = |fd: i64| feed.keeps(pid as u32, fd);
        let call = calls::syscall(pid, &entry, ret, &keeps);
        ptrace::resume(pid, Resume::Cont, 0)?;
        let at = site(pid as u32, entry.line, end_line, entry.name);
        self.feed.call(at, ret.outcome(), call);
        Ok(())
    }

    /// A fork, vfork or clone event: `pid` made a child, which has not run.
    fn spawned(&mut self, pid: i32) -> io::Result<()> {
        let child = ptrace::event_message(pid)? as i32;
        let (nr, first) = ptrace::call_and_first_arg(pid)?;
        let name = filter::name_of(nr).unwrap_or("clone");
        let flags = match name {
            "clone" => first,
            "clone3" => super::memory::read_u64(pid, first).unwrap_or(0),
            _ => 0,
        };
        self.threads.insert(child, None);
        self.shared.tracees().insert(child);
        if self.exec_seen {
            let threadish = matches!(name, "clone" | "clone3");
            let spawn = Spawn {
                child: Some(child as u32),
                share_files: threadish && flags & libc::CLONE_FILES as u64 != 0,
                share_fs: threadish && flags & libc::CLONE_FS as u64 != 0,
            };
            self.feed.spawn(pid as u32, name, spawn);
        }
        if self.early.remove(&child) {
            ptrace::resume(child, Resume::Cont, 0)?;
        }
        ptrace::resume(pid, Resume::Cont, 0)
    }

    /// An exec event: `pid` runs a new program.
    fn execed(&mut self, pid: i32) -> io::Result<()> {
        let former = ptrace::event_message(pid)? as i32;
        let (nr, _) = ptrace::call_and_first_arg(pid)?;
        let name = match filter::name_of(nr) {
            Some("execveat") => "execveat",
            _ => "execve",
        };
        if former != pid {
            // Another thread exec'd: the leader's call never completes, and
            // that thread's own id ends.
            self.never_completed(pid);
            self.never_completed(former);
            self.threads.remove(&former);
            self.writer.forget(former);
            self.writer.forget(pid);
            self.shared.tracees().remove(&former);
            self.feed.exit(former as u32);
        }
        if pid == self.root && !self.exec_seen {
            self.exec_seen = true;
            self.feed.start(pid as u32);
        }
        if self.exec_seen {
            self.feed.exec(pid as u32, name);
        }
        ptrace::resume(pid, Resume::Cont, 0)
    }

    /// A `PTRACE_EVENT_STOP`: a group-stop (kept until SIGCONT), or a new
    /// child's first stop (held until its parent's event names it).
    fn event_stop(&mut self, pid: i32, sig: i32) -> io::Result<()> {
        if matches!(
            sig,
            libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU
        ) {
            return ptrace::resume(pid, Resume::Listen, 0);
        }
        if !self.threads.contains_key(&pid) {
            self.early.insert(pid);
            return Ok(());
        }
        self.resume(pid, 0)
    }

    /// `pid`'s call in flight, if any, never completes.
    fn never_completed(&mut self, pid: i32) {
        if let Some(e) = self.threads.get_mut(&pid).and_then(Option::take) {
            self.feed
                .unfinished(pid as u32, e.name, e.line, &calls::touched(&e));
        }
    }

    /// `pid` exited or was killed.
    fn gone(&mut self, pid: i32, raw: i32) {
        self.never_completed(pid);
        self.threads.remove(&pid);
        self.writer.forget(pid);
        self.early.remove(&pid);
        self.shared.tracees().remove(&pid);
        if self.exec_seen {
            self.feed.exit(pid as u32);
        }
        if pid == self.root {
            self.root_status = Some(raw);
        }
    }
}
