//! A real file system's failing state in the model backend's terms
//! ([`Blame`]): the calls that had returned when its power failed, and the
//! posix model's failing state that holds the same files, with what that
//! state lost and the cause it falls under. Whether a posix state holds
//! the same files as the recovered device is the caller's to say (it
//! writes the state out and reads both), so analysis reads no file system.
//!
//! ```
//! use std::collections::HashMap;
//! use blackout_analysis::blame::{blame, ops_done};
//! use blackout_oplog::ops::test_ops::write;
//! use blackout_oplog::ops::InodeKind;
//! use blackout_oplog::trace::Trace;
//!
//! let mut ops = vec![write(1), write(1), write(1)];
//! for (line, op) in ops.iter_mut().enumerate() {
//!     op.line = line as u32 + 1;
//! }
//! let t = Trace {
//!     inodes: vec![InodeKind::Dir, InodeKind::File],
//!     initial_inodes: 2,
//!     ops,
//!     ..Trace::default()
//! };
//! // The first two calls returned at 10.0 s and 10.5 s, the third at 11.0 s.
//! let returned = HashMap::from([(1, 10.0), (2, 10.5), (3, 11.0)]);
//! assert_eq!(ops_done(&t, &returned, 10.7), 2);
//! // Without a posix report, the blame is the last calls alone.
//! let b = blame(&t, None, 2, |_| false);
//! assert_eq!(b.ops_done, 2);
//! assert_eq!(b.last_calls.len(), 2);
//! assert_eq!(b.posix_state, None);
//! ```

use std::collections::HashMap;

use blackout_explore::model::Model;
use blackout_oplog::naming::describe_unit;
use blackout_oplog::ops::{Part, Unit};
use blackout_oplog::trace::Trace;

use crate::block::Blame;
use crate::report::{Checked, RunReport};

/// How many of `trace`'s ops had returned at `at` (seconds since the
/// epoch), `returned` mapping an op's log line to when its call returned
/// (an op without a time returned when the one before it did).
pub fn ops_done(trace: &Trace, returned: &HashMap<u32, f64>, at: f64) -> usize {
    let mut done = 0;
    let mut last = f64::MIN;
    for (i, op) in trace.ops.iter().enumerate() {
        last = returned.get(&op.line).copied().unwrap_or(last);
        if last <= at {
            done = i + 1;
        } else {
            break;
        }
    }
    done
}

/// The blame of a failing state whose power failed after `ops_done` of
/// `trace`'s ops: the last three calls before it, and the first of the
/// posix model's failing states (in `posix`) that `same` says holds the
/// same files, tried nearest crash point first, with what it lost and
/// its cause.
pub fn blame(
    trace: &Trace,
    posix: Option<&RunReport>,
    ops_done: usize,
    mut same: impl FnMut(&Checked) -> bool,
) -> Blame {
    let k = ops_done;
    let whole = |op: usize| Unit {
        op,
        part: Part::Whole,
    };
    let mut blame = Blame {
        ops_done: k,
        last_calls: (k.saturating_sub(3)..k)
            .map(|i| describe_unit(trace, whole(i)))
            .collect(),
        posix_state: None,
        posix_lost: Vec::new(),
        posix_cause: None,
    };
    let Some(model) = posix.and_then(|r| r.models.iter().find(|m| m.model == Model::Posix)) else {
        return blame;
    };
    // Nearest crash point first: the one the times name, then around it.
    let mut failing: Vec<&Checked> = model.failing.iter().collect();
    failing.sort_by_key(|c| c.crash.abs_diff(k));
    let Some(c) = failing.into_iter().find(|c| same(c)) else {
        return blame;
    };
    blame.posix_state = Some(c.id.clone());
    blame.posix_lost = c.lost.iter().map(|&u| describe_unit(trace, u)).collect();
    if let Some((n, _)) = c.torn {
        let torn = describe_unit(trace, whole(n));
        blame.posix_lost.push(format!("torn: {torn}"));
    }
    blame.posix_cause = model
        .causes
        .iter()
        .position(|g| g.ids.contains(&c.id) || g.simplest.id == c.id)
        .map(|i| (i + 1, model.causes[i].cause.sentence.clone()));
    blame
}
