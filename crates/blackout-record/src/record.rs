//! Record: run a workload under `strace -f` in a fresh directory under test
//! and turn what it did into a [`Trace`].
//!
//! Everything the recorder writes goes into one scratch directory (removed
//! when the [`Recording`] or the error is dropped): the directory under test
//! `dir/`, the raw strace log, and the workload's stdout and stderr.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use blackout_oplog::trace::{Numbering, Trace, TraceMeta, WorkloadExit};
use blackout_sys::command::{signal_name, substitute};
use blackout_sys::proc::{wait_group, Waited};

use crate::omit::{FailSync, OmittedSync};
use crate::replay::{replay_streaming, ReplayError, ReplayOptions};
use crate::snapshot::{copy_tree, snapshot};
use crate::strace::TRACED_SYSCALLS;

/// How long a workload may run under the recorder by default, in seconds:
/// generous (tracing makes programs many times slower), but not forever.
pub const WORKLOAD_TIMEOUT_SECONDS_DEFAULT: u64 = 1800;

/// What to record.
#[derive(Debug, Clone)]
pub struct RecordConfig {
    /// The workload and its arguments (`{dir}` is substituted).
    pub command: Vec<OsString>,
    /// A tree copied into the directory under test first.
    pub init: Option<PathBuf>,
    /// A shell command run in the directory under test first, unrecorded.
    pub setup: Option<String>,
    /// Where to create the scratch directory (default: the system temp dir).
    pub scratch_parent: Option<PathBuf>,
    /// Set from outside (a Ctrl-C handler) to stop the workload and return
    /// [`RecordError::Interrupted`]; the scratch directory is removed.
    pub cancel: Option<Arc<AtomicBool>>,
    /// How long the workload may run before it is killed with its process
    /// group and the recording fails (`--workload-timeout`).
    pub timeout: Duration,
    /// Record each call's stack (strace `-k`) and name the source line of
    /// every op.
    pub stacks: bool,
    /// Files the program rebuilds on restart (globs; see
    /// [`crate::replay::ReplayOptions`]).
    pub volatile: Vec<String>,
    /// Hand the workload a file open for writing on this fd (above 2) and
    /// take what it writes there, not its standard output, as the output
    /// stream whose lines are promises: a program whose stdout carries
    /// other text (a test harness's) promises on a channel of its own.
    pub output_fd: Option<i32>,
    /// Variables added to the workload's environment.
    pub env: Vec<(OsString, OsString)>,
    /// Run the workload in this existing directory instead of a fresh one
    /// in the scratch directory: what it holds (after `init` and `setup`)
    /// is the initial tree, and it is left as the workload left it.
    pub dir: Option<PathBuf>,
    /// The workload's output stream goes to this existing file (opened
    /// for appending) instead of being kept: its standard output, and the
    /// recording's `stdout` is then empty; or, with `output_fd`, what it
    /// writes there (its standard output is kept as without this).
    pub stdout: Option<PathBuf>,
    /// Log when each call started and how long it took (`-ttt -T`), for
    /// [`crate::times::call_times`].
    pub timestamps: bool,
    /// Syncs taken out of the workload ([`crate::omit`]): the recording
    /// fails when the program makes one anyway.
    pub omit_syncs: Vec<OmittedSync>,
    /// A sync made to fail with EIO ([`crate::omit::FailSync`]).
    pub fail_sync: Option<FailSync>,
}

impl RecordConfig {
    /// A config for `command` with defaults.
    pub fn new(command: Vec<OsString>) -> Self {
        RecordConfig {
            command,
            init: None,
            setup: None,
            scratch_parent: None,
            cancel: None,
            timeout: Duration::from_secs(WORKLOAD_TIMEOUT_SECONDS_DEFAULT),
            stacks: false,
            volatile: Vec::new(),
            output_fd: None,
            env: Vec::new(),
            dir: None,
            stdout: None,
            timestamps: false,
            omit_syncs: Vec::new(),
            fail_sync: None,
        }
    }
}

/// Why a recording failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// strace is not installed or does not run.
    #[error("cannot run strace ({0}); install it (e.g. `apt-get install strace`)")]
    NoStrace(String),
    /// The workload program does not exist.
    #[error("workload `{0}` not found{1}")]
    NotFound(String, String),
    /// The workload could not be started.
    #[error("workload `{program}` could not start: {reason}")]
    CannotStart {
        /// The program.
        program: String,
        /// Why.
        reason: String,
    },
    /// The workload was killed by a signal.
    #[error("workload was killed by {signal}; the recording is incomplete{stderr}")]
    Killed {
        /// The signal's name.
        signal: String,
        /// Its stderr, for context.
        stderr: String,
    },
    /// `--init` or `--setup` failed.
    #[error("{0}")]
    Prepare(String),
    /// The log could not be replayed.
    #[error("{log}:{err}")]
    Replay {
        /// The log's path (kept for inspection when asked).
        log: String,
        /// What went wrong.
        err: ReplayError,
    },
    /// The cancel flag was set while the workload ran.
    #[error("interrupted")]
    Interrupted,
    /// The scratch directory's file system filled up while recording.
    #[error("the recording is incomplete: the file system holding {0} (TMPDIR) is full; set TMPDIR to a directory with more room")]
    ScratchFull(String),
    /// The scratch directory could not be made.
    #[error("cannot make a scratch directory in {0} (it comes from TMPDIR, else /tmp): {1}")]
    Scratch(String, std::io::Error),
    /// The workload ran past its timeout; it was killed.
    #[error("the workload did not finish within {0} s (--workload-timeout); it was killed with its process group, and whatever it had detached")]
    TimedOut(f64),
    /// A sync `--without-sync` takes out was made anyway.
    #[error("the workload made {sync} anyway (log line {line}): {why}, so it cannot be taken out")]
    NotOmitted {
        /// The sync, as `--without-sync` names it.
        sync: String,
        /// The log line of the first one made.
        line: u32,
        /// Why: the loader did not preload the library (what it said), or
        /// the program does not ask the C library for the sync.
        why: String,
    },
    /// The recorder cannot record what the config asks (a setting only
    /// strace records).
    #[error("{0}")]
    Unsupported(String),
    /// The native recorder cannot trace here (an architecture whose calls
    /// it does not decode, ptrace or seccomp filters refused); nothing of
    /// the workload's ran.
    #[error("the native recorder cannot trace here: {0}; record with --recorder strace")]
    CannotTrace(String),
    /// Any other I/O failure.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// A finished recording.
#[derive(Debug)]
pub struct Recording {
    /// The trace.
    pub trace: Trace,
    /// What the workload printed on stdout.
    pub stdout: Vec<u8>,
    /// What the workload printed on stderr (strace's own messages too).
    pub stderr: Vec<u8>,
    /// The raw strace log's size in bytes (`--keep-log` keeps the log).
    pub log_bytes: u64,
    /// Processes the workload left running outside its process group
    /// (detached with `setsid`, say); they were killed.
    pub orphans_killed: usize,
    /// With [`RecordConfig::timestamps`]: when each call returned, by the
    /// line it started on ([`crate::times::call_times`]); else empty.
    pub call_times: Vec<(u32, f64)>,
    /// With [`RecordConfig::fail_sync`]: how many calls strace made fail.
    pub injected: usize,
}

/// strace's version (`6.1`), or an error when it cannot run.
pub fn strace_version(strace: &Path) -> Result<String, RecordError> {
    let out = Command::new(strace)
        .arg("-V")
        .output()
        .map_err(|e| RecordError::NoStrace(format!("{}: {e}", strace.display())))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .next()
        .and_then(|l| l.rsplit(' ').next())
        .filter(|v| v.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .map(str::to_string)
        .ok_or_else(|| {
            RecordError::NoStrace(format!("`{} -V` printed no version", strace.display()))
        })
}

fn version_at_least(v: &str, major: u32, minor: u32) -> bool {
    let mut it = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let a = it.next().unwrap_or(0);
    let b = it.next().unwrap_or(0);
    (a, b) >= (major, minor)
}

/// Finds the program as the shell would. A relative path with a slash is
/// taken from where blackout runs (the workload itself runs in the directory
/// under test).
pub(crate) fn resolve_program(program: &std::ffi::OsStr) -> Result<PathBuf, RecordError> {
    let p = Path::new(program);
    let shown = p.display().to_string();
    if program.is_empty() {
        return Err(RecordError::NotFound(shown, String::new()));
    }
    if p.components().count() > 1 || shown.contains('/') {
        let abs = std::env::current_dir()?.join(p);
        if abs.is_file() {
            return Ok(abs);
        }
        return Err(RecordError::NotFound(shown, String::new()));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let cand = dir.join(p);
        if cand.is_file() {
            return Ok(cand);
        }
    }
    Err(RecordError::NotFound(shown, " in PATH".into()))
}

/// The recorder that runs the workload under `strace -f` and replays its
/// log, with what only strace has: which strace, whether to filter with
/// seccomp, where to keep its raw log.
///
/// ```
/// use blackout_record::StraceRecorder;
///
/// let rec = StraceRecorder::default();
/// assert_eq!(rec.strace, std::path::Path::new("strace"));
/// assert!(rec.seccomp && rec.keep_log.is_none());
/// ```
#[derive(Debug, Clone)]
pub struct StraceRecorder {
    /// The strace binary.
    pub strace: PathBuf,
    /// Use `--seccomp-bpf` when the strace supports it.
    pub seccomp: bool,
    /// Where to keep a copy of the raw strace log (written before replay, so
    /// it survives a replay error).
    pub keep_log: Option<PathBuf>,
}

impl Default for StraceRecorder {
    fn default() -> Self {
        StraceRecorder {
            strace: PathBuf::from("strace"),
            seccomp: true,
            keep_log: None,
        }
    }
}

impl crate::Recorder for StraceRecorder {
    fn record(&self, cfg: &RecordConfig) -> Result<Recording, RecordError> {
        record(self, cfg)
    }
}

/// Runs the workload under strace and replays its log.
fn record(rec: &StraceRecorder, cfg: &RecordConfig) -> Result<Recording, RecordError> {
    ReplayOptions {
        volatile: cfg.volatile.clone(),
    }
    .validate()
    .map_err(RecordError::Prepare)?;
    let version = strace_version(&rec.strace)?;
    let Prepared {
        _scratch,
        base,
        dir,
        tree,
        command,
    } = prepare(cfg)?;
    let omitting = match cfg.omit_syncs.as_slice() {
        [] => Vec::new(),
        omitted => crate::omit::preload(omitted, &base, &dir, &cfg.env)?,
    };
    let run = run_strace(rec, cfg, &version, &command, (&base, &dir), &omitting)?;
    check_started(
        &command,
        exec_failure(run.log.bytes(), &run.stderr),
        run.status,
        &run.stderr,
    )?;
    let exit = WorkloadExit {
        code: run.status.code(),
        signal: None,
    };
    let dir_bytes = std::os::unix::ffi::OsStrExt::as_bytes(dir.as_os_str()).to_vec();
    // The bytes written go to a file as they are decoded (unlinked: it
    // lives as long as the trace reads it).
    let data = tempfile::tempfile_in(&base)?;
    let log = LogInput {
        log: &run.log,
        data,
        name: match &rec.keep_log {
            Some(p) => p.display().to_string(),
            None => "strace log".into(),
        },
    };
    let mut trace = replay_log(cfg, log, &tree, dir_bytes, version, &command, exit)?;
    if let Some((i, sync)) = crate::omit::made_anyway(&trace, &cfg.omit_syncs) {
        return Err(RecordError::NotOmitted {
            sync: sync.to_string(),
            line: trace.ops[i].line,
            why: crate::omit::why_made(&run.stderr),
        });
    }
    let call_times = if cfg.timestamps {
        timed(&mut trace, run.log.bytes())?
    } else {
        Vec::new()
    };
    Ok(Recording {
        trace,
        stdout: run.stdout,
        stderr: run.stderr,
        log_bytes: run.log.bytes().len() as u64,
        orphans_killed: run.orphans,
        call_times,
        injected: match cfg.fail_sync {
            Some(_) => memchr::memmem::find_iter(run.log.bytes(), b"(INJECTED)").count(),
            None => 0,
        },
    })
}

/// What a recorder has before it runs the workload: its scratch (removed
/// when dropped), the scratch's canonical path, the directory under test
/// (prepared, and snapshotted as `tree`), and the command with its program
/// resolved and `{dir}` substituted.
pub(crate) struct Prepared {
    pub(crate) _scratch: tempfile::TempDir,
    pub(crate) base: PathBuf,
    pub(crate) dir: PathBuf,
    pub(crate) tree: blackout_oplog::tree::Tree,
    pub(crate) command: Vec<OsString>,
}

/// Resolves the workload's program, makes the scratch and the directory
/// under test, applies `--init`/`--setup` and snapshots the result: the
/// steps every recorder takes before the workload runs.
pub(crate) fn prepare(cfg: &RecordConfig) -> Result<Prepared, RecordError> {
    let program = cfg
        .command
        .first()
        .ok_or_else(|| RecordError::NotFound(String::new(), String::new()))?;
    let program = resolve_program(program)?;
    let (scratch, base, dir) = scratch_and_dir(cfg)?;
    prepare_dir(cfg, &dir)?;
    let tree = snapshot(&dir)?;
    let mut command: Vec<OsString> = vec![program.into_os_string()];
    command.extend(cfg.command[1..].iter().map(|a| substitute(a, &dir)));
    Ok(Prepared {
        _scratch: scratch,
        base,
        dir,
        tree,
        command,
    })
}

/// The workload ran: it did not fail to start (`failure`, why the program
/// never ran) and was not killed by a signal.
pub(crate) fn check_started(
    command: &[OsString],
    failure: Option<String>,
    status: std::process::ExitStatus,
    stderr: &[u8],
) -> Result<(), RecordError> {
    if let Some(reason) = failure {
        return Err(RecordError::CannotStart {
            program: command[0].to_string_lossy().into_owned(),
            reason,
        });
    }
    if let Some(sig) = status.signal() {
        return Err(RecordError::Killed {
            signal: signal_name(sig),
            stderr: stderr_tail(stderr),
        });
    }
    Ok(())
}

/// The recording's scratch directory (removed when dropped), its
/// canonical path, and the directory under test: the config's, else a
/// fresh one in the scratch.
fn scratch_and_dir(
    cfg: &RecordConfig,
) -> Result<(tempfile::TempDir, PathBuf, PathBuf), RecordError> {
    let scratch = match &cfg.scratch_parent {
        Some(p) => tempfile::Builder::new()
            .prefix("blackout-")
            .tempdir_in(p)
            .map_err(|e| scratch_error(p, e))?,
        None => tempfile::Builder::new()
            .prefix("blackout-")
            .tempdir()
            .map_err(|e| scratch_error(&std::env::temp_dir(), e))?,
    };
    blackout_sys::scratch::mark_owned(scratch.path())?;
    let base = fs::canonicalize(scratch.path())?;
    let dir = match &cfg.dir {
        Some(dir) => fs::canonicalize(dir)?,
        None => {
            let dir = base.join("dir");
            fs::create_dir(&dir)?;
            dir
        }
    };
    Ok((scratch, base, dir))
}

/// For a log recorded with call times: each sync op's time kept in
/// `trace` ([`Trace::sync_micros`]), and when each call returned
/// ([`crate::times::call_times`]).
fn timed(trace: &mut Trace, log: &[u8]) -> Result<Vec<(u32, f64)>, RecordError> {
    let unreadable = |e| RecordError::Replay {
        log: "strace log".into(),
        err: ReplayError::from(e),
    };
    let took: HashMap<u32, f64> = crate::times::call_durations(log)
        .map_err(unreadable)?
        .into_iter()
        .collect();
    trace.sync_micros = trace
        .ops
        .iter()
        .enumerate()
        .filter(|(_, op)| op.kind.is_sync())
        .filter_map(|(i, op)| Some((i, (took.get(&op.line)? * 1e6).round() as u64)))
        .collect();
    crate::times::call_times(log).map_err(unreadable)
}

/// Applies `--init` and `--setup` to the directory under test (the
/// recorder's own, or one a caller made, such as a mounted file system).
pub fn prepare_dir(cfg: &RecordConfig, dir: &Path) -> Result<(), RecordError> {
    if let Some(init) = &cfg.init {
        copy_tree(init, dir)
            .map_err(|e| RecordError::Prepare(format!("--init {}: {e}", init.display())))?;
    }
    if let Some(setup) = &cfg.setup {
        let cmd = substitute(std::ffi::OsStr::new(setup), dir);
        let out = Command::new("sh")
            .arg("-c")
            .arg(&cmd)
            .current_dir(dir)
            .stdin(Stdio::null())
            .output()?;
        if !out.status.success() {
            return Err(RecordError::Prepare(format!(
                "--setup `{setup}` failed ({}){}",
                describe_status(out.status),
                stderr_tail(&out.stderr)
            )));
        }
    }
    Ok(())
}

/// What a run of the workload under strace left.
struct StraceRun {
    status: std::process::ExitStatus,
    orphans: usize,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    log: MappedLog,
}

/// The strace log, mapped: it is read in place, its pages dropped as replay
/// goes (`shed`), so a log of gigabytes is never resident whole.
struct MappedLog(Option<memmap2::Mmap>);

impl MappedLog {
    /// Maps the log at `path` (none when it is missing or empty).
    fn open(path: &Path) -> std::io::Result<MappedLog> {
        let Ok(file) = fs::File::open(path) else {
            return Ok(MappedLog(None));
        };
        if file.metadata()?.len() == 0 {
            return Ok(MappedLog(None));
        }
        // SAFETY: the log is a file in our own scratch directory, written
        // by strace, which has exited: nothing changes or truncates it while
        // it is mapped.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        Ok(MappedLog(Some(map)))
    }

    fn bytes(&self) -> &[u8] {
        self.0.as_deref().unwrap_or_default()
    }

    /// Drops the pages read so far from the process's resident memory.
    fn shed(&self) {
        if let Some(map) = &self.0 {
            // SAFETY: the mapping is read-only and its file never changes
            // (see `open`): a page dropped here is read again from the file,
            // the same bytes, when a borrowed slice touches it next.
            let _ = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
        }
    }
}

/// A log to replay and the file its data goes to.
struct LogInput<'a> {
    log: &'a MappedLog,
    data: fs::File,
    /// The log as an error names it: its kept copy, or `strace log`.
    name: String,
}

/// strace with the options the config asks for (before the traced calls,
/// the log and the command).
fn strace_command(rec: &StraceRecorder, cfg: &RecordConfig, version: &str) -> Command {
    let mut strace = Command::new(&rec.strace);
    strace.args([
        "-f",
        "-q",
        "-xx",
        "-y",
        "-s",
        "16777216",
        "-e",
        "signal=none",
    ]);
    if rec.seccomp && version_at_least(version, 5, 3) {
        strace.arg("--seccomp-bpf");
    }
    if cfg.stacks {
        strace.arg("-k");
    }
    if cfg.timestamps {
        strace.args(["-ttt", "-T"]);
    }
    if let Some(fail) = &cfg.fail_sync {
        strace.arg("-e").arg(fail.inject());
    }
    strace
}

/// Runs `command` under strace in `dir`, with the log, stdout and stderr
/// written into `base` and `env` added to the config's; keeps a copy of
/// the log when the config asks.
fn run_strace(
    rec: &StraceRecorder,
    cfg: &RecordConfig,
    version: &str,
    command: &[OsString],
    (base, dir): (&Path, &Path),
    env: &[(OsString, OsString)],
) -> Result<StraceRun, RecordError> {
    let log_path = base.join("strace.log");
    let stdout_path = base.join("stdout");
    let stderr_path = base.join("stderr");
    let mut strace = strace_command(rec, cfg, version);
    let (stdout, output) = output_files(cfg, base)?;
    strace
        .arg("-e")
        .arg(format!("trace={TRACED_SYSCALLS}"))
        .arg("-o")
        .arg(&log_path)
        .arg("--")
        .args(command)
        .envs(cfg.env.iter().chain(env).map(|(k, v)| (k, v)))
        .current_dir(dir)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(fs::File::create(&stderr_path)?);
    if let (Some(fd), Some(file)) = (cfg.output_fd, output) {
        hand_down(&mut strace, file, fd)?;
    }
    let mut child = blackout_sys::proc::spawn(&mut strace)
        .map_err(|e| RecordError::NoStrace(format!("{}: {e}", rec.strace.display())))?;
    // strace and the workload run in their own process group: a cancel ends
    // all of it (strace blocks fatal signals while it writes a log).
    let waited = wait_group(&mut child, Some(cfg.timeout), cfg.cancel.as_deref());
    // What the workload detached from its group (`setsid daemon &`) was
    // reparented to us (when we are a subreaper): it dies with the run.
    let orphans = blackout_sys::proc::reap_orphans();
    let status = match waited? {
        Waited::Exited(status) => status,
        Waited::Cancelled => return Err(RecordError::Interrupted),
        Waited::TimedOut => return Err(RecordError::TimedOut(cfg.timeout.as_secs_f64())),
    };
    let stdout = if stdout_kept(cfg) {
        fs::read(&stdout_path)?
    } else {
        Vec::new()
    };
    let stderr = fs::read(&stderr_path)?;
    let log = MappedLog::open(&log_path)?;
    if let Some(keep) = &rec.keep_log {
        let copied = if log.bytes().is_empty() {
            fs::write(keep, b"")
        } else {
            fs::copy(&log_path, keep).map(|_| ())
        };
        copied.map_err(|e| {
            RecordError::Prepare(format!(
                "--keep-log {}: cannot write it: {e}",
                keep.display()
            ))
        })?;
    }
    Ok(StraceRun {
        status,
        orphans,
        stdout,
        stderr,
        log,
    })
}

/// Where the workload's standard output and its output fd (when it has
/// one) go: files in `base`, or the config's `stdout` file for the output
/// stream ([`RecordConfig::stdout`]).
pub(crate) fn output_files(
    cfg: &RecordConfig,
    base: &Path,
) -> Result<(fs::File, Option<fs::File>), RecordError> {
    let given = || -> Option<std::io::Result<fs::File>> {
        let path = cfg.stdout.as_ref()?;
        Some(fs::File::options().append(true).open(path))
    };
    Ok(match (given(), cfg.output_fd) {
        (Some(file), None) => (file?, None),
        (Some(file), Some(_)) => (fs::File::create(base.join("stdout"))?, Some(file?)),
        (None, None) => (fs::File::create(base.join("stdout"))?, None),
        (None, Some(_)) => (
            fs::File::create(base.join("stdout"))?,
            Some(fs::File::create(base.join("output"))?),
        ),
    })
}

/// Whether the recording keeps what the workload wrote to its standard
/// output (it does unless that went to the config's `stdout` file).
pub(crate) fn stdout_kept(cfg: &RecordConfig) -> bool {
    cfg.stdout.is_none() || cfg.output_fd.is_some()
}

/// Makes `file` the spawned program's fd `fd` (the parent's copy is closed
/// once the command is dropped).
fn hand_down(command: &mut Command, file: fs::File, fd: i32) -> Result<(), RecordError> {
    use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
    if fd <= 2 {
        return Err(RecordError::Prepare(format!(
            "the output fd must be above 2 (got {fd})"
        )));
    }
    let src = file.as_raw_fd();
    // SAFETY: between fork and exec only async-signal-safe calls are made
    // (dup2, fcntl); `file` lives in the closure, so `src` is open, and the
    // target fd is never closed here (it is the program's from now on).
    unsafe {
        command.pre_exec(move || {
            let _keep = &file;
            let borrowed = BorrowedFd::borrow_raw(src);
            let mut target = std::mem::ManuallyDrop::new(OwnedFd::from_raw_fd(fd));
            if src == fd {
                rustix::io::fcntl_setfd(borrowed, rustix::io::FdFlags::empty())?;
            } else {
                rustix::io::dup2(borrowed, &mut target)?;
            }
            Ok(())
        });
    }
    Ok(())
}

/// Replays the log into a trace, with the recording's metadata; names each
/// op's source line when the config asks for stacks.
fn replay_log(
    cfg: &RecordConfig,
    log: LogInput<'_>,
    tree: &blackout_oplog::tree::Tree,
    dir: Vec<u8>,
    version: String,
    command: &[OsString],
    exit: WorkloadExit,
) -> Result<Trace, RecordError> {
    let opts = ReplayOptions {
        volatile: cfg.volatile.clone(),
    };
    let output_fd = cfg.output_fd.map_or(1, i64::from);
    let mapped = log.log;
    let replayed = replay_streaming(
        mapped.bytes(),
        tree,
        &dir,
        &opts,
        output_fd,
        Some(log.data),
        &mut || mapped.shed(),
    )
    .map_err(|err| {
        // A log cut short on a full scratch file system is not the
        // workload's fault: say what filled up.
        let scratch = Path::new(OsStr::from_bytes(&dir))
            .parent()
            .and_then(Path::parent);
        match scratch.filter(|s| nearly_full(s)) {
            Some(s) => RecordError::ScratchFull(s.display().to_string()),
            None => RecordError::Replay {
                log: log.name.clone(),
                err,
            },
        }
    })?;
    let mut trace = Trace::try_new(
        tree,
        replayed,
        TraceMeta {
            strace_version: Some(version),
            numbering: Numbering::LogLine,
            command: command
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            dir,
            exit,
            volatile: cfg.volatile.clone(),
        },
    )?;
    // A small recording's data is read faster from memory.
    trace.data = std::mem::take(&mut trace.data).small_in_memory();
    if cfg.stacks {
        crate::stacks::resolve_trace(&mut trace);
    }
    Ok(trace)
}

/// A scratch directory that could not be made in `parent`, said so.
fn scratch_error(parent: &Path, e: std::io::Error) -> RecordError {
    RecordError::Scratch(parent.display().to_string(), e)
}

/// Whether the file system holding `path` has less than 1 MiB left.
pub(crate) fn nearly_full(path: &Path) -> bool {
    rustix::fs::statvfs(path).is_ok_and(|s| s.f_bavail.saturating_mul(s.f_frsize) < 1 << 20)
}

/// The reason the workload's first execve failed, if it did.
fn exec_failure(log: &[u8], stderr: &[u8]) -> Option<String> {
    let first = log.split(|&b| b == b'\n').find(|l| !l.is_empty());
    if let Some(line) = first {
        if memchr::memmem::find(line, b"execve(").is_some() {
            if let Some(pos) = memchr::memmem::find(line, b" = -1 ") {
                let rest = String::from_utf8_lossy(&line[pos + 6..]).into_owned();
                return Some(rest);
            }
        }
        return None;
    }
    let text = String::from_utf8_lossy(stderr);
    text.lines()
        .find(|l| l.starts_with("strace: "))
        .map(|l| l.trim_start_matches("strace: ").to_string())
        .or_else(|| Some("strace recorded nothing".into()))
}

fn describe_status(s: std::process::ExitStatus) -> String {
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(sig)) => format!("killed by {}", signal_name(sig)),
        _ => "unknown status".into(),
    }
}

pub(crate) fn stderr_tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return String::new();
    }
    let tail = &lines[lines.len().saturating_sub(3)..];
    format!("; its stderr ends: {}", tail.join(" | "))
}
