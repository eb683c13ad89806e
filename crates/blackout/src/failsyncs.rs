//! `run --fail-syncs`, driven: for each sync call site of the recorded
//! trace, the workload recorded again with the site's first call failing
//! with EIO (strace injects it: [`blackout_record::omit::FailSync`], at
//! the call [`blackout_analysis::failsyncs::aim`] names), and that run's
//! crash states checked under posix, where what a failed sync covered is
//! never durable ([`blackout_oplog::ops::synced_by`]). Where the failure
//! landed and what the run's report says of the program are
//! `analysis::failsyncs`'s.

use std::time::Instant;

use blackout_analysis::failsyncs::{aim, landed, FailSyncCheck, FailSyncsReport};
use blackout_analysis::syncs::{sync_sites, SyncSite};
use blackout_explore::model::Model;
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
    cfg.handles.progress = None;
    cfg.handles.explore_progress = None;
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
    let aim = match aim(trace, &site) {
        Ok(aim) => aim,
        Err(why) => return Ok(FailSyncCheck::not_measured(site, why)),
    };
    let mut record = runs.record.clone();
    record.fail_sync = Some(FailSync {
        call: aim.call.clone(),
        nth: aim.nth,
    });
    record.timestamps = false;
    let rec = match runs.recorder.record(&record) {
        Ok(rec) => rec,
        Err(RecordError::Interrupted) => return Err(RunError::Interrupted),
        Err(e) => {
            let why = format!("the failure run: {e}");
            return Ok(FailSyncCheck::not_measured(site, why));
        }
    };
    let at = match landed(trace, &site, &aim, &rec.trace, rec.injected) {
        Ok(at) => at,
        Err(why) => return Ok(FailSyncCheck::not_measured(site, why)),
    };
    let report = check_trace(&rec.trace, cfg)?;
    Ok(FailSyncCheck::of_run(
        site,
        number,
        &rec.trace,
        at,
        &report,
        &rec.stderr,
    ))
}
