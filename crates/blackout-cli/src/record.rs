//! `blackout record`, and the recording `blackout run` makes first (or the
//! saved trace it loads).

use std::sync::atomic::Ordering;

use anyhow::{anyhow, Context, Result};

use blackout::oplog::trace::Trace;
use blackout::record::{
    NativeRecorder, RecordConfig, RecordError, Recorder, Recording, StraceRecorder,
};

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

use crate::args::{RecorderKind, RecordingArgs};
use crate::INTERRUPTED;
use blackout::sys::durable::dir_of;

pub(crate) const RECORD_EXAMPLES: &str = "\
Examples:
  Record the save example into a trace:
    blackout record -o run.trace --setup 'echo \"version 1\" > doc.txt' -- examples/save/save.sh full

  Record a program on a copy of a seed tree, naming the source line of each op:
    blackout record -o db.trace --init seed/ --stacks -- ./mydb insert 42";

#[derive(Args)]
pub(crate) struct RecordArgs {
    /// Where to write the trace.
    #[arg(short = 'o', long = "output", value_name = "TRACE")]
    pub(crate) output: PathBuf,
    #[command(flatten)]
    pub(crate) recording: RecordingArgs,
    /// The workload and its arguments; `{dir}` is replaced by the directory
    /// under test, which is also its working directory.
    #[arg(last = true, required = true, value_name = "WORKLOAD")]
    pub(crate) command: Vec<OsString>,
}

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
    let by = match &t.strace_version {
        Some(v) => format!("strace {v}"),
        None => "the native recorder".into(),
    };
    eprintln!(
        "recorded {} ops ({} outputs) from {} system calls ({by}){}; workload {}",
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

/// The recorder `--recorder` names (or why it cannot be had), and
/// whether it is strace. `needs` are the caller's flags that only strace
/// records (with `native` the first one set is refused in one line);
/// `prefers` are flags that `auto` records with strace for, and `native`
/// records without what strace would add.
pub(crate) fn chosen(
    a: &RecordingArgs,
    needs: &[(bool, &str)],
    prefers: &[(bool, &str)],
) -> Result<(Box<dyn Recorder>, bool)> {
    let own = [
        (a.stacks, "--stacks"),
        (a.sync_times, "--sync-times"),
        (!a.without_sync.is_empty(), "--without-sync"),
        (a.keep_log.is_some(), "--keep-log"),
        (a.no_seccomp, "--no-seccomp"),
    ];
    let needed = own.iter().chain(needs).find(|(set, _)| *set);
    let strace: Box<dyn Recorder> = Box::new(a.recorder());
    match a.recorder {
        RecorderKind::Strace => Ok((strace, true)),
        RecorderKind::Native => match needed {
            Some((_, flag)) => Err(anyhow!(
                "{flag} needs --recorder strace (the native recorder does not support it)"
            )),
            None => Ok((Box::new(NativeRecorder), false)),
        },
        RecorderKind::Auto => match needed.or(prefers.iter().find(|(set, _)| *set)) {
            Some(_) => Ok((strace, true)),
            None => Ok((Box::new(Fallback(a.recorder())), false)),
        },
    }
}

/// The native recorder, or strace where the native recorder cannot trace
/// (one line on standard error says why).
struct Fallback(StraceRecorder);

impl Recorder for Fallback {
    fn record(&self, cfg: &RecordConfig) -> Result<Recording, RecordError> {
        match NativeRecorder.record(cfg) {
            Err(RecordError::CannotTrace(why)) => {
                eprintln!(
                    "note: recording with strace: the native recorder cannot trace here ({why})"
                );
                self.0.record(cfg)
            }
            r => r,
        }
    }
}

pub(crate) fn cmd_record(a: RecordArgs) -> Result<u8> {
    let (recorder, _) = chosen(&a.recording, &[], &[])?;
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
