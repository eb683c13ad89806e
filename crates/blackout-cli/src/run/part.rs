//! Shards' part files: `--shard K/N` and `--part FILE` checked together,
//! and a shard's part written with what it holds (for either backend).

use std::io::Write;
use std::path::PathBuf;

use anyhow::{anyhow, Context, Result};

use blackout::explore::model::for_people;
use blackout::run::RunError;
use blackout::shard::{Shard, ShardPart};

use super::flags::RunArgs;
use crate::report::check_writable;

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
    if let (Some(b), Some(on)) = (&part.block, &part.settings.block) {
        writeln!(
            out,
            "shard {}: {}: {} of the {} states (those whose image is this shard's), {} distinct after recovery",
            part.shard,
            on.fs,
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
