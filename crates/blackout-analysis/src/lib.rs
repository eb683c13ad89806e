//! Analysis: from checked crash states to what a person needs to know.
//!
//! For each failing state, [`explain::explain`] blames one lost or torn op
//! and names the cause in one sentence with the sync that should cure it;
//! [`group::model_report`] groups failing states by cause (kind and blamed
//! op, or the source line that issued it). The result is plain data
//! ([`report::RunReport`]) that exporters render without asking anything
//! but op names of the trace. Analysis never runs a checker itself: the
//! few states an explanation needs that the run did not check are asked
//! of whoever checked it ([`Ask`]), and fixes are verified by the driver
//! that explores and checks (the `blackout` crate's `verify`, with
//! [`explain::with_syncs`]).
//!
//! ```
//! use blackout_analysis::report::Verdict;
//!
//! assert_eq!(Verdict::Fail.name(), "FAIL");
//! assert_eq!(Verdict::HarnessBroken.exit_code(), 2);
//! ```
#![deny(missing_docs)]

pub mod block;
pub mod explain;
pub mod failsyncs;
pub mod group;
pub mod replace;
pub mod report;
pub mod syncs;
pub mod verdict;

use blackout_explore::enumerate::StateDesc;
use blackout_oplog::outcome::Outcome;

pub use blackout_explore::dedup::Cache;

/// Why analysis stopped before it finished.
#[derive(Debug, thiserror::Error)]
pub enum Stopped {
    /// The run was interrupted.
    #[error("interrupted")]
    Interrupted,
    /// Asking the checker failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// What analysis may ask of the checker that checked the run: the outcome
/// of one more state (a crash point's own state that an explanation needs
/// and a sampled run did not check).
pub trait Ask {
    /// What the checker says of `desc`; `None` when it cannot say.
    fn outcome(&mut self, desc: &StateDesc) -> Result<Option<Outcome>, Stopped>;

    /// Whether the run was interrupted.
    fn cancelled(&self) -> bool;
}
