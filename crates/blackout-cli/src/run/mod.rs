//! `blackout run` with a model: the run's settings from its flags, the
//! check, a shard's part file, the baseline ratchet and the progress bars.

use anyhow::{anyhow, Context, Result};

use blackout::export::ExportContext;
use blackout::failsyncs::{judge_failed_syncs, FailRuns};
use blackout::run::{check_trace, RunConfig, RunError};
use blackout::sharded::check_shard;

pub(crate) mod baseline;
pub(crate) mod block;
pub(crate) mod flags;
pub(crate) mod part;

use baseline::{baseline_mode, ratchet_after};
use block::cmd_run_block;
use flags::{run_config, Backend, RunArgs};
use part::{shard_of, write_part};

use crate::record::{chosen, load_trace, record_trace};
use crate::report::check_writable;

pub(crate) fn cmd_run(a: RunArgs) -> Result<u8> {
    if !(a.timeout > 0.0 && a.timeout.is_finite()) {
        return Err(anyhow!("--timeout must be a positive number of seconds"));
    }
    let (recorder, strace) = chosen(
        &a.recording,
        &[
            (a.fail_syncs, "--fail-syncs"),
            (a.block.backend == Backend::Block, "--backend block"),
        ],
        &[(a.syncs, "--syncs")],
    )?;
    if a.block.backend == Backend::Block {
        return cmd_run_block(a);
    }
    let shard = shard_of(&a)?;
    // A report file that cannot be written fails the run before it starts.
    for (flag, path, _) in a.report.files() {
        check_writable(path).with_context(|| format!("cannot write {flag} {}", path.display()))?;
    }
    let mode = baseline_mode(&a)?;
    let recording = a.recording.clone().config(a.command.clone());
    let (trace, trace_path) = match &a.trace {
        Some(path) => (load_trace(path)?, Some(path.clone())),
        None => {
            let mut cfg = recording.clone();
            // --syncs reports each sync's time where the recorder measures
            // it (strace's -T); the native recorder does not.
            cfg.timestamps |= a.syncs && strace;
            (
                record_trace(cfg, recorder.as_ref(), a.output.as_deref())?,
                a.output.clone(),
            )
        }
    };
    if let Some(code) = trace.exit.code.filter(|&c| c != 0) {
        eprintln!("warning: the workload exited {code}; checking what it did anyway");
    }
    let (mut cfg, checker_flag) = run_config(&a)?;
    let checker_command = cfg.checker.command().to_string();
    let bars = Bars::attach(&mut cfg);
    if let Some((shard, part)) = shard {
        let result = check_shard(&trace, &cfg, shard);
        bars.clear();
        return write_part(result, &part, trace_path.as_deref());
    }
    let result = check_trace(&trace, &cfg);
    bars.clear();
    let mut report = match result {
        Ok(r) => r,
        Err(RunError::Interrupted) => return Err(anyhow!("interrupted")),
        Err(e) => return Err(e).context("checking crash states"),
    };
    if a.fail_syncs {
        let runs = FailRuns {
            record: &recording,
            recorder: &a.recording.recorder(),
        };
        match judge_failed_syncs(&trace, &mut cfg, &runs) {
            Ok(f) => report.set_failed_syncs(f),
            Err(RunError::Interrupted) => return Err(anyhow!("interrupted")),
            Err(e) => return Err(e).context("checking the runs with a sync failing"),
        }
    }
    let shown = trace_path.as_ref().map(|p| p.display().to_string());
    let trace_id = trace.content_id();
    let ctx = ExportContext {
        trace: &trace,
        trace_path: shown.as_deref(),
        trace_id: &trace_id,
        checker: &checker_command,
        checker_flag,
        state_flags: &a.explore.state_flags(),
        all_causes: a.report.all_causes,
        ack_prefix: a.explore.ack_prefix.as_ref().map(|p| p.as_bytes()),
    };
    let code = a.report.emit(&report, &ctx)?;
    ratchet_after(&a, &report, mode, code)
}

/// The progress shown on standard error while states are built and
/// checked.
pub(crate) struct Bars {
    pub(crate) checking: indicatif::ProgressBar,
    pub(crate) building: indicatif::ProgressBar,
}

impl Bars {
    /// Bars fed by `cfg`'s progress callbacks.
    pub(crate) fn attach(cfg: &mut RunConfig) -> Bars {
        let checking =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        checking.set_style(
            indicatif::ProgressStyle::with_template("checking {pos}/{len} states {wide_bar} {eta}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        let building =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        building.set_style(
            indicatif::ProgressStyle::with_template("building crash states: {pos} {spinner}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        let building_bar = building.clone();
        cfg.handles.explore_progress = Some(Box::new(move |n| building_bar.set_position(n as u64)));
        let progress_bar = checking.clone();
        let building_bar = building.clone();
        cfg.handles.progress = Some(Box::new(move |done, total| {
            building_bar.finish_and_clear();
            progress_bar.set_length(total as u64);
            progress_bar.set_position(done as u64);
        }));
        Bars { checking, building }
    }

    pub(crate) fn clear(&self) {
        self.building.finish_and_clear();
        self.checking.finish_and_clear();
    }
}
