//! Fix search: each cause's syncs verified by re-exploring the trace with
//! them added and checking the states no run checked, within the run's own
//! time ([`crate::report::fix_time_bound`], shared evenly between
//! verifications); a sampled run's fix goes after every op like the blamed
//! ones that no sync covers before its promise
//! ([`crate::like::like_ops_fixes`]); when no cause's fix alone passes, the
//! smallest set of the proposed syncs that does
//! ([`FIX_SET_VERIFICATIONS_MAX`]). The states are checked by whoever
//! checked the run ([`Ask::check`]); exploring them is analysis's own.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use blackout_explore::dedup::{distinct_states_watched, Explored, ModelStates, StateKey, Watch};
use blackout_explore::enumerate::{ExploreConfig, Representatives};
use blackout_explore::model::Model;
use blackout_explore::rest::{check_order, explore_rest, REST_BOUND};
use blackout_oplog::ops::Op;
use blackout_oplog::outcome::Outcome;
use blackout_oplog::promises::Outputs;
use blackout_oplog::trace::Trace;

use crate::explain::{self, SyncFix};
use crate::group::{fail_reason, role, sorted_results, Analysis, StateKeys};
use crate::like::{describe_fix, like_ops_fixes, Said};
use crate::replace::{self, Replace};
use crate::report::{CauseGroup, Checked, FixCheck, FixSet, ModelReport, OwnCheck, Verdict};
use crate::{Ask, Cache, Stopped};

/// Distinct fixes verified per model at the most (each re-explores the
/// trace; causes that share a fix share its verification).
pub const FIX_VERIFICATIONS_MAX: usize = 16;

/// Which cause each failing state of a model's run is, by content key: a
/// cause's fix is judged on the states of that cause, since with several
/// bugs every single fix leaves the others' states failing.
#[derive(Debug, Default)]
pub struct Owners {
    /// The cause (its index in the model's causes) of each failing state.
    pub of: HashMap<StateKey, usize>,
}

impl Owners {
    /// The owners of `m`'s failing states: each state of `explored` the run
    /// checked and rejected, under the cause whose ids name it.
    pub fn of_run(
        explored: &Explored,
        m: &ModelStates,
        results: &[Option<Outcome>],
        causes: &[CauseGroup],
    ) -> Owners {
        let by_id: HashMap<&str, usize> = causes
            .iter()
            .enumerate()
            .flat_map(|(c, g)| g.ids.iter().map(move |id| (id.as_str(), c)))
            .collect();
        let of = m
            .reach
            .iter()
            .filter(|(i, _)| matches!(results.get(*i), Some(Some(Outcome::Fail { .. }))))
            .filter_map(|(i, d)| Some((explored.distinct[*i].key, *by_id.get(d.id().as_str())?)))
            .collect();
        Owners { of }
    }
}

/// A cause a fix is judged on: its index, and what an explanation of a
/// state the run never saw fail must say to be one of its states (its kind,
/// on a file of the role of one of its files: a cause merged over sibling
/// logs owns the split record of a log the run did not see fail).
#[derive(Debug, Clone)]
pub struct Judged {
    /// The cause's index among the model's causes.
    pub cause: usize,
    /// Its failing states in the run.
    pub states: usize,
    /// Its kind.
    pub kind: explain::CauseKind,
    /// The roles ([`role`]) of the files or directories of its windows.
    pub paths: Vec<String>,
}

impl Judged {
    fn of(cause: usize, g: &CauseGroup) -> Judged {
        let mut paths: Vec<String> = g.windows.iter().map(|w| role(&w.path)).collect();
        paths.push(role(&g.window.path));
        paths.sort();
        paths.dedup();
        Judged {
            cause,
            states: g.states,
            kind: g.cause.kind,
            paths,
        }
    }
}

/// Verifies the fixes of a model's causes ([`crate::group::model_report`]):
/// each distinct fix once, judged on the states of each cause that
/// proposed it (`owners`), then the smallest set of syncs that fixes them
/// all, judged on every state; `ask` checks the states. Stops at
/// [`Analysis::fix_deadline`].
pub fn verify_fixes(
    s: &Analysis<'_>,
    ask: &mut dyn Ask,
    report: &mut ModelReport,
    cache: &mut Cache,
    owners: &Owners,
) -> Result<(), Stopped> {
    let model = report.model;
    // Each distinct fix once, with the causes that propose it, in the order
    // of the causes (most serious first, so a small budget goes to them).
    // A cause found at one source line is fixed at every op that line
    // issued; one found on a sample of the states (not every distinct
    // state checked), at every op like its blamed ones that no sync covers
    // before the next promise.
    struct Plan {
        fixes: Vec<SyncFix>,
        replaces: Vec<Replace>,
        source: Option<String>,
        like: Option<String>,
        causes: Vec<usize>,
    }
    let mut plans: Vec<Plan> = Vec::new();
    for (c, g) in report.causes.iter_mut().enumerate() {
        if g.fixes.is_empty() && g.replace.is_none() {
            continue;
        }
        let like = if !report.exact && g.source.is_none() {
            like_ops_fixes(s.trace, s.outputs, &mut g.fixes)
        } else {
            None
        };
        let mut fixes = g.fixes.clone();
        fixes.sort_by_key(|f| (f.after, f.ino));
        let replaces: Vec<Replace> = g.replace.iter().cloned().collect();
        match plans
            .iter_mut()
            .find(|p| p.fixes == fixes && p.replaces == replaces)
        {
            Some(p) => p.causes.push(c),
            None => plans.push(Plan {
                fixes,
                replaces,
                source: g.source.clone(),
                like,
                causes: vec![c],
            }),
        }
    }
    plans.truncate(s.fix_verifications);
    // Each verification gets an even share of the time left (the fix set
    // counted as one more): the first one cannot take it all.
    let mut left = plans.len() + 1;
    for plan in &plans {
        let said = Said {
            source: plan.source.as_deref(),
            like: plan.like.as_deref(),
        };
        let share = Analysis {
            verify_deadline: share_of(s.fix_deadline, left),
            ..*s
        };
        left = left.saturating_sub(1).max(1);
        let judged: Vec<Judged> = plan
            .causes
            .iter()
            .map(|&c| Judged::of(c, &report.causes[c]))
            .collect();
        let fix = (&plan.fixes[..], &plan.replaces[..]);
        let checks = verify_fix(&share, ask, model, fix, said, cache, (owners, &judged))?;
        for (j, check) in judged.iter().zip(checks) {
            report.causes[j.cause].fix = check;
        }
    }
    if report.verdict == Verdict::Fail && s.fix_verifications > 0 {
        report.fix_set = fix_set(s, ask, model, &report.causes, cache, owners)?;
    }
    Ok(())
}

/// An even share of the time left before `deadline` for one of `n`
/// verifications: when the next one must end.
pub fn share_of(deadline: Option<Instant>, n: usize) -> Option<Instant> {
    let deadline = deadline?;
    let now = Instant::now();
    let left = deadline.saturating_duration_since(now);
    let n = u32::try_from(n.max(1)).unwrap_or(u32::MAX);
    Some(now + left / n)
}

/// Verifications one fix-set search may make.
pub const FIX_SET_VERIFICATIONS_MAX: usize = 8;

/// When no cause's own fix makes every state pass, the smallest set of the
/// proposed syncs found that does: all of them verified together, then each
/// cause's syncs dropped in turn while the rest still pass (at most
/// [`FIX_SET_VERIFICATIONS_MAX`] re-explorations, and no more than
/// `--verify-fixes`). Causes no sync or replacement fixes are left out:
/// the set passes when every state still failing with it is one of theirs
/// (judged as a cause's own fix is). `None` when one cause's fix already
/// passes, when no cause has a fix, or when the set is one cause's fix,
/// already verified on every state.
fn fix_set(
    s: &Analysis<'_>,
    ask: &mut dyn Ask,
    model: Model,
    groups: &[CauseGroup],
    cache: &mut Cache,
    owners: &Owners,
) -> Result<Option<FixSet>, Stopped> {
    if groups
        .iter()
        .any(|g| g.fix.as_ref().is_some_and(FixCheck::passes_all))
    {
        return Ok(None);
    }
    let fixable = |g: &CauseGroup| !g.fixes.is_empty() || g.replace.is_some();
    let unfixable: Vec<usize> = (0..groups.len())
        .filter(|&c| !fixable(&groups[c]))
        .collect();
    let judged: Vec<Judged> = unfixable
        .iter()
        .map(|&c| Judged::of(c, &groups[c]))
        .collect();
    // Each cause's syncs (or replacement) are one unit: kept or dropped
    // together.
    let mut units: Vec<Unit> = Vec::new();
    for g in groups.iter().filter(|g| fixable(g)) {
        let mut u = g.fixes.clone();
        u.sort_by_key(|f| (f.after, f.ino));
        let u = (u, g.replace.iter().cloned().collect());
        if !units.contains(&u) {
            units.push(u);
        }
    }
    if units.is_empty() {
        return Ok(None);
    }
    let (set, replaces) = union(&units);
    // Already verified as one cause's fix on every state (and not enough).
    if unfixable.is_empty()
        && groups.iter().any(|g| {
            g.fix
                .as_ref()
                .is_some_and(|f| f.syncs == set && f.replaced == replaces && !f.cut_short)
        })
    {
        return Ok(None);
    }
    let mut budget = FIX_SET_VERIFICATIONS_MAX.min(s.fix_verifications);
    let every = |ask: &mut dyn Ask, set: &[SyncFix], replaces: &[Replace], cache: &mut Cache| {
        verify_set(s, ask, model, (set, replaces), cache, (owners, &judged))
    };
    let mut best = match every(ask, &set, &replaces, cache)? {
        Some((check, _, true)) => check,
        Some((check, _, _)) if check.cut_short => {
            return Ok(Some(FixSet::CutShort { tried: check }))
        }
        Some((check, theirs, _)) => {
            return Ok(Some(FixSet::NotFound {
                tried: check,
                unfixable,
                unfixable_failing: theirs,
            }))
        }
        None => return Ok(None),
    };
    budget -= 1;
    let mut i = 0;
    let mut out_of_time = false;
    while i < units.len() && units.len() > 1 && budget > 0 {
        let mut fewer = units.clone();
        fewer.remove(i);
        budget -= 1;
        let (set, replaces) = union(&fewer);
        match every(ask, &set, &replaces, cache)? {
            Some((check, _, true)) => {
                units = fewer;
                best = check;
            }
            // Each sync left was not tried without: the set may not be
            // the smallest.
            Some((check, _, _)) if check.cut_short => {
                out_of_time = true;
                break;
            }
            _ => i += 1,
        }
    }
    Ok(Some(FixSet::Found {
        minimal: !out_of_time && (i >= units.len() || units.len() == 1),
        check: best,
        unfixable,
    }))
}

/// A fix set's check (its `simplest_failing` the simplest of the states
/// not of the causes no sync fixes, `judged`), how many of the states
/// still failing are theirs, and whether it passes: no state still failing
/// but theirs.
fn verify_set(
    s: &Analysis<'_>,
    ask: &mut dyn Ask,
    model: Model,
    fix: (&[SyncFix], &[Replace]),
    cache: &mut Cache,
    (owners, judged): (&Owners, &[Judged]),
) -> Result<Option<(FixCheck, usize, bool)>, Stopped> {
    let checks = verify_fix(s, ask, model, fix, Said::default(), cache, (owners, judged))?;
    let theirs: usize = checks
        .iter()
        .flatten()
        .filter_map(|c| c.own.as_ref())
        .map(|o| o.still_failing)
        .sum();
    Ok(checks.into_iter().next().flatten().map(|mut check| {
        let passes = !check.cut_short && check.still_failing == theirs;
        check.passes = !check.cut_short && check.still_failing == 0;
        check.own = None;
        (check, theirs, passes)
    }))
}

/// One cause's syncs and replacements, kept or dropped together in a fix
/// set.
type Unit = (Vec<SyncFix>, Vec<Replace>);

/// The syncs and replacements of `units` together, each once, in order.
fn union(units: &[Unit]) -> Unit {
    let mut set: Vec<SyncFix> = Vec::new();
    let mut replaces: Vec<Replace> = Vec::new();
    for (syncs, rs) in units {
        for f in syncs {
            if !set.iter().any(|g| (g.after, g.ino) == (f.after, f.ino)) {
                set.push(f.clone());
            }
        }
        for r in rs {
            if !replaces.contains(r) {
                replaces.push(r.clone());
            }
        }
    }
    set.sort_by_key(|f| (f.after, f.ino));
    replaces.sort_by_key(|r| (r.first, r.ino));
    (set, replaces)
}

/// The enumeration settings a fix verification of a trace of `ops`
/// explores with: the run's, its representatives fixed as the run resolved
/// them (the added syncs must not carry a trace just under
/// [`blackout_explore::enumerate::REPRESENTATIVES_MIN_OPS`] over it).
pub fn explore_as_the_run(cfg: &ExploreConfig, ops: &[Op]) -> ExploreConfig {
    ExploreConfig {
        representatives: match cfg.representatives.per_class(ops) {
            Some(n) => Representatives::PerClass(n),
            None => Representatives::Exhaustive,
        },
        ..cfg.clone()
    }
}

/// How often the watcher of a time bound looks at the clock and the
/// cancel flag.
const BOUND_POLL: Duration = Duration::from_millis(20);

/// Runs `body` with a stop flag for it to watch: the `cancel` flag itself
/// when there is no `deadline`; else a flag a watcher thread sets when
/// `cancel` is set or the deadline passes.
fn bounded<T>(
    cancel: Option<&AtomicBool>,
    deadline: Option<Instant>,
    body: impl FnOnce(Option<&AtomicBool>) -> T,
) -> T {
    let Some(deadline) = deadline else {
        return body(cancel);
    };
    let stop = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                let now = Instant::now();
                if now >= deadline || cancel.is_some_and(|c| c.load(Ordering::SeqCst)) {
                    stop.store(true, Ordering::SeqCst);
                    return;
                }
                std::thread::park_timeout((deadline - now).min(BOUND_POLL));
            }
        });
        let out = body(Some(&stop));
        done.store(true, Ordering::SeqCst);
        watcher.thread().unpark();
        out
    })
}

/// The trace with the syncs added (`with`'s) explored under `model` with
/// `explore`, the rest too when the run checked every one of its own
/// states ([`Analysis::check_rest`]), stopped when the run's `cancel` flag
/// is set or at the fix deadline (then `Interrupted`, and the run's own
/// cancel flag not set).
pub fn explore_with_syncs(
    s: &Analysis<'_>,
    with: &Analysis<'_>,
    cancel: Option<&AtomicBool>,
    model: Model,
    explore: &ExploreConfig,
) -> Result<Explored, Stopped> {
    bounded(cancel, s.fix_deadline, |stop| {
        let watch = Watch {
            cancel: stop,
            progress: None,
        };
        let mut explored =
            distinct_states_watched(with.trace, with.outputs, &[model], explore, s.sector, watch)?;
        if s.check_rest && !explored.in_full {
            let rest = explore_rest(
                with.trace,
                with.outputs,
                explore,
                s.sector,
                watch,
                &explored,
                REST_BOUND,
            )?;
            explored.absorb(rest);
        }
        Ok::<_, Stopped>(explored)
    })
}

/// Verifies one fix: explores the trace with its syncs added (and its
/// updates replaced) as the run explored its own, and checks the states the
/// syncs change first (at crash points after the first of them), most
/// novel first, until [`Analysis::verify_deadline`]: states of the trace
/// with syncs added are states of the trace as recorded, so most of them
/// are known when the run checked its own. A check that does not get
/// through them says how many it checked (not `exact`). At
/// [`Analysis::fix_deadline`] a re-exploration not finished is stopped and
/// the check says it was cut short; after it, none starts.
///
/// The fix is judged for each cause in `judged` on that cause's states
/// ([`OwnCheck`]: a still-failing state `owners` gives to it, or one the run
/// never saw fail that explains as it), one check each; with none judged,
/// on every state (the fix for every cause), one check. `ask` checks the
/// states. `None` if the checker could not be run.
pub fn verify_fix(
    s: &Analysis<'_>,
    ask: &mut dyn Ask,
    model: Model,
    (fixes, replaces): (&[SyncFix], &[Replace]),
    said: Said<'_>,
    cache: &mut Cache,
    (owners, judged): (&Owners, &[Judged]),
) -> Result<Vec<Option<FixCheck>>, Stopped> {
    let each = |check: Option<FixCheck>| vec![check; judged.len().max(1)];
    let (trace, added) = replace::with_fixes(s.trace, fixes, replaces);
    let cut_short = unverified(s.trace, (fixes, replaces), said, &added);
    if s.fix_deadline.is_some_and(|d| Instant::now() >= d) {
        return Ok(each(Some(cut_short)));
    }
    let outputs = Outputs::new(&trace, s.ack_prefix);
    let explore = explore_as_the_run(s.explore, &s.trace.ops);
    let s2 = Analysis {
        trace: &trace,
        outputs: &outputs,
        ..*s
    };
    let explored = match explore_with_syncs(s, &s2, ask.cancel_flag(), model, &explore) {
        Ok(e) => e,
        Err(Stopped::Interrupted) if !ask.cancelled() => return Ok(each(Some(cut_short))),
        Err(e) => return Err(e),
    };
    // The states the syncs change first: at crash points after the first.
    let first = added.first().copied().unwrap_or(0);
    let mut order = check_order(&explored, |k| cache.contains_key(k));
    order.sort_by_key(|&i| explored.distinct[i].desc.crash <= first);
    let deadline = s.verify_deadline.or(s.fix_deadline);
    let Ok(results) = ask.check(&trace, &outputs, &explored, cache, &order, deadline)? else {
        return Ok(each(None));
    };
    let m = &explored.models[0];
    let states_checked = m
        .reach
        .iter()
        .filter(|(i, _)| results[*i].is_some())
        .count();
    if states_checked == 0 && !m.reach.is_empty() {
        // The bound ended it before a state was checked: nothing known.
        return Ok(each(Some(cut_short)));
    }
    // The states still failing, simplest first.
    let (failing, _) = sorted_results(&s2, m, &results);
    let cx = explain::Context::with_added_syncs(&trace, &outputs, &added);
    let mut known = StateKeys::new(&trace, &outputs, s.sector);
    let mut explain = |c: &Checked| {
        let reason = fail_reason(&c.outcome);
        explain::explain(&cx, &c.desc(), reason, &mut |d| known.rejected(cache, d))
    };
    let base = FixCheck {
        passes: failing.is_empty(),
        exact: explored.in_full && states_checked == m.reach.len(),
        cut_short: false,
        states: m.reach.len(),
        states_checked,
        still_failing: failing.len(),
        simplest_failing: None,
        ..cut_short
    };
    if judged.is_empty() {
        let simplest_failing = failing.first().map(|c| (c.id.clone(), explain(c).sentence));
        return Ok(vec![Some(FixCheck {
            simplest_failing,
            ..base
        })]);
    }
    // Each still-failing state with its content key.
    let key_of: HashMap<String, StateKey> = m
        .reach
        .iter()
        .filter(|(i, _)| matches!(results[*i], Some(Outcome::Fail { .. })))
        .map(|(i, d)| (d.id(), explored.distinct[*i].key))
        .collect();
    let whose = Whose {
        key_of: &key_of,
        owners,
        trace: &trace,
    };
    Ok(judge(base, &failing, whose, judged, &mut explain))
}

/// A fix's check before (or without) its verification: described, and
/// cut short.
fn unverified(
    trace: &Trace,
    (fixes, replaces): (&[SyncFix], &[Replace]),
    said: Said<'_>,
    added: &[usize],
) -> FixCheck {
    let mut parts: Vec<String> = replaces.iter().map(|r| r.describe(trace)).collect();
    if !fixes.is_empty() {
        parts.push(describe_fix(trace, fixes, said));
    }
    FixCheck {
        description: parts.join(", and "),
        syncs: fixes.to_vec(),
        replaced: replaces.to_vec(),
        added_at: added.to_vec(),
        passes: false,
        exact: false,
        cut_short: true,
        states: 0,
        states_checked: 0,
        still_failing: 0,
        simplest_failing: None,
        own: None,
    }
}

/// What tells whose a state still failing with a fix is: the content key
/// of each, the run's owners of content keys, and the trace with the fix.
struct Whose<'a> {
    key_of: &'a HashMap<String, StateKey>,
    owners: &'a Owners,
    trace: &'a Trace,
}

/// The check of a fix for each cause of `judged`: on the states still
/// failing with it (`failing`) that are that cause's: the cause the run
/// gave one, else (a state the run never saw fail) the cause it explains
/// as (same kind, on one of the cause's files).
fn judge(
    base: FixCheck,
    failing: &[Checked],
    by: Whose<'_>,
    judged: &[Judged],
    explain: &mut dyn FnMut(&Checked) -> explain::Cause,
) -> Vec<Option<FixCheck>> {
    let trace = by.trace;
    let mut whose: Vec<Option<usize>> = failing
        .iter()
        .map(|c| {
            by.key_of
                .get(&c.id)
                .and_then(|k| by.owners.of.get(k))
                .copied()
        })
        .collect();
    // The states the run never saw fail, explained in crash-point order
    // (the keys an explanation asks for are made along the crash points:
    // in any other order each would start again from the first).
    let mut unowned: Vec<usize> = (0..failing.len()).filter(|&i| whose[i].is_none()).collect();
    unowned.sort_by_key(|&i| failing[i].crash);
    // Their sentences, kept for the simplest states named below.
    let mut said: HashMap<usize, String> = HashMap::new();
    for i in unowned {
        let cause = explain(&failing[i]);
        let op = &trace.ops[cause.blamed.op];
        let path = match &cause.fix {
            Some(f) => f.path.clone(),
            None => trace.show_path(&op.path),
        };
        let path = role(&path);
        whose[i] = judged
            .iter()
            .find(|j| j.kind == cause.kind && j.paths.contains(&path))
            .map(|j| j.cause);
        said.insert(i, cause.sentence);
    }
    let mut simplest = |i: Option<usize>| {
        i.map(|i| {
            let why = match said.remove(&i) {
                Some(why) => why,
                None => explain(&failing[i]).sentence,
            };
            (failing[i].id.clone(), why)
        })
    };
    // The simplest state none of the judged causes owns: another cause's.
    let is_judged = |w: Option<usize>| judged.iter().any(|j| Some(j.cause) == w);
    let base = FixCheck {
        simplest_failing: simplest((0..failing.len()).find(|&i| !is_judged(whose[i]))),
        ..base
    };
    judged
        .iter()
        .map(|j| {
            let own: Vec<usize> = (0..failing.len())
                .filter(|&i| whose[i] == Some(j.cause))
                .collect();
            Some(FixCheck {
                passes: own.is_empty(),
                own: Some(OwnCheck {
                    states: j.states,
                    still_failing: own.len(),
                    simplest_failing: simplest(own.first().copied()),
                }),
                ..base.clone()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use blackout_explore::enumerate::REPRESENTATIVES_MIN_OPS;
    use blackout_oplog::ops::test_ops::write;

    use super::*;
    use crate::report::{fix_time_bound, FIX_SECONDS_MIN};

    #[test]
    fn verifications_explore_with_the_runs_representatives() {
        let cfg = |representatives| ExploreConfig {
            representatives,
            ..ExploreConfig::default()
        };
        let n = REPRESENTATIVES_MIN_OPS;
        let ops = |n: usize| -> Vec<Op> { (0..n).map(|_| write(1)).collect() };
        // A run just under the threshold explored every crash point; its
        // fix, a few ops longer, does too.
        assert_eq!(
            explore_as_the_run(&cfg(Representatives::Auto), &ops(n)).representatives,
            Representatives::Exhaustive
        );
        assert_eq!(
            explore_as_the_run(&cfg(Representatives::Auto), &ops(n + 1)).representatives,
            Representatives::PerClass(Representatives::Auto.per_class(&ops(n + 1)).unwrap())
        );
        for r in [Representatives::Exhaustive, Representatives::PerClass(2)] {
            let c = explore_as_the_run(&cfg(r), &ops(10 * n));
            assert_eq!(c.representatives, r);
            assert_eq!(c.budget, ExploreConfig::default().budget);
        }
    }

    #[test]
    fn the_time_bound_is_the_runs_time_with_a_floor() {
        assert_eq!(fix_time_bound(0.0), Duration::from_secs(FIX_SECONDS_MIN));
        assert_eq!(
            fix_time_bound(f64::NAN),
            Duration::from_secs(FIX_SECONDS_MIN)
        );
        assert_eq!(fix_time_bound(90.5), Duration::from_secs_f64(90.5));
    }
}
