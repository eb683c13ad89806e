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
use std::time::{Duration, Instant};

pub use crate::sweep::RunError;
use crate::sweep::{add_rest, check_all, check_rest, PoolAsk, Session};
use blackout_analysis::fix::{verify_fixes, Owners, FIX_VERIFICATIONS_MAX};
use blackout_analysis::group::{model_report, Analysis};
use blackout_analysis::needed::judge_syncs;
use blackout_analysis::report::{fix_time_bound, verdict_of, Covered};
use blackout_analysis::report::{Checked, ModelReport, Promised, RunReport, Verdict};
use blackout_check::materialize::{choose, Cost, MaterializerKind};
use blackout_check::outcome::Outcome;
use blackout_check::pool::{outcomes, Cache, CannotRun, Pool, PoolConfig, Release, Scratch};
use blackout_check::shell::ShellChecker;
use blackout_check::slot::Slot;
use blackout_check::Checker;
use blackout_explore::dedup::{distinct_states_watched, state_key, Explored, StateKey, Watch};
use blackout_explore::enumerate::{ConfigError, ExploreConfig, StateDesc};
use blackout_explore::model::Model;
use blackout_explore::rest::{RestRounds, FIRST_ROUND, REST_BOUND};
use blackout_explore::state::{FsState, SECTOR_BYTES_DEFAULT};
use blackout_oplog::ops::Name;
use blackout_oplog::promises::{join_lines, Outputs};
use blackout_oplog::trace::Trace;
use blackout_sys::scratch::default_scratch_parent;

use crate::shard::{Known, Settings};

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
    pub ack_prefix: Option<Vec<u8>>,
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
    /// How long fix verification may take in all: `None` for as long as
    /// the run took to explore and check
    /// ([`blackout_analysis::report::fix_time_bound`]).
    pub fix_time: Option<Duration>,
    /// How long checking may go on past the representatives (their states
    /// are always checked; the rest of the trace is then explored in full
    /// and checked most novel first until this is spent): `None` for no
    /// bound (every distinct state checked), zero for the representatives
    /// alone. A trace explored in full from the start (short, or
    /// `--exhaustive`) is checked whole whatever this says.
    pub check_budget: Option<Duration>,
    /// A PASS that did not check every distinct state is INCONCLUSIVE
    /// (for gates that must not accept a sample).
    pub require_exact: bool,
    /// How states are shown to the checker: `None` chooses (the FUSE view
    /// for states of 4 MiB or more where this process can mount it, else
    /// directories).
    pub materializer: Option<MaterializerKind>,
    /// Judge every sync call site of the trace under posix
    /// ([`blackout_analysis::needed::judge_syncs`]): needed, not needed, or not known,
    /// within the fix bound's time again.
    pub syncs: bool,
}

/// The check budget by default: a minute of checking past the
/// representatives.
pub const CHECK_BUDGET_DEFAULT: Duration = Duration::from_secs(60);

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
            ack_prefix: None,
            consistency_only: false,
            scratch_parent: None,
            cancel: None,
            progress: None,
            explore_progress: None,
            fix_verifications: FIX_VERIFICATIONS_MAX,
            fix_time: None,
            check_budget: Some(CHECK_BUDGET_DEFAULT),
            require_exact: false,
            materializer: None,
            syncs: false,
        }
    }

    /// Whether checking goes on past the representatives.
    pub(crate) fn checks_rest(&self) -> bool {
        self.check_budget != Some(Duration::ZERO)
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

    /// Every setting that changes what the run finds (what the parts of a
    /// sharded run must agree on).
    pub fn settings(&self) -> Settings {
        Settings {
            models: self.models.clone(),
            exhaustive_limit: self.explore.exhaustive_limit,
            budget: self.explore.budget,
            seed: self.explore.seed,
            representatives: self.explore.representatives,
            sector: self.sector,
            ack_prefix: self.ack_prefix.as_deref().map(Name::from),
            consistency_only: self.consistency_only,
            verify_fixes: self.fix_verifications,
            checker: self.checker.command().to_string(),
            checker_kind: self.checker.kind(),
            timeout_seconds: self.checker.timeout().as_secs_f64(),
            check_budget_seconds: self.check_budget.map(|b| b.as_secs_f64()),
        }
    }

    /// A config with these settings and their checker, run as they say
    /// (the others at their defaults): what merges the parts of a sharded
    /// run.
    pub fn from_settings(settings: &Settings) -> Result<RunConfig, ConfigError> {
        let timeout = std::time::Duration::try_from_secs_f64(settings.timeout_seconds)
            .map_err(|_| ConfigError::Timeout)?;
        let checker = settings
            .checker_kind
            .checker(settings.checker.clone(), timeout)
            .ok_or(ConfigError::CheckerKind)?;
        let mut cfg = RunConfig::with_checker(checker);
        cfg.models = settings.models.clone();
        cfg.explore = ExploreConfig {
            exhaustive_limit: settings.exhaustive_limit,
            budget: settings.budget,
            seed: settings.seed,
            representatives: settings.representatives,
        };
        cfg.sector = settings.sector;
        cfg.ack_prefix = settings.ack_prefix.as_ref().map(|p| p.0.clone());
        cfg.consistency_only = settings.consistency_only;
        cfg.fix_verifications = settings.verify_fixes;
        cfg.check_budget = match settings.check_budget_seconds {
            Some(b) => Some(Duration::try_from_secs_f64(b).map_err(|_| ConfigError::Timeout)?),
            None => None,
        };
        Ok(cfg)
    }
}

/// Checks a trace: the whole pipeline after recording.
pub fn check_trace(trace: &Trace, cfg: &RunConfig) -> Result<RunReport, RunError> {
    with_pool(trace, cfg, |s, promises| {
        let mut start = match begin(s, cfg, promises, None)? {
            Begun::Stopped(report) => return Ok(report),
            Begun::Going(start) => start,
        };
        let t1 = Instant::now();
        if let Some((id, reason)) = check_all(&s.pool, &start.explored, &mut start.cache)? {
            return Ok(start.stop(cannot_run(&id, &reason)));
        }
        let explored_before = start.explore_seconds;
        if cfg.checks_rest() {
            let deadline = cfg.check_budget.map(|b| Instant::now() + b);
            if let Some((id, reason)) = start.rest_in_rounds(s, cfg, deadline)? {
                return Ok(start.stop(cannot_run(&id, &reason)));
            }
        }
        let check_seconds = t1.elapsed().as_secs_f64() - (start.explore_seconds - explored_before);
        let results = outcomes(&start.explored, &start.cache);
        finish(s, cfg, start, results, check_seconds)
    })
    .map(Pooled::report)
}

/// What every kind of run shares around its own steps, and what it found.
pub(crate) struct Pooled<T> {
    pub(crate) value: T,
    /// Processes checkers left running outside their groups, killed.
    pub(crate) orphans_killed: usize,
    /// Whether the checker gets every promise in a file only.
    pub(crate) promises_in_file_only: bool,
    /// How states were shown, and what it cost.
    pub(crate) shown: Cost,
    /// Why the FUSE view was not used, when it was not.
    pub(crate) shown_note: Option<String>,
}

impl Pooled<RunReport> {
    pub(crate) fn report(self) -> RunReport {
        let mut report = self.value;
        report.orphans_killed += self.orphans_killed;
        // The pre-check and the state where nothing was lost hold every
        // promise: if a checker ran, it ran on those.
        report.promises_in_file_only = (report.precheck.is_some() || report.all_applied.is_some())
            && self.promises_in_file_only;
        report.shown = Some(self.shown).filter(|c| c.states > 0);
        report.shown_note = self.shown_note;
        report
    }
}

/// Runs `body` with the pool of a run: the settings validated first, a
/// scratch directory made for it and removed after, whatever the body's
/// result, and what checkers detached from their groups killed.
pub(crate) fn with_pool<T, E: From<RunError>>(
    trace: &Trace,
    cfg: &RunConfig,
    body: impl FnOnce(&Session<'_>, Vec<String>) -> Result<T, E>,
) -> Result<Pooled<T>, E> {
    cfg.validate().map_err(RunError::from)?;
    let outputs = Outputs::new(trace, cfg.ack_prefix.as_deref());
    let promises: Vec<String> = outputs
        .all_promises()
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect();
    let parent = cfg
        .scratch_parent
        .clone()
        .unwrap_or_else(default_scratch_parent);
    let scratch = Scratch::new(&parent).map_err(RunError::from)?;
    let in_process = cfg.checker.kind() == blackout_check::CheckerKind::Closure;
    let (materializer, shown_note) = choose(
        cfg.materializer,
        &parent,
        in_process,
        state_bytes(trace, cfg.sector),
    )
    .map_err(|e| RunError::Config(ConfigError::Materializer(e)))?;
    let pool = Pool {
        trace,
        outputs: &outputs,
        cfg: PoolConfig {
            checker: cfg.checker.as_ref(),
            materializer: materializer.as_ref(),
            jobs: cfg.jobs,
            sector: cfg.sector,
            cancel: cfg.cancel.as_deref(),
            progress: cfg.progress.as_deref(),
        },
        scratch: &scratch,
    };
    let promised: Arc<[String]> = promises.clone().into();
    let session = Session {
        pool,
        analysis: Analysis {
            trace,
            outputs: &outputs,
            sector: cfg.sector,
            explore: &cfg.explore,
            ack_prefix: cfg.ack_prefix.as_deref(),
            fix_verifications: cfg.fix_verifications,
            fix_deadline: None,
            check_rest: cfg.checks_rest(),
            promised: &promised,
            verify_deadline: None,
        },
    };
    let result = body(&session, promises);
    // What checkers detached from their groups dies before their
    // directories go; the checker may have left read-only directories,
    // which remove_tree copes with.
    let orphans_killed = blackout_sys::proc::reap_orphans();
    let removed = scratch.remove();
    let value = result?;
    removed.map_err(RunError::from)?;
    let promises_in_file_only = cfg
        .checker
        .promises_in_file_only(&join_lines(&outputs.all_promises()));
    Ok(Pooled {
        value,
        orphans_killed,
        promises_in_file_only,
        shown: materializer.cost(),
        shown_note,
    })
}

/// A run on its way to checking: the pre-checks passed, every model
/// explored, the cache holding the state where nothing was lost.
pub(crate) struct Start {
    pub(crate) promises: Vec<String>,
    pub(crate) precheck: Option<Checked>,
    pub(crate) all_applied: Option<Checked>,
    pub(crate) explored: Explored,
    pub(crate) cache: Cache,
    pub(crate) explore_seconds: f64,
    /// The check budget ended the rest before its last round was explored.
    pub(crate) rest_cut: bool,
}

impl Start {
    /// The rest of the trace explored after its representatives and added
    /// to the exploration (the time it took counted as exploring).
    pub(crate) fn add_rest(&mut self, s: &Session<'_>, cfg: &RunConfig) -> Result<(), RunError> {
        let t0 = Instant::now();
        let watch = Watch {
            cancel: cfg.cancel.as_deref(),
            progress: cfg.explore_progress.as_deref(),
        };
        add_rest(&s.pool, &mut self.explored, &cfg.explore, watch)?;
        self.explore_seconds += t0.elapsed().as_secs_f64();
        Ok(())
    }

    /// The rest of the trace explored a round at a time
    /// ([`RestRounds`]), each round added to the exploration and checked
    /// most novel first ([`check_rest`]) before the next is explored; no
    /// round is explored after `deadline` (the time exploring counted as
    /// exploring). Where the checker could not be run, if it could not.
    pub(crate) fn rest_in_rounds(
        &mut self,
        s: &Session<'_>,
        cfg: &RunConfig,
        deadline: Option<Instant>,
    ) -> Result<Option<CannotRun>, RunError> {
        let watch = Watch {
            cancel: cfg.cancel.as_deref(),
            progress: cfg.explore_progress.as_deref(),
        };
        if !self.explored.in_full {
            let t0 = Instant::now();
            let trace = s.pool.trace;
            let bounds = (REST_BOUND, FIRST_ROUND);
            let (outputs, sector) = (s.pool.outputs, s.pool.cfg.sector);
            let mut rounds =
                RestRounds::new(trace, outputs, &cfg.explore, sector, &self.explored, bounds)?;
            self.explore_seconds += t0.elapsed().as_secs_f64();
            loop {
                if rounds.left() > 0 && deadline.is_some_and(|d| Instant::now() >= d) {
                    self.rest_cut = true;
                    break;
                }
                let t0 = Instant::now();
                let Some(round) = rounds.next_round(watch)? else {
                    break;
                };
                self.explored.absorb(round);
                self.explore_seconds += t0.elapsed().as_secs_f64();
                let cannot = check_rest(&s.pool, &self.explored, &mut self.cache, deadline)?;
                if cannot.is_some() {
                    return Ok(cannot);
                }
            }
        }
        check_rest(&s.pool, &self.explored, &mut self.cache, deadline)
    }

    /// The report of a run that stops here.
    pub(crate) fn stop(self, stop: (Verdict, String)) -> RunReport {
        RunReport::early(stop, self.promises, self.precheck, self.all_applied)
    }
}

/// Where the first steps of a run lead.
#[allow(clippy::large_enum_variant)] // one per run: its size costs nothing
pub(crate) enum Begun {
    /// A verdict before any state was checked.
    Stopped(RunReport),
    /// On to checking.
    Going(Start),
}

/// The steps every run makes before checking: promises, the pre-check, the
/// nothing-lost check, exploring every model. The two checks run the
/// checker, or (a merge) take the outcomes the shards `known`.
pub(crate) fn begin(
    s: &Session<'_>,
    cfg: &RunConfig,
    promises: Vec<String>,
    known: Option<&Known>,
) -> Result<Begun, RunError> {
    if let Some(stop) = nothing_promised(cfg, &promises) {
        return Ok(Begun::Stopped(RunReport::early(stop, promises, None, None)));
    }
    // The pre-checks use a slot of their own, before the workers start.
    let slot0 = s.pool.scratch.slot()?;
    let release = Release {
        checker: cfg.checker.as_ref(),
        slot: &slot0,
    };
    let precheck = if cfg.consistency_only {
        None
    } else {
        let (checked, stop) = precheck(s, cfg, &slot0, &promises, known)?;
        if let Some(stop) = stop {
            let report = RunReport::early(stop, promises, Some(checked), None);
            return Ok(Begun::Stopped(report));
        }
        Some(checked)
    };
    let (all_applied, full_key, stop) = nothing_lost(s, cfg, &slot0, known)?;
    if let Some(stop) = stop {
        let report = RunReport::early(stop, promises, precheck, Some(all_applied));
        return Ok(Begun::Stopped(report));
    }
    drop(release);
    drop(slot0);
    let cache: Cache = HashMap::from([(full_key, all_applied.outcome.clone())]);
    let t0 = Instant::now();
    let watch = Watch {
        cancel: cfg.cancel.as_deref(),
        progress: cfg.explore_progress.as_deref(),
    };
    let explored = distinct_states_watched(
        s.pool.trace,
        s.pool.outputs,
        &cfg.models,
        &cfg.explore,
        cfg.sector,
        watch,
    )?;
    Ok(Begun::Going(Start {
        promises,
        precheck,
        all_applied: Some(all_applied),
        explored,
        cache,
        explore_seconds: t0.elapsed().as_secs_f64(),
        rest_cut: false,
    }))
}

/// Nothing promised is INCONCLUSIVE, unless the checker tests consistency
/// alone.
pub(crate) fn nothing_promised(cfg: &RunConfig, promises: &[String]) -> Stop {
    if !promises.is_empty() || cfg.consistency_only {
        return None;
    }
    let reason = match &cfg.ack_prefix {
        Some(p) => format!(
            "nothing was promised: no line the workload printed starts with `{}` (or pass --consistency-only if the checker tests consistency alone)",
            String::from_utf8_lossy(p)
        ),
        None => "nothing was promised: the workload printed no line to standard output (or pass --consistency-only if the checker tests consistency alone)".into(),
    };
    Some((Verdict::Inconclusive, reason))
}

/// The verdict of a run stopped where the checker could not be run.
pub(crate) fn cannot_run(id: &str, reason: &str) -> (Verdict, String) {
    (
        Verdict::Error,
        format!("the checker could not be run on state {id}: {reason}"),
    )
}

/// Each model's report, and whose each of its failing states is (by
/// content: a cause's fix is judged on its own states).
fn model_reports(
    s: &Session<'_>,
    start: &mut Start,
    results: &[Option<Outcome>],
) -> Result<(Vec<ModelReport>, Vec<Owners>), RunError> {
    let mut models = Vec::new();
    let mut ask = PoolAsk::new(&s.pool);
    for m in &start.explored.models {
        models.push(model_report(
            s,
            m,
            results,
            start.explored.in_full,
            &mut start.cache,
            &mut ask,
        )?);
    }
    drop(ask);
    let owners = start
        .explored
        .models
        .iter()
        .zip(&models)
        .map(|(m, r)| Owners::of_run(&start.explored, m, results, &r.causes))
        .collect();
    Ok((models, owners))
}

/// The steps after checking, the same for a run and a merge: the start
/// state must pass, then each model's report (causes, fixes verified, for
/// at most as long as exploring and checking took: [`fix_time_bound`]),
/// then the verdict, which says how much was checked.
pub(crate) fn finish(
    s: &Session<'_>,
    cfg: &RunConfig,
    mut start: Start,
    results: Vec<Option<Outcome>>,
    check_seconds: f64,
) -> Result<RunReport, RunError> {
    if let Some(stop) = rejects_the_start(s, &start.cache) {
        return Ok(start.stop(stop));
    }
    let in_full = start.explored.in_full;
    let (mut models, owners) = model_reports(s, &mut start, &results)?;
    let covered = Covered {
        checked: results.iter().filter(|o| o.is_some()).count(),
        distinct: results.len(),
        exact: models.iter().all(|m| m.exact),
        in_full,
        classes: models
            .iter()
            .find_map(|m| m.coverage.classes.as_ref().map(Vec::len)),
        budget: cfg.check_budget,
        rest_cut: start.rest_cut,
        subsets_left_out: models.iter().any(|m| m.coverage.subsets_not_covered > 0),
        limit: cfg.explore.exhaustive_limit,
    };
    // What was explored is in the reports now; fix verification needs the
    // outcomes by content alone.
    start.explored = Explored {
        distinct: Vec::new(),
        models: Vec::new(),
        classes: None,
        in_full,
    };
    drop(results);
    // The bound is for verifying fixes alone: explaining the failing
    // states, before it, is not cut short.
    let bound = cfg
        .fix_time
        .unwrap_or_else(|| fix_time_bound(start.explore_seconds + check_seconds));
    let t0 = Instant::now();
    // A fix is verified as far as the run checked: past the
    // representatives of the trace with the syncs only when the run
    // itself checked every state (its outcomes then cover most of them).
    let s = &Session {
        analysis: Analysis {
            fix_deadline: Some(t0 + bound),
            check_rest: s.check_rest && models.iter().all(|m| m.exact),
            ..s.analysis
        },
        ..*s
    };
    let mut ask = PoolAsk::new(&s.pool);
    for (m, owners) in models.iter_mut().zip(&owners) {
        verify_fixes(s, &mut ask, m, &mut start.cache, owners)?;
    }
    drop(ask);
    let fix_seconds = t0.elapsed().as_secs_f64();
    let syncs = match (cfg.syncs, models.iter().any(|m| m.model == Model::Posix)) {
        (true, true) => {
            let deadline = Some(Instant::now() + bound);
            let mut ask = PoolAsk::new(&s.pool);
            let cache = &mut start.cache;
            Some(judge_syncs(s, &mut ask, Model::Posix, cache, deadline)?)
        }
        _ => None,
    };
    let (verdict, reason) = verdict_of(&models, &covered, cfg.require_exact);
    Ok(RunReport {
        verdict,
        reason,
        promises: start.promises,
        precheck: start.precheck,
        all_applied: start.all_applied,
        models,
        states_checked: covered.checked,
        states_distinct: covered.distinct,
        exact: covered.exact,
        check_budget_seconds: cfg.check_budget.map(|b| b.as_secs_f64()),
        explore_seconds: start.explore_seconds,
        check_seconds,
        fix_seconds,
        fix_bound_seconds: bound.as_secs_f64(),
        syncs,
        failed_syncs: None,
        explore: s.explore.clone(),
        orphans_killed: 0,
        promises_in_file_only: false,
        shown: None,
        shown_note: None,
        block: None,
    })
}

/// The verdict that stops a run before it explores, and why; `None` goes on.
pub(crate) type Stop = Option<(Verdict, String)>;

/// The pre-check: the checker on the state before the workload, with every
/// promise handed to it (or, in a merge, what shard 1 found). It must reject it; the verdict that stops the run
/// if it does not.
pub(crate) fn precheck(
    s: &Session<'_>,
    cfg: &RunConfig,
    slot: &Slot,
    promises: &[String],
    known: Option<&Known>,
) -> Result<(Checked, Stop), RunError> {
    let trace = s.pool.trace;
    let pre = StateDesc {
        crash: 0,
        lost: Default::default(),
        torn: None,
    };
    let outcome = match known {
        Some(k) => k
            .precheck
            .clone()
            .ok_or_else(|| not_in_parts("pre-check"))?,
        None => s
            .pool
            .check_one(slot, "pre-workload", &FsState::initial(trace), 0, true)?
            .ok_or(RunError::Interrupted)?,
    };
    let mut c = s.checked(&pre, outcome.clone());
    c.id = "pre-workload".into();
    c.promises = Promised::of(promises.to_vec());
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

/// The most file data a state of the trace holds, as the trace starts and
/// as it ends with nothing lost: how much writing a state out would copy.
fn state_bytes(trace: &Trace, sector: u64) -> u64 {
    let full = StateDesc {
        crash: trace.ops.len(),
        lost: Default::default(),
        torn: None,
    };
    FsState::initial(trace)
        .held_bytes()
        .max(FsState::build(trace, &full, sector).held_bytes())
}

/// The nothing-lost check: the checker on the state with every op applied
/// and every promise made. It must accept it; the verdict that stops the run
/// if it does not. Also the state's content key, for the outcome cache.
pub(crate) fn nothing_lost(
    s: &Session<'_>,
    cfg: &RunConfig,
    slot: &Slot,
    known: Option<&Known>,
) -> Result<(Checked, StateKey, Stop), RunError> {
    let trace = s.pool.trace;
    let full = StateDesc {
        crash: trace.ops.len(),
        lost: Default::default(),
        torn: None,
    };
    let full_fs = FsState::build(trace, &full, cfg.sector);
    let full_key = state_key(&full_fs, s.pool.outputs, full.crash);
    let outcome = match known {
        Some(k) => k
            .all_applied
            .clone()
            .ok_or_else(|| not_in_parts("state where nothing was lost"))?,
        None => s
            .pool
            .check_one(slot, &full.id(), &full_fs, full.crash, false)?
            .ok_or(RunError::Interrupted)?,
    };
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
pub(crate) fn rejects_the_start(s: &Session<'_>, cache: &Cache) -> Stop {
    let start = StateDesc {
        crash: 0,
        lost: Default::default(),
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

/// Judges a check the run depends on: `None` when the checker accepted
/// (`want_pass`) or rejected (otherwise) as it must; else the verdict that
/// stops the run: `wrong` when it answered the other way, ERROR when it could
/// not run or did not finish on `state`.
pub(crate) fn expected(
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
    ack_prefix: Option<&[u8]>,
    sector: u64,
    out: &Path,
) -> io::Result<(PathBuf, PathBuf)> {
    let outputs = Outputs::new(trace, ack_prefix);
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

/// An outcome a merge needs that the parts do not hold.
pub(crate) fn not_in_parts(what: &str) -> RunError {
    RunError::Io(io::Error::new(
        io::ErrorKind::InvalidData,
        format!("shard 1 holds no outcome of the {what}, which this merge needs"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::{Shard, ShardPart};
    use crate::sharded::{check_shard, merge_parts, MergeError};
    use blackout_explore::enumerate::Representatives;
    use blackout_explore::model::Model;

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

    /// A report as JSON, without its timings.
    fn without_timings(r: &RunReport) -> String {
        let mut text = Vec::new();
        // What showing states cost differs with the states each process
        // showed.
        let r = RunReport {
            shown: None,
            ..r.clone()
        };
        for line in format!("{r:#?}").lines() {
            if !line.contains("_seconds:") {
                text.push(line.to_string());
            }
        }
        text.join("\n")
    }

    #[test]
    fn a_fix_cut_short_claims_neither_a_pass_nor_a_failure() {
        use blackout_analysis::report::FixSet;
        use blackout_export::json::JsonExporter;
        use blackout_export::{ExportContext, Exporter};
        // A new file written and "saved" without any fsync: two causes
        // (the data, the directory entry), neither fixed alone.
        let t = trace(
            "1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT, 0644) = 3\n\
             1 write(3, \"\\x68\\x69\", 2) = 2\n\
             1 write(1, \"\\x73\\x61\\x76\\x65\\x64\\x0a\", 6) = 6\n",
        );
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = RunConfig::new(
            r#"! grep -qx saved "$BLACKOUT_ACKS_FILE" || [ "$(cat a 2>/dev/null)" = hi ]"#,
        );
        cfg.scratch_parent = Some(dir.path().to_path_buf());
        let mut report = check_trace(&t, &cfg).unwrap();
        // This small run verified every fix within its bound.
        assert!(report.fix_bound_seconds >= 5.0, "{report:#?}");
        assert!(report.fix_seconds <= report.fix_bound_seconds + 1.0);
        let m = &mut report.models[0];
        let fix = m.causes[0].fix.as_mut().expect("a verified fix");
        assert!(!fix.cut_short);
        // As a verification the bound stopped reports it.
        fix.cut_short = true;
        fix.passes = false;
        fix.states = 0;
        fix.still_failing = 0;
        fix.simplest_failing = None;
        if let Some(FixSet::Found { check, .. } | FixSet::NotFound { tried: check, .. }) =
            m.fix_set.take()
        {
            m.fix_set = Some(FixSet::CutShort { tried: check });
        }
        let id = t.content_id();
        let cx = ExportContext {
            trace: &t,
            trace_path: None,
            trace_id: &id,
            checker: "check",
            checker_flag: "--checker",
            state_flags: "",
            all_causes: true,
            ack_prefix: None,
        };
        let text = blackout_export::text::render(&report, &cx);
        let fix_line = text
            .lines()
            .find(|l| l.trim_start().starts_with("fix:"))
            .unwrap();
        assert!(
            fix_line.contains("not known: fix verification stopped at its time bound"),
            "{text}"
        );
        assert!(!fix_line.contains("makes all") && !fix_line.contains("not enough"));
        if report.models[0].fix_set.is_some() {
            assert!(text.contains("fix for every cause not known"), "{text}");
        }
        let json: serde_json::Value =
            serde_json::from_slice(&JsonExporter.export(&report, &cx)).unwrap();
        let fix = &json["result"]["models"][0]["causes"][0]["fix"];
        assert_eq!(fix["cut_short"], true, "{fix:#}");
        assert_eq!(fix["passes"], false);
    }

    /// Seven unsynced appends to `a`, each promised: representatives of
    /// few classes, and a rest of a hundred and more distinct states.
    fn appends() -> Trace {
        let mut log =
            String::from("1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT|O_APPEND, 0644) = 3\n");
        for i in 0..7 {
            log.push_str(&format!(
                "1 write(3, \"\\x3{i}\\x3{i}\", 2) = 2\n1 write(1, \"\\x3{i}\\x0a\", 2) = 2\n"
            ));
        }
        trace(&log)
    }

    /// A checker that sleeps `secs` per state and accepts any state that
    /// holds `a` once something was promised.
    fn slow_checker(secs: &str) -> Box<dyn Checker> {
        Box::new(ShellChecker::new(format!(
            r#"sleep {secs}; ! grep -q . "$BLACKOUT_ACKS_FILE" || [ -e a ]"#
        )))
    }

    #[test]
    fn the_check_budget_ends_the_rest_and_the_verdict_says_it_is_a_sample() {
        let t = appends();
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = RunConfig::with_checker(slow_checker("0"));
        cfg.scratch_parent = Some(dir.path().to_path_buf());
        cfg.explore.representatives = Representatives::PerClass(1);
        cfg.jobs = 2;
        cfg.fix_verifications = 0;
        // Budget enough: every distinct state, as exhaustively.
        let whole = check_trace(&t, &cfg).unwrap();
        assert!(whole.exact, "{}", whole.reason);
        assert_eq!(whole.states_checked, whole.states_distinct);
        let mut all = RunConfig::with_checker(slow_checker("0"));
        all.scratch_parent = cfg.scratch_parent.clone();
        all.explore.representatives = Representatives::Exhaustive;
        all.check_budget = None;
        all.fix_verifications = 0;
        let exhaustive = check_trace(&t, &all).unwrap();
        assert_eq!(whole.verdict, exhaustive.verdict);
        assert_eq!(whole.states_distinct, exhaustive.states_distinct);
        // A budget that ends the rest: a sample, said so; its shards
        // merge into a sample too, with what they left unchecked counted.
        cfg.checker = slow_checker("0.03");
        cfg.check_budget = Some(Duration::from_millis(150));
        let sample = check_trace(&t, &cfg).unwrap();
        assert!(!sample.exact);
        assert!(
            sample.states_checked < sample.states_distinct,
            "{}",
            sample.reason
        );
        assert!(
            sample
                .reason
                .contains("the check budget of 0.15 s ended the rest"),
            "{}",
            sample.reason
        );
        let parts: Vec<ShardPart> = (1..=2)
            .map(|index| check_shard(&t, &cfg, Shard { index, count: 2 }).unwrap())
            .map(|p| ShardPart::read(p.to_json().as_bytes()).unwrap())
            .collect();
        assert!(parts.iter().any(|p| p.unchecked > 0));
        let merged = merge_parts(&t, &cfg, &parts).unwrap();
        assert!(!merged.exact);
        assert_eq!(merged.states_distinct, whole.states_distinct);
        let unchecked: usize = parts.iter().map(|p| p.unchecked).sum();
        assert_eq!(merged.states_checked + unchecked, merged.states_distinct);
        // A part that drops a state it checked is refused, budget or not.
        let mut short = parts.clone();
        let k = short.iter().position(|p| !p.states.is_empty()).unwrap();
        short[k].states.pop();
        assert!(matches!(
            merge_parts(&t, &cfg, &short),
            Err(MergeError::Part(_))
        ));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn three_shards_merged_make_the_single_runs_report() {
        // A new file written without any fsync, then "saved".
        let t = trace(
            "1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT, 0644) = 3\n\
             1 write(3, \"\\x68\\x69\", 2) = 2\n\
             1 openat(AT_FDCWD, \"\\x62\", O_WRONLY|O_CREAT, 0644) = 4\n\
             1 write(4, \"\\x68\\x6f\", 2) = 2\n\
             1 write(1, \"\\x73\\x61\\x76\\x65\\x64\\x0a\", 6) = 6\n",
        );
        let dir = tempfile::tempdir().unwrap();
        let checker =
            r#"! grep -qx saved "$BLACKOUT_ACKS_FILE" || [ "$(cat a b 2>/dev/null)" = hiho ]"#;
        let mut cfg = RunConfig::new(checker);
        cfg.models = Model::ALL.to_vec();
        cfg.scratch_parent = Some(dir.path().to_path_buf());
        let single = check_trace(&t, &cfg).unwrap();
        assert_eq!(single.verdict, Verdict::Fail);
        let parts: Vec<ShardPart> = (1..=3)
            .map(|index| check_shard(&t, &cfg, Shard { index, count: 3 }).unwrap())
            .map(|p| ShardPart::read(p.to_json().as_bytes()).unwrap())
            .collect();
        // Each distinct state but the one where nothing was lost is
        // checked by exactly one shard.
        let checked: usize = parts.iter().map(|p| p.states.len()).sum();
        assert_eq!(checked + 1, single.states_checked);
        let merged = merge_parts(&t, &cfg, &parts).unwrap();
        assert_eq!(without_timings(&single), without_timings(&merged));
        let refused = |parts: &[ShardPart], cfg: &RunConfig| match merge_parts(&t, cfg, parts) {
            Err(MergeError::Part(e)) => e.to_string(),
            other => panic!("{other:?}"),
        };
        assert!(refused(&parts[..2], &cfg).starts_with("missing shard 3/3"));
        let twice = [parts[0].clone(), parts[0].clone(), parts[2].clone()];
        assert!(refused(&twice, &cfg).starts_with("shard 1/3 is given twice"));
        let mut other = RunConfig::new(checker);
        other.models = Model::ALL.to_vec();
        other.explore.budget = 8;
        assert!(
            refused(&parts, &other).contains("other settings than this merge's (budget 64, not 8")
        );
        let mut budget = parts.clone();
        budget[1].settings.budget = 8;
        budget[1].fingerprint = budget[1].settings.fingerprint();
        assert!(refused(&budget, &cfg).starts_with(
            "shard 2/3 was made with other settings than shard 1/3 (budget 8, not 64;"
        ));
        // A state missing from its part is never a pass.
        let mut short = parts.clone();
        let k = short.iter().position(|p| !p.states.is_empty()).unwrap();
        short[k].states.pop();
        assert!(refused(&short, &cfg).contains("is in no part"));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
