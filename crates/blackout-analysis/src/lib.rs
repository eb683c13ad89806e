//! Analysis: from checked crash states to what a person needs to know.
//!
//! For each failing state, [`explain::explain`] blames one lost or torn op
//! and names the cause in one sentence with the sync that should cure it;
//! [`group::model_report`] groups failing states by cause (kind and blamed
//! op, or the source line that issued it); [`fix::verify_fixes`] verifies
//! each cause's fix by exploring the trace with its syncs added
//! ([`explain::with_syncs`]) and judging the states. The result is plain
//! data ([`report::RunReport`], its verdict in words:
//! [`report::verdict_of`]) that exporters render without asking anything
//! but op names of the trace. Analysis never runs a checker itself: the
//! states it needs checked (a few an explanation needs that the run did
//! not check, those of a trace with a fix or with a sync call site taken
//! out, [`needed::judge_syncs`]) are asked of whoever checked the run
//! ([`Ask`]). [`steps`] are a run's steps from its promises to its
//! report, the same whoever answers the asking: the run's own checking,
//! a shard's share of it, or the parts a merge reads. [`baseline`] is the ratchet for CI: a run's verdicts
//! and cause kinds as rows of a baseline file, and the rules that say
//! which results are worse than recorded.
//!
//! ```
//! use blackout_analysis::report::Verdict;
//!
//! assert_eq!(Verdict::Fail.name(), "FAIL");
//! assert_eq!(Verdict::HarnessBroken.exit_code(), 2);
//! ```
#![deny(missing_docs)]

pub mod baseline;
pub mod blame;
pub mod block;
pub mod explain;
pub mod failrun;
pub mod failsyncs;
pub mod fix;
pub mod group;
pub mod like;
pub mod needed;
pub mod replace;
pub mod report;
pub mod steps;
pub mod syncs;
pub mod verdict;

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use blackout_explore::dedup::{ExploreError, Explored};
use blackout_explore::enumerate::{ConfigError, StateDesc};
use blackout_explore::state::FsState;
use blackout_oplog::outcome::Outcome;
use blackout_oplog::promises::Outputs;
use blackout_oplog::trace::Trace;

pub use blackout_explore::dedup::Cache;

/// The state where the checker could not be run, and why.
pub type CannotRun = (String, String);

/// Why analysis stopped before it finished.
#[derive(Debug, thiserror::Error)]
pub enum Stopped {
    /// The run was interrupted.
    #[error("interrupted")]
    Interrupted,
    /// Asking the checker failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A setting of an exploration (a fix's) is out of range.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

impl From<ExploreError> for Stopped {
    fn from(e: ExploreError) -> Self {
        match e {
            ExploreError::Config(c) => Stopped::Config(c),
            ExploreError::Interrupted => Stopped::Interrupted,
        }
    }
}

/// What analysis may ask of the checker that checked the run: the outcome
/// of one more state (a crash point's own state that an explanation needs
/// and a sampled run did not check), and the states of a trace with a fix
/// ([`fix::verify_fix`]) or without a sync call site's syncs
/// ([`needed::judge_syncs`]) checked, until a deadline.
pub trait Ask {
    /// What the checker says of `desc`; `None` when it cannot say.
    fn outcome(&mut self, desc: &StateDesc) -> Result<Option<Outcome>, Stopped>;

    /// Checks the distinct states of `explored`, an exploration of `trace`
    /// (`outputs` its promises), that `cache` does not know, in `order`,
    /// starting none after `deadline` (checkers still running then are
    /// stopped), and adds their outcomes to `cache`. Returns each distinct
    /// state's outcome (`None` for one left unchecked), or the state where
    /// the checker could not be run and why.
    fn check(
        &mut self,
        trace: &Trace,
        outputs: &Outputs,
        explored: &Explored,
        cache: &mut Cache,
        order: &[usize],
        deadline: Option<Instant>,
    ) -> Result<Result<Vec<Option<Outcome>>, CannotRun>, Stopped>;

    /// The checker's outcome on one of the two states a run checks before
    /// it explores ([`steps::StartState`]), `fs` at crash point `crash`
    /// (`id` names it). Unlike [`Ask::outcome`], a state that cannot be
    /// checked stops the run: an error.
    fn start_outcome(
        &mut self,
        which: steps::StartState,
        id: &str,
        fs: &FsState,
        crash: usize,
    ) -> Result<Outcome, Stopped>;

    /// Whether the run was interrupted.
    fn cancelled(&self) -> bool;

    /// The run's cancel flag, for work analysis bounds in time to stop at
    /// too (an exploration of a trace with a fix); `None` when the run
    /// cannot be cancelled.
    fn cancel_flag(&self) -> Option<&AtomicBool>;
}
