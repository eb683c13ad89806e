//! `run --fail-syncs`: for each sync call site of the recorded trace, the
//! workload recorded again with the site's first call failing with EIO
//! (strace injects it: [`blackout_record::omit::FailSync`]), and that
//! run's crash states checked under posix, where what a failed sync
//! covered is never durable ([`blackout_oplog::ops::synced_by`]). The
//! verdicts are `analysis::failsyncs`'s.

use std::time::Instant;

use blackout_analysis::failsyncs::{FailSyncCheck, FailSyncOutcome, FailSyncsReport, Trust};
use blackout_analysis::report::{Checked, RunReport};
use blackout_analysis::syncs::{sync_sites, SyncSite};
use blackout_analysis::verdict::Verdict;
use blackout_explore::model::Model;
use blackout_oplog::naming::line_words;
use blackout_oplog::ops::{synced_by, Op, OpKind, Part, SyncedBy};
use blackout_oplog::store::changes;
use blackout_oplog::trace::Trace;
use blackout_record::omit::FailSync;
use blackout_record::{RecordConfig, RecordError, Recorder, StraceRecorder};

use crate::run::{check_trace, RunConfig, RunError};

/// How the failure runs are recorded: as the run recorded its own.
pub struct FailRuns<'a> {
    /// The run's recording settings (the workload, its setup).
    pub record: &'a RecordConfig,
    /// The recorder.
    pub recorder: &'a StraceRecorder,
}

/// Every sync call site of `trace` made to fail in turn. `cfg` is the
/// run's; its failure runs are checked under posix alone, without
/// `--syncs`, fix verification or progress callbacks (left so).
pub fn judge_failed_syncs(
    trace: &Trace,
    cfg: &mut RunConfig,
    runs: &FailRuns<'_>,
) -> Result<FailSyncsReport, RunError> {
    let t0 = Instant::now();
    cfg.models = vec![Model::Posix];
    cfg.syncs = false;
    // A failure run's verdict is all that is read of it.
    cfg.fix_verifications = 0;
    cfg.progress = None;
    cfg.explore_progress = None;
    let mut sites = Vec::new();
    for (n, site) in sync_sites(trace).into_iter().enumerate() {
        sites.push(judge_site(trace, cfg, runs, site, n + 1)?);
    }
    Ok(FailSyncsReport {
        sites,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// The site's first call failing: the failure run, and its verdict.
fn judge_site(
    trace: &Trace,
    cfg: &RunConfig,
    runs: &FailRuns<'_>,
    site: SyncSite,
    number: usize,
) -> Result<FailSyncCheck, RunError> {
    let not_measured = |site: SyncSite, why: String| FailSyncCheck {
        site,
        failed: None,
        outcome: FailSyncOutcome::NotMeasured { why },
        exact: false,
    };
    let first = &trace.ops[site.ops[0]];
    if !matches!(
        first.kind,
        OpKind::Fsync { implied: false, .. } | OpKind::Fdatasync { implied: false, .. }
    ) {
        let why = format!(
            "only an fsync or fdatasync is made to fail, not {}",
            first.syscall
        );
        return Ok(not_measured(site, why));
    }
    // Its place among its thread's calls of the same kind, as strace
    // counts them (syncs of files outside the directory under test are
    // not in the trace: a failure landing elsewhere is caught below).
    let nth = trace.ops[..site.ops[0]]
        .iter()
        .filter(|o| o.pid == first.pid && o.syscall == first.syscall)
        .count()
        + 1;
    let Ok(nth) = u32::try_from(nth) else {
        return Ok(not_measured(
            site,
            "the call is too far into the run".into(),
        ));
    };
    let mut record = runs.record.clone();
    record.fail_sync = Some(FailSync {
        call: first.syscall.clone(),
        nth,
    });
    record.timestamps = false;
    let rec = match runs.recorder.record(&record) {
        Ok(rec) => rec,
        Err(RecordError::Interrupted) => return Err(RunError::Interrupted),
        Err(e) => return Ok(not_measured(site, format!("the failure run: {e}"))),
    };
    let path = trace.show_path(&first.path);
    let failed = rec.trace.ops.iter().position(|o| {
        matches!(o.kind, OpKind::FailedSync { .. }) && rec.trace.show_path(&o.path) == path
    });
    let (Some(at), 1) = (failed, rec.injected) else {
        let why = format!(
            "the failure meant for call {nth} of its thread's {} calls landed on {} call{} (strace counts each thread's calls)",
            first.syscall,
            rec.injected,
            if rec.injected == 1 { " of another file" } else { "s" }
        );
        return Ok(not_measured(site, why));
    };
    let report = check_trace(&rec.trace, cfg)?;
    let op = &rec.trace.ops[at];
    let failed = format!(
        "{} of {path} ({}) failed with EIO",
        op.syscall,
        line_words(rec.trace.numbering, op.line, op.line)
    );
    let outcome = outcome(&rec.trace, &report, at, number, &rec.stderr);
    Ok(FailSyncCheck {
        site,
        failed: Some(failed),
        exact: report.exact,
        outcome,
    })
}

/// What the failure run's report says of the program.
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
fn retried(trace: &Trace, at: usize, ino: blackout_oplog::ops::Ino) -> bool {
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
