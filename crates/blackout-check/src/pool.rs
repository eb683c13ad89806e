//! The checker pool: distinct crash states checked in parallel.
//!
//! `-j` worker threads pull state indices from a shared counter; each owns
//! one [`Slot`] under the run's [`Scratch`] directory, builds the state,
//! writes it into the slot, runs the [`Checker`], and clears the slot. A
//! checker that cannot be run at all stops every worker at once; so does
//! the cancel flag (running checkers are killed by the checker itself) and
//! any I/O error.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use blackout_explore::dedup::{key_of, state_key, Distinct, Explored, StateKey};
use blackout_explore::enumerate::StateDesc;
use blackout_explore::keys::Keyer;
use blackout_explore::state::{FsState, Materializer};
use blackout_oplog::promises::{join_lines, Outputs};
use blackout_oplog::trace::Trace;

use crate::outcome::Outcome;
use crate::slot::{Slot, StateInput};
use crate::{lock, Checker};

/// Why checking could not finish (a checker's own failures are outcomes,
/// not errors).
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// The cancel flag was set.
    #[error("interrupted")]
    Interrupted,
    /// Writing states or running the checker failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Outcomes by content key, shared by a run and its fix verifications.
pub type Cache = HashMap<StateKey, Outcome>;

/// The state where the checker could not be run, and why.
pub type CannotRun = (String, String);

/// Results of checking in parallel, and the state (and reason) where the
/// checker could not be run, if it could not.
pub type Parallel = (Vec<(usize, Outcome)>, Option<CannotRun>);

/// A run's scratch directory: one slot per worker under it. Removed (with
/// whatever a checker left, read-only directories included) by
/// [`Scratch::remove`], or when dropped.
pub struct Scratch {
    dir: Option<PathBuf>,
    slots: AtomicUsize,
}

impl Scratch {
    /// Makes a fresh `blackout-*` directory under `parent`.
    pub fn new(parent: &Path) -> io::Result<Scratch> {
        let tmp = tempfile::Builder::new()
            .prefix("blackout-")
            .tempdir_in(parent)
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "cannot make a scratch directory for crash states in {} (it comes from TMPDIR, else /dev/shm): {e}",
                        parent.display()
                    ),
                )
            })?;
        Ok(Scratch {
            dir: Some(tmp.keep()),
            slots: AtomicUsize::new(0),
        })
    }

    /// A new slot (removed when dropped).
    pub fn slot(&self) -> io::Result<Slot> {
        let n = self.slots.fetch_add(1, Ordering::SeqCst);
        let dir = self.dir.as_deref().unwrap_or(Path::new("."));
        Slot::new(&dir.join(format!("w{n}")))
    }

    /// A new slot for a worker thread of its own, which, where this process
    /// may make mount namespaces, moves into one where the scratch directory
    /// holds only this slot: the checkers it starts cannot reach another
    /// worker's (see [`blackout_sys::isolate`]). The thread must do nothing
    /// else under the scratch directory.
    pub fn worker_slot(&self) -> io::Result<Slot> {
        let slot = self.slot()?;
        if blackout_sys::isolate::available() {
            let dir = self.dir.as_deref().unwrap_or(Path::new("."));
            blackout_sys::isolate::enter(dir, &slot.root)?;
        }
        Ok(slot)
    }

    /// Removes the directory and everything in it.
    pub fn remove(mut self) -> io::Result<()> {
        match self.dir.take() {
            Some(d) => blackout_sys::scratch::remove_tree(&d),
            None => Ok(()),
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Some(d) = self.dir.take() {
            let _ = blackout_sys::scratch::remove_tree(&d);
        }
    }
}

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
        Ok(Ok(outcomes(explored, cache)))
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
        let shared = Shared {
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            halt: AtomicBool::new(false),
            results: Mutex::new(Vec::with_capacity(todo.len())),
            cannot_run: Mutex::new(None),
            failure: Mutex::new(None),
        };
        let jobs = self.cfg.jobs.max(1).min(todo.len().max(1));
        let finished = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..jobs)
                .map(|_| {
                    let shared = &shared;
                    scope.spawn(move || self.worker(shared, distinct, todo, deadline))
                })
                .collect();
            // At the deadline (or on Ctrl-C), the checkers still running
            // are stopped.
            let watcher = deadline.map(|d| {
                let (shared, finished) = (&shared, &finished);
                scope.spawn(move || {
                    while !finished.load(Ordering::SeqCst) {
                        if Instant::now() >= d || self.cancelled() {
                            shared.halt.store(true, Ordering::SeqCst);
                            return;
                        }
                        std::thread::park_timeout(HALT_POLL);
                    }
                })
            });
            for w in workers {
                let _ = w.join();
            }
            finished.store(true, Ordering::SeqCst);
            if let Some(w) = watcher {
                w.thread().unpark();
            }
        });
        if self.cancelled() {
            return Err(PoolError::Interrupted);
        }
        if let Some(e) = into_inner(shared.failure) {
            return Err(PoolError::Io(e));
        }
        Ok((into_inner(shared.results), into_inner(shared.cannot_run)))
    }

    /// One worker: its slot, then states until none is left, all stop, or
    /// the deadline passes.
    fn worker(
        &self,
        shared: &Shared,
        distinct: &[Distinct],
        todo: &[usize],
        deadline: Option<Instant>,
    ) {
        let mut keys = Keyer::new(self.trace, self.cfg.sector);
        let slot = match self.scratch.worker_slot() {
            Ok(slot) => slot,
            Err(e) => return shared.fail(e),
        };
        let _release = Release {
            checker: self.cfg.checker,
            slot: &slot,
        };
        loop {
            if shared.stop.load(Ordering::SeqCst)
                || self.cancelled()
                || deadline.is_some_and(|d| Instant::now() >= d)
            {
                return;
            }
            let j = shared.next.fetch_add(1, Ordering::SeqCst);
            let Some(&i) = todo.get(j) else { return };
            let desc = &distinct[i].desc;
            // Built from the worker's state at the crash point before: the
            // states come in about crash-point order.
            let (fs, hash) = keys.state(desc);
            // Paired with dedup: the state rebuilt for checking must be the
            // one deduplicated under this key, or its outcome would be
            // filed under another state. (The files it changed are hashed
            // from what was built; the others are the crash point's.)
            if key_of(hash, self.outputs, desc.crash) != distinct[i].key {
                return shared.fail(io::Error::other(format!(
                    "internal error: state {} rebuilt with other contents than it was deduplicated with",
                    desc.id()
                )));
            }
            let halt = match deadline {
                Some(_) => Some(&shared.halt),
                None => self.cfg.cancel,
            };
            match self.check_one_until(&slot, &desc.id(), &fs, desc.crash, false, halt) {
                Ok(Some(Outcome::CannotRun { reason })) => {
                    shared.stop.store(true, Ordering::SeqCst);
                    lock(&shared.cannot_run).get_or_insert((desc.id(), reason));
                }
                Ok(Some(o)) => {
                    lock(&shared.results).push((i, o));
                    let n = shared.done.fetch_add(1, Ordering::SeqCst) + 1;
                    if let Some(p) = self.cfg.progress {
                        p(n, todo.len());
                    }
                }
                Ok(None) => return,
                Err(e) => shared.fail(e),
            }
        }
    }
}

/// Each distinct state's outcome as the cache knows it (`None`: not
/// checked).
pub fn outcomes(explored: &Explored, cache: &Cache) -> Vec<Option<Outcome>> {
    explored
        .distinct
        .iter()
        .map(|d| cache.get(&d.key).cloned())
        .collect()
}

/// Tells the checker a worker's slot is done with, however the worker ends.
pub struct Release<'a> {
    /// The checker.
    pub checker: &'a dyn Checker,
    /// The worker's slot.
    pub slot: &'a Slot,
}

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.checker.release(self.slot);
    }
}

/// How often the watcher of a deadline looks at the clock.
const HALT_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// What the workers of one [`Pool::check_parallel`] share.
struct Shared {
    next: AtomicUsize,
    done: AtomicUsize,
    stop: AtomicBool,
    /// Set at the deadline (or on Ctrl-C): running checkers stop.
    halt: AtomicBool,
    results: Mutex<Vec<(usize, Outcome)>>,
    cannot_run: Mutex<Option<(String, String)>>,
    failure: Mutex<Option<io::Error>>,
}

impl Shared {
    /// Stops every worker, keeping the first error.
    fn fail(&self, e: io::Error) {
        self.stop.store(true, Ordering::SeqCst);
        lock(&self.failure).get_or_insert(e);
    }
}

fn into_inner<T>(m: Mutex<T>) -> T {
    m.into_inner().unwrap_or_else(|e| e.into_inner())
}
