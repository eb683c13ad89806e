//! Fix search, a driver: each cause's syncs verified by re-exploring the trace with
//! them added and checking the states no run checked, within the run's own
//! time ([`blackout_analysis::report::fix_time_bound`], shared evenly between verifications); a
//! sampled run's fix goes after every op like the blamed ones that no sync
//! covers before its promise ([`like_ops_fixes`]); when no cause's fix
//! alone passes, the smallest set of the proposed syncs that does
//! ([`FIX_SET_VERIFICATIONS_MAX`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use blackout_check::pool::Cache;
use blackout_explore::dedup::{distinct_states_watched, Explored, ModelStates, StateKey, Watch};
use blackout_explore::enumerate::{ExploreConfig, Representatives};
use blackout_explore::model::Model;
use blackout_explore::rest::check_order;
use blackout_oplog::naming::line_words;
use blackout_oplog::ops::{Ino, Op, OpKind};
use blackout_oplog::outcome::Outcome;
use blackout_oplog::promises::Outputs;
use blackout_oplog::trace::Trace;

use blackout_analysis::explain::{self, SyncFix};
use blackout_analysis::group::{fail_reason, role, sorted_results, Analysis, StateKeys};
use blackout_analysis::replace::{self, Replace};
use blackout_analysis::report::{
    CauseGroup, Checked, FixCheck, FixSet, ModelReport, OwnCheck, Verdict,
};

use crate::sweep::{add_rest, RunError, Session};

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

/// Verifies the fixes of a model's causes ([`blackout_analysis::group::model_report`]): each
/// distinct fix once, judged on the states of each cause that proposed it
/// (`owners`), then the smallest set of syncs that fixes them all, judged
/// on every state. Stops at [`Analysis::fix_deadline`].
pub fn verify_fixes(
    s: &Session<'_>,
    report: &mut ModelReport,
    cache: &mut Cache,
    owners: &Owners,
) -> Result<(), RunError> {
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
            like_ops_fixes(s.pool.trace, s.pool.outputs, &mut g.fixes)
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
        let share = Session {
            analysis: Analysis {
                verify_deadline: share_of(s.fix_deadline, left),
                ..s.analysis
            },
            ..*s
        };
        left = left.saturating_sub(1).max(1);
        let judged: Vec<Judged> = plan
            .causes
            .iter()
            .map(|&c| Judged::of(c, &report.causes[c]))
            .collect();
        let fix = (&plan.fixes[..], &plan.replaces[..]);
        let checks = verify_fix(&share, model, fix, said, cache, (owners, &judged))?;
        for (j, check) in judged.iter().zip(checks) {
            report.causes[j.cause].fix = check;
        }
    }
    if report.verdict == Verdict::Fail && s.fix_verifications > 0 {
        report.fix_set = fix_set(s, model, &report.causes, cache, owners)?;
    }
    Ok(())
}

/// An even share of the time left before `deadline` for one of `n`
/// verifications: when the next one must end.
pub(crate) fn share_of(deadline: Option<Instant>, n: usize) -> Option<Instant> {
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
    s: &Session<'_>,
    model: Model,
    groups: &[CauseGroup],
    cache: &mut Cache,
    owners: &Owners,
) -> Result<Option<FixSet>, RunError> {
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
    let every = |s: &Session<'_>, set: &[SyncFix], replaces: &[Replace], cache: &mut Cache| {
        verify_set(s, model, (set, replaces), cache, (owners, &judged))
    };
    let mut best = match every(s, &set, &replaces, cache)? {
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
        match every(s, &set, &replaces, cache)? {
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
    s: &Session<'_>,
    model: Model,
    fix: (&[SyncFix], &[Replace]),
    cache: &mut Cache,
    (owners, judged): (&Owners, &[Judged]),
) -> Result<Option<(FixCheck, usize, bool)>, RunError> {
    let checks = verify_fix(s, model, fix, Said::default(), cache, (owners, judged))?;
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

/// Several syncs in few words, by file: `fsync(db) after ops 3, 7 and
/// before op 12, and fsync(.) after op 5 (log lines 140-162)` (`calls
/// 140-162` in a native recording).
pub fn describe_syncs(trace: &blackout_oplog::trace::Trace, fixes: &[SyncFix]) -> String {
    let mut paths: Vec<&str> = Vec::new();
    for f in fixes {
        if !paths.contains(&f.path.as_str()) {
            paths.push(&f.path);
        }
    }
    let ops = |what: &str, mut ns: Vec<usize>| match ns.len() {
        0 => None,
        1 => Some(format!("{what} op {}", ns[0])),
        _ => {
            ns.sort_unstable();
            ns.dedup();
            let list: Vec<String> = ns.iter().map(usize::to_string).collect();
            Some(format!("{what} ops {}", list.join(", ")))
        }
    };
    let parts: Vec<String> = paths
        .iter()
        .map(|p| {
            let of = || fixes.iter().filter(move |f| f.path == *p);
            let after = ops(
                "after",
                of().filter(|f| f.before.is_none())
                    .map(|f| f.after)
                    .collect(),
            );
            let before = ops("before", of().filter_map(|f| f.before).collect());
            let places: Vec<String> = after.into_iter().chain(before).collect();
            format!("fsync({p}) {}", places.join(" and "))
        })
        .collect();
    let lines = fixes
        .iter()
        .map(|f| trace.ops[f.before.unwrap_or(f.after)].line);
    let (lo, hi) = (lines.clone().min().unwrap_or(0), lines.max().unwrap_or(0));
    let at = line_words(trace.numbering, lo, hi);
    format!("{} fsyncs: {} ({at})", fixes.len(), parts.join(", and "))
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

/// How a fix's syncs were chosen, for its description: after every op a
/// source line issued (`source`), or after every op like the blamed ones
/// (`like` names them: `write calls on kv.log`); else each failing state's
/// own.
#[derive(Debug, Clone, Copy, Default)]
pub struct Said<'a> {
    /// The source line that issued the blamed ops.
    pub source: Option<&'a str>,
    /// The ops like the blamed ones, for people.
    pub like: Option<&'a str>,
}

/// A fix for people: one sync, two, every op of a source line, every op
/// like the blamed ones, or by file.
fn describe_fix(trace: &Trace, fixes: &[SyncFix], said: Said<'_>) -> String {
    let one_file = fixes.iter().all(|f| f.ino == fixes[0].ino);
    match (fixes, said.source, said.like) {
        ([one], _, _) => one.describe(trace),
        (many, _, Some(like))
            if many
                .iter()
                .all(|f| f.before.is_some() && f.path == many[0].path) =>
        {
            let before = many.iter().filter_map(|f| f.before);
            let (first, last) = (before.clone().min(), before.max());
            format!(
                "fsync({}) before each of the {} {like} (ops {}-{})",
                many[0].path,
                many.len(),
                first.unwrap_or(0),
                last.unwrap_or(0)
            )
        }
        (many, _, Some(like)) => {
            let first = many.iter().map(|f| f.after).min().unwrap_or(0);
            let last = many.iter().map(|f| f.after).max().unwrap_or(0);
            if one_file {
                format!(
                    "fsync({}) after each of the {} {like} (ops {first}-{last})",
                    many[0].path,
                    many.len()
                )
            } else {
                format!(
                    "{} fsyncs, one after each of the {like} (ops {first}-{last}) of the file or directory it changed",
                    many.len()
                )
            }
        }
        ([a, b], None, None) => format!("{} and {}", a.describe(trace), b.describe(trace)),
        (many, Some(src), None) if one_file => format!(
            "fsync({}) after each of the {} ops issued at {src}",
            many[0].path,
            many.len()
        ),
        (many, _, _) => describe_syncs(trace, many),
    }
}

/// A cause found on a sample of the states (representatives, and as many
/// more as the check budget allowed) was seen only where it was checked;
/// the same sync belongs after every op like its blamed ones that nothing
/// makes durable in time: the same call on the same path (a file's own
/// fsync after each of its writes, its directory's after each of the entry
/// ops there) that no sync covers before the next promise is printed, and
/// a file's fsync before each rename like the one that published it
/// unsynced whose file is not synced before it (each renamed file's own,
/// right before its rename). `fixes` gets them; other syncs that must come
/// before an op stay as found. Returns the ops' name for people (`write
/// calls on kv.log`) when syncs were added.
pub fn like_ops_fixes(
    trace: &Trace,
    outputs: &Outputs,
    fixes: &mut Vec<SyncFix>,
) -> Option<String> {
    let synced = blackout_oplog::ops::synced_by(&trace.ops);
    let promises: Vec<usize> = outputs.each_promise().map(|(op, _)| op).collect();
    // Whether op `j` is durable before the first promise after it (before
    // the end of the trace when none follows).
    let covered = |j: usize| {
        let next = promises
            .get(promises.partition_point(|&p| p <= j))
            .copied()
            .unwrap_or(usize::MAX);
        let s = &synced[j];
        matches!((s.main, s.source), (Some(a), Some(b)) if a.max(b) < next)
    };
    let found = fixes.clone();
    let mut like: Vec<(String, String)> = Vec::new();
    for f in &found {
        if let Some(b) = f.before {
            if let Some(name) = like_renames_fixes(trace, &synced, f, b, fixes) {
                if !like.contains(&name) {
                    like.push(name);
                }
            }
            continue;
        }
        let blamed = &trace.ops[f.after];
        // The file's own fsync, or one of the directory it changed.
        let own = blamed.kind.inode() == Some(f.ino);
        let mut added = false;
        let mut paths: Vec<String> = Vec::new();
        for (j, op) in trace.ops.iter().enumerate() {
            if !alike(trace, op, blamed) || covered(j) {
                continue;
            }
            let (ino, path) = match own {
                true => match op.kind.inode() {
                    Some(ino) => (ino, trace.show_path(&op.path)),
                    None => continue,
                },
                false => (f.ino, f.path.clone()),
            };
            if !fixes.iter().any(|g| (g.after, g.ino) == (j, ino)) {
                let on = trace.show_path(&op.path);
                if !paths.contains(&on) {
                    paths.push(on);
                }
                fixes.push(SyncFix {
                    after: j,
                    before: None,
                    ino,
                    dir: f.dir,
                    path,
                });
                added = true;
            }
        }
        // Named by the file when all are on one, else by their role.
        let on = match paths.as_slice() {
            [] | [_] => trace.show_path(&blamed.path),
            _ => format!("files named like {}", role(&trace.show_path(&blamed.path))),
        };
        let name = (blamed.syscall.clone(), on);
        if added && !like.contains(&name) {
            like.push(name);
        }
    }
    match like.as_slice() {
        [] => None,
        [(call, path)] => Some(format!("{call} calls on {path}")),
        _ => Some("ops like the blamed ones".into()),
    }
}

/// Whether two ops are alike for a fix found at representatives: the same
/// call, of the same kind, on the same path or a file of the same role
/// ([`role`]: each of the logs a program rotates through).
fn alike(trace: &Trace, a: &Op, b: &Op) -> bool {
    a.syscall == b.syscall
        && std::mem::discriminant(&a.kind) == std::mem::discriminant(&b.kind)
        && (a.path == b.path || role(&trace.show_path(&a.path)) == role(&trace.show_path(&b.path)))
}

/// For `f`, a file's fsync right before rename `b` that publishes it: the
/// same fsync of each file renamed by a rename like `b` (the same call on
/// the same path), right before it, added to `fixes`. The renames' name
/// for people when any was added.
fn like_renames_fixes(
    trace: &Trace,
    synced: &[blackout_oplog::ops::SyncedBy],
    f: &SyncFix,
    b: usize,
    fixes: &mut Vec<SyncFix>,
) -> Option<(String, String)> {
    let publisher = &trace.ops[b];
    if !matches!(publisher.kind, OpKind::Rename { ino, .. } if ino == f.ino) {
        return None;
    }
    // Whether file `ino`'s last data op before op `r` is synced before it.
    let data_synced_before = |ino: Ino, r: usize| {
        let last = trace.ops[..r]
            .iter()
            .rposition(|o| o.kind.data_inode() == Some(ino));
        last.is_none_or(|j| synced[j].main.is_some_and(|s| s < r))
    };
    let mut added = false;
    for (r, op) in trace.ops.iter().enumerate().skip(1) {
        let OpKind::Rename { ino, .. } = op.kind else {
            continue;
        };
        if alike(trace, op, publisher)
            && !data_synced_before(ino, r)
            && !fixes.iter().any(|g| g.before == Some(r) && g.ino == ino)
        {
            fixes.push(SyncFix {
                after: r - 1,
                before: Some(r),
                ino,
                dir: f.dir,
                path: f.path.clone(),
            });
            added = true;
        }
    }
    added.then(|| (publisher.syscall.clone(), trace.show_path(&publisher.path)))
}

/// The trace with the syncs added (`with`'s) explored under `model` with
/// `explore`, the rest too when the run checked every one of its own
/// states, stopped at the fix deadline (then `Interrupted`, and the run's
/// own cancel flag not set).
pub(crate) fn explore_with_syncs(
    s: &Session<'_>,
    with: &Session<'_>,
    model: Model,
    explore: &ExploreConfig,
) -> Result<Explored, RunError> {
    bounded(s.pool.cfg.cancel, s.fix_deadline, |stop| {
        let watch = Watch {
            cancel: stop,
            progress: None,
        };
        let mut explored = distinct_states_watched(
            with.trace,
            with.outputs,
            &[model],
            explore,
            s.pool.cfg.sector,
            watch,
        )?;
        if s.check_rest && !explored.in_full {
            let mut pool = with.pool;
            pool.cfg.cancel = stop;
            add_rest(&pool, &mut explored, explore, watch)?;
        }
        Ok::<_, RunError>(explored)
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
/// on every state (the fix for every cause), one check. `None` if the
/// checker could not be run.
pub fn verify_fix(
    s: &Session<'_>,
    model: Model,
    (fixes, replaces): (&[SyncFix], &[Replace]),
    said: Said<'_>,
    cache: &mut Cache,
    (owners, judged): (&Owners, &[Judged]),
) -> Result<Vec<Option<FixCheck>>, RunError> {
    let each = |check: Option<FixCheck>| vec![check; judged.len().max(1)];
    let (trace, added) = replace::with_fixes(s.pool.trace, fixes, replaces);
    let cut_short = unverified(s.pool.trace, (fixes, replaces), said, &added);
    if s.fix_deadline.is_some_and(|d| Instant::now() >= d) {
        return Ok(each(Some(cut_short)));
    }
    let outputs = Outputs::new(&trace, s.ack_prefix);
    let explore = explore_as_the_run(s.explore, &s.pool.trace.ops);
    let s2 = s.for_trace(&trace, &outputs);
    let explored = match explore_with_syncs(s, &s2, model, &explore) {
        Ok(e) => e,
        Err(RunError::Interrupted) if !s.pool.cancelled() => return Ok(each(Some(cut_short))),
        Err(e) => return Err(e),
    };
    // The states the syncs change first: at crash points after the first.
    let first = added.first().copied().unwrap_or(0);
    let mut order = check_order(&explored, |k| cache.contains_key(k));
    order.sort_by_key(|&i| explored.distinct[i].desc.crash <= first);
    let deadline = s.verify_deadline.or(s.fix_deadline);
    let checked = s2
        .pool
        .check_distinct(&explored, cache, Some(&order), deadline)?;
    let Ok(results) = checked else {
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
    let mut known = StateKeys::new(&trace, &outputs, s.pool.cfg.sector);
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
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    use blackout_check::closure::ClosureChecker;
    use blackout_check::materialize::DirMaterializer;
    use blackout_check::pool::{Pool, PoolConfig, Scratch};
    use blackout_check::Checker;
    use blackout_explore::enumerate::REPRESENTATIVES_MIN_OPS;
    use blackout_oplog::ops::test_ops::write;

    use super::*;
    use blackout_analysis::report::{fix_time_bound, FIX_SECONDS_MIN};

    /// A file created and written, never fsynced, then "saved" printed.
    fn trace() -> Trace {
        blackout_record::replay::trace_of_log(
            b"1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT, 0644) = 3\n\
              1 write(3, \"\\x68\\x69\", 2) = 2\n\
              1 write(1, \"\\x73\\x61\\x76\\x65\\x64\\x0a\", 6) = 6\n",
            b"/d",
        )
        .unwrap()
    }

    /// The fix for the lost write: fsync(a) after it.
    fn fsync_a() -> Vec<SyncFix> {
        vec![SyncFix {
            after: 1,
            before: None,
            ino: 1,
            dir: false,
            path: "a".into(),
        }]
    }

    #[test]
    fn several_syncs_are_placed_by_log_lines_or_by_calls() {
        let mut t = trace();
        let mut fixes = fsync_a();
        fixes.push(SyncFix {
            after: 0,
            before: None,
            ino: 0,
            dir: true,
            path: ".".into(),
        });
        assert_eq!(
            describe_syncs(&t, &fixes),
            "2 fsyncs: fsync(a) after op 1, and fsync(.) after op 0 (log lines 1-2)"
        );
        t.numbering = blackout_oplog::trace::Numbering::Call;
        assert_eq!(
            describe_syncs(&t, &fixes),
            "2 fsyncs: fsync(a) after op 1, and fsync(.) after op 0 (calls 1-2)"
        );
    }

    /// What a checker that never answers by itself did: states it was
    /// called on, and the flag that lets it return.
    #[derive(Clone, Default)]
    struct Stuck {
        calls: Arc<AtomicUsize>,
        release: Arc<AtomicBool>,
    }

    impl Stuck {
        /// A checker that waits until released (at most a minute).
        fn checker(&self) -> ClosureChecker {
            let me = self.clone();
            ClosureChecker::new("stuck", move |_, _| {
                me.calls.fetch_add(1, Ordering::SeqCst);
                let t0 = Instant::now();
                while !me.release.load(Ordering::SeqCst) && t0.elapsed() < Duration::from_secs(60) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Ok(())
            })
        }
    }

    /// Verifies `fsync_a` with `checker`, an empty cache (every state of
    /// the re-exploration is checked) and `deadline`.
    fn verify(
        checker: &dyn Checker,
        deadline: Option<Instant>,
        cancel: Option<&AtomicBool>,
    ) -> Result<Option<FixCheck>, RunError> {
        let trace = trace();
        let outputs = Outputs::new(&trace, None);
        let scratch = Scratch::new(&std::env::temp_dir()).unwrap();
        let explore = ExploreConfig::default();
        let s = Session {
            pool: Pool {
                trace: &trace,
                outputs: &outputs,
                cfg: PoolConfig {
                    checker,
                    materializer: &DirMaterializer::default(),
                    jobs: 2,
                    sector: 512,
                    cancel,
                    progress: None,
                },
                scratch: &scratch,
            },
            analysis: Analysis {
                trace: &trace,
                outputs: &outputs,
                sector: 512,
                explore: &explore,
                ack_prefix: None,
                fix_verifications: FIX_VERIFICATIONS_MAX,
                fix_deadline: deadline,
                check_rest: true,
                promised: &Arc::from(Vec::new()),
                verify_deadline: None,
            },
        };
        let mut cache = Cache::new();
        let check = verify_fix(
            &s,
            Model::Posix,
            (&fsync_a(), &[]),
            Said::default(),
            &mut cache,
            (&Owners::default(), &[]),
        );
        scratch.remove().unwrap();
        check.map(|mut c| c.remove(0))
    }

    #[test]
    fn a_verification_still_checking_at_its_deadline_is_cut_short() {
        let stuck = Stuck::default();
        let checker = stuck.checker();
        let deadline = Instant::now() + Duration::from_millis(200);
        let t0 = Instant::now();
        let check = verify(&checker, Some(deadline), None).unwrap().unwrap();
        stuck.release.store(true, Ordering::SeqCst);
        // The checker never answers, so the bound ends the verification
        // (its checkers stopped) before any state is checked: the fix is
        // neither verified nor refuted.
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the stuck checkers were not stopped"
        );
        assert!(check.cut_short, "{check:?}");
        assert!(!check.passes && !check.exact);
        assert_eq!((check.states, check.still_failing), (0, 0));
        assert!(check.simplest_failing.is_none());
        assert_eq!(check.description, "fsync(a) after op 1 (log line 2)");
    }

    #[test]
    fn no_verification_starts_after_the_deadline() {
        let stuck = Stuck::default();
        stuck.release.store(true, Ordering::SeqCst);
        let checker = stuck.checker();
        let check = verify(&checker, Some(Instant::now()), None)
            .unwrap()
            .unwrap();
        assert!(check.cut_short && !check.passes, "{check:?}");
        assert_eq!(stuck.calls.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_verification_within_its_bound_is_verified() {
        let checker = ClosureChecker::new("a whole", |dir, promised| {
            if promised.is_empty() || std::fs::read(dir.join("a")).is_ok_and(|b| b == b"hi") {
                Ok(())
            } else {
                Err("a lost".into())
            }
        });
        let deadline = Instant::now() + Duration::from_secs(600);
        let check = verify(&checker, Some(deadline), None).unwrap().unwrap();
        assert!(!check.cut_short, "{check:?}");
        // fsync(a) alone does not make the create durable: the directory
        // entry can still be lost.
        assert!(!check.passes && check.states > 0 && check.still_failing > 0);
    }

    #[test]
    fn a_cancelled_run_is_interrupted_not_cut_short() {
        let stuck = Stuck::default();
        let checker = stuck.checker();
        let cancel = AtomicBool::new(false);
        let deadline = Instant::now() + Duration::from_secs(600);
        let check = std::thread::scope(|scope| {
            scope.spawn(|| {
                while stuck.calls.load(Ordering::SeqCst) == 0 {
                    std::thread::sleep(Duration::from_millis(5));
                }
                cancel.store(true, Ordering::SeqCst);
            });
            verify(&checker, Some(deadline), Some(&cancel))
        });
        stuck.release.store(true, Ordering::SeqCst);
        assert!(matches!(check, Err(RunError::Interrupted)), "{check:?}");
    }

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
    fn a_fix_found_at_representatives_goes_after_every_like_op() {
        // Three appends to `a`, each promised before any fsync.
        let t = blackout_record::replay::trace_of_log(
            b"1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT|O_APPEND, 0644) = 3\n\
              1 write(3, \"\\x31\", 1) = 1\n\
              1 write(1, \"\\x31\\x0a\", 2) = 2\n\
              1 write(3, \"\\x32\", 1) = 1\n\
              1 write(1, \"\\x32\\x0a\", 2) = 2\n\
              1 write(3, \"\\x33\", 1) = 1\n\
              1 write(1, \"\\x33\\x0a\", 2) = 2\n",
            b"/d",
        )
        .unwrap();
        let mut fixes = fsync_a();
        let like = like_ops_fixes(&t, &Outputs::new(&t, None), &mut fixes);
        assert_eq!(like.as_deref(), Some("write calls on a"));
        let after: Vec<usize> = fixes.iter().map(|f| f.after).collect();
        assert_eq!(after, [1, 3, 5]);
        assert!(fixes
            .iter()
            .all(|f| f.ino == 1 && !f.dir && f.before.is_none()));
        let said = Said {
            source: None,
            like: like.as_deref(),
        };
        assert_eq!(
            describe_fix(&t, &fixes, said),
            "fsync(a) after each of the 3 write calls on a (ops 1-5)"
        );
        // Nothing like it left: nothing added.
        assert_eq!(
            like_ops_fixes(&t, &Outputs::new(&t, None), &mut fixes),
            None
        );
        // A sync that must precede an op stays as found.
        let mut before = vec![SyncFix {
            before: Some(2),
            ..fsync_a()[0].clone()
        }];
        assert_eq!(
            like_ops_fixes(&t, &Outputs::new(&t, None), &mut before),
            None
        );
        assert_eq!(before.len(), 1);
    }

    #[test]
    fn like_ops_a_sync_covers_before_their_promise_get_no_fix() {
        // Three appends to `a`, the first and last fdatasynced before
        // their promise, the second not: the fix found for the second
        // goes after it alone.
        let t = blackout_record::replay::trace_of_log(
            b"1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT|O_APPEND, 0644) = 3\n\
              1 write(3, \"\\x31\", 1) = 1\n\
              1 fdatasync(3) = 0\n\
              1 write(1, \"\\x31\\x0a\", 2) = 2\n\
              1 write(3, \"\\x32\", 1) = 1\n\
              1 write(1, \"\\x32\\x0a\", 2) = 2\n\
              1 write(3, \"\\x33\", 1) = 1\n\
              1 fdatasync(3) = 0\n\
              1 write(1, \"\\x33\\x0a\", 2) = 2\n",
            b"/d",
        )
        .unwrap();
        let mut fixes = vec![SyncFix {
            after: 4,
            ..fsync_a()[0].clone()
        }];
        assert_eq!(
            like_ops_fixes(&t, &Outputs::new(&t, None), &mut fixes),
            None
        );
        assert_eq!(fixes.len(), 1);
        // Without the syncs every like write gets one.
        let bare = blackout_record::replay::trace_of_log(
            b"1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT|O_APPEND, 0644) = 3\n\
              1 write(3, \"\\x31\", 1) = 1\n\
              1 write(1, \"\\x31\\x0a\", 2) = 2\n\
              1 write(3, \"\\x32\", 1) = 1\n\
              1 write(1, \"\\x32\\x0a\", 2) = 2\n",
            b"/d",
        )
        .unwrap();
        let mut fixes = vec![SyncFix {
            after: 3,
            ..fsync_a()[0].clone()
        }];
        let like = like_ops_fixes(&bare, &Outputs::new(&bare, None), &mut fixes);
        assert_eq!(like.as_deref(), Some("write calls on a"));
        let mut after: Vec<usize> = fixes.iter().map(|f| f.after).collect();
        after.sort_unstable();
        assert_eq!(after, [1, 3]);
    }

    #[test]
    fn a_fsync_before_a_publishing_rename_goes_before_every_like_rename() {
        // Three snapshots, each written to `t` and renamed over `s`
        // without an fsync; the cause was found at the second.
        let mut log = String::new();
        for i in 0..3 {
            log.push_str(&format!(
                "1 openat(AT_FDCWD, \"\\x74\", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 3\n\
                 1 write(3, \"\\x3{i}\", 1) = 1\n\
                 1 close(3) = 0\n\
                 1 rename(\"\\x74\", \"\\x73\") = 0\n"
            ));
        }
        let t = blackout_record::replay::trace_of_log(log.as_bytes(), b"/d").unwrap();
        let renames: Vec<(usize, Ino)> = t
            .ops
            .iter()
            .enumerate()
            .filter_map(|(j, op)| match op.kind {
                OpKind::Rename { ino, .. } => Some((j, ino)),
                _ => None,
            })
            .collect();
        assert_eq!(renames.len(), 3);
        let (b, ino) = renames[1];
        let mut fixes = vec![SyncFix {
            after: b - 1,
            before: Some(b),
            ino,
            dir: false,
            path: "t".into(),
        }];
        let like = like_ops_fixes(&t, &Outputs::new(&t, None), &mut fixes);
        assert_eq!(like.as_deref(), Some("rename calls on t"));
        fixes.sort_by_key(|f| f.after);
        let got: Vec<(Option<usize>, Ino)> = fixes.iter().map(|f| (f.before, f.ino)).collect();
        let want: Vec<(Option<usize>, Ino)> = renames.iter().map(|&(j, i)| (Some(j), i)).collect();
        assert_eq!(got, want);
        let said = Said {
            source: None,
            like: like.as_deref(),
        };
        assert_eq!(
            describe_fix(&t, &fixes, said),
            format!(
                "fsync(t) before each of the 3 rename calls on t (ops {}-{})",
                renames[0].0, renames[2].0
            )
        );
        // All there: nothing added.
        assert_eq!(
            like_ops_fixes(&t, &Outputs::new(&t, None), &mut fixes),
            None
        );
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
