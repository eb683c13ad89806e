//! The checker pool: distinct crash states checked in parallel.
//!
//! The model backend's states through the shared work loop
//! ([`crate::workers`]): `-j` worker threads pull state indices from a
//! shared counter; each owns one [`Slot`] under the run's [`Scratch`]
//! directory, builds the state, writes it into the slot, runs the
//! [`Checker`], and clears the slot. A checker that cannot be run at all
//! stops every worker at once; so does the cancel flag (running checkers
//! are killed by the checker itself) and any I/O error.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use blackout_explore::dedup::{key_of, state_key, Distinct, Explored, StateKey};
use blackout_explore::enumerate::StateDesc;
use blackout_explore::keys::Keyer;
use blackout_explore::state::FsState;
use blackout_oplog::promises::{join_lines, Outputs};
use blackout_oplog::trace::Trace;

use crate::materialize::Materializer;
use crate::outcome::Outcome;
use crate::slot::{Slot, StateInput};
pub use crate::workers::{CannotRun, Parallel, PoolError, Release, Scratch};
use crate::workers::{Source, Step, Workers};
use crate::Checker;

pub use blackout_explore::dedup::Cache;

/// How the pool checks.
#[derive(Clone, Copy)]
pub struct PoolConfig<'a> {
    /// The checker.
    pub checker: &'a dyn Checker,
    /// How states are written out for it.
    pub materializer: &'a dyn Materializer,
    /// Checkers run at once.
    pub jobs: usize,
    /// Sector size at which writes tear.
    pub sector: u64,
    /// Set from outside (Ctrl-C) to stop.
    pub cancel: Option<&'a AtomicBool>,
    /// Called after each checked state with (checked, total).
    pub progress: Option<&'a (dyn Fn(usize, usize) + Send + Sync)>,
}

/// Checking the states of one trace.
#[derive(Clone, Copy)]
pub struct Pool<'a> {
    /// The trace the states come from.
    pub trace: &'a Trace,
    /// Its promises.
    pub outputs: &'a Outputs,
    /// How to check.
    pub cfg: PoolConfig<'a>,
    /// Where.
    pub scratch: &'a Scratch,
}

impl<'a> Pool<'a> {
    /// The same pool, for another trace (one with an added sync).
    pub fn for_trace(&self, trace: &'a Trace, outputs: &'a Outputs) -> Pool<'a> {
        Pool {
            trace,
            outputs,
            ..*self
        }
    }

    /// Whether the cancel flag is set.
    pub fn cancelled(&self) -> bool {
        self.cfg.cancel.is_some_and(|c| c.load(Ordering::SeqCst))
    }

    /// The content key of a state of this pool's trace.
    pub fn key(&self, desc: &StateDesc) -> StateKey {
        let fs = FsState::build(self.trace, desc, self.cfg.sector);
        state_key(&fs, self.outputs, desc.crash)
    }

    /// Writes a state into a worker's slot, runs the checker on it, removes
    /// it. With `all_promises`, the checker gets every promise the workload
    /// made (the pre-check). `None` when cancelled.
    pub fn check_one(
        &self,
        slot: &Slot,
        id: &str,
        fs: &FsState,
        crash: usize,
        all_promises: bool,
    ) -> io::Result<Option<Outcome>> {
        self.check_one_until(slot, id, fs, crash, all_promises, self.cfg.cancel)
    }

    /// [`Pool::check_one`], the checker stopped when `halt` is set.
    fn check_one_until(
        &self,
        slot: &Slot,
        id: &str,
        fs: &FsState,
        crash: usize,
        all_promises: bool,
        halt: Option<&AtomicBool>,
    ) -> io::Result<Option<Outcome>> {
        let promises = if all_promises {
            join_lines(&self.outputs.all_promises())
        } else {
            self.outputs.promises_text(crash)
        };
        let output = if all_promises {
            self.outputs.output_at(usize::MAX)
        } else {
            self.outputs.output_at(crash)
        };
        slot.write(&StateInput {
            fs,
            materializer: self.cfg.materializer,
            promises: &promises,
            output,
            slot_files: self.cfg.checker.reads_slot_files(),
        })?;
        let files = slot.files(id, &promises);
        let outcome = self.cfg.checker.check(slot, &files, halt);
        let cleared = slot.clear();
        let outcome = outcome?;
        cleared?;
        Ok(outcome)
    }

    /// Checks the distinct states of an exploration that the cache does not
    /// know, in `order` (every one not known, in exploration order, when
    /// `None`), adding the results to it; no state is started after
    /// `deadline`. Returns each distinct state's outcome (`None` for one
    /// the deadline left unchecked), or the state where the checker could
    /// not be run and why.
    pub fn check_distinct(
        &self,
        explored: &Explored,
        cache: &mut Cache,
        order: Option<&[usize]>,
        deadline: Option<Instant>,
    ) -> Result<Result<Vec<Option<Outcome>>, CannotRun>, PoolError> {
        let unknown = |i: &usize| !cache.contains_key(&explored.distinct[*i].key);
        let todo: Vec<usize> = match order {
            Some(order) => order.iter().copied().filter(unknown).collect(),
            None => (0..explored.distinct.len()).filter(unknown).collect(),
        };
        let (checked, stop) = self.check_until(&explored.distinct, &todo, deadline)?;
        if let Some(stop) = stop {
            return Ok(Err(stop));
        }
        for (i, o) in checked {
            cache.insert(explored.distinct[i].key, o);
        }
        Ok(Ok(explored.outcomes(cache)))
    }

    /// Checks `distinct[i]` for every `i` in `todo`, `jobs` at a time.
    pub fn check_parallel(
        &self,
        distinct: &[Distinct],
        todo: &[usize],
    ) -> Result<Parallel, PoolError> {
        self.check_until(distinct, todo, None)
    }

    /// Checks `distinct[i]` for `i` in `todo`, in that order, `jobs` at a
    /// time, until `deadline`: then the checkers still running are stopped
    /// (their states not checked) and none starts. The states left are not
    /// in the results.
    pub fn check_until(
        &self,
        distinct: &[Distinct],
        todo: &[usize],
        deadline: Option<Instant>,
    ) -> Result<Parallel, PoolError> {
        let workers = Workers {
            checker: self.cfg.checker,
            jobs: self.cfg.jobs,
            cancel: self.cfg.cancel,
            progress: self.cfg.progress,
            scratch: self.scratch,
        };
        workers.run(
            &ModelSource {
                pool: self,
                distinct,
            },
            todo,
            deadline,
        )
    }
}

/// The model backend's states as a [`Source`]: each built by the worker's
/// own [`Keyer`] from the trace (from the state at the crash point before:
/// the states come in about crash-point order) and written into its slot.
struct ModelSource<'p, 'a> {
    pool: &'p Pool<'a>,
    distinct: &'p [Distinct],
}

impl<'a> Source for ModelSource<'_, 'a> {
    type Worker = Keyer<'a>;

    fn start(&self, scratch: &Scratch) -> io::Result<(Slot, Keyer<'a>)> {
        let keys = Keyer::new(self.pool.trace, self.pool.cfg.sector);
        Ok((scratch.worker_slot()?, keys))
    }

    fn step(
        &self,
        keys: &mut Keyer<'a>,
        slot: &Slot,
        i: usize,
        halt: Option<&AtomicBool>,
    ) -> io::Result<Step> {
        let desc = &self.distinct[i].desc;
        let (fs, hash) = keys.state(desc);
        // Paired with dedup: the state rebuilt for checking must be the
        // one deduplicated under this key, or its outcome would be filed
        // under another state. (The files it changed are hashed from what
        // was built; the others are the crash point's.)
        if key_of(hash, self.pool.outputs, desc.crash) != self.distinct[i].key {
            return Err(io::Error::other(format!(
                "internal error: state {} rebuilt with other contents than it was deduplicated with",
                desc.id()
            )));
        }
        Ok(
            match self
                .pool
                .check_one_until(slot, &desc.id(), &fs, desc.crash, false, halt)?
            {
                Some(Outcome::CannotRun { reason }) => Step::CannotRun((desc.id(), reason)),
                Some(o) => Step::Checked(o),
                None => Step::Stopped,
            },
        )
    }
}
