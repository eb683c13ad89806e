//! `run --syncs --backend block`: each sync call site measured on the real
//! file system. The posix model judges a site by taking its syncs out of
//! the trace; a real file system is judged by running the program without
//! them ([`blackout_record::omit`]: the site's calls on the site's files
//! return unmade), recording the device again and checking its states. A
//! site is needed there when the run without it fails where the run with
//! it passed.

use blackout_analysis::syncs::{FsSyncCheck, FsSyncVerdict, SyncSite, SyncsReport};
use blackout_analysis::verdict::Verdict;
use blackout_oplog::ops::OpKind;
use blackout_oplog::trace::Trace;
use blackout_record::omit::{OmittedSync, CALLS};
use blackout_record::{RecordConfig, RecordError, StraceRecorder};

use super::{check_block, record_block, BlockCheck, BlockError, BlockReport};

/// How a block run with `--syncs` records and checks the runs without
/// each site's syncs: as it recorded and checked its own.
pub struct FsSyncRuns<'a> {
    /// The run's recording settings (the workload, its setup).
    pub record: &'a RecordConfig,
    /// The recorder.
    pub recorder: &'a StraceRecorder,
    /// How states are checked (its posix report is not used: the runs
    /// without a site's syncs have traces of their own).
    pub check: &'a BlockCheck<'a>,
    /// Runs without each site's syncs (`--repeat`, at least 1): a site is
    /// needed when any of them fails, as when the file system writes
    /// back early in one run and late in another.
    pub repeat: u32,
}

/// Measures every site of `syncs` (judged on `trace`, the run's own) on
/// the file system `with` was checked on, and keeps each answer in its
/// site's `on_fs`.
pub fn measure_syncs_on_fs(
    runs: &FsSyncRuns<'_>,
    trace: &Trace,
    with: &BlockReport,
    syncs: &mut SyncsReport,
) -> Result<(), BlockError> {
    for check in &mut syncs.sites {
        let verdict = measure_site(runs, trace, with, &check.site)?;
        check.on_fs = Some(FsSyncCheck {
            fs: with.fs.clone(),
            verdict,
        });
    }
    Ok(())
}

/// One site on the file system.
fn measure_site(
    runs: &FsSyncRuns<'_>,
    trace: &Trace,
    with: &BlockReport,
    site: &SyncSite,
) -> Result<FsSyncVerdict, BlockError> {
    if with.verdict != Verdict::Pass {
        return Ok(FsSyncVerdict::NotMeasured {
            why: format!("the run with them does not pass on {}", with.fs),
        });
    }
    let omitted = match omitted(trace, site) {
        Ok(o) => o,
        Err(why) => return Ok(FsSyncVerdict::NotMeasured { why }),
    };
    let mut record = runs.record.clone();
    record.omit_syncs = omitted;
    let repeat = runs.repeat.max(1);
    let (mut exact, mut distinct) = (true, 0);
    for run in 1..=repeat {
        let rec = match record_block(runs.check.config, &record, runs.recorder) {
            Err(BlockError::Record(e @ RecordError::NotOmitted { .. })) => {
                return Ok(FsSyncVerdict::NotMeasured { why: e.to_string() })
            }
            r => r?,
        };
        let without = check_block(&rec, runs.check)?;
        match without.verdict {
            Verdict::Pass => {
                exact &= without.exact;
                distinct = distinct.max(without.distinct);
            }
            Verdict::Fail => {
                let first = &without.failing[0];
                return Ok(FsSyncVerdict::Needed {
                    state: first.id.clone(),
                    reason: first.outcome.describe(),
                    run,
                    runs: repeat,
                });
            }
            _ => {
                return Ok(FsSyncVerdict::NotMeasured {
                    why: format!("run without them: {}", without.reason),
                })
            }
        }
    }
    Ok(FsSyncVerdict::NotNeeded {
        exact,
        distinct,
        runs: repeat,
        settle: runs.check.config.settle.map(|d| d.as_secs_f64()),
    })
}

/// The site's syncs as calls on paths the program can be run without, or
/// why it cannot.
fn omitted(trace: &Trace, site: &SyncSite) -> Result<Vec<OmittedSync>, String> {
    let mut out: Vec<OmittedSync> = Vec::new();
    for &i in &site.ops {
        let op = &trace.ops[i];
        let implied = matches!(
            op.kind,
            OpKind::Fsync { implied: true, .. } | OpKind::Fdatasync { implied: true, .. }
        );
        if implied || !CALLS.contains(&op.syscall.as_str()) {
            return Err(format!(
                "{} cannot be taken out of a program (only {} can)",
                if implied {
                    "a write's O_SYNC"
                } else {
                    op.syscall.as_str()
                },
                CALLS.join(", ")
            ));
        }
        let sync = OmittedSync {
            call: op.syscall.clone(),
            path: trace.show_path(&op.path),
            pattern: false,
        };
        if !out.contains(&sync) {
            out.push(sync);
        }
    }
    Ok(out)
}
