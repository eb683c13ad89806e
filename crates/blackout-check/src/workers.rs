//! The work loop every source of crash states shares: `-j` worker
//! threads, each with its own [`Slot`] and whatever else it keeps from
//! state to state (a model's [`Keyer`](blackout_explore::keys::Keyer), a
//! device's cursor image and mount point), pull indexes from one counter
//! and hand each to their [`Source`]. A checker that cannot be run at all
//! stops every worker at once; so do the cancel flag and any I/O error.
//! With a deadline, no state starts after it and the checkers still
//! running are stopped (their states left unchecked).
//!
//! Two sources use it: the model backend's `Pool` (module `pool`: a
//! state built from the trace and written into the slot) and the
//! real-file-system backend's `ImageSource` (module `image`: a
//! state's disk image written and mounted in the slot, so the file
//! system's own recovery runs).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::outcome::Outcome;
use crate::slot::Slot;
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
        blackout_sys::scratch::mark_owned(tmp.path())?;
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

/// What a worker did with one index.
#[derive(Debug)]
pub enum Step {
    /// The checker judged the state.
    Checked(Outcome),
    /// Nothing to check (the same state was checked already, or it was
    /// filed as not judged by the source itself).
    Skipped,
    /// The checker could not be run at all: every worker stops (the state's
    /// id and why).
    CannotRun(CannotRun),
    /// Stopped before it finished (the deadline or a cancel).
    Stopped,
}

/// Where a worker's states come from and how each is checked.
pub trait Source: Sync {
    /// What a worker keeps from state to state.
    type Worker;

    /// A worker's slot and its own state, made on its own thread.
    ///
    /// # Errors
    ///
    /// The slot or the worker's files could not be made.
    fn start(&self, scratch: &Scratch) -> io::Result<(Slot, Self::Worker)>;

    /// Puts state `i` in the slot, checks it (the checker stopped when
    /// `halt` is set) and clears the slot.
    ///
    /// # Errors
    ///
    /// I/O on the slot: every worker stops.
    fn step(
        &self,
        worker: &mut Self::Worker,
        slot: &Slot,
        i: usize,
        halt: Option<&AtomicBool>,
    ) -> io::Result<Step>;
}

/// How the workers run.
#[derive(Clone, Copy)]
pub struct Workers<'a> {
    /// The checker (told when each worker's slot is done with).
    pub checker: &'a dyn Checker,
    /// Workers at once.
    pub jobs: usize,
    /// Set from outside (Ctrl-C) to stop.
    pub cancel: Option<&'a AtomicBool>,
    /// Called after each checked state with (checked, total).
    pub progress: Option<&'a (dyn Fn(usize, usize) + Send + Sync)>,
    /// Where the slots go.
    pub scratch: &'a Scratch,
}

/// How often the watcher of a deadline looks at the clock.
const HALT_POLL: Duration = Duration::from_millis(20);

impl Workers<'_> {
    /// Whether the cancel flag is set.
    pub fn cancelled(&self) -> bool {
        self.cancel.is_some_and(|c| c.load(Ordering::SeqCst))
    }

    /// Hands each index of `todo` to `source`, in that order, `jobs` at a
    /// time, until `deadline`. Returns the outcomes by index (states
    /// skipped or left by the deadline are not among them) and the state
    /// where the checker could not be run, if it could not.
    ///
    /// # Errors
    ///
    /// A cancel, or I/O on a slot.
    pub fn run<S: Source>(
        &self,
        source: &S,
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
        let jobs = self.jobs.max(1).min(todo.len().max(1));
        let finished = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..jobs)
                .map(|_| {
                    let shared = &shared;
                    scope.spawn(move || self.worker(source, shared, todo, deadline))
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
    fn worker<S: Source>(
        &self,
        source: &S,
        shared: &Shared,
        todo: &[usize],
        deadline: Option<Instant>,
    ) {
        let (slot, mut worker) = match source.start(self.scratch) {
            Ok(started) => started,
            Err(e) => return shared.fail(e),
        };
        let _release = Release {
            checker: self.checker,
            slot: &slot,
        };
        let halt = match deadline {
            Some(_) => Some(&shared.halt),
            None => self.cancel,
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
            match source.step(&mut worker, &slot, i, halt) {
                Ok(Step::CannotRun(why)) => {
                    shared.stop.store(true, Ordering::SeqCst);
                    lock(&shared.cannot_run).get_or_insert(why);
                }
                Ok(Step::Checked(o)) => {
                    lock(&shared.results).push((i, o));
                    let n = shared.done.fetch_add(1, Ordering::SeqCst) + 1;
                    if let Some(p) = self.progress {
                        p(n, todo.len());
                    }
                }
                Ok(Step::Skipped) => {}
                Ok(Step::Stopped) => return,
                Err(e) => return shared.fail(e),
            }
        }
    }
}

/// What the workers of one [`Workers::run`] share.
struct Shared {
    next: AtomicUsize,
    done: AtomicUsize,
    stop: AtomicBool,
    /// Set at the deadline (or on Ctrl-C): running checkers stop.
    halt: AtomicBool,
    results: Mutex<Vec<(usize, Outcome)>>,
    cannot_run: Mutex<Option<CannotRun>>,
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
