//! `blackout run --backend block`: the workload on a real file system
//! through the block device, `--repeat`, and its report.

use std::path::Path;
use std::sync::atomic::Ordering;

use anyhow::{anyhow, Context, Result};

use blackout::analysis::block::BlockSide;
use blackout::analysis::report::{RunReport, Verdict};
use blackout::block::saved::is_saved_recording;
use blackout::block::sharded::{check_block_shard, merge_block};
use blackout::block::syncs::{measure_syncs_on_fs, FsSyncRuns};
use blackout::block::{
    check_block, record_block, BlockCheck, BlockConfig, BlockError, BlockRecording,
};
use blackout::block_device::session::FsKind;
use blackout::explore::model::Model;
use blackout::export::ExportContext;
use blackout::run::{check_trace, RunConfig, RunError};
use blackout::shard::{Shard, ShardPart};
use blackout::sharded::{check_shard, merge_parts, MergeError};

use crate::args::{run_config, MergeArgs, RunArgs};
use crate::part::{shard_of, write_part};
use crate::report::{baseline_mode, check_writable, emit_merged, ratchet_after};
use crate::INTERRUPTED;

/// The block backend's settings from the run's flags.
pub(crate) fn block_config(a: &RunArgs) -> Result<BlockConfig> {
    let fs: FsKind = match &a.block.fs {
        Some(fs) => fs.parse().map_err(|e| anyhow!("--fs: {e}"))?,
        None => FsKind::Ext4,
    };
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
    if a.fail_syncs {
        return Err(anyhow!(
            "--fail-syncs is not measured on a real file system yet: run it with a model (without --backend block)"
        ));
    }
    if a.trace.is_some() {
        // A saved recording is checked as it was made.
        let made_when_recording = [
            ("--repeat", a.block.repeat > 1),
            ("--settle", a.block.settle.is_some()),
            ("--fs-size", a.block.fs_size.is_some()),
            ("--mkfs-opts", a.block.mkfs_opts.is_some()),
        ];
        if let Some((flag, _)) = made_when_recording.iter().find(|(_, set)| *set) {
            return Err(anyhow!(
                "{flag} is fixed when recording; with --trace the saved recording is checked as it was made"
            ));
        }
    }
    for (flag, path, _) in a.report.files() {
        check_writable(path).with_context(|| format!("cannot write {flag} {}", path.display()))?;
    }
    let shard = shard_of(&a)?;
    let mode = baseline_mode(&a)?;
    let bcfg = block_config(&a)?;
    let (mut cfg, _) = run_config(&a)?;
    // Beside the posix model, unless --model names others (a table whose
    // posix column is run on its own need not explore it again).
    if a.explore.model == "all" {
        cfg.models = vec![Model::Posix];
    }
    if let Some((shard, part)) = shard {
        return block_shard(&a, &bcfg, &cfg, shard, &part);
    }
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
    let mut run = worst.ok_or_else(|| anyhow!("--repeat must be at least 1"))?;
    measure_syncs(&a, &bcfg, &cfg, &mut run)?;
    emit_block_run(&a, &cfg, run, runs, mode)
}

/// One recording on the real file system, the posix model checked on its
/// trace, and the device's states checked.
pub(crate) struct BlockRun {
    pub(crate) rec: BlockRecording,
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
    let rec = match &a.trace {
        Some(path) => load_recording(path, Some(a))?,
        None => {
            let rcfg = a.recording.clone().config(a.command.clone());
            let recorded = record_block(bcfg, &rcfg, &a.recording.recorder());
            if INTERRUPTED.load(Ordering::SeqCst) {
                return Err(anyhow!("interrupted"));
            }
            recorded?
        }
    };
    if let Some(out) = &a.output {
        rec.save(out)
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    eprintln!(
        "{} {} ops and {} block records on {} (base at record {})",
        if a.trace.is_some() {
            "loaded"
        } else {
            "recorded"
        },
        rec.trace.ops.len(),
        rec.device.log().records.len(),
        rec.fs,
        rec.device.base()
    );
    let posix = match check_trace(&rec.trace, cfg) {
        Ok(r) => r,
        Err(RunError::Interrupted) => return Err(anyhow!("interrupted")),
        Err(e) => return Err(e).context("checking the posix model's crash states"),
    };
    let prefix = a.explore.ack_prefix.as_ref().map(|p| p.as_bytes());
    let block = if matches!(posix.verdict, Verdict::Pass | Verdict::Fail) {
        let how = block_check(bcfg, cfg, prefix, Some(&posix));
        Some(check_block(&rec, &how).map_err(block_error)?)
    } else {
        None
    };
    Ok(BlockRun { rec, posix, block })
}

/// With `--syncs`: each sync site of the (worst) run run again without its
/// syncs, `--repeat` times, when the run recorded the workload (a saved
/// recording has no workload to run).
fn measure_syncs(
    a: &RunArgs,
    bcfg: &BlockConfig,
    cfg: &RunConfig,
    run: &mut BlockRun,
) -> Result<()> {
    let BlockRun { rec, posix, block } = run;
    if let (Some(syncs), Some(with), None) = (&mut posix.syncs, &*block, &a.trace) {
        let record = a.recording.clone().config(a.command.clone());
        let prefix = a.explore.ack_prefix.as_ref().map(|p| p.as_bytes());
        let runs = FsSyncRuns {
            record: &record,
            recorder: &a.recording.recorder(),
            check: &block_check(bcfg, cfg, prefix, None),
            repeat: a.block.repeat,
        };
        measure_syncs_on_fs(&runs, &rec.trace, with, syncs).map_err(block_error)?;
    }
    Ok(())
}

/// `run --backend block --trace FILE --shard K/N --part PART`: the posix
/// model's share of the distinct states and the file system's share of the
/// images, in one part.
fn block_shard(
    a: &RunArgs,
    bcfg: &BlockConfig,
    cfg: &RunConfig,
    shard: Shard,
    part: &Path,
) -> Result<u8> {
    let path = a
        .trace
        .as_deref()
        .ok_or_else(|| anyhow!("--shard needs --trace"))?;
    let rec = load_recording(path, Some(a))?;
    let prefix = a.explore.ack_prefix.as_ref().map(|p| p.as_bytes());
    let how = block_check(bcfg, cfg, prefix, None);
    let block = check_block_shard(&rec, &how, shard).map_err(block_error)?;
    let posix = check_shard(&rec.trace, cfg, shard).map(|mut p| {
        p.block = Some(block);
        p
    });
    write_part(posix, part, Some(path))
}

/// A block check's error as the command says it.
fn block_error(e: BlockError) -> anyhow::Error {
    match e {
        BlockError::Interrupted => anyhow!("interrupted"),
        e => anyhow::Error::new(e).context("checking the block device's crash states"),
    }
}

/// How a run (or a merge) checks its block states.
fn block_check<'a>(
    bcfg: &'a BlockConfig,
    cfg: &'a RunConfig,
    ack_prefix: Option<&'a [u8]>,
    posix: Option<&'a RunReport>,
) -> BlockCheck<'a> {
    BlockCheck {
        config: bcfg,
        checker: cfg.checker.as_ref(),
        ack_prefix,
        scratch_parent: blackout::sys::scratch::default_scratch_parent(),
        cancel: Some(&INTERRUPTED),
        posix,
        budget: cfg.check_budget,
        jobs: cfg.jobs,
    }
}

/// `blackout merge` of a block run's parts: the posix report merged as a
/// model run's, the file system's from every part's share, blamed against
/// it.
pub(crate) fn merge_block_parts(
    a: &MergeArgs,
    parts: &[ShardPart],
    trace_path: &Path,
    cfg: &RunConfig,
) -> Result<u8> {
    let rec = load_recording(trace_path, None)?;
    let report = merge_parts(&rec.trace, cfg, parts);
    let mut posix = match report {
        Ok(r) => r,
        Err(MergeError::Run(RunError::Interrupted)) => return Err(anyhow!("interrupted")),
        Err(MergeError::Part(e)) => return Err(e.into()),
        Err(e) => return Err(e).context("merging the parts"),
    };
    let mut shares = Vec::with_capacity(parts.len());
    for p in parts {
        let block = p.block.as_ref().ok_or_else(|| {
            anyhow!(
                "{} holds no block share, {} does: parts of one run",
                p.label(),
                parts[0].label()
            )
        })?;
        shares.push((p.shard, block));
    }
    let first = shares[0].1;
    let mut bcfg = BlockConfig::new(rec.fs);
    bcfg.session.mount_opts = Some(first.mount_opts.clone())
        .filter(|o| !o.is_empty())
        .into_iter()
        .collect();
    bcfg.max_subsets = first.max_subsets;
    bcfg.seed = first.seed;
    bcfg.fsck = first.fsck;
    let settings = &parts[0].settings;
    let block = if matches!(posix.verdict, Verdict::Pass | Verdict::Fail) {
        let prefix = settings.ack_prefix.as_ref().map(|p| p.0.as_slice());
        let how = block_check(&bcfg, cfg, prefix, Some(&posix));
        shares.sort_by_key(|s| s.0.index);
        Some(merge_block(&rec, &how, &shares)?)
    } else {
        None
    };
    posix.block = Some(BlockSide {
        fs: rec.fs.name().to_string(),
        report: block,
        repeat: Vec::new(),
    });
    emit_merged(&a.report, &posix, &rec.trace, trace_path, settings)
}

/// A block recording saved by `run --backend block -o`, on the file
/// system `--fs` names if it names one.
fn load_recording(path: &Path, a: Option<&RunArgs>) -> Result<BlockRecording> {
    if !is_saved_recording(path) {
        return Err(anyhow!(
            "{}: not a block recording (make one with `blackout run --backend block -o FILE ...`)",
            path.display()
        ));
    }
    let parent = blackout::sys::scratch::default_scratch_parent();
    let rec = BlockRecording::load(path, &parent).with_context(|| format!("{}", path.display()))?;
    let named = a.and_then(|a| a.block.fs.as_deref());
    if let Some(fs) = named.filter(|fs| *fs != rec.fs.name()) {
        return Err(anyhow!(
            "--fs {fs}: {} was recorded on {}",
            path.display(),
            rec.fs
        ));
    }
    Ok(rec)
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
    let shown = a
        .output
        .as_ref()
        .or(a.trace.as_ref())
        .map(|p| p.display().to_string());
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
