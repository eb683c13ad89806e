//! The ordered model: power fails on a disk that writes in order. As
//! process, but the last op before the crash, if a write, may be torn
//! (half at a sector boundary, one sector short, or zeros).

use blackout_oplog::ops::OpKind;

use crate::enumerate::{Bound, Coverage, CrashPoint, ExploreConfig, StateDesc, Tear};
use crate::model::CrashModel;

/// See the module documentation.
#[derive(Debug, Clone, Copy)]
pub struct Ordered;

impl CrashModel for Ordered {
    fn name(&self) -> &'static str {
        "ordered"
    }

    fn states_at(
        &self,
        point: &CrashPoint<'_>,
        _cov: &mut Coverage,
        emit: &mut dyn FnMut(StateDesc),
    ) {
        let k = point.k;
        emit(point.plain());
        if k > 0 && matches!(point.ops[k - 1].kind, OpKind::Write { .. }) {
            for tear in Tear::ALL {
                emit(StateDesc {
                    crash: k,
                    lost: Default::default(),
                    torn: Some((k - 1, tear)),
                });
            }
        }
    }

    fn coverage_text(&self, cov: &Coverage, _cfg: &ExploreConfig) -> String {
        crate::model::every_state_text(cov)
    }

    fn states_bound(&self, _pending: usize, _writes: usize, _cfg: &ExploreConfig) -> Bound {
        let tears = Tear::ALL.len() as u64;
        Bound {
            states: 1 + tears,
            units: tears,
        }
    }
}
