//! A run: from a trace and a checker to a verdict.
//!
//! 1. Promises: nothing promised is INCONCLUSIVE (unless the checker tests
//!    consistency alone).
//! 2. Pre-check: the checker must reject the state before the workload wrote
//!    anything, with every promise handed to it; if it accepts, the check
//!    cannot fail (INCONCLUSIVE).
//! 3. All applied: the checker must accept the state where nothing was lost;
//!    if it rejects it, the harness is broken.
//! 4. Explore each model, build every state and deduplicate by content (the
//!    visible tree plus what was printed before the crash).
//! 5. Check each distinct state once, in parallel, and per model report the
//!    failing states simplest first.
//!
//! A checker that cannot be run (the shell says 126/127) stops the run at
//! the first state with ERROR; a checker that times out makes that state an
//! error state, listed as such.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use blackout_analysis::group::{model_report, Analysis, FIX_VERIFICATIONS_MAX};
use blackout_analysis::report::{Checked, ModelReport, RunReport, Verdict};
pub use blackout_analysis::RunError;
use blackout_check::outcome::Outcome;
use blackout_check::pool::{Cache, Pool, PoolConfig, Release, Scratch};
use blackout_check::shell::ShellChecker;
use blackout_check::slot::Slot;
use blackout_check::Checker;
use blackout_explore::dedup::{distinct_states_watched, state_key, StateKey, Watch};
use blackout_explore::enumerate::{ConfigError, ExploreConfig, StateDesc};
use blackout_explore::model::Model;
use blackout_explore::state::{DirMaterializer, FsState, SECTOR_BYTES_DEFAULT};
use blackout_oplog::promises::{join_lines, Outputs};
use blackout_oplog::trace::Trace;
use blackout_sys::scratch::default_scratch_parent;

/// How to run.
pub struct RunConfig {
    /// The models to explore, in order.
    pub models: Vec<Model>,
    /// The checker.
    pub checker: Box<dyn Checker>,
    /// Checkers run at once (at least 1).
    pub jobs: usize,
    /// Enumeration settings (the model field is set per model).
    pub explore: ExploreConfig,
    /// Sector size for torn writes, in bytes (at least 1).
    pub sector: u64,
    /// Only lines starting with this are promises.
    pub promise_prefix: Option<Vec<u8>>,
    /// The checker tests consistency alone: no promise is needed and the
    /// pre-check is skipped.
    pub consistency_only: bool,
    /// Where to make the scratch directory (default:
    /// [`default_scratch_parent`]).
    pub scratch_parent: Option<PathBuf>,
    /// Set from outside (Ctrl-C) to stop: running checkers are killed, the
    /// scratch directory removed, and the run returns
    /// [`RunError::Interrupted`].
    pub cancel: Option<Arc<AtomicBool>>,
    /// Called after each checked state with (checked, total).
    pub progress: Option<Box<dyn Fn(usize, usize) + Send + Sync>>,
    /// Called while states are built, with how many so far.
    pub explore_progress: Option<Box<dyn Fn(usize) + Send + Sync>>,
    /// Distinct fixes verified per model.
    pub fix_verifications: usize,
}

impl RunConfig {
    /// A config with defaults for a shell checker: posix, one job per CPU,
    /// the default timeout.
    pub fn new(checker: impl Into<String>) -> RunConfig {
        RunConfig::with_checker(Box::new(ShellChecker::new(checker)))
    }

    /// A config with defaults for any checker.
    pub fn with_checker(checker: Box<dyn Checker>) -> RunConfig {
        RunConfig {
            models: vec![Model::Posix],
            checker,
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            explore: ExploreConfig::default(),
            sector: SECTOR_BYTES_DEFAULT,
            promise_prefix: None,
            consistency_only: false,
            scratch_parent: None,
            cancel: None,
            progress: None,
            explore_progress: None,
            fix_verifications: FIX_VERIFICATIONS_MAX,
        }
    }

    /// Checks every setting a library caller can get wrong: the enumeration
    /// limits, the sector size, the number of jobs and the checker timeout.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.explore.validate()?;
        if self.sector == 0 {
            return Err(ConfigError::Sector);
        }
        if self.jobs == 0 {
            return Err(ConfigError::Jobs);
        }
        if self.checker.timeout().is_zero() {
            return Err(ConfigError::Timeout);
        }
        Ok(())
    }
}

/// Checks a trace: the whole pipeline after recording.
pub fn check_trace(trace: &Trace, cfg: &RunConfig) -> Result<RunReport, RunError> {
    cfg.validate()?;
    let outputs = Outputs::new(trace, cfg.promise_prefix.as_deref());
    let promises: Vec<String> = outputs
        .all_promises()
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect();
    if promises.is_empty() && !cfg.consistency_only {
        let reason = match &cfg.promise_prefix {
            Some(p) => format!(
                "nothing was promised: no line the workload printed starts with `{}` (or pass --consistency-only if the checker tests consistency alone)",
                String::from_utf8_lossy(p)
            ),
            None => "nothing was promised: the workload printed no line to standard output (or pass --consistency-only if the checker tests consistency alone)".into(),
        };
        return Ok(RunReport::early(
            (Verdict::Inconclusive, reason),
            promises,
            None,
            None,
        ));
    }
    let parent = cfg
        .scratch_parent
        .clone()
        .unwrap_or_else(default_scratch_parent);
    let scratch = Scratch::new(&parent)?;
    let pool = Pool {
        trace,
        outputs: &outputs,
        cfg: PoolConfig {
            checker: cfg.checker.as_ref(),
            materializer: &DirMaterializer,
            jobs: cfg.jobs,
            sector: cfg.sector,
            cancel: cfg.cancel.as_deref(),
            progress: cfg.progress.as_deref(),
        },
        scratch: &scratch,
    };
    let analysis = Analysis {
        pool,
        explore: &cfg.explore,
        promise_prefix: cfg.promise_prefix.as_deref(),
        fix_verifications: cfg.fix_verifications,
    };
    let result = run_in(&analysis, cfg, promises);
    // What checkers detached from their groups dies before their
    // directories go; the checker may have left read-only directories,
    // which remove_tree copes with.
    let orphans_killed = blackout_sys::proc::reap_orphans();
    let removed = scratch.remove();
    let mut report = result?;
    removed?;
    report.orphans_killed = orphans_killed;
    // The pre-check and the state where nothing was lost hold every
    // promise: if a checker ran, it ran on those.
    report.promises_in_file_only = (report.precheck.is_some() || report.all_applied.is_some())
        && cfg
            .checker
            .promises_in_file_only(&join_lines(&outputs.all_promises()));
    Ok(report)
}

fn run_in(s: &Analysis<'_>, cfg: &RunConfig, promises: Vec<String>) -> Result<RunReport, RunError> {
    let trace = s.pool.trace;
    // The pre-checks use a slot of their own, before the workers start.
    let slot0 = s.pool.scratch.slot()?;
    let release = Release {
        checker: cfg.checker.as_ref(),
        slot: &slot0,
    };
    let precheck = if cfg.consistency_only {
        None
    } else {
        let (checked, stop) = precheck(s, cfg, &slot0, &promises)?;
        if let Some(stop) = stop {
            return Ok(RunReport::early(stop, promises, Some(checked), None));
        }
        Some(checked)
    };
    let (all_applied, full_key, stop) = nothing_lost(s, cfg, &slot0)?;
    let outcome = all_applied.outcome.clone();
    if let Some(stop) = stop {
        return Ok(RunReport::early(
            stop,
            promises,
            precheck,
            Some(all_applied),
        ));
    }
    let all_applied = Some(all_applied);
    drop(release);
    drop(slot0);
    let mut cache: Cache = HashMap::from([(full_key, outcome.clone())]);
    let t0 = Instant::now();
    let watch = Watch {
        cancel: cfg.cancel.as_deref(),
        progress: cfg.explore_progress.as_deref(),
    };
    let explored = distinct_states_watched(
        trace,
        s.pool.outputs,
        &cfg.models,
        &cfg.explore,
        cfg.sector,
        watch,
    )?;
    let explore_seconds = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let results = match s.pool.check_distinct(&explored, &mut cache)? {
        Ok(r) => r,
        Err((id, reason)) => {
            let stop = (
                Verdict::Error,
                format!("the checker could not be run on state {id}: {reason}"),
            );
            return Ok(RunReport::early(stop, promises, precheck, all_applied));
        }
    };
    let check_seconds = t1.elapsed().as_secs_f64();
    if let Some(stop) = rejects_the_start(s, &cache) {
        return Ok(RunReport::early(stop, promises, precheck, all_applied));
    }
    let mut models = Vec::new();
    for m in &explored.models {
        models.push(model_report(s, m, &results, &mut cache)?);
    }
    let (verdict, reason) = verdict_of(&models);
    Ok(RunReport {
        verdict,
        reason,
        promises,
        precheck,
        all_applied,
        models,
        checked: explored.distinct.len(),
        explore_seconds,
        check_seconds,
        explore: cfg.explore.clone(),
        orphans_killed: 0,
        promises_in_file_only: false,
    })
}

/// The verdict that stops a run before it explores, and why; `None` goes on.
type Stop = Option<(Verdict, String)>;

/// The pre-check: the checker on the state before the workload, with every
/// promise handed to it. It must reject it; the verdict that stops the run
/// if it does not.
fn precheck(
    s: &Analysis<'_>,
    cfg: &RunConfig,
    slot: &Slot,
    promises: &[String],
) -> Result<(Checked, Stop), RunError> {
    let trace = s.pool.trace;
    let pre = StateDesc {
        crash: 0,
        lost: Vec::new(),
        torn: None,
    };
    let outcome = s
        .pool
        .check_one(slot, "pre-workload", &FsState::initial(trace), 0, true)?
        .ok_or(RunError::Interrupted)?;
    let mut c = s.checked(&pre, outcome.clone());
    c.id = "pre-workload".into();
    c.promises = promises.to_vec();
    let stop = expected(
        &outcome,
        false,
        "the state before the workload",
        cfg.checker.timeout().as_secs_f64(),
        (
            Verdict::Inconclusive,
            format!(
                "the check cannot fail: the checker accepts the state before the workload ran, with all {} promise(s) handed to it",
                promises.len()
            ),
        ),
    );
    Ok((c, stop))
}

/// The nothing-lost check: the checker on the state with every op applied
/// and every promise made. It must accept it; the verdict that stops the run
/// if it does not. Also the state's content key, for the outcome cache.
fn nothing_lost(
    s: &Analysis<'_>,
    cfg: &RunConfig,
    slot: &Slot,
) -> Result<(Checked, StateKey, Stop), RunError> {
    let trace = s.pool.trace;
    let full = StateDesc {
        crash: trace.ops.len(),
        lost: Vec::new(),
        torn: None,
    };
    let full_fs = FsState::build(trace, &full, cfg.sector);
    let full_key = state_key(&full_fs, s.pool.outputs, full.crash);
    let outcome = s
        .pool
        .check_one(slot, &full.id(), &full_fs, full.crash, false)?
        .ok_or(RunError::Interrupted)?;
    let stop = expected(
        &outcome,
        true,
        "the state where nothing was lost",
        cfg.checker.timeout().as_secs_f64(),
        (
            Verdict::HarnessBroken,
            format!(
                "the checker rejects the state where nothing was lost (every op applied): {}; the checker, not the program, is wrong",
                outcome.describe()
            ),
        ),
    );
    Ok((s.checked(&full, outcome), full_key, stop))
}

/// The state before the workload, with nothing promised yet (`c0`), must be
/// accepted: the program has done nothing and owes nothing. A checker that
/// rejects it demands more than was promised, so the checker, not the
/// program, is wrong: HARNESS BROKEN, with its reason.
fn rejects_the_start(s: &Analysis<'_>, cache: &Cache) -> Stop {
    let start = StateDesc {
        crash: 0,
        lost: Vec::new(),
        torn: None,
    };
    match cache.get(&s.pool.key(&start))? {
        outcome @ Outcome::Fail { .. } => Some((
            Verdict::HarnessBroken,
            format!(
                "the checker rejects the state before the workload with nothing promised (c0): {}; it must accept what the program had before it promised anything: the checker, not the program, is wrong",
                outcome.describe()
            ),
        )),
        _ => None,
    }
}

/// The run's verdict from its models' and why, in one sentence.
fn verdict_of(models: &[ModelReport]) -> (Verdict, String) {
    let verdict = if models.iter().any(|m| m.verdict == Verdict::Fail) {
        Verdict::Fail
    } else if models.iter().any(|m| m.verdict == Verdict::Error) {
        Verdict::Error
    } else {
        Verdict::Pass
    };
    let names = |v: Verdict| {
        models
            .iter()
            .filter(|m| m.verdict == v)
            .map(|m| m.model.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let reason = match verdict {
        Verdict::Fail => format!(
            "a crash state violates the checker under {}",
            names(Verdict::Fail)
        ),
        Verdict::Error => format!(
            "some states could not be checked (the checker timed out) under {}",
            names(Verdict::Error)
        ),
        _ => "every crash state was accepted".into(),
    };
    (verdict, reason)
}

/// Judges a check the run depends on: `None` when the checker accepted
/// (`want_pass`) or rejected (otherwise) as it must; else the verdict that
/// stops the run: `wrong` when it answered the other way, ERROR when it could
/// not run or did not finish on `state`.
fn expected(
    outcome: &Outcome,
    want_pass: bool,
    state: &str,
    timeout_s: f64,
    wrong: (Verdict, String),
) -> Option<(Verdict, String)> {
    match outcome {
        Outcome::Pass if want_pass => None,
        Outcome::Fail { .. } if !want_pass => None,
        Outcome::Pass | Outcome::Fail { .. } => Some(wrong),
        Outcome::CannotRun { reason } => Some((
            Verdict::Error,
            format!("the checker could not be run: {reason}"),
        )),
        Outcome::TimedOut { .. } => Some((
            Verdict::Error,
            format!("the checker did not finish within {timeout_s} s on {state}; killed"),
        )),
        Outcome::BadAnswer { answer } => Some((
            Verdict::Error,
            format!("the checker server gave no usable answer on {state}: {answer}"),
        )),
    }
}

/// Writes one state of a trace into `out` (created; it must not exist or
/// be empty), with its promises in `OUT.acks` and what was printed in
/// `OUT.output` beside it. Returns those two paths.
pub fn write_state(
    trace: &Trace,
    desc: &StateDesc,
    promise_prefix: Option<&[u8]>,
    sector: u64,
    out: &Path,
) -> io::Result<(PathBuf, PathBuf)> {
    let outputs = Outputs::new(trace, promise_prefix);
    match std::fs::create_dir(out) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            if std::fs::read_dir(out)?.next().is_some() {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not empty", out.display()),
                ));
            }
        }
        Err(e) => return Err(e),
    }
    FsState::build(trace, desc, sector).write_out(out)?;
    let side = |ext: &str| {
        let mut name = out
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_else(|| "state".into());
        name.push(ext);
        out.with_file_name(name)
    };
    let acks = side(".acks");
    let output = side(".output");
    std::fs::write(&acks, outputs.promises_text(desc.crash))?;
    std::fs::write(&output, outputs.output_at(desc.crash))?;
    Ok((acks, output))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(log: &str) -> Trace {
        blackout_record::replay::trace_of_log(log.as_bytes(), b"/d").unwrap()
    }

    #[test]
    fn settings_out_of_range_are_errors_before_anything_runs() {
        let t = trace("1 write(1, \"\\x6f\\x6b\\x0a\", 3) = 3\n");
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = RunConfig::new("exit 1");
        cfg.scratch_parent = Some(dir.path().to_path_buf());
        for limit in [21, 64, usize::MAX] {
            cfg.explore.exhaustive_limit = limit;
            match check_trace(&t, &cfg) {
                Err(RunError::Config(ConfigError::ExhaustiveLimit(n))) => assert_eq!(n, limit),
                other => panic!("{limit}: {other:?}"),
            }
        }
        cfg.explore.exhaustive_limit = 10;
        cfg.jobs = 0;
        assert!(matches!(
            check_trace(&t, &cfg),
            Err(RunError::Config(ConfigError::Jobs))
        ));
        cfg.jobs = 1;
        cfg.sector = 0;
        assert!(matches!(
            check_trace(&t, &cfg),
            Err(RunError::Config(ConfigError::Sector))
        ));
        // Nothing was made in the scratch parent.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_written_state_has_its_promises_beside_it() {
        let t = trace(
            "1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT, 0644) = 3\n\
             1 write(3, \"\\x78\", 1) = 1\n\
             1 write(1, \"\\x6f\\x6b\\x0a\", 3) = 3\n",
        );
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("s");
        let desc = StateDesc::parse("c3.lost1").unwrap();
        let (acks, output) = write_state(&t, &desc, None, 512, &out).unwrap();
        assert_eq!(std::fs::read(out.join("a")).unwrap(), b"");
        assert_eq!(std::fs::read(acks).unwrap(), b"ok\n");
        assert_eq!(std::fs::read(output).unwrap(), b"ok\n");
        // Not into a directory that holds something.
        assert!(write_state(&t, &desc, None, 512, dir.path()).is_err());
    }
}
