//! `blackout run` with a model: the run's settings from its flags, the
//! check, a shard's part file, the baseline ratchet and the progress bars.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{anyhow, Context, Result};

use blackout::explore::model::for_people;
use blackout::export::ExportContext;
use blackout::run::{check_trace, RunConfig, RunError};
use blackout::shard::{Shard, ShardPart};
use blackout::sharded::check_shard;

use crate::args::{run_config, Backend, RunArgs};
use crate::block::cmd_run_block;
use crate::record::{load_trace, record_trace};
use crate::report::{baseline_mode, check_writable, ratchet_after};

pub(crate) fn cmd_run(a: RunArgs) -> Result<u8> {
    if !(a.timeout > 0.0 && a.timeout.is_finite()) {
        return Err(anyhow!("--timeout must be a positive number of seconds"));
    }
    if a.block.backend == Backend::Block {
        return cmd_run_block(a);
    }
    let shard = shard_of(&a)?;
    // A report file that cannot be written fails the run before it starts.
    for (flag, path, _) in a.report.files() {
        check_writable(path).with_context(|| format!("cannot write {flag} {}", path.display()))?;
    }
    let mode = baseline_mode(&a)?;
    let (trace, trace_path) = match &a.trace {
        Some(path) => (load_trace(path)?, Some(path.clone())),
        None => {
            let cfg = a.recording.clone().config(a.command.clone());
            let recorder = a.recording.recorder();
            (
                record_trace(cfg, &recorder, a.output.as_deref())?,
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
    let report = match result {
        Ok(r) => r,
        Err(RunError::Interrupted) => return Err(anyhow!("interrupted")),
        Err(e) => return Err(e).context("checking crash states"),
    };
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
        cfg.explore_progress = Some(Box::new(move |n| building_bar.set_position(n as u64)));
        let progress_bar = checking.clone();
        let building_bar = building.clone();
        cfg.progress = Some(Box::new(move |done, total| {
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

/// `--shard K/N` and `--part FILE`, checked together: the shard and where
/// its part goes (writable), or `None` for a whole run.
pub(crate) fn shard_of(a: &RunArgs) -> Result<Option<(Shard, PathBuf)>> {
    let (spec, part) = match (&a.shard, &a.part) {
        (None, None) => return Ok(None),
        (None, Some(_)) => return Err(anyhow!("--part needs --shard K/N")),
        (Some(_), None) => {
            return Err(anyhow!(
            "--shard needs --part FILE: where the shard writes what it found, for `blackout merge`"
        ))
        }
        (Some(spec), Some(part)) => (spec, part),
    };
    let shard = Shard::parse(spec).map_err(|e| anyhow!("--shard: {e}"))?;
    if a.trace.is_none() {
        return Err(anyhow!(
            "--shard needs --trace: every shard must check the same recording (make it once with `blackout record -o run.trace`, or `blackout run --backend block -o run.rec ...`)"
        ));
    }
    check_writable(part).with_context(|| format!("cannot write --part {}", part.display()))?;
    Ok(Some((shard, part.clone())))
}

/// Writes a shard's part and says what it holds.
pub(crate) fn write_part(
    result: Result<ShardPart, RunError>,
    path: &std::path::Path,
    trace_path: Option<&std::path::Path>,
) -> Result<u8> {
    let mut part = match result {
        Ok(p) => p,
        Err(RunError::Interrupted) => return Err(anyhow!("interrupted")),
        Err(e) => return Err(e).context("checking crash states"),
    };
    part.trace = trace_path.map(|p| p.display().to_string());
    part.save(path)
        .with_context(|| format!("cannot write --part {}", path.display()))?;
    let mut out = std::io::stdout().lock();
    match &part.stop {
        Some(stop) => writeln!(
            out,
            "shard {}: the run stops before checking the states ({stop}); wrote {}",
            part.shard,
            path.display()
        )?,
        None => writeln!(
            out,
            "shard {}: checked {} of the {} distinct states (the rest are the other shards'); wrote {}",
            part.shard,
            for_people(part.states.len() as u128),
            for_people(part.distinct as u128),
            path.display()
        )?,
    }
    if let Some(b) = &part.block {
        writeln!(
            out,
            "shard {}: {}: {} of the {} states (those whose image is this shard's), {} distinct after recovery",
            part.shard,
            b.fs,
            for_people(b.visited as u128),
            for_people(b.states as u128),
            for_people(b.found.len() as u128)
        )?;
    }
    writeln!(
        out,
        "the verdict comes from `blackout merge` with the parts of all {} shards",
        part.shard.count
    )?;
    out.flush()?;
    Ok(0)
}
