//! Analysis: from checked crash states to what a person needs to know.
//!
//! For each failing state, [`explain::explain`] blames one lost or torn op
//! and names the cause in one sentence with the sync that should cure it;
//! [`group::model_report`] groups failing states by cause (kind and blamed
//! op, or the source line that issued it); [`fix::verify_fixes`] verifies
//! each group's fix by re-exploring the trace with the sync added
//! ([`explain::with_syncs`]) and checking only the states not already
//! checked. The result is plain data
//! ([`report::RunReport`]) that exporters render without asking anything
//! but op names of the trace.
//!
//! ```
//! use blackout_analysis::report::Verdict;
//!
//! assert_eq!(Verdict::Fail.name(), "FAIL");
//! assert_eq!(Verdict::HarnessBroken.exit_code(), 2);
//! ```
#![deny(missing_docs)]

pub mod explain;
pub mod fix;
pub mod group;
pub mod report;
pub mod sweep;

use blackout_check::pool::PoolError;
use blackout_explore::dedup::ExploreError;
use blackout_explore::enumerate::ConfigError;

/// Why a run could not finish (the checker's own failures are verdicts, not
/// errors).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The cancel flag was set.
    #[error("interrupted")]
    Interrupted,
    /// Writing states or running the checker failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
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
