//! The model fed as the workload runs: each traced call is applied to the
//! file-system model ([`FsModel`]) the moment it completes, in the order
//! calls complete, as replay applies a log's (so the bytes written never
//! wait in memory for the end of the run).
//!
//! Calls are numbered as a log's lines are: each call takes the next number
//! when it starts (its `line`), and completes at the number the latest
//! call to start took (its `end_line`), so a sync covers the ops that
//! completed before it started, as in a log. The first refusal is kept
//! and nothing more is applied after it; the workload runs on to its end,
//! as it does under strace.

use blackout_oplog::trace::Replayed;
use blackout_oplog::tree::Tree;

use crate::error::{Fault, ReplayError};
use crate::fsmodel::FsModel;
use crate::syscall::{CallSite, Outcome, Spawn, Syscall, SyscallEvent, Touched};

/// The model, the numbering of calls, and the first refusal.
pub(super) struct Feed {
    model: FsModel,
    /// The number the latest call to start took.
    line: u32,
    /// Events applied (the model matches a creating call with its child
    /// by this).
    events: usize,
    /// Calls applied.
    calls: u64,
    error: Option<ReplayError>,
    /// A call failed for want of space (`ENOSPC`, `EDQUOT`).
    no_space: bool,
}

impl Feed {
    /// A model of `tree` (the directory under test at `dir`), taking fd
    /// `output_fd` as the output stream and keeping the bytes written in
    /// `data`.
    pub(super) fn new(
        tree: &Tree,
        dir: &[u8],
        volatile: globset::GlobSet,
        output_fd: i64,
        data: std::fs::File,
    ) -> Feed {
        let mut model = FsModel::new(tree, dir, volatile);
        model.set_output_fd(output_fd);
        model.set_data_file(data);
        Feed {
            model,
            line: 0,
            events: 0,
            calls: 0,
            error: None,
            no_space: false,
        }
    }

    /// The number of a call starting now.
    pub(super) fn next_line(&mut self) -> u32 {
        self.line = self.line.saturating_add(1);
        self.line
    }

    /// Whether a call failed for want of space.
    pub(super) fn no_space(&self) -> bool {
        self.no_space
    }

    /// The number the latest call to start took.
    pub(super) fn line(&self) -> u32 {
        self.line
    }

    /// What the model knows of fd `fd` of `pid` (see
    /// [`FsModel::fd_keeps_bytes`]).
    pub(super) fn keeps(&self, pid: u32, fd: i64) -> Option<bool> {
        self.model.fd_keeps_bytes(pid, fd)
    }

    /// The workload's first process, with its standard fds and the
    /// directory under test as its working directory.
    pub(super) fn start(&mut self, pid: u32) {
        if let Err(f) = self.model.ensure_proc(pid) {
            self.refuse(f, 0, None);
        }
    }

    /// A completed call.
    pub(super) fn call(
        &mut self,
        site: CallSite<'_>,
        result: Outcome,
        call: Result<Syscall, Fault>,
    ) {
        if self.error.is_some() {
            return;
        }
        let (line, name) = (site.line, site.name);
        self.no_space |= matches!(&result, Outcome::Err(e) if e == "ENOSPC" || e == "EDQUOT");
        let applied = call.and_then(|call| {
            self.model.ensure_proc(site.pid)?;
            let ev = SyscallEvent { site, result, call };
            self.events += 1;
            self.model.apply(ev, self.events)
        });
        self.calls += 1;
        if let Err(f) = applied {
            self.refuse(f, line, Some(name));
        }
    }

    /// `parent` made `child` with `name` (clone, clone3, fork, vfork),
    /// before the child ran.
    pub(super) fn spawn(&mut self, parent: u32, name: &'static str, spawn: Spawn) {
        if self.error.is_some() {
            return;
        }
        let line = self.next_line();
        let applied = self.model.ensure_proc(parent).and_then(|()| {
            self.events += 1;
            self.model.expect_spawn(self.events, parent, &spawn);
            let ev = SyscallEvent {
                site: site(parent, line, line, name),
                result: Outcome::Ok(spawn.child.map_or(-1, i64::from)),
                call: Syscall::Clone(spawn),
            };
            self.model.apply(ev, self.events)
        });
        self.calls += 1;
        if let Err(f) = applied {
            self.refuse(f, line, Some(name));
        }
    }

    /// `pid` ran a new program (`name`: execve or execveat).
    pub(super) fn exec(&mut self, pid: u32, name: &'static str) {
        let line = self.next_line();
        let ev = site(pid, line, line, name);
        self.call(ev, Outcome::Ok(0), Ok(Syscall::Exec));
    }

    /// A call of `pid` that started at `line` and never completed.
    pub(super) fn unfinished(&mut self, pid: u32, name: &'static str, line: u32, t: &Touched) {
        if self.error.is_some() {
            return;
        }
        if let Err(f) = self.model.unfinished(pid, t) {
            self.refuse(f, line, Some(name));
        }
    }

    /// `pid` ended.
    pub(super) fn exit(&mut self, pid: u32) {
        self.model.exit(pid);
    }

    /// Keeps the first refusal: nothing is applied after it.
    pub(super) fn refuse(&mut self, f: Fault, line: u32, name: Option<&str>) {
        if self.error.is_none() {
            self.error = Some(f.at(line, name));
        }
    }

    /// The ops, or the first refusal.
    pub(super) fn finish(self) -> Result<Replayed, ReplayError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let mut replayed = self.model.finish();
        replayed.stats.lines = u64::from(self.line);
        replayed.stats.calls = self.calls;
        Ok(replayed)
    }
}

/// A call's site: no stack (strace's `-k` alone records one).
pub(super) fn site(pid: u32, line: u32, end_line: u32, name: &'static str) -> CallSite<'static> {
    CallSite {
        pid,
        line,
        end_line,
        name,
        stack: Vec::new(),
    }
}
