//! Checking an exploration: its states first, every one (with
//! representatives, those of a few crash points of each class: they find
//! failures fast); then, while a deadline allows, the rest of the trace
//! explored in full and checked most novel first
//! ([`blackout_explore::rest`]). A verdict speaks for what was checked:
//! exact when every distinct state of every crash point was. A
//! [`Session`] is what a run's stages share: the pool that checks and the
//! analysis's plain data; [`PoolAsk`] lets analysis ask the pool about a
//! state the run did not check.

use std::io;
use std::ops::Deref;
use std::time::Instant;

use blackout_analysis::group::Analysis;
use blackout_analysis::{Ask, Stopped};
use blackout_check::pool::{Cache, CannotRun, Pool, PoolError};
use blackout_check::slot::Slot;
use blackout_explore::dedup::{ExploreError, Explored, Watch};
use blackout_explore::enumerate::{ConfigError, ExploreConfig, StateDesc};
use blackout_explore::rest::{check_order, explore_rest, REST_BOUND};
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
        match e {
            ExploreError::Config(c) => RunError::Config(c),
            ExploreError::Interrupted => RunError::Interrupted,
        }
    }
}

impl From<PoolError> for RunError {
    fn from(e: PoolError) -> Self {
        match e {
            PoolError::Interrupted => RunError::Interrupted,
            PoolError::Io(e) => RunError::Io(e),
        }
    }
}

impl From<Stopped> for RunError {
    fn from(e: Stopped) -> Self {
        match e {
            Stopped::Interrupted => RunError::Interrupted,
            Stopped::Io(e) => RunError::Io(e),
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

/// Analysis asking a pool about states the run did not check, in a slot
/// of its own (made at the first question, released when done).
pub struct PoolAsk<'p> {
    pool: &'p Pool<'p>,
    slot: Option<Slot>,
}

impl<'p> PoolAsk<'p> {
    /// Questions to `pool`.
    pub fn new(pool: &'p Pool<'p>) -> PoolAsk<'p> {
        PoolAsk { pool, slot: None }
    }
}

impl Ask for PoolAsk<'_> {
    fn outcome(&mut self, desc: &StateDesc) -> Result<Option<Outcome>, Stopped> {
        let slot = match &mut self.slot {
            Some(slot) => slot,
            None => self.slot.insert(self.pool.scratch.slot()?),
        };
        let fs = FsState::build(self.pool.trace, desc, self.pool.cfg.sector);
        // A state the checker cannot be run on stays unknown.
        Ok(self
            .pool
            .check_one(slot, &desc.id(), &fs, desc.crash, false)
            .ok()
            .flatten())
    }

    fn cancelled(&self) -> bool {
        self.pool.cancelled()
    }
}

impl Drop for PoolAsk<'_> {
    fn drop(&mut self) {
        if let Some(slot) = &self.slot {
            self.pool.cfg.checker.release(slot);
        }
    }
}

/// Checks every state of `explored` the cache does not know, adding the
/// outcomes to it.
pub fn check_all(
    pool: &Pool<'_>,
    explored: &Explored,
    cache: &mut Cache,
) -> Result<Option<CannotRun>, RunError> {
    Ok(pool.check_distinct(explored, cache, None, None)?.err())
}

/// After the representatives of `explored` were checked: explores the
/// rest of the trace with `explore`'s settings and adds it to `explored`
/// (nothing to do when it is in full already).
pub fn add_rest(
    pool: &Pool<'_>,
    explored: &mut Explored,
    explore: &ExploreConfig,
    watch: Watch<'_>,
) -> Result<(), RunError> {
    if explored.in_full {
        return Ok(());
    }
    let rest = explore_rest(
        pool.trace,
        pool.outputs,
        explore,
        pool.cfg.sector,
        watch,
        explored,
        REST_BOUND,
    )?;
    explored.absorb(rest);
    Ok(())
}

/// Checks the states of `explored` the cache does not know, most novel
/// first ([`check_order`]), starting none after `deadline`.
pub fn check_rest(
    pool: &Pool<'_>,
    explored: &Explored,
    cache: &mut Cache,
    deadline: Option<Instant>,
) -> Result<Option<CannotRun>, RunError> {
    let order = check_order(explored, |k| cache.contains_key(k));
    Ok(pool
        .check_distinct(explored, cache, Some(&order), deadline)?
        .err())
}
