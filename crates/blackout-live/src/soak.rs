//! `blackout soak`: a service on a live mount, crashed again and again.
//!
//! The service runs on a live file system ([`crate::mount`]) over a scratch
//! backing directory; a client drives it and prints promises (its lines
//! that start with the ack prefix, or every line); at a seeded random
//! moment the client is killed, the power fails (every request on the
//! mount fails from then), the service is killed, and the crash keeps
//! what the spec says of what was pending; the service is started again
//! on what survived, and the checker is asked whether every promise made
//! before any crash so far still holds. The first violation stops the
//! soak, with the seed and the ops the last crash dropped.
//!
//! With sync failures mixed in (`fail_syncs`), a seeded half of the
//! crashes has a sync failure armed first, at a seeded moment of the
//! client's run: the next sync of the service matching the glob fails
//! with `EIO` and what it covered is never durable
//! ([`LiveMount::arm_sync_failure`]); the crash follows as before, and the
//! report says per crash what failed, what it dropped and whether the
//! promises held after. The crash moments and what each crash keeps are
//! those of the same seed without it.
//!
//! Only whole lines the client printed before it was killed are promises
//! (the promise rule, `blackout_oplog::promises`: a line it was killed in
//! the middle of printing is none), and it is killed before the power
//! fails: nothing acknowledged after the power failed can count as
//! promised.

use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::faults::{CrashReport, CrashSpec, SyncFailure, Trigger};
use crate::mount::{LiveMount, Victims};
use crate::pending::{summarize, Rng};
use blackout_oplog::promises::{LineBuffer, PromiseRule};
use blackout_oplog::protocol;
use blackout_sys::proc::{wait_group, Waited};

/// How a soak drives and judges what it crashes: the same for one service
/// and for a cluster's nodes.
#[derive(Debug, Clone)]
pub struct Soaking {
    /// The client (a shell command, once, off every mount): drives the
    /// service and prints a promise per line.
    pub client: String,
    /// The checker (a shell command): after each restart, exits 0 when
    /// every promise in `BLACKOUT_ACKED` (or `BLACKOUT_ACKS_FILE`) holds.
    pub checker: String,
    /// Run once on the mount before the service first starts (for a
    /// cluster, once per node on its mount, in start order, before any
    /// node starts: it may prepare the other nodes' mounts too); what it
    /// leaves is made durable.
    pub setup: Option<String>,
    /// Polled (per node) until it exits 0 after the service starts (else
    /// the service is given a second).
    pub ready: Option<String>,
    /// The initial durable state (copied, for each node; never changed).
    pub backing: Option<PathBuf>,
    /// How many crashes.
    pub crashes: u32,
    /// The seed of every random choice (crash moments, faults, what each
    /// crash keeps).
    pub seed: u64,
    /// What each crash keeps (on each node that lost power).
    pub spec: CrashSpec,
    /// The client runs this long at least before a crash...
    pub run_min: Duration,
    /// ...and at most.
    pub run_max: Duration,
    /// Only the client's lines starting with this are promises.
    pub ack_prefix: Option<String>,
    /// How long setup, readiness and each checker run may take.
    pub timeout: Duration,
    /// Where the scratch directory is made.
    pub scratch_parent: PathBuf,
}

/// What a soak of one service runs, and how.
#[derive(Debug, Clone)]
pub struct SoakConfig {
    /// The service (a shell command, run on the mount; started again after
    /// each crash, when it must recover).
    pub service: String,
    /// The client, the checker, the crashes.
    pub soaking: Soaking,
    /// Sync failures mixed with the crashes: which syncs may fail, as
    /// `CALL:GLOB` ([`Trigger::parse_sync`]; `*` any); `None` fails none.
    pub fail_syncs: Option<String>,
}

/// A sync failure armed before a crash, and what came of it.
#[derive(Debug, Clone)]
pub struct ArmedFailure {
    /// The crash it came before (1-based).
    pub crash: u32,
    /// How long into the client's run it was armed.
    pub armed_after: Duration,
    /// The sync that failed, with what it dropped; `None` when no sync
    /// matched before the crash.
    pub failure: Option<SyncFailure>,
}

/// Why a soak stopped early.
#[derive(Debug, Clone)]
pub struct Violation {
    /// The crash after which the promise broke (1-based).
    pub crash: u32,
    /// The checker's reason (its output), or why the service did not come
    /// back.
    pub reason: String,
    /// What the last crash dropped (and tore).
    pub report: CrashReport,
    /// Whether the service came back (the checker then found the promise
    /// broken); else the reason says why it did not.
    pub came_back: bool,
}

/// What a soak did.
#[derive(Debug, Clone, Default)]
pub struct SoakReport {
    /// Crashes made.
    pub crashes: u32,
    /// Promises the client made in all.
    pub promises: usize,
    /// Ops the crashes dropped in all.
    pub dropped: usize,
    /// The first broken promise, if any.
    pub violation: Option<Violation>,
    /// The sync failures armed (with `fail_syncs`), in crash order.
    pub sync_failures: Vec<ArmedFailure>,
}

/// Errors that stop a soak before a verdict.
#[derive(Debug, thiserror::Error)]
pub enum SoakError {
    /// The mount, the scratch, a process.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Setup failed, or the service never became ready before any crash.
    #[error("{0}")]
    Setup(String),
    /// Stopped by a signal.
    #[error("interrupted")]
    Interrupted,
}

/// A command run by `sh -c` on the mount, in its own process group, with
/// the soak's variables.
fn shell(cmd: &str, dirs: &Dirs, crash: u32) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(cmd)
        .current_dir(&dirs.mount)
        .env("BLACKOUT_MOUNT", &dirs.mount)
        .env("BLACKOUT_SOAK_DIR", &dirs.work)
        .env("BLACKOUT_CRASH", crash.to_string())
        .stdin(Stdio::null())
        .process_group(0);
    c
}

/// The soak's directories.
struct Dirs {
    /// The scratch (removed at the end).
    root: PathBuf,
    mount: PathBuf,
    backing: PathBuf,
    /// For the commands' sockets and logs (not on the mount).
    work: PathBuf,
}

fn log(dirs: &Dirs, name: &str) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dirs.work.join(name))
}

/// The last lines of a log, for a message.
pub(crate) fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}

/// Runs a command to its end (within `timeout`): `Ok(output)` when it
/// exits 0, else `Err(output)`.
pub(crate) fn run_to_end(
    mut cmd: Command,
    timeout: Duration,
    cancel: &AtomicBool,
) -> Result<Result<String, String>, SoakError> {
    let out = tempfile::tempfile()?;
    cmd.stdout(out.try_clone()?).stderr(out.try_clone()?);
    let mut child = blackout_sys::proc::spawn(&mut cmd)?;
    let waited = wait_group(&mut child, Some(timeout), Some(cancel))?;
    let text = {
        use std::io::{Read, Seek};
        let mut f = out;
        let mut s = String::new();
        f.rewind()?;
        let _ = f.read_to_string(&mut s);
        s.trim_end().to_string()
    };
    match waited {
        Waited::Exited(s) if s.success() => Ok(Ok(text)),
        Waited::Exited(s) => Ok(Err(format!("{text} ({s})").trim_start().to_string())),
        Waited::TimedOut => Ok(Err(format!("{text} (timed out after {timeout:?})"))),
        Waited::Cancelled => Err(SoakError::Interrupted),
    }
}

/// A running client: its process and the promise lines read so far.
pub(crate) struct Client {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    /// Reads the client's output to its end; gives back what followed its
    /// last newline.
    reader: std::thread::JoinHandle<LineBuffer>,
    rule: PromiseRule,
}

fn start_client(cfg: &SoakConfig, dirs: &Dirs, crash: u32) -> std::io::Result<Client> {
    let cmd = shell(&cfg.soaking.client, dirs, crash);
    spawn_client(
        cmd,
        cfg.soaking.ack_prefix.as_deref(),
        log(dirs, "client.log")?,
    )
}

/// Starts a client (its standard error into `stderr`), reading its
/// promises (the lines starting with `ack_prefix`, or every line) as it
/// prints them.
pub(crate) fn spawn_client(
    mut cmd: Command,
    ack_prefix: Option<&str>,
    stderr: std::fs::File,
) -> std::io::Result<Client> {
    cmd.stdout(Stdio::piped()).stderr(stderr);
    let mut child = blackout_sys::proc::spawn(&mut cmd)?;
    let mut stdout = child.stdout.take().expect("piped");
    let lines = Arc::new(Mutex::new(Vec::new()));
    let rule = PromiseRule::new(ack_prefix.map(str::as_bytes));
    let (sink, reader_rule) = (lines.clone(), rule.clone());
    let reader = std::thread::spawn(move || {
        // Whole lines only: a line the client was killed in the middle of
        // printing is no promise (the promise rule).
        let mut buffer = LineBuffer::default();
        let mut chunk = [0u8; 8192];
        loop {
            let n = match stdout.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let mut sink = sink.lock().unwrap_or_else(|p| p.into_inner());
            buffer.push(&chunk[..n], |line| {
                if let Some(p) = reader_rule.of_line(line) {
                    sink.push(String::from_utf8_lossy(p).into_owned());
                }
            });
        }
        buffer
    });
    Ok(Client {
        child,
        lines,
        reader,
        rule,
    })
}

/// Kills the client's group and returns every promise it printed (its last
/// line without a newline only if it had exited normally before).
pub(crate) fn stop_client(mut c: Client) -> Vec<String> {
    let exited_normally = matches!(c.child.try_wait(), Ok(Some(s)) if s.code().is_some());
    blackout_sys::proc::kill_group(&c.child);
    let _ = c.child.wait();
    blackout_sys::proc::forget(c.child.id());
    let tail = c.reader.join().ok().and_then(|b| b.finish(exited_normally));
    let mut lines = std::mem::take(&mut *c.lines.lock().unwrap_or_else(|p| p.into_inner()));
    if let Some(p) = tail.as_deref().and_then(|t| c.rule.of_line(t)) {
        lines.push(String::from_utf8_lossy(p).into_owned());
    }
    lines
}

/// Why a started service is not ready.
pub(crate) enum NotReady {
    /// It exited (with no readiness probe: within its second).
    Exited(std::process::ExitStatus),
    /// It exited before the probe passed.
    ExitedBeforeReady(std::process::ExitStatus),
    /// The probe did not pass within the timeout (the service is killed).
    TimedOut,
}

/// Starts the service and waits until it is ready: `Err` with why not.
fn start_service(
    cfg: &SoakConfig,
    dirs: &Dirs,
    crash: u32,
    cancel: &AtomicBool,
) -> Result<Result<Child, String>, SoakError> {
    let mut cmd = shell(&cfg.service, dirs, crash);
    cmd.stdout(log(dirs, "service.log")?)
        .stderr(log(dirs, "service.log")?);
    let ready = cfg
        .soaking
        .ready
        .as_ref()
        .map(|r| move || shell(r, dirs, crash));
    let ready = ready.as_ref().map(|r| r as &dyn Fn() -> Command);
    let started = start_until_ready(cmd, ready, cfg.soaking.timeout, cancel)?;
    Ok(started
        .map_err(|why| (why, tail(&dirs.work.join("service.log"))))
        .map_err(|(why, log)| match why {
            NotReady::Exited(s) => format!("the service exited ({s}): {log}"),
            NotReady::ExitedBeforeReady(s) => {
                format!("the service exited ({s}) before it was ready: {log}")
            }
            NotReady::TimedOut => {
                format!(
                    "the service was not ready within {:?}: {log}",
                    cfg.soaking.timeout
                )
            }
        }))
}

/// Starts a service (its output already directed) and polls `ready` (a
/// fresh probe command each time) until it exits 0, within `timeout`;
/// with no probe, gives the service a second.
pub(crate) fn start_until_ready(
    mut cmd: Command,
    ready: Option<&dyn Fn() -> Command>,
    timeout: Duration,
    cancel: &AtomicBool,
) -> Result<Result<Child, NotReady>, SoakError> {
    let mut child = blackout_sys::proc::spawn(&mut cmd)?;
    let deadline = Instant::now() + timeout;
    let Some(ready) = ready else {
        std::thread::sleep(Duration::from_secs(1));
        return Ok(match child.try_wait()? {
            None => Ok(child),
            Some(s) => Err(NotReady::Exited(s)),
        });
    };
    loop {
        if cancel.load(Ordering::SeqCst) {
            kill_service(&mut child);
            return Err(SoakError::Interrupted);
        }
        if let Some(s) = child.try_wait()? {
            blackout_sys::proc::forget(child.id());
            return Ok(Err(NotReady::ExitedBeforeReady(s)));
        }
        if let Ok(Ok(_)) = run_to_end(ready(), timeout, cancel) {
            return Ok(Ok(child));
        }
        if Instant::now() > deadline {
            kill_service(&mut child);
            return Ok(Err(NotReady::TimedOut));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Kills a service's process group, reaps it and the orphans it left.
pub(crate) fn kill_service(child: &mut Child) {
    blackout_sys::proc::kill_group(child);
    let _ = child.wait();
    blackout_sys::proc::forget(child.id());
    blackout_sys::proc::reap_orphans();
}

/// Runs the checker on the promises made so far: `Err(reason)` when one
/// broke.
fn check(
    cfg: &SoakConfig,
    dirs: &Dirs,
    crash: u32,
    promises: &[String],
    cancel: &AtomicBool,
) -> Result<Result<(), String>, SoakError> {
    let mut cmd = shell(&cfg.soaking.checker, dirs, crash);
    with_promises(&mut cmd, &dirs.work.join("acks"), promises)?;
    Ok(run_to_end(cmd, cfg.soaking.timeout, cancel)?.map(|_| ()))
}

/// Gives a checker the promises: written to `acks` (`BLACKOUT_ACKS_FILE`)
/// and, when they fit, in `BLACKOUT_ACKED`.
pub(crate) fn with_promises(
    cmd: &mut Command,
    acks: &Path,
    promises: &[String],
) -> std::io::Result<()> {
    let mut text = promises.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    std::fs::File::create(acks)?.write_all(text.as_bytes())?;
    // As the shell checker sets them: neither is inherited from blackout's
    // own environment.
    cmd.env(protocol::ACKS_FILE, acks)
        .env_remove(protocol::ACKED)
        .env_remove(protocol::ACKED_IN_FILE);
    match protocol::acked_env_value(text.as_bytes()) {
        Some(v) => cmd.env(protocol::ACKED, std::ffi::OsStr::from_bytes(v)),
        None => cmd.env(protocol::ACKED_IN_FILE, "1"),
    };
    Ok(())
}

fn make_dirs(cfg: &SoakConfig) -> Result<Dirs, SoakError> {
    let root = tempfile::Builder::new()
        .prefix("blackout-soak-")
        .tempdir_in(&cfg.soaking.scratch_parent)?
        .keep();
    blackout_sys::scratch::mark_owned(&root)?;
    let dirs = Dirs {
        mount: root.join("mount"),
        backing: root.join("backing"),
        work: root.join("work"),
        root,
    };
    std::fs::create_dir(&dirs.mount)?;
    std::fs::create_dir(&dirs.work)?;
    match &cfg.soaking.backing {
        Some(b) => {
            crate::tree::copy_tree(b, &dirs.backing)?;
        }
        None => std::fs::create_dir(&dirs.backing)?,
    }
    // The service may run as its own user (a database refusing root).
    use std::os::unix::fs::PermissionsExt;
    for d in [&dirs.root, &dirs.mount, &dirs.backing, &dirs.work] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777))?;
    }
    Ok(dirs)
}

/// Runs the soak: setup, then `crashes` times: the service started (and
/// recovered), the checker run on the promises so far, the client started,
/// a crash at a seeded moment. Stops at the first broken promise.
/// `progress` hears one line per crash.
///
/// # Errors
///
/// The mount, setup, a service that never became ready before the first
/// crash, a stop signal.
pub fn soak(
    cfg: &SoakConfig,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(&str),
) -> Result<SoakReport, SoakError> {
    let failing = match &cfg.fail_syncs {
        Some(at) => Some(Trigger::parse_sync(at).map_err(SoakError::Setup)?),
        None => None,
    };
    let dirs = make_dirs(cfg)?;
    let result = LiveMount::mount(&dirs.mount, &dirs.backing, &dirs.root)
        .map_err(SoakError::from)
        .and_then(|mut m| {
            let mut on = On {
                cfg,
                dirs: &dirs,
                mount: &mut m,
                failing,
                cancel,
            };
            let r = on.soak(progress);
            let _ = m.unmount(false);
            r
        });
    let _ = blackout_sys::scratch::remove_tree(&dirs.root);
    result
}

/// A soak under way on its mount.
struct On<'a> {
    cfg: &'a SoakConfig,
    dirs: &'a Dirs,
    mount: &'a mut LiveMount,
    /// Which syncs may be made to fail.
    failing: Option<Trigger>,
    cancel: &'a AtomicBool,
}

/// The seed of the sync failures' choices, apart from the crashes' (so the
/// crash moments of a seed are the same with or without them).
const FAIL_SEED: u64 = 0x5eed_fa11_5eed_fa11;

impl On<'_> {
    fn soak(&mut self, progress: &mut dyn FnMut(&str)) -> Result<SoakReport, SoakError> {
        let (cfg, dirs, cancel) = (self.cfg, self.dirs, self.cancel);
        if let Some(setup) = &cfg.soaking.setup {
            if let Err(why) = run_to_end(shell(setup, dirs, 0), cfg.soaking.timeout, cancel)? {
                return Err(SoakError::Setup(format!("--setup failed: {why}")));
            }
            self.mount.sync()?;
        }
        let mut rng = Rng::new(cfg.soaking.seed);
        let mut fail_rng = Rng::new(cfg.soaking.seed ^ FAIL_SEED);
        let mut report = SoakReport::default();
        let mut promises: Vec<String> = Vec::new();
        let mut last = CrashReport::default();
        for crash in 0..=cfg.soaking.crashes {
            let mut service = match self.restart(crash, &promises, &mut last)? {
                Ok(s) => s,
                Err(v) => {
                    report.violation = Some(v);
                    return Ok(report);
                }
            };
            if crash == cfg.soaking.crashes {
                kill_service(&mut service);
                break;
            }
            let span = cfg
                .soaking
                .run_max
                .saturating_sub(cfg.soaking.run_min)
                .as_millis() as u64;
            let wait = cfg.soaking.run_min + Duration::from_millis(rng.below(span + 1));
            let fail_at = self.failing.as_ref().and_then(|_| {
                (fail_rng.below(2) == 0)
                    .then(|| Duration::from_millis(fail_rng.below(wait.as_millis() as u64)))
            });
            let (acked, armed) = self.run_client(crash + 1, wait, fail_at, &mut service)?;
            promises.extend(acked);
            let spec = CrashSpec {
                seed: cfg
                    .soaking
                    .seed
                    .wrapping_mul(1_000_003)
                    .wrapping_add(u64::from(crash)),
                ..cfg.soaking.spec
            };
            last = self
                .mount
                .crash(&spec, &Victims::Group(service.id() as i32))?;
            kill_service(&mut service);
            report.crashes = crash + 1;
            report.dropped += last.dropped.len() + last.torn.len();
            report.promises = promises.len();
            let mut line = format!(
                "crash {}/{} after {} ms: {} promises so far, {} ops dropped, {} kept, {} torn",
                crash + 1,
                cfg.soaking.crashes,
                wait.as_millis(),
                promises.len(),
                last.dropped.len(),
                last.kept.len(),
                last.torn.len()
            );
            if let Some(a) = armed {
                line.push_str(&format!("; {}", a.words()));
                report.sync_failures.push(a);
            }
            progress(&line);
        }
        report.promises = promises.len();
        Ok(report)
    }

    /// Starts the service after crash `crash` (0: the first start) and,
    /// after a crash, runs the checker on the promises so far: the service,
    /// or the `Violation` (`last` is the crash's report, taken into it).
    fn restart(
        &mut self,
        crash: u32,
        promises: &[String],
        last: &mut CrashReport,
    ) -> Result<Result<Child, Violation>, SoakError> {
        let (cfg, dirs, cancel) = (self.cfg, self.dirs, self.cancel);
        let mut service = match start_service(cfg, dirs, crash, cancel)? {
            Ok(s) => s,
            Err(why) if crash == 0 => return Err(SoakError::Setup(why)),
            Err(why) => {
                return Ok(Err(Violation {
                    crash,
                    reason: format!("the service did not come back: {why}"),
                    report: std::mem::take(last),
                    came_back: false,
                }))
            }
        };
        if crash > 0 {
            if let Err(why) = check(cfg, dirs, crash, promises, cancel)? {
                kill_service(&mut service);
                return Ok(Err(Violation {
                    crash,
                    reason: why,
                    report: std::mem::take(last),
                    came_back: true,
                }));
            }
        }
        Ok(Ok(service))
    }

    /// Runs the client for `wait`, arming a sync failure `fail_at` into
    /// its run if asked; kills it, takes the failure away if no sync
    /// matched, and returns the client's promises and what was armed.
    fn run_client(
        &mut self,
        crash: u32,
        wait: Duration,
        fail_at: Option<Duration>,
        service: &mut Child,
    ) -> Result<(Vec<String>, Option<ArmedFailure>), SoakError> {
        let client = start_client(self.cfg, self.dirs, crash)?;
        let started = Instant::now();
        let mut armed = None;
        while started.elapsed() < wait {
            if self.cancel.load(Ordering::SeqCst) {
                stop_client(client);
                kill_service(service);
                return Err(SoakError::Interrupted);
            }
            if let (Some(at), Some(t), None) = (fail_at, &self.failing, &armed) {
                if started.elapsed() >= at {
                    armed = Some(self.mount.arm_sync_failure(t.clone()));
                }
            }
            std::thread::sleep(Duration::from_millis(10).min(wait));
        }
        let acked = stop_client(client);
        let armed = armed.map(|rx| {
            self.mount.disarm_sync_failure();
            ArmedFailure {
                crash,
                armed_after: fail_at.unwrap_or_default(),
                // It went off before it was taken away, or never.
                failure: rx.try_recv().ok(),
            }
        });
        Ok((acked, armed))
    }
}

impl ArmedFailure {
    /// What failed, in a few words: `fdatasync(data.log) failed with EIO
    /// 120 ms into the client's run, dropping 1 op` (or that no sync
    /// matched).
    pub fn words(&self) -> String {
        let ms = self.armed_after.as_millis();
        match &self.failure {
            None => format!("a sync failure armed {ms} ms into the client's run: no sync matched before the crash"),
            Some(f) => {
                let n = f.dropped.len();
                format!(
                    "{} failed with {} (armed {ms} ms into the client's run), dropping {n} op{}",
                    f.sync(),
                    f.errno,
                    if n == 1 { "" } else { "s" }
                )
            }
        }
    }
}

/// How many dropped lines of one sync failure [`failure_lines`] shows.
const FAILURE_LINES_SHOWN: usize = 8;

/// The sync failures of a soak for people: a line per crash that had one
/// armed (what failed, what it dropped, whether the promises held at the
/// check after the crash), each followed by the ops it dropped.
pub fn failure_lines(report: &SoakReport) -> Vec<String> {
    let mut out = Vec::new();
    for a in &report.sync_failures {
        let then = match &report.violation {
            Some(v) if v.crash == a.crash && v.came_back => {
                "then the checker found a promise broken"
            }
            Some(v) if v.crash == a.crash => "then the service did not come back",
            _ if a.failure.is_none() => "",
            _ => "then every promise held",
        };
        let sep = if then.is_empty() { "" } else { "; " };
        out.push(format!("crash {}: {}{sep}{then}", a.crash, a.words()));
        let Some(f) = &a.failure else { continue };
        let lines = f.dropped_lines();
        for l in lines.iter().take(FAILURE_LINES_SHOWN) {
            out.push(format!("  dropped {l}"));
        }
        if lines.len() > FAILURE_LINES_SHOWN {
            out.push(format!(
                "  and {} more lines",
                lines.len() - FAILURE_LINES_SHOWN
            ));
        }
    }
    out
}

/// The ops a violation's crash dropped or tore, one line each (runs of
/// one call on one file folded), for people.
pub fn dropped_lines(v: &Violation) -> Vec<String> {
    let mut out: Vec<String> = summarize(&v.report.dropped)
        .into_iter()
        .map(|l| format!("dropped {l}"))
        .collect();
    out.extend(
        v.report
            .torn_lines()
            .into_iter()
            .map(|l| format!("torn {l}")),
    );
    out
}
