//! The process model: the program dies, the operating system lives. Every
//! op issued before the crash is kept, in order; one state per crash point.

use crate::enumerate::{Bound, Coverage, CrashPoint, ExploreConfig, StateDesc};
use crate::model::CrashModel;

/// See the module documentation.
#[derive(Debug, Clone, Copy)]
pub struct Process;

impl CrashModel for Process {
    fn name(&self) -> &'static str {
        "process"
    }

    fn states_at(
        &self,
        point: &CrashPoint<'_>,
        _cov: &mut Coverage,
        emit: &mut dyn FnMut(StateDesc),
    ) {
        emit(point.plain());
    }

    fn coverage_text(&self, cov: &Coverage, _cfg: &ExploreConfig) -> String {
        crate::model::every_state_text(cov)
    }

    fn states_bound(&self, _pending: usize, _writes: usize, _cfg: &ExploreConfig) -> Bound {
        Bound {
            states: 1,
            units: 0,
        }
    }
}
