//! `blackout record`, and the recording `blackout run` makes first (or the
//! saved trace it loads).

use std::sync::atomic::Ordering;

use anyhow::{anyhow, Context, Result};

use blackout::oplog::trace::Trace;
use blackout::record::{RecordConfig, Recorder};

use crate::args::RecordArgs;
use crate::INTERRUPTED;
use blackout::sys::durable::dir_of;

/// Records a workload into a trace, saved at `output` if given.
pub(crate) fn record_trace(
    cfg: RecordConfig,
    recorder: &dyn Recorder,
    output: Option<&std::path::Path>,
) -> Result<Trace> {
    // Fail on a bad output path before running anything, without touching
    // the path itself (another run may be using a trace there): the trace
    // is written beside it and renamed into place at the end.
    if let Some(out) = output {
        tempfile::Builder::new()
            .prefix(".blackout-trace-")
            .tempfile_in(dir_of(out))
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    let result = recorder.record(&cfg);
    if INTERRUPTED.load(Ordering::SeqCst) {
        return Err(anyhow!("interrupted"));
    }
    let rec = result?;
    if let Some(out) = output {
        rec.trace
            .save(out)
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    if rec.orphans_killed > 0 {
        eprintln!(
            "note: the workload left {} background process(es) running outside its process group; killed",
            rec.orphans_killed
        );
    }
    let t = &rec.trace;
    let outputs = t
        .ops
        .iter()
        .filter(|o| matches!(o.kind, blackout::oplog::ops::OpKind::Output { .. }))
        .count();
    eprintln!(
        "recorded {} ops ({} outputs) from {} system calls{}; workload {}",
        t.ops.len(),
        outputs,
        t.stats.calls,
        output
            .map(|o| format!(" into {}", o.display()))
            .unwrap_or_default(),
        match (&t.exit.code, &t.exit.signal) {
            (Some(0), _) => "exited 0".to_string(),
            (Some(c), _) => format!("exited {c} (non-zero)"),
            (None, Some(s)) => format!("killed by {s}"),
            _ => "ended".to_string(),
        }
    );
    Ok(rec.trace)
}

pub(crate) fn cmd_record(a: RecordArgs) -> Result<u8> {
    let recorder = a.recording.chosen(&[])?;
    let cfg = a.recording.config(a.command);
    record_trace(cfg, recorder.as_ref(), Some(&a.output))?;
    Ok(0)
}

/// A trace file, or the syscall trace of a saved block recording.
pub(crate) fn load_trace(path: &std::path::Path) -> Result<Trace> {
    if blackout::block::saved::is_saved_recording(path) {
        return blackout::block::saved::load_trace_of(path)
            .with_context(|| format!("{}", path.display()));
    }
    Trace::load(path).with_context(|| format!("{}", path.display()))
}
