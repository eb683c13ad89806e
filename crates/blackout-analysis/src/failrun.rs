//! A failure run read (`run --fail-syncs`): what the report of a run with
//! one sync call failing says of the program ([`FailSyncCheck::of_run`]).
//! Only a state that fails because the sync failed counts against it: one
//! losing an op that the run would have made durable by its crash had the
//! failed sync succeeded.

use blackout_oplog::naming::line_words;
use blackout_oplog::ops::{synced_by, Ino, Op, OpKind, Part, SyncedBy};
use blackout_oplog::store::changes;
use blackout_oplog::trace::Trace;

use crate::failsyncs::{FailSyncCheck, FailSyncOutcome, Trust};
use crate::report::{Checked, RunReport};
use crate::syncs::SyncSite;
use crate::verdict::Verdict;

impl FailSyncCheck {
    /// Site `number` (from 1) judged on its failure run: `run` the run's
    /// trace, its failed sync at `at` (where it
    /// [`landed`](crate::failsyncs::landed)), `report` the
    /// run's check under posix, `stderr` what the workload wrote there.
    pub fn of_run(
        site: SyncSite,
        number: usize,
        run: &Trace,
        at: usize,
        report: &RunReport,
        stderr: &[u8],
    ) -> FailSyncCheck {
        let op = &run.ops[at];
        let failed = format!(
            "{} of {} ({}) failed with EIO",
            op.syscall,
            run.show_path(&op.path),
            line_words(run.numbering, op.line, op.line)
        );
        FailSyncCheck {
            site,
            failed: Some(failed),
            exact: report.exact,
            outcome: outcome(run, report, at, number, stderr),
        }
    }
}

/// What the failure run's report says of the program: `trace` is the
/// failure run's, `at` its failed sync, `number` the site's (from 1),
/// `stderr` what the workload wrote there.
fn outcome(
    trace: &Trace,
    report: &RunReport,
    at: usize,
    number: usize,
    stderr: &[u8],
) -> FailSyncOutcome {
    // A run that promised nothing (it stopped at the error) has nothing
    // to lose: it is checked no further.
    let verdict = match report.promises.is_empty() {
        true => Verdict::Pass,
        false => report.verdict,
    };
    match verdict {
        Verdict::Pass => {
            let said = String::from_utf8_lossy(stderr)
                .lines()
                .rev()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map(|l| l.chars().take(200).collect());
            FailSyncOutcome::Handled {
                exit: trace.exit.code,
                said,
                promised: !report.promises.is_empty(),
            }
        }
        Verdict::Fail => {
            // Only a state that fails because the sync failed counts: one
            // losing (or tearing) an op a sync would have covered by its
            // crash had the failed one succeeded. A program that fails
            // without the failure fails in the run as recorded already.
            let forgiven = synced_by(&forgiving(trace));
            let failing = || report.models.iter().flat_map(|m| &m.failing);
            let Some(first) = failing().find(|c| caused_by_the_failure(c, &forgiven)) else {
                return FailSyncOutcome::NotWorse {
                    failing: failing().count(),
                };
            };
            let (state, reason) = (format!("f{number}:{}", first.id), first.outcome.describe());
            let retried = match trace.ops[at].kind {
                OpKind::FailedSync { ino, .. } => retried(trace, at, ino),
                _ => false,
            };
            FailSyncOutcome::Trusted {
                trust: if retried {
                    Trust::Retried
                } else {
                    Trust::Ignored
                },
                state,
                reason,
            }
        }
        _ => FailSyncOutcome::NotMeasured {
            why: format!("the failure run's check: {}", report.reason),
        },
    }
}

/// Whether the next op on `ino` after the failed sync at `at` is a sync of
/// it that returned 0: a retry (a later sync after more changes to it is
/// the program going on, not retrying).
fn retried(trace: &Trace, at: usize, ino: Ino) -> bool {
    for o in &trace.ops[at + 1..] {
        match &o.kind {
            OpKind::Fsync { ino: i, .. } | OpKind::Fdatasync { ino: i, .. } if *i == ino => {
                return true
            }
            k if changes(k).contains(&Some(ino)) => return false,
            _ => {}
        }
    }
    false
}

/// `trace`'s ops with every failed sync taken as having succeeded: the
/// run as it would have been made durable had the disk not failed.
fn forgiving(trace: &Trace) -> Vec<Op> {
    trace
        .ops
        .iter()
        .enumerate()
        .map(|(i, op)| match &op.kind {
            OpKind::FailedSync { ino, .. } => Op {
                kind: OpKind::Fsync {
                    ino: *ino,
                    barrier: i,
                    implied: false,
                },
                ..op.clone()
            },
            _ => op.clone(),
        })
        .collect()
}

/// Whether failing state `c` loses or tears an op that `forgiven` (the
/// run's cover had its failed sync succeeded) makes durable before its
/// crash: a state only the failure allows.
fn caused_by_the_failure(c: &Checked, forgiven: &[SyncedBy]) -> bool {
    let durable = |op: usize, part: Part| forgiven[op].of(part).is_some_and(|s| s < c.crash);
    c.lost.iter().any(|u| durable(u.op, u.part))
        || c.torn
            .as_ref()
            .is_some_and(|(op, _)| durable(*op, Part::Whole))
}
