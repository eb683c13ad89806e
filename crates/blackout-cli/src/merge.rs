//! `blackout merge`: the parts of a sharded run into its one report.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use clap::Args;

use blackout::block::run::BlockRun;
use blackout::run::{RunConfig, RunError};
use blackout::shard::ShardPart;
use blackout::sharded::{merge_parts, MergeError};

use crate::args::ReportArgs;
use crate::record::load_trace;
use crate::report::check_writable;
use crate::report::emit_merged;
use crate::run::block::{block_run_error, load_recording};
use crate::run::Bars;
use crate::INTERRUPTED;

pub(crate) const MERGE_EXAMPLES: &str = "\
Examples:
  Split the checking of a recording in three (each command on its own machine), then merge:
    blackout run --trace run.trace --checker \"sh $PWD/check.sh\" --shard 1/3 --part part1.json
    blackout run --trace run.trace --checker \"sh $PWD/check.sh\" --shard 2/3 --part part2.json
    blackout run --trace run.trace --checker \"sh $PWD/check.sh\" --shard 3/3 --part part3.json
    blackout merge part1.json part2.json part3.json

  Merge parts whose trace now lives elsewhere, with the reports for CI:
    blackout merge --trace artifacts/run.trace --junit blackout.xml --markdown summary.md parts/*.json";

#[derive(Args)]
pub(crate) struct MergeArgs {
    /// The part file of every shard (`blackout run --shard K/N --part FILE`).
    #[arg(value_name = "PART", required = true)]
    pub(crate) parts: Vec<PathBuf>,
    /// The trace the shards checked (default: the path the parts name).
    #[arg(long, value_name = "TRACE")]
    pub(crate) trace: Option<PathBuf>,
    /// Checkers run at once by the fix verifications (default: the number
    /// of CPUs).
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) jobs: Option<u64>,
    #[command(flatten)]
    pub(crate) report: ReportArgs,
}

pub(crate) fn cmd_merge(a: MergeArgs) -> Result<u8> {
    for (flag, path, _) in a.report.files() {
        check_writable(path).with_context(|| format!("cannot write {flag} {}", path.display()))?;
    }
    let mut parts = Vec::with_capacity(a.parts.len());
    for path in &a.parts {
        parts.push(ShardPart::load(path)?);
    }
    let trace_path = match (&a.trace, parts[0].trace.as_ref()) {
        (Some(p), _) => p.clone(),
        (None, Some(p)) => PathBuf::from(p),
        (None, None) => {
            return Err(anyhow!(
                "{} names no trace file: pass --trace",
                a.parts[0].display()
            ))
        }
    };
    let settings = parts[0].settings.clone();
    let mut cfg = RunConfig::from_settings(&settings)
        .map_err(|e| anyhow!("{}: {e}", a.parts[0].display()))?;
    if let Some(j) = a.jobs {
        cfg.jobs = usize::try_from(j).unwrap_or(usize::MAX);
    }
    cfg.handles.cancel = Some(Arc::clone(&INTERRUPTED));
    if settings.block.is_some() {
        return merge_block_parts(&a, &parts, &trace_path, &cfg);
    }
    let trace = match &a.trace {
        Some(_) => load_trace(&trace_path)?,
        None => load_trace(&trace_path).with_context(|| {
            format!(
                "the trace {} names (pass --trace if it is elsewhere)",
                a.parts[0].display()
            )
        })?,
    };
    let bars = Bars::attach(&mut cfg);
    let result = merge_parts(&trace, &cfg, &parts);
    bars.clear();
    let report = match result {
        Ok(r) => r,
        Err(MergeError::Run(RunError::Interrupted)) => return Err(anyhow!("interrupted")),
        Err(MergeError::Part(e)) => return Err(e.into()),
        Err(e) => return Err(e).context("merging the parts"),
    };
    emit_merged(&a.report, &report, &trace, &trace_path, &settings)
}

/// `blackout merge` of a block run's parts (see [`BlockRun::merge`]).
pub(crate) fn merge_block_parts(
    a: &MergeArgs,
    parts: &[ShardPart],
    trace_path: &Path,
    cfg: &RunConfig,
) -> Result<u8> {
    let rec = load_recording(trace_path, None)?;
    let posix = BlockRun::merge(&rec, cfg, parts).map_err(block_run_error)?;
    emit_merged(
        &a.report,
        &posix,
        &rec.trace,
        trace_path,
        &parts[0].settings,
    )
}
