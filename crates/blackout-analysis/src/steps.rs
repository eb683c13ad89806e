//! A run's steps, from its promises to its report, whoever checks its
//! states ([`Ask`]: the run's own pool, a shard's share of it, or the
//! parts a merge reads):
//!
//! 1. Promises: nothing promised is INCONCLUSIVE (unless the checker tests
//!    consistency alone).
//! 2. Pre-check: the checker must reject the state before the workload
//!    wrote anything, with every promise handed to it; if it accepts, the
//!    check cannot fail (INCONCLUSIVE).
//! 3. All applied: the checker must accept the state where nothing was
//!    lost; if it rejects it, the harness is broken.
//! 4. Explore each model, build every state and deduplicate by content
//!    ([`begin`]); check the distinct states, then while the check budget
//!    allows the rest of the trace a round at a time ([`Start`]).
//! 5. The start state must pass; each model's report, its fixes verified,
//!    the sync call sites judged, the verdict in words ([`finish`]).
//!
//! A checker that cannot be run stops the run at the first state with
//! ERROR ([`cannot_run`]).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use blackout_explore::dedup::{distinct_states_watched, state_key, Explored, StateKey, Watch};
use blackout_explore::enumerate::StateDesc;
use blackout_explore::model::Model;
use blackout_explore::rest::{check_order, explore_rest, RestRounds, FIRST_ROUND, REST_BOUND};
use blackout_explore::state::FsState;
use blackout_oplog::outcome::Outcome;

use crate::fix::{verify_fixes, Owners};
use crate::group::{model_report, Analysis};
use crate::needed::judge_syncs;
use crate::report::{fix_time_bound, verdict_of, Checked, Covered, ModelReport, Promised};
use crate::report::{RunReport, Verdict};
use crate::{Ask, Cache, CannotRun, Stopped};

/// What a run's steps read of its settings beyond analysis's own.
#[derive(Clone, Copy)]
pub struct Steps<'a> {
    /// The models to explore, in order.
    pub models: &'a [Model],
    /// The checker tests consistency alone: no promise is needed and the
    /// pre-check is skipped.
    pub consistency_only: bool,
    /// How long the checker may take on a state.
    pub timeout: Duration,
    /// How long checking may go on past the representatives (`None`: no
    /// bound; zero: the representatives alone).
    pub check_budget: Option<Duration>,
    /// A PASS that did not check every distinct state is INCONCLUSIVE.
    pub require_exact: bool,
    /// How long fix verification may take in all (`None`: as long as
    /// exploring and checking took, [`fix_time_bound`]).
    pub fix_time: Option<Duration>,
    /// Judge every sync call site under posix.
    pub syncs: bool,
    /// The cancel flag and the exploring progress.
    pub watch: Watch<'a>,
}

impl Steps<'_> {
    /// Whether checking goes on past the representatives.
    pub fn checks_rest(&self) -> bool {
        self.check_budget != Some(Duration::ZERO)
    }

    /// When checking the rest ends, counted from now.
    pub fn check_deadline(&self) -> Option<Instant> {
        self.check_budget.map(|b| Instant::now() + b)
    }
}

/// The two states a run checks before it explores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartState {
    /// The state before the workload, every promise handed to the checker
    /// (the pre-check).
    Before,
    /// The state with every op applied and every promise made.
    AllApplied,
}

/// The verdict that stops a run before it explores, and why; `None` goes on.
pub type Stop = Option<(Verdict, String)>;

/// A run on its way to checking: the pre-checks passed, every model
/// explored, the cache holding the state where nothing was lost.
pub struct Start {
    /// Every promise, as text.
    pub promises: Vec<String>,
    /// The pre-check, unless the checker tests consistency alone.
    pub precheck: Option<Checked>,
    /// The state where nothing was lost, checked.
    pub all_applied: Option<Checked>,
    /// What was explored (it grows by the rest of the trace).
    pub explored: Explored,
    /// Outcomes by content.
    pub cache: Cache,
    /// Seconds spent exploring.
    pub explore_seconds: f64,
    /// The check budget ended the rest before its last round was explored.
    pub rest_cut: bool,
}

/// Where the first steps of a run lead.
#[allow(clippy::large_enum_variant)] // one per run: its size costs nothing
pub enum Begun {
    /// A verdict before any state was checked.
    Stopped(RunReport),
    /// On to checking.
    Going(Start),
}

/// The steps every run makes before checking: promises, the pre-check, the
/// nothing-lost check (both asked of `ask`), exploring every model.
pub fn begin(
    s: &Analysis<'_>,
    steps: &Steps<'_>,
    ask: &mut dyn Ask,
    promises: Vec<String>,
) -> Result<Begun, Stopped> {
    if let Some(stop) = nothing_promised(s, steps, &promises) {
        return Ok(Begun::Stopped(RunReport::early(stop, promises, None, None)));
    }
    let precheck = if steps.consistency_only {
        None
    } else {
        let (checked, stop) = precheck(s, steps, ask, &promises)?;
        if let Some(stop) = stop {
            let report = RunReport::early(stop, promises, Some(checked), None);
            return Ok(Begun::Stopped(report));
        }
        Some(checked)
    };
    let (all_applied, full_key, stop) = nothing_lost(s, steps, ask)?;
    if let Some(stop) = stop {
        let report = RunReport::early(stop, promises, precheck, Some(all_applied));
        return Ok(Begun::Stopped(report));
    }
    let cache: Cache = HashMap::from([(full_key, all_applied.outcome.clone())]);
    let t0 = Instant::now();
    let explored = distinct_states_watched(
        s.trace,
        s.outputs,
        steps.models,
        s.explore,
        s.sector,
        steps.watch,
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

impl Start {
    /// Checks every explored state the cache does not know, in
    /// exploration order. Where the checker could not be run, if it could
    /// not.
    pub fn check_all(
        &mut self,
        s: &Analysis<'_>,
        ask: &mut dyn Ask,
    ) -> Result<Option<CannotRun>, Stopped> {
        let order: Vec<usize> = (0..self.explored.distinct.len()).collect();
        self.check(s, ask, &order, None)
    }

    /// The rest of the trace explored after its representatives and added
    /// to the exploration (the time it took counted as exploring).
    pub fn add_rest(&mut self, s: &Analysis<'_>, steps: &Steps<'_>) -> Result<(), Stopped> {
        if self.explored.in_full {
            return Ok(());
        }
        let t0 = Instant::now();
        let (explored, watch) = (&self.explored, steps.watch);
        let rest = explore_rest(
            s.trace, s.outputs, s.explore, s.sector, watch, explored, REST_BOUND,
        )?;
        self.explored.absorb(rest);
        self.explore_seconds += t0.elapsed().as_secs_f64();
        Ok(())
    }

    /// The rest of the trace explored a round at a time ([`RestRounds`]),
    /// each round added to the exploration and checked most novel first
    /// before the next is explored; no round is explored after `deadline`
    /// (the time exploring counted as exploring). Where the checker could
    /// not be run, if it could not.
    pub fn rest_in_rounds(
        &mut self,
        s: &Analysis<'_>,
        steps: &Steps<'_>,
        ask: &mut dyn Ask,
        deadline: Option<Instant>,
    ) -> Result<Option<CannotRun>, Stopped> {
        if !self.explored.in_full {
            let t0 = Instant::now();
            let bounds = (REST_BOUND, FIRST_ROUND);
            let (trace, outputs, sector) = (s.trace, s.outputs, s.sector);
            let mut rounds =
                RestRounds::new(trace, outputs, s.explore, sector, &self.explored, bounds)?;
            self.explore_seconds += t0.elapsed().as_secs_f64();
            loop {
                if rounds.left() > 0 && deadline.is_some_and(|d| Instant::now() >= d) {
                    self.rest_cut = true;
                    break;
                }
                let t0 = Instant::now();
                let Some(round) = rounds.next_round(steps.watch)? else {
                    break;
                };
                self.explored.absorb(round);
                self.explore_seconds += t0.elapsed().as_secs_f64();
                let cannot = self.check_rest(s, ask, deadline)?;
                if cannot.is_some() {
                    return Ok(cannot);
                }
            }
        }
        self.check_rest(s, ask, deadline)
    }

    /// Checks the states the cache does not know, most novel first
    /// ([`check_order`]), starting none after `deadline`.
    pub fn check_rest(
        &mut self,
        s: &Analysis<'_>,
        ask: &mut dyn Ask,
        deadline: Option<Instant>,
    ) -> Result<Option<CannotRun>, Stopped> {
        let order = check_order(&self.explored, |k| self.cache.contains_key(k));
        self.check(s, ask, &order, deadline)
    }

    fn check(
        &mut self,
        s: &Analysis<'_>,
        ask: &mut dyn Ask,
        order: &[usize],
        deadline: Option<Instant>,
    ) -> Result<Option<CannotRun>, Stopped> {
        let (trace, outputs, explored) = (s.trace, s.outputs, &self.explored);
        let checked = ask.check(trace, outputs, explored, &mut self.cache, order, deadline)?;
        Ok(checked.err())
    }

    /// The report of a run that stops here.
    pub fn stop(self, stop: (Verdict, String)) -> RunReport {
        RunReport::early(stop, self.promises, self.precheck, self.all_applied)
    }
}

/// Nothing promised is INCONCLUSIVE, unless the checker tests consistency
/// alone.
pub fn nothing_promised(s: &Analysis<'_>, steps: &Steps<'_>, promises: &[String]) -> Stop {
    if !promises.is_empty() || steps.consistency_only {
        return None;
    }
    let reason = match s.ack_prefix {
        Some(p) => format!(
            "nothing was promised: no line the workload printed starts with `{}` (or pass --consistency-only if the checker tests consistency alone)",
            String::from_utf8_lossy(p)
        ),
        None => "nothing was promised: the workload printed no line to standard output (or pass --consistency-only if the checker tests consistency alone)".into(),
    };
    Some((Verdict::Inconclusive, reason))
}

/// The verdict of a run stopped where the checker could not be run.
pub fn cannot_run(id: &str, reason: &str) -> (Verdict, String) {
    (
        Verdict::Error,
        format!("the checker could not be run on state {id}: {reason}"),
    )
}

/// The pre-check: the checker on the state before the workload, with every
/// promise handed to it. It must reject it; the verdict that stops the run
/// if it does not.
fn precheck(
    s: &Analysis<'_>,
    steps: &Steps<'_>,
    ask: &mut dyn Ask,
    promises: &[String],
) -> Result<(Checked, Stop), Stopped> {
    let pre = StateDesc::whole(0);
    let fs = FsState::initial(s.trace);
    let outcome = ask.start_outcome(StartState::Before, "pre-workload", &fs, 0)?;
    let mut c = s.checked(&pre, outcome.clone());
    c.id = "pre-workload".into();
    c.promises = Promised::of(promises.to_vec());
    let stop = expected(
        &outcome,
        false,
        "the state before the workload",
        steps.timeout.as_secs_f64(),
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
    steps: &Steps<'_>,
    ask: &mut dyn Ask,
) -> Result<(Checked, StateKey, Stop), Stopped> {
    let full = StateDesc::whole(s.trace.ops.len());
    let full_fs = FsState::build(s.trace, &full, s.sector);
    let full_key = state_key(&full_fs, s.outputs, full.crash);
    let outcome = ask.start_outcome(StartState::AllApplied, &full.id(), &full_fs, full.crash)?;
    let stop = expected(
        &outcome,
        true,
        "the state where nothing was lost",
        steps.timeout.as_secs_f64(),
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
pub fn rejects_the_start(s: &Analysis<'_>, cache: &Cache) -> Stop {
    let start = StateDesc::whole(0);
    let key = state_key(&FsState::build(s.trace, &start, s.sector), s.outputs, 0);
    match cache.get(&key)? {
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
pub fn expected(
    outcome: &Outcome,
    want_pass: bool,
    state: &str,
    timeout_s: f64,
    wrong: (Verdict, String),
) -> Stop {
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

/// Each model's report, and whose each of its failing states is (by
/// content: a cause's fix is judged on its own states).
fn model_reports(
    s: &Analysis<'_>,
    ask: &mut dyn Ask,
    start: &mut Start,
    results: &[Option<Outcome>],
) -> Result<(Vec<ModelReport>, Vec<Owners>), Stopped> {
    let mut models = Vec::new();
    let in_full = start.explored.in_full;
    for m in &start.explored.models {
        models.push(model_report(s, m, results, in_full, &mut start.cache, ask)?);
    }
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
pub fn finish(
    s: &Analysis<'_>,
    steps: &Steps<'_>,
    ask: &mut dyn Ask,
    mut start: Start,
    check_seconds: f64,
) -> Result<RunReport, Stopped> {
    if let Some(stop) = rejects_the_start(s, &start.cache) {
        return Ok(start.stop(stop));
    }
    let results = start.explored.outcomes(&start.cache);
    let in_full = start.explored.in_full;
    let (mut models, owners) = model_reports(s, ask, &mut start, &results)?;
    let covered = Covered {
        checked: results.iter().filter(|o| o.is_some()).count(),
        distinct: results.len(),
        exact: models.iter().all(|m| m.exact),
        in_full,
        classes: models
            .iter()
            .find_map(|m| m.coverage.classes.as_ref().map(Vec::len)),
        budget: steps.check_budget,
        rest_cut: start.rest_cut,
        subsets_left_out: models.iter().any(|m| m.coverage.subsets_not_covered > 0),
        limit: s.explore.exhaustive_limit,
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
    let bound = steps
        .fix_time
        .unwrap_or_else(|| fix_time_bound(start.explore_seconds + check_seconds));
    let t0 = Instant::now();
    // A fix is verified as far as the run checked: past the
    // representatives of the trace with the syncs only when the run
    // itself checked every state (its outcomes then cover most of them).
    let s = &Analysis {
        fix_deadline: Some(t0 + bound),
        check_rest: s.check_rest && models.iter().all(|m| m.exact),
        ..*s
    };
    for (m, owners) in models.iter_mut().zip(&owners) {
        verify_fixes(s, ask, m, &mut start.cache, owners)?;
    }
    let fix_seconds = t0.elapsed().as_secs_f64();
    let syncs = match (steps.syncs, models.iter().any(|m| m.model == Model::Posix)) {
        (true, true) => {
            let deadline = Some(Instant::now() + bound);
            Some(judge_syncs(
                s,
                ask,
                Model::Posix,
                &mut start.cache,
                deadline,
            )?)
        }
        _ => None,
    };
    let (verdict, reason) = verdict_of(&models, &covered, steps.require_exact);
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
        check_budget_seconds: steps.check_budget.map(|b| b.as_secs_f64()),
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
