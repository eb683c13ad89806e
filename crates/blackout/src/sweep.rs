//! The run's pool as analysis's seam ([`PoolAsk`]): the two states a run
//! checks before it explores, the distinct states of an exploration (the
//! run's own, a fix's, or one without a sync call site's syncs), and a
//! state the run did not check ([`blackout_analysis::steps`] are the run's
//! steps), answered from the run's three sources of outcomes
//! ([`Answers`]): checking them, checking a shard's share of them, or
//! the parts a merge reads. A [`Session`] is what a run's stages share:
//! the pool that checks and the analysis's plain data.

use std::io;
use std::ops::Deref;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use blackout_analysis::group::Analysis;
use blackout_analysis::steps::StartState;
use blackout_analysis::{Ask, CannotRun, Stopped};
use blackout_check::pool::{Cache, Pool, PoolError};
use blackout_check::shard::{Known, Shard};
use blackout_check::slot::Slot;
use blackout_explore::dedup::{ExploreError, Explored};
use blackout_explore::enumerate::{ConfigError, StateDesc};
use blackout_explore::state::FsState;
use blackout_oplog::outcome::Outcome;
use blackout_oplog::promises::Outputs;
use blackout_oplog::trace::Trace;

/// Why a run could not finish (the checker's own failures are verdicts, not
/// errors).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The cancel flag was set.
    #[error("interrupted")]
    Interrupted,
    /// Writing states or running the checker failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// A setting is out of range.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

impl From<ExploreError> for RunError {
    fn from(e: ExploreError) -> Self {
        Stopped::from(e).into()
    }
}

impl From<PoolError> for RunError {
    fn from(e: PoolError) -> Self {
        stopped(e).into()
    }
}

impl From<Stopped> for RunError {
    fn from(e: Stopped) -> Self {
        match e {
            Stopped::Interrupted => RunError::Interrupted,
            Stopped::Io(e) => RunError::Io(e),
            Stopped::Config(c) => RunError::Config(c),
        }
    }
}

/// What a run's stages share: the pool that checks its states (on its
/// trace) and what analysis reads; the analysis's fields are the
/// session's (`Deref`).
#[derive(Clone, Copy)]
pub struct Session<'a> {
    /// The pool, on the run's trace.
    pub pool: Pool<'a>,
    /// The run's data for analysis, and its settings.
    pub analysis: Analysis<'a>,
}

impl<'a> Session<'a> {
    /// The session for another trace of the same program (syncs added or
    /// taken out), with its promises: the same pool settings and analysis
    /// settings.
    pub fn for_trace<'b>(&self, trace: &'b Trace, outputs: &'b Outputs) -> Session<'b>
    where
        'a: 'b,
    {
        Session {
            pool: self.pool.for_trace(trace, outputs),
            analysis: Analysis {
                trace,
                outputs,
                ..self.analysis
            },
        }
    }
}

impl<'a> Deref for Session<'a> {
    type Target = Analysis<'a>;

    fn deref(&self) -> &Analysis<'a> {
        &self.analysis
    }
}

/// Where a run's outcomes come from: the three sources of outcomes, one
/// seam ([`Ask`]).
#[derive(Clone, Copy)]
pub enum Answers<'k> {
    /// Every state asked is checked (a run).
    Checked,
    /// Of any exploration, only the distinct states this shard holds are
    /// checked; the rest stay unknown (a shard's share of a run).
    Share(Shard),
    /// The two start states' outcomes are the parts' (shard 1's); every
    /// other state asked (a fix's) is checked (a merge).
    Parts(&'k Known),
}

/// Analysis asking a pool about states: one at a time in a slot of its
/// own (made at the first question, released when done), or an
/// exploration's (the run's, a fix's) on the pool's workers, as
/// [`Answers`] says.
pub struct PoolAsk<'p> {
    pool: &'p Pool<'p>,
    slot: Option<Slot>,
    answers: Answers<'p>,
}

impl<'p> PoolAsk<'p> {
    /// Questions to `pool`, every state checked.
    pub fn new(pool: &'p Pool<'p>) -> PoolAsk<'p> {
        PoolAsk::answering(pool, Answers::Checked)
    }

    /// Questions to `pool`, answered as `answers` says.
    pub fn answering(pool: &'p Pool<'p>, answers: Answers<'p>) -> PoolAsk<'p> {
        PoolAsk {
            pool,
            slot: None,
            answers,
        }
    }

    /// The slot of its own, made at the first question.
    fn slot(&mut self) -> Result<&Slot, Stopped> {
        let slot = match self.slot.take() {
            Some(slot) => slot,
            None => self.pool.scratch.slot()?,
        };
        Ok(self.slot.insert(slot))
    }
}

/// A pool's error as analysis's.
fn stopped(e: PoolError) -> Stopped {
    match e {
        PoolError::Interrupted => Stopped::Interrupted,
        PoolError::Io(e) => Stopped::Io(e),
    }
}

impl Ask for PoolAsk<'_> {
    fn outcome(&mut self, desc: &StateDesc) -> Result<Option<Outcome>, Stopped> {
        let pool = self.pool;
        let slot = self.slot()?;
        let fs = FsState::build(pool.trace, desc, pool.cfg.sector);
        // A state the checker cannot be run on stays unknown.
        Ok(pool
            .check_one(slot, &desc.id(), &fs, desc.crash, false)
            .ok()
            .flatten())
    }

    fn check(
        &mut self,
        trace: &Trace,
        outputs: &Outputs,
        explored: &Explored,
        cache: &mut Cache,
        order: &[usize],
        deadline: Option<Instant>,
    ) -> Result<Result<Vec<Option<Outcome>>, CannotRun>, Stopped> {
        let pool: Pool<'_> = *self.pool;
        let held: Vec<usize>;
        let order = match self.answers {
            Answers::Share(shard) => {
                let ours = |i: &&usize| shard.holds(&explored.distinct[**i].key);
                held = order.iter().filter(ours).copied().collect();
                &held
            }
            Answers::Checked | Answers::Parts(_) => order,
        };
        pool.for_trace(trace, outputs)
            .check_distinct(explored, cache, Some(order), deadline)
            .map_err(stopped)
    }

    fn start_outcome(
        &mut self,
        which: StartState,
        id: &str,
        fs: &FsState,
        crash: usize,
    ) -> Result<Outcome, Stopped> {
        if let Answers::Parts(known) = self.answers {
            let (outcome, what) = match which {
                StartState::Before => (&known.precheck, "pre-check"),
                StartState::AllApplied => (&known.all_applied, "state where nothing was lost"),
            };
            return outcome.clone().ok_or_else(|| {
                Stopped::Io(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("shard 1 holds no outcome of the {what}, which this merge needs"),
                ))
            });
        }
        let pool = self.pool;
        let slot = self.slot()?;
        let all_promises = which == StartState::Before;
        let outcome = pool.check_one(slot, id, fs, crash, all_promises)?;
        outcome.ok_or(Stopped::Interrupted)
    }

    fn cancelled(&self) -> bool {
        self.pool.cancelled()
    }

    fn cancel_flag(&self) -> Option<&AtomicBool> {
        self.pool.cfg.cancel
    }
}

impl Drop for PoolAsk<'_> {
    fn drop(&mut self) {
        if let Some(slot) = &self.slot {
            self.pool.cfg.checker.release(slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use blackout_analysis::explain::SyncFix;
    use blackout_analysis::fix::{verify_fix, Owners, FIX_VERIFICATIONS_MAX};
    use blackout_analysis::like::Said;
    use blackout_analysis::report::FixCheck;
    use blackout_check::closure::ClosureChecker;
    use blackout_check::materialize::DirMaterializer;
    use blackout_check::pool::{PoolConfig, Scratch};
    use blackout_check::Checker;
    use blackout_explore::enumerate::ExploreConfig;
    use blackout_explore::model::Model;

    use super::*;

    /// A file created and written, never fsynced, then "saved" printed.
    fn trace() -> Trace {
        blackout_record::replay::trace_of_log(
            b"1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT, 0644) = 3\n\
              1 write(3, \"\\x68\\x69\", 2) = 2\n\
              1 write(1, \"\\x73\\x61\\x76\\x65\\x64\\x0a\", 6) = 6\n",
            b"/d",
        )
        .unwrap()
    }

    /// The fix for the lost write: fsync(a) after it.
    fn fsync_a() -> Vec<SyncFix> {
        vec![SyncFix {
            after: 1,
            before: None,
            ino: 1,
            dir: false,
            path: "a".into(),
        }]
    }

    /// What a checker that never answers by itself did: states it was
    /// called on, and the flag that lets it return.
    #[derive(Clone, Default)]
    struct Stuck {
        calls: Arc<AtomicUsize>,
        release: Arc<AtomicBool>,
    }

    impl Stuck {
        /// A checker that waits until released (at most a minute).
        fn checker(&self) -> ClosureChecker {
            let me = self.clone();
            ClosureChecker::new("stuck", move |_, _| {
                me.calls.fetch_add(1, Ordering::SeqCst);
                let t0 = Instant::now();
                while !me.release.load(Ordering::SeqCst) && t0.elapsed() < Duration::from_secs(60) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Ok(())
            })
        }
    }

    /// Verifies `fsync_a` with `checker`, an empty cache (every state of
    /// the re-exploration is checked) and `deadline`.
    fn verify(
        checker: &dyn Checker,
        deadline: Option<Instant>,
        cancel: Option<&AtomicBool>,
    ) -> Result<Option<FixCheck>, Stopped> {
        let trace = trace();
        let outputs = Outputs::new(&trace, None);
        let scratch = Scratch::new(&std::env::temp_dir()).unwrap();
        let explore = ExploreConfig::default();
        let s = Session {
            pool: Pool {
                trace: &trace,
                outputs: &outputs,
                cfg: PoolConfig {
                    checker,
                    materializer: &DirMaterializer::default(),
                    jobs: 2,
                    sector: 512,
                    cancel,
                    progress: None,
                },
                scratch: &scratch,
            },
            analysis: Analysis {
                trace: &trace,
                outputs: &outputs,
                sector: 512,
                explore: &explore,
                ack_prefix: None,
                fix_verifications: FIX_VERIFICATIONS_MAX,
                fix_deadline: deadline,
                check_rest: true,
                promised: &Arc::from(Vec::new()),
                verify_deadline: None,
            },
        };
        let mut cache = Cache::new();
        let check = verify_fix(
            &s,
            &mut PoolAsk::new(&s.pool),
            Model::Posix,
            (&fsync_a(), &[]),
            Said::default(),
            &mut cache,
            (&Owners::default(), &[]),
        );
        scratch.remove().unwrap();
        check.map(|mut c| c.remove(0))
    }

    #[test]
    fn a_verification_still_checking_at_its_deadline_is_cut_short() {
        let stuck = Stuck::default();
        let checker = stuck.checker();
        let deadline = Instant::now() + Duration::from_millis(200);
        let t0 = Instant::now();
        let check = verify(&checker, Some(deadline), None).unwrap().unwrap();
        stuck.release.store(true, Ordering::SeqCst);
        // The checker never answers, so the bound ends the verification
        // (its checkers stopped) before any state is checked: the fix is
        // neither verified nor refuted.
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the stuck checkers were not stopped"
        );
        assert!(check.cut_short, "{check:?}");
        assert!(!check.passes && !check.exact);
        assert_eq!((check.states, check.still_failing), (0, 0));
        assert!(check.simplest_failing.is_none());
        assert_eq!(check.description, "fsync(a) after op 1 (log line 2)");
    }

    #[test]
    fn no_verification_starts_after_the_deadline() {
        let stuck = Stuck::default();
        stuck.release.store(true, Ordering::SeqCst);
        let checker = stuck.checker();
        let check = verify(&checker, Some(Instant::now()), None)
            .unwrap()
            .unwrap();
        assert!(check.cut_short && !check.passes, "{check:?}");
        assert_eq!(stuck.calls.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_verification_within_its_bound_is_verified() {
        let checker = ClosureChecker::new("a whole", |dir, promised| {
            if promised.is_empty() || std::fs::read(dir.join("a")).is_ok_and(|b| b == b"hi") {
                Ok(())
            } else {
                Err("a lost".into())
            }
        });
        let deadline = Instant::now() + Duration::from_secs(600);
        let check = verify(&checker, Some(deadline), None).unwrap().unwrap();
        assert!(!check.cut_short, "{check:?}");
        // fsync(a) alone does not make the create durable: the directory
        // entry can still be lost.
        assert!(!check.passes && check.states > 0 && check.still_failing > 0);
    }

    #[test]
    fn a_cancelled_run_is_interrupted_not_cut_short() {
        let stuck = Stuck::default();
        let checker = stuck.checker();
        let cancel = AtomicBool::new(false);
        let deadline = Instant::now() + Duration::from_secs(600);
        let check = std::thread::scope(|scope| {
            scope.spawn(|| {
                while stuck.calls.load(Ordering::SeqCst) == 0 {
                    std::thread::sleep(Duration::from_millis(5));
                }
                cancel.store(true, Ordering::SeqCst);
            });
            verify(&checker, Some(deadline), Some(&cancel))
        });
        stuck.release.store(true, Ordering::SeqCst);
        assert!(matches!(check, Err(Stopped::Interrupted)), "{check:?}");
    }
}
