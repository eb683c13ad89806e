//! One model's result: its verdict, its failing states simplest first, and
//! their causes grouped (by kind and blamed op, or by source line), each
//! group's fix verified by re-exploring the trace with the added syncs.

use blackout_check::pool::{Cache, Pool, Release};
use blackout_check::slot::Slot;
use blackout_explore::dedup::{distinct_states_watched, simplicity, ModelStates, Watch};
use blackout_explore::dedup::{key_of, StateKey};
use blackout_explore::enumerate::{ExploreConfig, Representatives, StateDesc};
use blackout_explore::keys::Keyer;
use blackout_explore::model::Model;
use blackout_explore::rest::check_order;
use blackout_oplog::outcome::Outcome;
use blackout_oplog::promises::Outputs;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use blackout_oplog::ops::{Ino, Op, OpKind};
use blackout_oplog::trace::Trace;

use crate::explain::{self, CauseKind, SyncFix};
use crate::report::{
    CauseGroup, Checked, FixCheck, FixSet, ModelReport, Promised, Verdict, Window,
};
use crate::sweep::add_rest;
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
    /// When fix verification stops: a re-exploration still running then is
    /// cut short, and none starts after it. `None`: no time bound.
    pub fix_deadline: Option<Instant>,
    /// Whether a fix verification goes on past the representatives of
    /// its trace: it then explores the rest too and checks it until its
    /// deadline (a run sets it when it checked every one of its own
    /// states).
    pub check_rest: bool,
    /// Every promise of the run, as text: checked states share it.
    pub promised: &'a Arc<[String]>,
    /// When the verification under way stops checking states (its share
    /// of the fix bound); `None`: at `fix_deadline`.
    pub verify_deadline: Option<Instant>,
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

    fn promises(&self, crash: usize) -> Promised {
        Promised::first(self.promised, self.pool.outputs.promise_count(crash))
    }
}

/// Failing states of one model and states that could not be checked,
/// simplest first (`results`: each distinct state's outcome, `None` for
/// one not checked).
pub fn sorted_results(
    s: &Analysis<'_>,
    m: &ModelStates,
    results: &[Option<Outcome>],
) -> (Vec<Checked>, Vec<Checked>) {
    let mut failing = Vec::new();
    let mut errors = Vec::new();
    for (i, desc) in &m.reach {
        match results[*i].as_ref() {
            Some(o @ Outcome::Fail { .. }) => failing.push(s.checked(desc, o.clone())),
            Some(o @ (Outcome::TimedOut { .. } | Outcome::BadAnswer { .. })) => {
                errors.push(s.checked(desc, o.clone()))
            }
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

/// The least time fix verification gets, in seconds, however fast the run
/// it verifies was (a small run still verifies its fixes).
pub const FIX_SECONDS_MIN: u64 = 5;

/// How long a run's fix verification may take at most: as long as the run
/// took to explore and check (`run_seconds`), and at least
/// [`FIX_SECONDS_MIN`]. Every fix re-explores the trace, so without a bound
/// verifying 16 fixes of a large run would take 16 times as long as the run.
///
/// ```
/// use std::time::Duration;
/// use blackout_analysis::group::fix_time_bound;
///
/// assert_eq!(fix_time_bound(0.5), Duration::from_secs(5));
/// assert_eq!(fix_time_bound(42.0), Duration::from_secs(42));
/// ```
pub fn fix_time_bound(run_seconds: f64) -> Duration {
    let least = Duration::from_secs(FIX_SECONDS_MIN);
    Duration::try_from_secs_f64(run_seconds).map_or(least, |d| d.max(least))
}

/// One model's result: its verdict, failing states, and their causes
/// grouped; their fixes are verified next ([`verify_fixes`]). `in_full`:
/// the exploration took every crash point in full (the verdict is exact
/// when every distinct state was also checked).
pub fn model_report(
    s: &Analysis<'_>,
    m: &ModelStates,
    results: &[Option<Outcome>],
    in_full: bool,
    cache: &mut Cache,
) -> Result<ModelReport, RunError> {
    let (failing, errors) = sorted_results(s, m, results);
    let states_checked = m
        .reach
        .iter()
        .filter(|(i, _)| results[*i].is_some())
        .count();
    // What the checker said of states that lost one op alone: which ops'
    // losses matter, for states that fail with no op failing alone.
    // (A loss alone rejected as its crash point's own state is says
    // nothing of the lost op.)
    let reason = |o: &Outcome| match o {
        Outcome::Fail { reason, .. } => Some(explain::blur_digits(reason)),
        _ => None,
    };
    let plain: HashMap<usize, Option<String>> = m
        .reach
        .iter()
        .filter(|(_, d)| d.damage() == 0)
        .filter_map(|(i, d)| Some((d.crash, reason(results[*i].as_ref()?))))
        .collect();
    let alone: Vec<(&StateDesc, bool)> = m
        .reach
        .iter()
        .filter(|(_, d)| d.lost.len() == 1 && d.torn.is_none())
        .filter_map(|(i, d)| {
            let why = reason(results[*i].as_ref()?);
            let owned = why.is_some() && plain.get(&d.crash).is_some_and(|p| *p == why);
            Some((d, why.is_some() && !owned))
        })
        .collect();
    let verdict = if !failing.is_empty() {
        Verdict::Fail
    } else if !errors.is_empty() {
        Verdict::Error
    } else {
        Verdict::Pass
    };
    let groups = group_causes(s, &failing, &alone, cache)?;
    Ok(ModelReport {
        model: m.model,
        verdict,
        states: m.states,
        distinct: m.reach.len(),
        states_checked,
        exact: in_full && states_checked == m.reach.len(),
        failing,
        errors,
        coverage: m.coverage.clone(),
        causes: groups,
        fix_set: None,
    })
}

/// Verifies the fixes of a model's causes ([`model_report`]): each
/// distinct fix once, then the smallest set of syncs that fixes them all.
/// Stops at [`Analysis::fix_deadline`].
pub fn verify_fixes(
    s: &Analysis<'_>,
    report: &mut ModelReport,
    cache: &mut Cache,
) -> Result<(), RunError> {
    let model = report.model;
    // Verify each distinct fix once, in the order of the causes (most
    // serious first, so a small budget goes to them). A cause
    // found at one source line is fixed at every op that line issued; one
    // found on a sample of the states (not every distinct state checked),
    // at every op like its blamed ones that no sync covers before the
    // next promise.
    let mut verified: Vec<(Vec<SyncFix>, Option<FixCheck>)> = Vec::new();
    // Each verification gets an even share of the time left (the fix set
    // counted as one more): the first one cannot take it all.
    let mut left = report
        .causes
        .iter()
        .filter(|g| !g.fixes.is_empty())
        .count()
        .min(s.fix_verifications)
        + 1;
    for g in report.causes.iter_mut() {
        if g.fixes.is_empty() {
            continue;
        }
        let like = if !report.exact && g.source.is_none() {
            like_ops_fixes(s.pool.trace, s.pool.outputs, &mut g.fixes)
        } else {
            None
        };
        let mut fixes = g.fixes.clone();
        fixes.sort_by_key(|f| (f.after, f.ino));
        if let Some((_, done)) = verified.iter().find(|(f, _)| *f == fixes) {
            g.fix = done.clone();
        } else if verified.len() < s.fix_verifications {
            let said = Said {
                source: g.source.as_deref(),
                like: like.as_deref(),
            };
            let share = Analysis {
                verify_deadline: share_of(s.fix_deadline, left),
                ..*s
            };
            left = left.saturating_sub(1).max(1);
            g.fix = verify_fix(&share, model, &fixes, said, cache)?;
            verified.push((fixes, g.fix.clone()));
        }
    }
    if report.verdict == Verdict::Fail && s.fix_verifications > 0 {
        report.fix_set = fix_set(s, model, &report.causes, cache)?;
    }
    Ok(())
}

/// An even share of the time left before `deadline` for one of `n`
/// verifications: when the next one must end.
fn share_of(deadline: Option<Instant>, n: usize) -> Option<Instant> {
    let deadline = deadline?;
    let now = Instant::now();
    let left = deadline.saturating_duration_since(now);
    let n = u32::try_from(n.max(1)).unwrap_or(u32::MAX);
    Some(now + left / n)
}

/// Where a cause is: the source line that issued its blamed ops when it is
/// known; a file or directory nothing in the run syncs (all its failures
/// are one cause, whatever their kinds); else the path (its fix's, or the
/// blamed op's) and the syscall. A non-atomic update is one place per path
/// whatever the syscalls that pass through it.
#[derive(PartialEq, Eq)]
enum Place {
    Source(String),
    NeverSynced(String),
    At {
        path: String,
        syscall: Option<&'static str>,
    },
}

/// The inodes some sync of the run covers (fsync, fdatasync, a write
/// through an `O_SYNC` or `O_DSYNC` descriptor); `all` after a `sync()`.
struct Synced {
    all: bool,
    inos: HashSet<Ino>,
}

impl Synced {
    fn of(trace: &Trace) -> Synced {
        let mut synced = Synced {
            all: false,
            inos: HashSet::new(),
        };
        for op in &trace.ops {
            match &op.kind {
                OpKind::Fsync { ino, .. } | OpKind::Fdatasync { ino, .. } => {
                    synced.inos.insert(*ino);
                }
                OpKind::Sync { .. } => synced.all = true,
                _ => {}
            }
        }
        synced
    }

    fn never(&self, ino: Option<Ino>) -> bool {
        !self.all && ino.is_some_and(|i| !self.inos.contains(&i))
    }
}

/// The kinds a file or directory that is never synced can show, all one
/// cause of that file.
fn unsynced_kind(kind: CauseKind) -> bool {
    matches!(
        kind,
        CauseKind::DataNotSynced
            | CauseKind::DataNotSyncedBeforeRename
            | CauseKind::UnorderedWrites
            | CauseKind::TornWriteUnordered
            | CauseKind::TornTail
            | CauseKind::EntryNotSynced
    )
}

fn place_of(
    s: &Analysis<'_>,
    synced: &Synced,
    cause: &explain::Cause,
    source: &Option<String>,
) -> (Place, String) {
    let trace = s.pool.trace;
    let op = &trace.ops[cause.blamed.op];
    let (ino, path) = match &cause.fix {
        Some(f) => (Some(f.ino), f.path.clone()),
        None => (explain::op_inode(&op.kind), trace.show_path(&op.path)),
    };
    let place = if let Some(src) = source {
        Place::Source(src.clone())
    } else if unsynced_kind(cause.kind) && synced.never(ino) {
        Place::NeverSynced(path.clone())
    } else {
        Place::At {
            path: path.clone(),
            syscall: (cause.kind != CauseKind::NotAtomic).then(|| op.kind.label(|x| trace.kind(x))),
        }
    };
    (place, path)
}

/// The sentence of a cause of a file nothing syncs, whose states show
/// several kinds.
fn never_synced_sentence(path: &str, kinds: &[(CauseKind, usize)], simplest: &str) -> String {
    let mut kinds = kinds.to_vec();
    kinds.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let list: Vec<String> = kinds
        .iter()
        .map(|(k, n)| format!("{n} {}", k.name()))
        .collect();
    format!(
        "nothing in the run ever fsyncs {path}: its ops can be lost, torn or reach the disk out of order, and its failing states are of several kinds ({}); the simplest: {simplest}",
        list.join(", ")
    )
}

/// What a failing state breaks, most serious first: a promise lost (the
/// blamed op came before the latest promise), damage after a promise to
/// something not yet promised, a failure before anything was promised.
fn breaks(s: &Analysis<'_>, crash: usize, blamed: usize) -> u8 {
    match s.pool.outputs.latest_promise_before(crash) {
        Some((p, _)) if blamed < p => 0,
        Some(_) => 1,
        None => 2,
    }
}

/// One group in the making: the group, its place, the kinds of its states
/// (with how many of each), what the most serious of its states breaks
/// (and what its simplest state breaks), and the ops blamed in its states
/// that failed with nothing lost.
struct Building {
    group: CauseGroup,
    /// Each state's crash point, blamed op and file or directory, for its
    /// windows.
    at: Vec<(usize, usize, Arc<str>)>,
    /// The crash points of its states that failed with nothing lost.
    plain: Vec<usize>,
    place: Place,
    kinds: Vec<(CauseKind, usize)>,
    breaks: u8,
    simplest_breaks: u8,
    plain_ops: Option<(usize, usize)>,
}

impl Building {
    /// One more failing state `c`, explained as `cause`, breaking `rank`;
    /// `plain_op` is its blamed op when it failed with nothing lost.
    fn add(&mut self, c: &Checked, cause: &explain::Cause, rank: u8, plain_op: Option<usize>) {
        match self.kinds.iter_mut().find(|(k, _)| *k == cause.kind) {
            Some((_, n)) => *n += 1,
            None => self.kinds.push((cause.kind, 1)),
        }
        let path = self.at[0].2.clone();
        self.at.push((c.crash, cause.blamed.op, path));
        let g = &mut self.group;
        g.states += 1;
        g.ids.push(c.id.clone());
        g.window.extend(c.crash, cause.blamed.op);
        if let Some(f) = &cause.fix {
            if !g.fixes.contains(f) {
                g.fixes.push(f.clone());
            }
        }
        self.breaks = self.breaks.min(rank);
        if let Some(o) = plain_op {
            self.plain_ops = Some(self.plain_ops.map_or((o, o), |(a, z)| (a.min(o), z.max(o))));
            self.plain.push(c.crash);
        }
    }
}

/// The content keys of states of a trace, made along the crash points as
/// the keyer makes them: explaining a cause asks about every crash point
/// from its blamed op to its crash, so building each key from the first
/// op would be quadratic in the trace. The key of each crash point with
/// nothing lost is made once, all of them in order up to the latest asked
/// for; those of states that lost or tore something are cheap when asked
/// in crash-point order (a run's states are explained in that order).
struct Known<'t> {
    outputs: &'t Outputs,
    /// Keys of states with nothing lost, made in crash-point order.
    plain_keys: Keyer<'t>,
    /// Keys of states that lost or tore something.
    keys: Keyer<'t>,
    /// Those already made: the states that lost one unit each are asked
    /// about again for every failing state at their crash point.
    made: HashMap<StateDesc, StateKey>,
    /// The key of each crash point with nothing lost, up to the latest
    /// asked for.
    plain: Vec<StateKey>,
}

impl<'t> Known<'t> {
    fn new(trace: &'t Trace, outputs: &'t Outputs, sector: u64) -> Known<'t> {
        Known {
            outputs,
            plain_keys: Keyer::new(trace, sector),
            keys: Keyer::new(trace, sector),
            made: HashMap::new(),
            plain: Vec::new(),
        }
    }

    fn key(&mut self, d: &StateDesc) -> StateKey {
        if !d.lost.is_empty() || d.torn.is_some() {
            if let Some(key) = self.made.get(d) {
                return *key;
            }
            let key = key_of(self.keys.hash(d), self.outputs, d.crash);
            self.made.insert(d.clone(), key);
            return key;
        }
        while self.plain.len() <= d.crash {
            let c = self.plain.len();
            let plain = StateDesc {
                crash: c,
                lost: Default::default(),
                torn: None,
            };
            let key = key_of(self.plain_keys.hash(&plain), self.outputs, c);
            self.plain.push(key);
        }
        self.plain[d.crash]
    }

    /// What the checker said of `d`, if it was checked.
    fn outcome<'c>(&mut self, cache: &'c Cache, d: &StateDesc) -> Option<&'c Outcome> {
        cache.get(&self.key(d))
    }

    /// Why the checker rejected `d`, if it was checked and rejected.
    fn rejected(&mut self, cache: &Cache, d: &StateDesc) -> Option<String> {
        match cache.get(&self.key(d)) {
            Some(Outcome::Fail { reason, .. }) => Some(reason.clone()),
            _ => None,
        }
    }
}

/// Why the checker rejected a state (`None` for any other outcome).
fn fail_reason(outcome: &Outcome) -> Option<&str> {
    match outcome {
        Outcome::Fail { reason, .. } => Some(reason),
        _ => None,
    }
}

/// States with nothing lost an explanation may check that the run did not
/// (a crash point's own state, which says whether it owns its failures).
pub const OWN_STATES_CHECKED_MAX: usize = 1000;

/// Checking the states with nothing lost that explanations ask about and
/// the run did not check, in a slot of their own, at most
/// [`OWN_STATES_CHECKED_MAX`].
struct OwnStates<'s> {
    slot: &'s Slot,
    left: usize,
}

impl OwnStates<'_> {
    /// Checks `d` and files its outcome, while any are left (a state that
    /// cannot be checked stays unknown).
    fn check(&mut self, s: &Analysis<'_>, known: &mut Known<'_>, cache: &mut Cache, d: &StateDesc) {
        if self.left == 0 {
            return;
        }
        self.left -= 1;
        let fs = blackout_explore::state::FsState::build(s.pool.trace, d, s.pool.cfg.sector);
        if let Ok(Some(outcome)) = s.pool.check_one(self.slot, &d.id(), &fs, d.crash, false) {
            if matches!(outcome, Outcome::Pass | Outcome::Fail { .. }) {
                cache.insert(known.key(d), outcome);
            }
        }
    }
}

/// Failing states (simplest first) grouped into causes: one per kind and
/// place, over the window of crash points and ops where it bites, most
/// serious first (what it breaks), then in the order of their simplest
/// states.
fn group_causes(
    s: &Analysis<'_>,
    failing: &[Checked],
    alone: &[(&StateDesc, bool)],
    cache: &mut Cache,
) -> Result<Vec<CauseGroup>, RunError> {
    if failing.is_empty() {
        return Ok(Vec::new());
    }
    let cx = explain::Context::new(s.pool.trace, s.pool.outputs)
        .with_alone_outcomes(alone.iter().copied());
    let mut known = Known::new(s.pool.trace, s.pool.outputs, s.pool.cfg.sector);
    let synced = Synced::of(s.pool.trace);
    let mut groups: Vec<Building> = Vec::new();
    // Explained in crash-point order (the keys it asks for are made along
    // the crash points), grouped simplest first.
    let mut order: Vec<usize> = (0..failing.len()).collect();
    order.sort_by_key(|&i| failing[i].crash);
    let mut causes: Vec<(usize, explain::Cause)> = Vec::with_capacity(failing.len());
    // An explanation asks whether crash points fail with nothing lost; on
    // a sample some of those states were not checked: they are checked
    // now (a few: OWN_STATES_CHECKED_MAX).
    let slot = s.pool.scratch.slot()?;
    let _release = Release {
        checker: s.pool.cfg.checker,
        slot: &slot,
    };
    let mut own = OwnStates {
        slot: &slot,
        left: OWN_STATES_CHECKED_MAX,
    };
    for i in order {
        if s.pool.cancelled() {
            return Err(RunError::Interrupted);
        }
        let rejected = &mut |d: &StateDesc| {
            if d.damage() == 0 && known.outcome(cache, d).is_none() {
                own.check(s, &mut known, cache, d);
            }
            known.rejected(cache, d)
        };
        let reason = fail_reason(&failing[i].outcome);
        causes.push((
            i,
            explain::explain(&cx, &failing[i].desc(), reason, rejected),
        ));
    }
    causes.sort_unstable_by_key(|(i, _)| *i);
    for (c, (_, cause)) in failing.iter().zip(causes) {
        let desc = c.desc();
        let source = s.pool.trace.ops[cause.blamed.op]
            .origin
            .as_ref()
            .and_then(|o| Some(format!("{}:{}", o.file.as_deref()?, o.line?)));
        let (place, path) = place_of(s, &synced, &cause, &source);
        let op = cause.blamed.op;
        let rank = breaks(s, c.crash, op);
        let plain_op =
            (desc.damage() == 0 && cause.kind == explain::CauseKind::NotAtomic).then_some(op);
        let same_kind = |b: &Building| {
            matches!(b.place, Place::NeverSynced(_)) || b.group.cause.kind == cause.kind
        };
        if let Some(b) = groups.iter_mut().find(|b| b.place == place && same_kind(b)) {
            b.add(c, &cause, rank, plain_op);
            continue;
        }
        let nothing_lost = StateDesc {
            crash: c.crash,
            lost: Default::default(),
            torn: None,
        };
        let process_passes = if desc.damage() == 0 {
            Some(false)
        } else {
            cache
                .get(&known.key(&nothing_lost))
                .map(|o| *o == Outcome::Pass)
        };
        let kind = cause.kind;
        groups.push(Building {
            group: CauseGroup {
                latest_promise: s
                    .pool
                    .outputs
                    .latest_promise_before(c.crash)
                    .map(|(_, l)| String::from_utf8_lossy(l).into_owned()),
                fixes: cause.fix.iter().cloned().collect(),
                window: Window::at(c.crash, op, path.clone()),
                windows: Vec::new(),
                cause,
                source,
                states: 1,
                ids: vec![c.id.clone()],
                simplest: c.clone(),
                process_passes,
                fix: None,
            },
            at: vec![(c.crash, op, Arc::from(path.as_str()))],
            plain: plain_op.map(|_| c.crash).into_iter().collect(),
            place,
            kinds: vec![(kind, 1)],
            breaks: rank,
            simplest_breaks: rank,
            plain_ops: plain_op.map(|o| (o, o)),
        });
    }
    Ok(finish_groups(&cx, groups))
}

/// The causes from their groups in the making: alike places merged, each
/// cause's windows and its sentence for all of them, torn writes merged
/// into the losses whose syncs fix them, most serious first (what its
/// worst state breaks, then what its simplest state breaks; the sort is
/// stable, so simplest first within).
fn finish_groups(cx: &explain::Context<'_>, mut groups: Vec<Building>) -> Vec<CauseGroup> {
    merge_alike_places(&mut groups);
    for b in &mut groups {
        b.group.windows = windows(&mut b.at);
        let mut plain: Vec<usize> = b.plain.clone();
        plain.sort_unstable();
        plain.dedup();
        if plain.len() > 1 && b.group.windows.len() > 1 {
            b.group.cause.sentence = explain::not_atomic_places(cx, &plain);
        } else if let Some((a, z)) = b.plain_ops.filter(|(a, z)| a < z) {
            b.group.cause.sentence = explain::not_atomic_window(cx, a, z);
        }
        if let (Place::NeverSynced(path), true) = (&b.place, b.kinds.len() > 1) {
            let c = &mut b.group.cause;
            c.sentence = never_synced_sentence(path, &b.kinds, &c.sentence);
            c.kind = CauseKind::NeverSynced;
        }
    }
    merge_torn_into_lost(&mut groups);
    for b in &mut groups {
        b.group.windows = windows(&mut b.at);
    }
    groups.sort_by_key(|b| (b.breaks, b.simplest_breaks));
    groups.into_iter().map(|b| b.group).collect()
}

/// A cause's windows: its states' crash points (with the ops blamed
/// there) in runs of consecutive crash points on one file or directory.
fn windows(at: &mut [(usize, usize, Arc<str>)]) -> Vec<Window> {
    at.sort_unstable();
    let mut out: Vec<Window> = Vec::new();
    for (crash, op, path) in at.iter() {
        match out.last_mut() {
            Some(w) if *crash <= w.crash_last + 1 && *w.path == **path => w.extend(*crash, *op),
            _ => out.push(Window::at(*crash, *op, path.to_string())),
        }
    }
    out
}

/// A path's role: its last component with each run of digits as `#`
/// (`000003.log` and `000005.log` play one).
fn role(path: &str) -> String {
    explain::blur_digits(path.rsplit('/').next().unwrap_or(path))
}

/// One mechanism, one cause: causes of the same kind, issued by the same
/// call, on files of the same role, whose simplest states the checker
/// rejects for the same reason (digits aside; any reason for an update
/// that is not atomic) are one cause over all their windows (a record split at a block boundary of each of several log
/// files of one kind). Each keeps the place of the simplest.
fn merge_alike_places(groups: &mut Vec<Building>) {
    // The reason tells mechanisms apart, but not a crash point the
    // program passes through rejected: what a reader finds there varies.
    let key = |b: &Building| match &b.place {
        Place::At { path, syscall } => Some((
            b.group.cause.kind,
            *syscall,
            role(path),
            match &b.group.simplest.outcome {
                Outcome::Fail { reason, .. } if b.group.cause.kind != CauseKind::NotAtomic => {
                    explain::blur_digits(reason)
                }
                _ => String::new(),
            },
        )),
        _ => None,
    };
    let mut i = 0;
    while i < groups.len() {
        let Some(k) = key(&groups[i]) else {
            i += 1;
            continue;
        };
        let mut j = i + 1;
        while j < groups.len() {
            if key(&groups[j]).as_ref() != Some(&k) {
                j += 1;
                continue;
            }
            let b = groups.remove(j);
            let h = &mut groups[i];
            h.group.states += b.group.states;
            h.group.ids.extend(b.group.ids);
            let w = &b.group.window;
            h.group.window.extend(w.crash_first, w.op_first);
            h.group.window.extend(w.crash_last, w.op_last);
            for f in b.group.fixes {
                if !h.group.fixes.contains(&f) {
                    h.group.fixes.push(f);
                }
            }
            for (kind, n) in b.kinds {
                match h.kinds.iter_mut().find(|(k, _)| *k == kind) {
                    Some((_, m)) => *m += n,
                    None => h.kinds.push((kind, n)),
                }
            }
            h.at.extend(b.at);
            h.plain.extend(b.plain);
            h.breaks = h.breaks.min(b.breaks);
            if let Some((a, z)) = b.plain_ops {
                h.plain_ops = Some(h.plain_ops.map_or((a, z), |(x, y)| (x.min(a), y.max(z))));
            }
        }
        let mut paths: Vec<&str> = groups[i].at.iter().map(|(_, _, p)| &**p).collect();
        paths.sort_unstable();
        paths.dedup();
        if paths.len() > 1 {
            let first = groups[i].group.window.path.clone();
            groups[i].group.window.path = format!("{first} and {} more like it", paths.len() - 1);
        }
        i += 1;
    }
}

/// Verifications one fix-set search may make.
pub const FIX_SET_VERIFICATIONS_MAX: usize = 8;

/// When no cause's own fix makes every state pass, the smallest set of the
/// proposed syncs found that does: all of them verified together, then each
/// cause's syncs dropped in turn while the rest still pass (at most
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
    // Each cause's syncs are one unit: kept or dropped together.
    let mut units: Vec<Vec<SyncFix>> = Vec::new();
    for g in groups {
        let mut u = g.fixes.clone();
        u.sort_by_key(|f| (f.after, f.ino));
        if !units.contains(&u) {
            units.push(u);
        }
    }
    let union = |units: &[Vec<SyncFix>]| {
        let mut set: Vec<SyncFix> = Vec::new();
        for f in units.iter().flatten() {
            if !set.iter().any(|g| (g.after, g.ino) == (f.after, f.ino)) {
                set.push(f.clone());
            }
        }
        set.sort_by_key(|f| (f.after, f.ino));
        set
    };
    let set = union(&units);
    // Already verified as one cause's fix (and not enough).
    if groups.iter().any(|g| {
        g.fix
            .as_ref()
            .is_some_and(|f| f.syncs == set && !f.cut_short)
    }) {
        return Ok(None);
    }
    let mut budget = FIX_SET_VERIFICATIONS_MAX.min(s.fix_verifications);
    let mut best = match verify_fix(s, model, &set, Said::default(), cache)? {
        Some(check) if check.passes => check,
        Some(check) if check.cut_short => return Ok(Some(FixSet::CutShort { tried: check })),
        Some(check) => return Ok(Some(FixSet::NotFound { tried: check })),
        None => return Ok(None),
    };
    budget -= 1;
    let mut i = 0;
    let mut out_of_time = false;
    while i < units.len() && units.len() > 1 && budget > 0 {
        let mut fewer = units.clone();
        fewer.remove(i);
        budget -= 1;
        match verify_fix(s, model, &union(&fewer), Said::default(), cache)? {
            Some(check) if check.passes => {
                units = fewer;
                best = check;
            }
            // Each sync left was not tried without: the set may not be
            // the smallest.
            Some(check) if check.cut_short => {
                out_of_time = true;
                break;
            }
            _ => i += 1,
        }
    }
    Ok(Some(FixSet::Found {
        minimal: !out_of_time && (i >= units.len() || units.len() == 1),
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

/// A torn write whose loss is also a cause, where the syncs that fix the
/// loss also fix the tear, is one cause: the missing sync. Its states join
/// that group.
fn merge_torn_into_lost(groups: &mut Vec<Building>) {
    let mut i = 0;
    while i < groups.len() {
        let g = &groups[i].group;
        let same = (is_torn(g.cause.kind) && !g.fixes.is_empty())
            .then(|| {
                groups.iter().position(|h| {
                    !is_torn(h.group.cause.kind)
                        && h.group.cause.fix.is_some()
                        && g.fixes.iter().all(|f| h.group.fixes.contains(f))
                })
            })
            .flatten();
        match same {
            Some(j) => {
                let b = groups.remove(i);
                let j = if j > i { j - 1 } else { j };
                let h = &mut groups[j];
                let g = b.group;
                let torn = &g.simplest.id;
                h.group.cause.sentence.push_str(&format!(
                    "; torn instead of lost ({torn}), it is rejected too"
                ));
                h.group.states += g.states;
                h.group.ids.extend(g.ids);
                let w = &g.window;
                h.group.window.extend(w.crash_first, w.op_first);
                h.group.window.extend(w.crash_last, w.op_last);
                h.at.extend(b.at);
                h.breaks = h.breaks.min(b.breaks);
            }
            None => i += 1,
        }
    }
}

/// Several syncs in few words, by file: `fsync(db) after ops 3, 7 and
/// before op 12, and fsync(.) after op 5 (log lines 140-162)`.
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
    let at = if lo == hi {
        format!("log line {lo}")
    } else {
        format!("log lines {lo}-{hi}")
    };
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
        let own = explain::op_inode(&blamed.kind) == Some(f.ino);
        let mut added = false;
        for (j, op) in trace.ops.iter().enumerate() {
            if !alike(op, blamed) || covered(j) {
                continue;
            }
            let ino = match own {
                true => match explain::op_inode(&op.kind) {
                    Some(ino) => ino,
                    None => continue,
                },
                false => f.ino,
            };
            if !fixes.iter().any(|g| (g.after, g.ino) == (j, ino)) {
                fixes.push(SyncFix {
                    after: j,
                    before: None,
                    ino,
                    dir: f.dir,
                    path: f.path.clone(),
                });
                added = true;
            }
        }
        let name = (blamed.syscall.clone(), trace.show_path(&blamed.path));
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
/// call, of the same kind, on the same path.
fn alike(a: &Op, b: &Op) -> bool {
    a.syscall == b.syscall
        && a.path == b.path
        && std::mem::discriminant(&a.kind) == std::mem::discriminant(&b.kind)
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
        let last = trace.ops[..r].iter().rposition(|o| match o.kind {
            OpKind::Write { ino: i, .. }
            | OpKind::Truncate { ino: i, .. }
            | OpKind::Fallocate { ino: i, .. } => i == ino,
            _ => false,
        });
        last.is_none_or(|j| synced[j].main.is_some_and(|s| s < r))
    };
    let mut added = false;
    for (r, op) in trace.ops.iter().enumerate().skip(1) {
        let OpKind::Rename { ino, .. } = op.kind else {
            continue;
        };
        if alike(op, publisher)
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

/// Re-explores the trace with the added syncs under `model` (with the
/// run's enumeration settings, [`explore_as_the_run`]; when the run
/// checked every one of its own states, [`Analysis::check_rest`], every
/// crash point) and checks the states the cache does not know, those the
/// syncs change first (at crash points after the first of them), most
/// novel first, until [`Analysis::verify_deadline`]: states of the trace
/// with syncs added are states of the trace as recorded, so most of them
/// are known when the run checked its own. A check that does not get
/// through them says how many it checked (not `exact`). `None` if the
/// checker could not be run. At [`Analysis::fix_deadline`] a
/// re-exploration not finished is stopped and the check says it was cut
/// short; after it, none starts.
pub fn verify_fix(
    s: &Analysis<'_>,
    model: Model,
    fixes: &[SyncFix],
    said: Said<'_>,
    cache: &mut Cache,
) -> Result<Option<FixCheck>, RunError> {
    let (trace, added) = explain::with_syncs(s.pool.trace, fixes);
    let description = describe_fix(s.pool.trace, fixes, said);
    let cut_short = FixCheck {
        description: description.clone(),
        syncs: fixes.to_vec(),
        added_at: added.clone(),
        passes: false,
        exact: false,
        cut_short: true,
        states: 0,
        states_checked: 0,
        still_failing: 0,
        simplest_failing: None,
    };
    if s.fix_deadline.is_some_and(|d| Instant::now() >= d) {
        return Ok(Some(cut_short));
    }
    let outputs = Outputs::new(&trace, s.promise_prefix);
    let explore = explore_as_the_run(s.explore, &s.pool.trace.ops);
    let s2 = Analysis {
        pool: s.pool.for_trace(&trace, &outputs),
        ..*s
    };
    let run = bounded(s.pool.cfg.cancel, s.fix_deadline, |stop| {
        let watch = Watch {
            cancel: stop,
            progress: None,
        };
        let mut explored = distinct_states_watched(
            &trace,
            &outputs,
            &[model],
            &explore,
            s.pool.cfg.sector,
            watch,
        )?;
        if s.check_rest && !explored.in_full {
            let mut pool = s2.pool;
            pool.cfg.cancel = stop;
            add_rest(&pool, &mut explored, &explore, watch)?;
        }
        Ok::<_, RunError>(explored)
    });
    let explored = match run {
        Ok(e) => e,
        Err(RunError::Interrupted) if !s.pool.cancelled() => return Ok(Some(cut_short)),
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
        return Ok(None);
    };
    let m = &explored.models[0];
    let (failing, _) = sorted_results(&s2, m, &results);
    let cx = explain::Context::with_added_syncs(&trace, &outputs, &added);
    let still = failing.first().map(|c| {
        let mut known = Known::new(&trace, &outputs, s.pool.cfg.sector);
        let reason = fail_reason(&c.outcome);
        let cause = explain::explain(&cx, &c.desc(), reason, &mut |d| known.rejected(cache, d));
        (c.id.clone(), cause.sentence)
    });
    let states_checked = m
        .reach
        .iter()
        .filter(|(i, _)| results[*i].is_some())
        .count();
    if states_checked == 0 && !m.reach.is_empty() {
        // The bound ended it before a state was checked: nothing known.
        return Ok(Some(cut_short));
    }
    Ok(Some(FixCheck {
        description,
        syncs: fixes.to_vec(),
        added_at: added,
        passes: failing.is_empty(),
        exact: explored.in_full && states_checked == m.reach.len(),
        cut_short: false,
        states: m.reach.len(),
        states_checked,
        still_failing: failing.len(),
        simplest_failing: still,
    }))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    use blackout_check::closure::ClosureChecker;
    use blackout_check::pool::{PoolConfig, Scratch};
    use blackout_check::Checker;
    use blackout_explore::enumerate::REPRESENTATIVES_MIN_OPS;
    use blackout_explore::state::DirMaterializer;
    use blackout_oplog::ops::test_ops::write;

    use super::*;

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
        let s = Analysis {
            pool: Pool {
                trace: &trace,
                outputs: &outputs,
                cfg: PoolConfig {
                    checker,
                    materializer: &DirMaterializer,
                    jobs: 2,
                    sector: 512,
                    cancel,
                    progress: None,
                },
                scratch: &scratch,
            },
            explore: &explore,
            promise_prefix: None,
            fix_verifications: FIX_VERIFICATIONS_MAX,
            fix_deadline: deadline,
            check_rest: true,
            promised: &Arc::from(Vec::new()),
            verify_deadline: None,
        };
        let mut cache = Cache::new();
        let check = verify_fix(&s, Model::Posix, &fsync_a(), Said::default(), &mut cache);
        scratch.remove().unwrap();
        check
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
