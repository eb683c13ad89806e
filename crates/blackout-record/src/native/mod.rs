//! The native recorder: the workload traced with ptrace and a seccomp
//! filter, its calls read from registers and memory and applied to the
//! file-system model as they complete, with no log in between.
//!
//! [`NativeRecorder`] runs a workload as [`crate::record::StraceRecorder`]
//! does (the same directory under test, `--init`/`--setup`, environment,
//! standard output kept for the promises, output fd, timeout and cancel
//! flag, the process group ended on every path), but as its own tracer:
//! `spawn` forks the workload and seizes it (`PTRACE_SEIZE`, following
//! forks, vforks, clones and execs, killing the tracees if the tracer
//! goes), and the child installs the `filter` before its exec, so only the
//! calls replay reads stop it. `tracer` follows every stop, `calls` reads
//! each call into the [`crate::syscall::Syscall`] the strace path decodes
//! from text (bytes written are copied from the process into the trace's
//! data, never formatted), and `feed` applies them to
//! [`crate::fsmodel::FsModel`] in completion order, numbering calls as a
//! log numbers its lines. Everything after the model is shared with the
//! strace path.
//!
//! It decodes x86_64 calls only, and records none of what only strace
//! records (stacks, call times, syncs taken out or made to fail): a config
//! that asks for one is refused ([`RecordError::Unsupported`]). Before
//! anything of the workload's runs (once per process), `spawn::probe` forks a child, seizes
//! it and has it install the filter: where ptrace or seccomp filters are
//! refused (a container's profile, a security policy) the recording fails
//! with [`RecordError::CannotTrace`], which a caller may take as its cue
//! to record with strace instead.

use std::ffi::OsString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use blackout_oplog::trace::{Numbering, Replayed, Trace, TraceMeta, WorkloadExit};
use blackout_oplog::tree::Tree;

use crate::error::ReplayError;
use crate::record::{
    check_started, nearly_full, prepare, Prepared, RecordConfig, RecordError, Recording,
};
use crate::replay::ReplayOptions;

mod calls;
mod cpu;
mod feed;
mod filter;
mod memory;
mod ptrace;
mod spawn;
mod tracer;
mod writes;

/// What a replay error of a native recording names as its log.
const LOG_NAME: &str = "native recording";

/// How often the watchdog looks at the cancel flag and the deadline.
const WATCH_SLICE: Duration = Duration::from_millis(50);

/// The recorder that traces the workload itself (ptrace and seccomp)
/// instead of running it under strace.
///
/// ```no_run
/// use blackout_record::native::NativeRecorder;
/// use blackout_record::{RecordConfig, Recorder};
///
/// let cfg = RecordConfig::new(vec!["sh".into(), "-c".into(), "echo hi > f".into()]);
/// let rec = NativeRecorder::default().record(&cfg).unwrap();
/// assert_eq!(rec.trace.ops.len(), 2); // create, write
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct NativeRecorder;

impl crate::Recorder for NativeRecorder {
    fn record(&self, cfg: &RecordConfig) -> Result<Recording, RecordError> {
        record(cfg)
    }
}

/// Refuses what this recorder cannot record.
fn refuse_unsupported(cfg: &RecordConfig) -> Result<(), RecordError> {
    if !filter::SUPPORTED {
        return Err(RecordError::CannotTrace(format!(
            "it decodes x86_64 system calls only (this is {})",
            std::env::consts::ARCH
        )));
    }
    let strace_only = [
        (cfg.stacks, "stacks (--stacks)"),
        (cfg.timestamps, "call times (--sync-times)"),
        (
            !cfg.omit_syncs.is_empty(),
            "syncs taken out (--without-sync)",
        ),
        (cfg.fail_sync.is_some(), "syncs made to fail (--fail-syncs)"),
    ];
    match strace_only.iter().find(|(asked, _)| *asked) {
        Some((_, what)) => Err(RecordError::Unsupported(format!(
            "the native recorder does not record {what}; record with --recorder strace"
        ))),
        None => Ok(()),
    }
}

/// Runs the workload under the tracer and makes its trace.
fn record(cfg: &RecordConfig) -> Result<Recording, RecordError> {
    ReplayOptions {
        volatile: cfg.volatile.clone(),
    }
    .validate()
    .map_err(RecordError::Prepare)?;
    refuse_unsupported(cfg)?;
    // Whether this process may trace does not change while it runs: the
    // probe forks and traces a child once, not once per recording.
    static PROBED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    PROBED
        .get_or_init(spawn::probe)
        .clone()
        .map_err(RecordError::CannotTrace)?;
    let Prepared {
        _scratch,
        base,
        dir,
        tree,
        command,
    } = prepare(cfg)?;
    let run = run(cfg, &command, (&base, &dir), &tree)?;
    // A workload refused space where the scratch filled up (its directory
    // under test, its standard output, the trace's data) did not run as
    // it would elsewhere: say what filled up.
    if run.no_space && nearly_full(&base) {
        return Err(RecordError::ScratchFull(base.display().to_string()));
    }
    check_started(&command, run.exec_failure, run.status, &run.stderr)?;
    let replayed = run.replayed.map_err(|err| match nearly_full(&base) {
        true => RecordError::ScratchFull(base.display().to_string()),
        false => RecordError::Replay {
            log: LOG_NAME.into(),
            err,
        },
    })?;
    let meta = TraceMeta {
        strace_version: None,
        // No log: an op carries the number of its call.
        numbering: Numbering::Call,
        command: command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        dir: dir.as_os_str().as_bytes().to_vec(),
        exit: WorkloadExit {
            code: run.status.code(),
            signal: None,
        },
        volatile: cfg.volatile.clone(),
    };
    let mut trace = Trace::try_new(&tree, replayed, meta)?;
    // A small recording's data is read faster from memory.
    trace.data = std::mem::take(&mut trace.data).small_in_memory();
    Ok(Recording {
        trace,
        stdout: run.stdout,
        stderr: run.stderr,
        log_bytes: 0,
        orphans_killed: run.orphans,
        call_times: Vec::new(),
        injected: 0,
    })
}

/// What a traced run of the workload left.
struct Run {
    status: std::process::ExitStatus,
    /// Why the program never ran, when it did not.
    exec_failure: Option<String>,
    /// A call failed for want of space.
    no_space: bool,
    orphans: usize,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    replayed: Result<Replayed, ReplayError>,
}

/// Why a run was stopped from outside.
enum Stop {
    Cancelled,
    TimedOut,
}

/// The files the workload's standard output, standard error and output
/// fd go to (in `base`, or the config's standard output file).
fn stdio(cfg: &RecordConfig, base: &Path) -> Result<spawn::Stdio, RecordError> {
    if let Some(fd) = cfg.output_fd.filter(|fd| *fd <= 2) {
        return Err(RecordError::Prepare(format!(
            "the output fd must be above 2 (got {fd})"
        )));
    }
    let (stdout, output) = crate::record::output_files(cfg, base)?;
    let output = output.zip(cfg.output_fd);
    Ok(spawn::Stdio {
        stdout,
        stderr: fs::File::create(base.join("stderr"))?,
        output,
    })
}

/// The model the run feeds: the initial tree, the output fd, the data
/// file in `base`.
fn feed(
    cfg: &RecordConfig,
    base: &Path,
    dir: &Path,
    tree: &Tree,
) -> Result<feed::Feed, RecordError> {
    let mut volatile = globset::GlobSetBuilder::new();
    for p in &cfg.volatile {
        let glob = globset::Glob::new(p)
            .map_err(|e| RecordError::Prepare(format!("--volatile `{p}`: {e}")))?;
        volatile.add(glob);
    }
    let volatile = volatile
        .build()
        .map_err(|e| RecordError::Prepare(format!("--volatile: {e}")))?;
    // The bytes written go to a file as they come (unlinked: it lives as
    // long as the trace reads it).
    let data = tempfile::tempfile_in(base)?;
    let output_fd = cfg.output_fd.map_or(1, i64::from);
    let dir = dir.as_os_str().as_bytes();
    Ok(feed::Feed::new(tree, dir, volatile, output_fd, data))
}

/// Runs `command` in `dir` under the tracer, its files in `base`, until
/// no tracee is left (or the cancel flag or the timeout stops it); then
/// its process group is ended and orphans are reaped.
fn run(
    cfg: &RecordConfig,
    command: &[OsString],
    (base, dir): (&Path, &Path),
    tree: &Tree,
) -> Result<Run, RecordError> {
    let launch = spawn::Launch::new(command, dir, &cfg.env, stdio(cfg, base)?)?;
    let mut feed = feed(cfg, base, dir, tree)?;
    let shown = command[0].to_string_lossy().into_owned();
    // The workload forked below inherits the pin; this thread lets go
    // when the run is over.
    let _pinned = cpu::Pinned::here();
    let mut started = spawn::start(&launch).map_err(|e| RecordError::CannotStart {
        program: shown,
        reason: e.to_string(),
    })?;
    let pid = started.pid;
    let shared = tracer::Shared::default();
    let (done, watched) = mpsc::channel::<()>();
    let (traced, stopped) = std::thread::scope(|s| {
        let shared = &shared;
        let cancel = cfg.cancel.as_deref();
        let watchdog = s.spawn(move || watch(shared, pid, cfg.timeout, cancel, &watched));
        let traced = tracer::Tracer::new(&mut feed, shared, pid).run();
        drop(done);
        (traced, watchdog.join().unwrap_or(None))
    });
    blackout_sys::proc::forget(pid as u32);
    // Whatever the tracer did not follow (it left the trace) dies with
    // the run, as under strace.
    blackout_sys::proc::end_group(pid as u32);
    let orphans = blackout_sys::proc::reap_orphans();
    let (raw, exec_seen) = traced?;
    match stopped {
        Some(Stop::Cancelled) => return Err(RecordError::Interrupted),
        Some(Stop::TimedOut) => return Err(RecordError::TimedOut(cfg.timeout.as_secs_f64())),
        None => {}
    }
    let exec_failure = match exec_seen {
        true => None,
        false => Some(
            started
                .failure()
                .unwrap_or_else(|| "it ended before running the program".into()),
        ),
    };
    Ok(Run {
        status: std::process::ExitStatus::from_raw(raw),
        exec_failure,
        no_space: feed.no_space(),
        orphans,
        stdout: if crate::record::stdout_kept(cfg) {
            fs::read(base.join("stdout"))?
        } else {
            Vec::new()
        },
        stderr: fs::read(base.join("stderr"))?,
        replayed: feed.finish(),
    })
}

/// Until the tracer is done (`done` hangs up): on the cancel flag or at
/// the deadline, kills every tracee and the workload's process group.
fn watch(
    shared: &tracer::Shared,
    group: i32,
    timeout: Duration,
    cancel: Option<&AtomicBool>,
    done: &mpsc::Receiver<()>,
) -> Option<Stop> {
    let deadline = Instant::now().checked_add(timeout);
    loop {
        if let Err(RecvTimeoutError::Disconnected) | Ok(()) = done.recv_timeout(WATCH_SLICE) {
            return None;
        }
        let stop = if cancel.is_some_and(|c| c.load(Ordering::SeqCst)) {
            Some(Stop::Cancelled)
        } else if deadline.is_some_and(|d| Instant::now() >= d) {
            Some(Stop::TimedOut)
        } else {
            None
        };
        if stop.is_some() {
            shared.kill_all(group);
            return stop;
        }
    }
}
