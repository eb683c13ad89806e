//! `blackout merge`: the parts of a sharded run into its one report.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};

use blackout::run::{RunConfig, RunError};
use blackout::shard::ShardPart;
use blackout::sharded::{merge_parts, MergeError};

use crate::args::MergeArgs;
use crate::block::merge_block_parts;
use crate::record::load_trace;
use crate::report::check_writable;
use crate::report::emit_merged;
use crate::run::Bars;
use crate::INTERRUPTED;

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
    cfg.cancel = Some(Arc::clone(&INTERRUPTED));
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
