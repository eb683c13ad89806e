//! `blackout run --backend block`: the workload on a real file system
//! through the block device, `--repeat`, and its report.

use std::sync::atomic::Ordering;

use anyhow::{anyhow, Context, Result};

use blackout::analysis::block::BlockSide;
use blackout::analysis::report::{RunReport, Verdict};
use blackout::block::{check_block, record_block, BlockCheck, BlockConfig, BlockError};
use blackout::block_device::session::FsKind;
use blackout::explore::model::Model;
use blackout::export::ExportContext;
use blackout::run::{check_trace, RunConfig, RunError};

use crate::args::{run_config, RunArgs};
use crate::report::{baseline_mode, check_writable, ratchet_after};
use crate::INTERRUPTED;

/// The block backend's settings from the run's flags.
pub(crate) fn block_config(a: &RunArgs) -> Result<BlockConfig> {
    let fs: FsKind = a.block.fs.parse().map_err(|e| anyhow!("--fs: {e}"))?;
    let mut bcfg = BlockConfig::new(fs);
    if let Some(size) = a.block.fs_size {
        bcfg.session.size = size;
    }
    if let Some(opts) = &a.block.mkfs_opts {
        bcfg.session.mkfs_opts = opts.split_whitespace().map(str::to_string).collect();
    }
    if let Some(opts) = &a.block.mount_opts {
        bcfg.session.mount_opts = vec![opts.clone()];
    }
    bcfg.max_subsets = usize::try_from(a.block.max_subsets).unwrap_or(usize::MAX);
    bcfg.seed = a.explore.seed;
    bcfg.settle = a.block.settle.map(std::time::Duration::from_secs_f64);
    bcfg.fsck = a.block.fsck;
    Ok(bcfg)
}

/// `run --backend block`: the workload recorded on a real file system, the
/// posix model checked on its trace, then every crash state of the device
/// mounted and checked.
pub(crate) fn cmd_run_block(a: RunArgs) -> Result<u8> {
    let unsupported = [
        ("--trace", a.trace.is_some()),
        ("--shard", a.shard.is_some()),
        ("--checker-server", a.checker_server.is_some()),
    ];
    if let Some((flag, _)) = unsupported.iter().find(|(_, set)| *set) {
        return Err(anyhow!("{flag} does not work with --backend block"));
    }
    for (flag, path, _) in a.report.files() {
        check_writable(path).with_context(|| format!("cannot write {flag} {}", path.display()))?;
    }
    let mode = baseline_mode(&a)?;
    let bcfg = block_config(&a)?;
    let (mut cfg, _) = run_config(&a)?;
    cfg.models = vec![Model::Posix];
    let repeat = a.block.repeat;
    // Every run's verdict and failing states; the worst run is kept.
    let mut runs: Vec<(Verdict, usize)> = Vec::new();
    let mut worst: Option<BlockRun> = None;
    for i in 0..repeat {
        let run = block_run_once(&a, &bcfg, &cfg)?;
        let seen = run.outcome();
        if repeat > 1 {
            eprintln!(
                "run {} of {repeat}: {} ({} failing states)",
                i + 1,
                seen.0.name(),
                seen.1
            );
        }
        runs.push(seen);
        if worst.as_ref().is_none_or(|w| seen > w.outcome()) {
            worst = Some(run);
        }
    }
    let run = worst.ok_or_else(|| anyhow!("--repeat must be at least 1"))?;
    emit_block_run(&a, &cfg, run, runs, mode)
}

/// One recording on the real file system, the posix model checked on its
/// trace, and the device's states checked.
pub(crate) struct BlockRun {
    pub(crate) rec: blackout::block::BlockRecording,
    pub(crate) posix: RunReport,
    pub(crate) block: Option<blackout::block::BlockReport>,
}

impl BlockRun {
    /// The run's verdict and failing states, for finding the worst run.
    pub(crate) fn outcome(&self) -> (Verdict, usize) {
        match &self.block {
            Some(b) => (b.verdict, b.failing.len()),
            None => (self.posix.verdict, 0),
        }
    }
}

pub(crate) fn block_run_once(a: &RunArgs, bcfg: &BlockConfig, cfg: &RunConfig) -> Result<BlockRun> {
    let rcfg = a.recording.clone().config(a.command.clone());
    let recorded = record_block(bcfg, &rcfg, &a.recording.recorder());
    if INTERRUPTED.load(Ordering::SeqCst) {
        return Err(anyhow!("interrupted"));
    }
    let rec = recorded?;
    if let Some(out) = &a.output {
        rec.trace
            .save(out)
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    eprintln!(
        "recorded {} ops and {} block records on {} (base at record {})",
        rec.trace.ops.len(),
        rec.device.log().records.len(),
        bcfg.session.fs,
        rec.device.base()
    );
    let posix = match check_trace(&rec.trace, cfg) {
        Ok(r) => r,
        Err(RunError::Interrupted) => return Err(anyhow!("interrupted")),
        Err(e) => return Err(e).context("checking the posix model's crash states"),
    };
    let block = if matches!(posix.verdict, Verdict::Pass | Verdict::Fail) {
        let how = BlockCheck {
            config: bcfg,
            checker: cfg.checker.as_ref(),
            ack_prefix: a.explore.ack_prefix.as_ref().map(|p| p.as_bytes()),
            scratch_parent: blackout::sys::scratch::default_scratch_parent(),
            cancel: Some(&INTERRUPTED),
            posix: Some(&posix),
            budget: cfg.check_budget,
            jobs: cfg.jobs,
        };
        match check_block(&rec, &how) {
            Ok(r) => Some(r),
            Err(BlockError::Interrupted) => return Err(anyhow!("interrupted")),
            Err(e) => return Err(e).context("checking the block device's crash states"),
        }
    } else {
        None
    };
    Ok(BlockRun { rec, posix, block })
}

/// Writes a block run's report through every exporter asked for: the
/// posix report with the file system's beside it, and `--repeat`'s runs;
/// then, with `--baseline`, the ratchet on its rows (the posix model's and
/// the file system's).
pub(crate) fn emit_block_run(
    a: &RunArgs,
    cfg: &RunConfig,
    run: BlockRun,
    runs: Vec<(Verdict, usize)>,
    mode: blackout::baseline::Mode,
) -> Result<u8> {
    let BlockRun {
        rec,
        mut posix,
        block,
    } = run;
    posix.block = Some(BlockSide {
        fs: rec.fs.name().to_string(),
        report: block,
        repeat: if runs.len() > 1 { runs } else { Vec::new() },
    });
    let trace_id = rec.trace.content_id();
    let shown = a.output.as_ref().map(|p| p.display().to_string());
    let ctx = ExportContext {
        trace: &rec.trace,
        trace_path: shown.as_deref(),
        trace_id: &trace_id,
        checker: cfg.checker.command(),
        checker_flag: "--checker",
        state_flags: &a.explore.state_flags(),
        all_causes: a.report.all_causes,
        ack_prefix: a.explore.ack_prefix.as_ref().map(|p| p.as_bytes()),
    };
    let code = a.report.emit(&posix, &ctx)?;
    ratchet_after(a, &posix, mode, code)
}
