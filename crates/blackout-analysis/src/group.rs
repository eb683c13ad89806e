//! One model's result: its verdict, its failing states simplest first, and
//! their causes grouped (by kind and blamed op, or by source line), each
//! group's fix verified by re-exploring the trace with the added syncs.

use blackout_check::outcome::Outcome;
use blackout_check::pool::{Cache, Pool};
use blackout_explore::dedup::{distinct_states_watched, simplicity, ModelStates, Watch};
use blackout_explore::enumerate::{ExploreConfig, StateDesc};
use blackout_explore::model::Model;
use blackout_oplog::promises::Outputs;

use crate::explain::{self, SyncFix};
use crate::report::{CauseGroup, Checked, FixCheck, FixSet, ModelReport, Verdict};
use crate::RunError;

/// What analysing a run needs: the pool that checked it (to check the states
/// a fix verification adds) and the settings it explored with.
#[derive(Clone, Copy)]
pub struct Analysis<'a> {
    /// The pool, on the run's trace.
    pub pool: Pool<'a>,
    /// Enumeration settings.
    pub explore: &'a ExploreConfig,
    /// Only lines starting with this are promises.
    pub promise_prefix: Option<&'a [u8]>,
    /// Distinct fixes verified per model.
    pub fix_verifications: usize,
}

impl<'a> Analysis<'a> {
    /// A checked state as reported.
    pub fn checked(&self, desc: &StateDesc, outcome: Outcome) -> Checked {
        Checked {
            id: desc.id(),
            crash: desc.crash,
            lost: desc.lost.clone(),
            torn: desc.torn,
            promises: self.promises(desc.crash),
            outcome,
        }
    }

    fn promises(&self, crash: usize) -> Vec<String> {
        self.pool
            .outputs
            .promises_at(crash)
            .iter()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect()
    }
}

/// Failing states of one model and states that could not be checked, simplest first.
pub fn sorted_results(
    s: &Analysis<'_>,
    m: &ModelStates,
    results: &[Outcome],
) -> (Vec<Checked>, Vec<Checked>) {
    let mut failing = Vec::new();
    let mut errors = Vec::new();
    for (i, desc) in &m.reach {
        match &results[*i] {
            o @ Outcome::Fail { .. } => failing.push(s.checked(desc, o.clone())),
            o @ Outcome::TimedOut { .. } => errors.push(s.checked(desc, o.clone())),
            _ => {}
        }
    }
    let order = |a: &Checked, b: &Checked| simplicity(&a.desc()).cmp(&simplicity(&b.desc()));
    failing.sort_by(order);
    errors.sort_by(order);
    (failing, errors)
}

/// Distinct fixes verified per model at the most (each re-explores the
/// trace; causes that share a fix share its verification).
pub const FIX_VERIFICATIONS_MAX: usize = 16;

/// One model's result: its verdict, failing states, and their causes grouped,
/// each with its fix verified.
pub fn model_report(
    s: &Analysis<'_>,
    m: &ModelStates,
    results: &[Outcome],
    cache: &mut Cache,
) -> Result<ModelReport, RunError> {
    let (failing, errors) = sorted_results(s, m, results);
    let verdict = if !failing.is_empty() {
        Verdict::Fail
    } else if !errors.is_empty() {
        Verdict::Error
    } else {
        Verdict::Pass
    };
    let cx = explain::Context::new(s.pool.trace, s.pool.outputs);
    let mut groups: Vec<CauseGroup> = Vec::new();
    for c in &failing {
        let desc = c.desc();
        let cause = explain::explain(&cx, &desc, &mut |d| {
            cache.get(&s.pool.key(d)).is_some_and(Outcome::is_fail)
        });
        // One cause per kind and place: the source line that issued the
        // blamed op when it is known (--stacks), else the op itself.
        let source = s.pool.trace.ops[cause.blamed.op]
            .origin
            .as_ref()
            .and_then(|o| Some(format!("{}:{}", o.file.as_deref()?, o.line?)));
        let same = |g: &CauseGroup| {
            g.cause.kind == cause.kind
                && match (&source, &g.source) {
                    (Some(a), Some(b)) => a == b,
                    (None, None) => g.cause.blamed == cause.blamed,
                    _ => false,
                }
        };
        match groups.iter_mut().find(|g| same(g)) {
            Some(g) => {
                g.states += 1;
                g.ids.push(c.id.clone());
                // A source line's fix covers every op it issued; otherwise
                // the simplest state's fix is the one verified.
                if let (Some(f), Some(_)) = (&cause.fix, &g.source) {
                    if !g.fixes.contains(f) {
                        g.fixes.push(f.clone());
                    }
                }
            }
            None => {
                let nothing_lost = StateDesc {
                    crash: c.crash,
                    lost: Vec::new(),
                    torn: None,
                };
                let process_passes = if desc.damage() == 0 {
                    Some(false)
                } else {
                    cache
                        .get(&s.pool.key(&nothing_lost))
                        .map(|o| *o == Outcome::Pass)
                };
                groups.push(CauseGroup {
                    latest_promise: s
                        .pool
                        .outputs
                        .latest_promise_before(c.crash)
                        .map(|(_, l)| String::from_utf8_lossy(l).into_owned()),
                    fixes: cause.fix.iter().cloned().collect(),
                    cause,
                    source,
                    states: 1,
                    ids: vec![c.id.clone()],
                    simplest: c.clone(),
                    process_passes,
                    fix: None,
                });
            }
        }
    }
    merge_torn_into_lost(&mut groups);
    order_by_what_breaks(s, &mut groups);
    // Verify each distinct fix once, in the order of the causes (most
    // serious first, so a small budget goes to them). A cause
    // found at one source line is fixed at every op that line issued.
    let mut verified: Vec<(Vec<SyncFix>, Option<FixCheck>)> = Vec::new();
    for g in groups.iter_mut() {
        if g.fixes.is_empty() {
            continue;
        }
        let mut fixes = g.fixes.clone();
        fixes.sort_by_key(|f| (f.after, f.ino));
        if let Some((_, done)) = verified.iter().find(|(f, _)| *f == fixes) {
            g.fix = done.clone();
        } else if verified.len() < s.fix_verifications {
            g.fix = verify_fix(s, m.model, &fixes, g.source.as_deref(), cache)?;
            verified.push((fixes, g.fix.clone()));
        }
    }
    let fix_set = if verdict == Verdict::Fail && s.fix_verifications > 0 {
        fix_set(s, m.model, &groups, cache)?
    } else {
        None
    };
    Ok(ModelReport {
        model: m.model,
        verdict,
        states: m.states,
        distinct: m.reach.len(),
        failing,
        errors,
        coverage: m.coverage.clone(),
        causes: groups,
        fix_set,
    })
}

/// What a cause breaks, most serious first: a promise lost (its blamed op
/// came before the latest promise), damage after a promise to something
/// not yet promised, a failure before anything was promised.
fn breaks(s: &Analysis<'_>, g: &CauseGroup) -> u8 {
    match s.pool.outputs.latest_promise_before(g.simplest.crash) {
        Some((p, _)) if g.cause.blamed.op < p => 0,
        Some(_) => 1,
        None => 2,
    }
}

/// Orders causes by what they break, keeping simplest-first within each
/// rank (the sort is stable).
fn order_by_what_breaks(s: &Analysis<'_>, groups: &mut [CauseGroup]) {
    groups.sort_by_key(|g| breaks(s, g));
}

/// Verifications one fix-set search may make.
pub const FIX_SET_VERIFICATIONS_MAX: usize = 8;

/// When no cause's own fix makes every state pass, the smallest set of the
/// proposed syncs found that does: all of them verified together, then each
/// dropped in turn while the rest still pass (at most
/// [`FIX_SET_VERIFICATIONS_MAX`] re-explorations, and no more than
/// `--verify-fixes`). `None` when one cause's fix already passes, when a
/// cause no sync can fix says so itself, or when the set is one cause's
/// fix, already verified.
fn fix_set(
    s: &Analysis<'_>,
    model: Model,
    groups: &[CauseGroup],
    cache: &mut Cache,
) -> Result<Option<FixSet>, RunError> {
    if groups.is_empty()
        || groups
            .iter()
            .any(|g| g.fix.as_ref().is_some_and(|f| f.passes))
    {
        return Ok(None);
    }
    // A cause no sync can fix says so itself.
    if groups.iter().any(|g| g.fixes.is_empty()) {
        return Ok(None);
    }
    let mut set: Vec<SyncFix> = Vec::new();
    for f in groups.iter().flat_map(|g| g.fixes.iter()) {
        if !set.contains(f) {
            set.push(f.clone());
        }
    }
    set.sort_by_key(|f| (f.after, f.ino));
    // Already verified as one cause's fix (and not enough).
    if groups
        .iter()
        .any(|g| g.fix.as_ref().is_some_and(|f| f.syncs == set))
    {
        return Ok(None);
    }
    let mut budget = FIX_SET_VERIFICATIONS_MAX.min(s.fix_verifications);
    let mut best = match verify_fix(s, model, &set, None, cache)? {
        Some(check) if check.passes => check,
        Some(check) => return Ok(Some(FixSet::NotFound { tried: check })),
        None => return Ok(None),
    };
    budget -= 1;
    let mut i = 0;
    while i < set.len() && set.len() > 1 && budget > 0 {
        let mut fewer = set.clone();
        fewer.remove(i);
        budget -= 1;
        match verify_fix(s, model, &fewer, None, cache)? {
            Some(check) if check.passes => {
                set = fewer;
                best = check;
            }
            _ => i += 1,
        }
    }
    Ok(Some(FixSet::Found {
        minimal: i >= set.len() || set.len() == 1,
        check: best,
    }))
}

/// Whether a cause kind is only ever given to a torn write.
fn is_torn(kind: explain::CauseKind) -> bool {
    matches!(
        kind,
        explain::CauseKind::TornWriteUnordered | explain::CauseKind::TornTail
    )
}

/// A torn write whose loss is also a cause, where the same sync is the fix
/// of both, is one cause: the missing sync. Its states join that group.
fn merge_torn_into_lost(groups: &mut Vec<CauseGroup>) {
    let mut i = 0;
    while i < groups.len() {
        let g = &groups[i];
        let same = (is_torn(g.cause.kind) && !g.fixes.is_empty())
            .then(|| {
                groups.iter().position(|h| {
                    !is_torn(h.cause.kind)
                        && h.cause.blamed.op == g.cause.blamed.op
                        && h.fixes == g.fixes
                })
            })
            .flatten();
        match same {
            Some(j) => {
                let g = groups.remove(i);
                let j = if j > i { j - 1 } else { j };
                let torn = &g.simplest.id;
                groups[j].cause.sentence.push_str(&format!(
                    "; torn instead of lost ({torn}), it is rejected too"
                ));
                groups[j].states += g.states;
                groups[j].ids.extend(g.ids);
            }
            None => i += 1,
        }
    }
}

/// Re-explores the trace with the added syncs under `model` and checks
/// every state the cache does not know. `None` if the checker could not be
/// run.
pub fn verify_fix(
    s: &Analysis<'_>,
    model: Model,
    fixes: &[SyncFix],
    source: Option<&str>,
    cache: &mut Cache,
) -> Result<Option<FixCheck>, RunError> {
    let (trace, added) = explain::with_syncs(s.pool.trace, fixes);
    let outputs = Outputs::new(&trace, s.promise_prefix);
    let s2 = Analysis {
        pool: s.pool.for_trace(&trace, &outputs),
        ..*s
    };
    let watch = Watch {
        cancel: s.pool.cfg.cancel,
        progress: None,
    };
    let explored = distinct_states_watched(
        &trace,
        &outputs,
        &[model],
        s.explore,
        s.pool.cfg.sector,
        watch,
    )?;
    let Ok(results) = s2.pool.check_distinct(&explored, cache)? else {
        return Ok(None);
    };
    let m = &explored.models[0];
    let (failing, _) = sorted_results(&s2, m, &results);
    let cx = explain::Context::with_added_syncs(&trace, &outputs, &added);
    let still = failing.first().map(|c| {
        let cause = explain::explain(&cx, &c.desc(), &mut |d| {
            cache.get(&s2.pool.key(d)).is_some_and(Outcome::is_fail)
        });
        (c.id.clone(), cause.sentence)
    });
    let description = match (fixes, source) {
        ([one], _) => one.describe(s.pool.trace),
        ([a, b], None) => format!(
            "{} and {}",
            a.describe(s.pool.trace),
            b.describe(s.pool.trace)
        ),
        (many, Some(src)) => format!(
            "fsync({}) after each of the {} ops issued at {src}",
            many[0].path,
            many.len()
        ),
        (many, None) => format!(
            "{} fsyncs ({})",
            many.len(),
            many.iter()
                .map(|f| f.describe(s.pool.trace))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Ok(Some(FixCheck {
        description,
        syncs: fixes.to_vec(),
        added_at: added,
        passes: failing.is_empty(),
        states: m.reach.len(),
        still_failing: failing.len(),
        simplest_failing: still,
    }))
}
