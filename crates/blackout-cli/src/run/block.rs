//! `blackout run --backend block`: the workload on a real file system
//! through the block device, `--repeat`, and its report.

use std::path::Path;

use anyhow::{anyhow, Context, Result};

use blackout::block::run::{BlockRun, BlockRunError, BlockRunReport, BlockSource};
use blackout::block::saved::is_saved_recording;
use blackout::block::{BlockError, BlockRecording};
use blackout::explore::model::Model;
use blackout::export::ExportContext;
use blackout::run::{RunConfig, RunError};
use blackout::shard::Shard;
use blackout::sharded::MergeError;

use super::baseline::{baseline_mode, ratchet_after};
use super::flags::{block_config, run_config, RunArgs};
use super::part::{shard_of, write_part};
use crate::report::check_writable;

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
    let shard = shard_of(&a)?;
    for (flag, path, _) in a.report.files() {
        check_writable(path).with_context(|| format!("cannot write {flag} {}", path.display()))?;
    }
    let mode = baseline_mode(&a)?;
    let bcfg = block_config(&a)?;
    let (mut cfg, _) = run_config(&a)?;
    // Beside the posix model, unless --model names others (a table whose
    // posix column is run on its own need not explore it again).
    if a.explore.model == "all" {
        cfg.models = vec![Model::Posix];
    }
    let notes = |line: &str| eprintln!("{line}");
    let mut run = BlockRun::new(bcfg, &cfg);
    run.repeat = a.block.repeat;
    run.save.clone_from(&a.output);
    run.notes = Some(&notes);
    if let Some((shard, part)) = shard {
        return block_shard(&a, &run, shard, &part);
    }
    let source = match &a.trace {
        Some(path) => BlockSource::Saved(Box::new(load_recording(path, Some(&a))?)),
        None => BlockSource::Record {
            record: Box::new(a.recording.clone().config(a.command.clone())),
            recorder: a.recording.recorder(),
        },
    };
    let done = run.run(source).map_err(block_run_error)?;
    emit_block_run(&a, &cfg, done, mode)
}

/// `run --backend block --trace FILE --shard K/N --part PART`: the posix
/// model's share of the distinct states and the file system's share of the
/// images, in one part.
fn block_shard(a: &RunArgs, run: &BlockRun<'_>, shard: Shard, part: &Path) -> Result<u8> {
    let path = a
        .trace
        .as_deref()
        .ok_or_else(|| anyhow!("--shard needs --trace"))?;
    let rec = load_recording(path, Some(a))?;
    let checked = match run.shard(&rec, shard) {
        Ok(p) => Ok(p),
        Err(BlockRunError::Shard(e)) => Err(e),
        Err(e) => return Err(block_run_error(e)),
    };
    write_part(checked, part, Some(path))
}

/// A block run's error as the command says it.
pub(crate) fn block_run_error(e: BlockRunError) -> anyhow::Error {
    match e {
        BlockRunError::Interrupted
        | BlockRunError::Check(BlockError::Interrupted)
        | BlockRunError::Posix(RunError::Interrupted)
        | BlockRunError::Merge(MergeError::Run(RunError::Interrupted)) => anyhow!("interrupted"),
        BlockRunError::Record(e) => e.into(),
        BlockRunError::Save { path, source } => {
            anyhow::Error::new(source).context(format!("cannot write {}", path.display()))
        }
        BlockRunError::Posix(e) => {
            anyhow::Error::new(e).context("checking the posix model's crash states")
        }
        BlockRunError::Check(e) => {
            anyhow::Error::new(e).context("checking the block device's crash states")
        }
        BlockRunError::Shard(e) => anyhow::Error::new(e).context("checking crash states"),
        BlockRunError::Merge(MergeError::Part(e)) | BlockRunError::Part(e) => e.into(),
        BlockRunError::Merge(e) => anyhow::Error::new(e).context("merging the parts"),
        e @ (BlockRunError::NoBlockShare { .. } | BlockRunError::NoBlockSettings { .. }) => {
            anyhow!("{e}")
        }
    }
}

/// A block recording saved by `run --backend block -o`, on the file
/// system `--fs` names if it names one.
pub(crate) fn load_recording(path: &Path, a: Option<&RunArgs>) -> Result<BlockRecording> {
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
fn emit_block_run(
    a: &RunArgs,
    cfg: &RunConfig,
    done: BlockRunReport,
    mode: blackout::baseline::Mode,
) -> Result<u8> {
    let BlockRunReport {
        recording: rec,
        report: posix,
    } = done;
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
