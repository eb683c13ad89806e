//! One model's result: its verdict, its failing states simplest first, and
//! their causes grouped (by kind and blamed op, or by source line); each
//! group's fix is verified next (the `fix` module).

use blackout_explore::dedup::{key_of, StateKey};
use blackout_explore::dedup::{simplicity, ModelStates};
use blackout_explore::enumerate::{ExploreConfig, StateDesc};
use blackout_explore::keys::Keyer;
use blackout_oplog::outcome::Outcome;
use blackout_oplog::promises::Outputs;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use blackout_oplog::ops::{Ino, OpKind};
use blackout_oplog::trace::Trace;

use crate::explain::{self, CauseKind};
use crate::replace;
use crate::report::{CauseGroup, Checked, ModelReport, Promised, Verdict, Window};
use crate::{Ask, Cache, Stopped};

/// What analysing a run needs: its trace and what it printed, the sector
/// its writes tear at, and the settings it explored and verifies fixes
/// with. Plain data: the checker is reached only through [`Ask`].
#[derive(Clone, Copy)]
pub struct Analysis<'a> {
    /// The run's trace.
    pub trace: &'a Trace,
    /// What it printed, and its promises.
    pub outputs: &'a Outputs,
    /// The sector size writes tear at.
    pub sector: u64,
    /// Enumeration settings.
    pub explore: &'a ExploreConfig,
    /// Only lines starting with this are promises.
    pub ack_prefix: Option<&'a [u8]>,
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
        Promised::first(self.promised, self.outputs.promise_count(crash))
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

/// One model's result: its verdict, failing states, and their causes
/// grouped; their fixes are verified next (`fix::verify_fixes`).
/// `in_full`: the exploration took every crash point in full (the verdict
/// is exact when every distinct state was also checked).
pub fn model_report(
    s: &Analysis<'_>,
    m: &ModelStates,
    results: &[Option<Outcome>],
    in_full: bool,
    cache: &mut Cache,
    ask: &mut dyn Ask,
) -> Result<ModelReport, Stopped> {
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
    let groups = group_causes(s, &failing, &alone, cache, ask)?;
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
    let trace = s.trace;
    let op = &trace.ops[cause.blamed.op];
    let (ino, path) = match &cause.fix {
        Some(f) => (Some(f.ino), f.path.clone()),
        None => (op.kind.inode(), trace.show_path(&op.path)),
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
    match s.outputs.latest_promise_before(crash) {
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
    /// `plain_op` is the op right before its crash point when it failed
    /// with nothing lost.
    fn add(&mut self, c: &Checked, cause: &explain::Cause, rank: u8, plain_op: Option<usize>) {
        match self.kinds.iter_mut().find(|(k, _)| *k == cause.kind) {
            Some((_, n)) => *n += 1,
            None => self.kinds.push((cause.kind, 1)),
        }
        let path = self.at[0].2.clone();
        let bite = plain_op.unwrap_or(cause.blamed.op);
        self.at.push((c.crash, bite, path));
        let g = &mut self.group;
        g.states += 1;
        g.ids.push(c.id.clone());
        g.window.extend(c.crash, bite);
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

    /// Takes another group's states in: one cause over both (this one's
    /// place and sentence kept; their syncs together).
    fn absorb(&mut self, b: Building) {
        let h = self;
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
}

/// The content keys of states of a trace, made along the crash points as
/// the keyer makes them: explaining a cause asks about every crash point
/// from its blamed op to its crash, so building each key from the first
/// op would be quadratic in the trace. The key of each crash point with
/// nothing lost is made once, all of them in order up to the latest asked
/// for; those of states that lost or tore something are cheap when asked
/// in crash-point order (a run's states are explained in that order).
pub struct StateKeys<'t> {
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

impl<'t> StateKeys<'t> {
    /// Keys of states of `trace` (which printed `outputs`), writes torn at
    /// `sector`.
    pub fn new(trace: &'t Trace, outputs: &'t Outputs, sector: u64) -> StateKeys<'t> {
        StateKeys {
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
            let plain = StateDesc::whole(c);
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
    pub fn rejected(&mut self, cache: &Cache, d: &StateDesc) -> Option<String> {
        match cache.get(&self.key(d)) {
            Some(Outcome::Fail { reason, .. }) => Some(reason.clone()),
            _ => None,
        }
    }
}

/// Why the checker rejected a state (`None` for any other outcome).
pub fn fail_reason(outcome: &Outcome) -> Option<&str> {
    match outcome {
        Outcome::Fail { reason, .. } => Some(reason),
        _ => None,
    }
}

/// States with nothing lost an explanation may check that the run did not
/// (a crash point's own state, which says whether it owns its failures).
pub const OWN_STATES_CHECKED_MAX: usize = 1000;

/// Checking the states with nothing lost that explanations ask about and
/// the run did not check, through [`Ask`], at most
/// [`OWN_STATES_CHECKED_MAX`].
struct OwnStates<'s> {
    ask: &'s mut dyn Ask,
    left: usize,
}

impl OwnStates<'_> {
    /// Asks about `d` and files its outcome, while any are left (a state
    /// the checker cannot say of stays unknown).
    fn check(
        &mut self,
        known: &mut StateKeys<'_>,
        cache: &mut Cache,
        d: &StateDesc,
    ) -> Result<(), Stopped> {
        if self.left == 0 {
            return Ok(());
        }
        self.left -= 1;
        if let Some(outcome) = self.ask.outcome(d)? {
            if matches!(outcome, Outcome::Pass | Outcome::Fail { .. }) {
                cache.insert(known.key(d), outcome);
            }
        }
        Ok(())
    }
}

/// Each failing state's cause, in the order of `failing`: explained in
/// crash-point order (the keys an explanation asks for are made along the
/// crash points). An explanation asks whether crash points fail with
/// nothing lost; on a sample some of those states were not checked: they
/// are asked of the checker now (a few: [`OWN_STATES_CHECKED_MAX`]).
fn explain_all(
    cx: &explain::Context<'_>,
    failing: &[Checked],
    known: &mut StateKeys<'_>,
    cache: &mut Cache,
    ask: &mut dyn Ask,
) -> Result<Vec<explain::Cause>, Stopped> {
    let mut order: Vec<usize> = (0..failing.len()).collect();
    order.sort_by_key(|&i| failing[i].crash);
    let mut causes: Vec<(usize, explain::Cause)> = Vec::with_capacity(failing.len());
    let mut own = OwnStates {
        ask,
        left: OWN_STATES_CHECKED_MAX,
    };
    for i in order {
        if own.ask.cancelled() {
            return Err(Stopped::Interrupted);
        }
        let mut stopped = None;
        let rejected = &mut |d: &StateDesc| {
            if d.damage() == 0 && known.outcome(cache, d).is_none() && stopped.is_none() {
                if let Err(e) = own.check(known, cache, d) {
                    stopped = Some(e);
                }
            }
            known.rejected(cache, d)
        };
        let reason = fail_reason(&failing[i].outcome);
        causes.push((
            i,
            explain::explain(cx, &failing[i].desc(), reason, rejected),
        ));
        if let Some(e) = stopped {
            return Err(e);
        }
    }
    causes.sort_unstable_by_key(|(i, _)| *i);
    Ok(causes.into_iter().map(|(_, c)| c).collect())
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
    ask: &mut dyn Ask,
) -> Result<Vec<CauseGroup>, Stopped> {
    if failing.is_empty() {
        return Ok(Vec::new());
    }
    let cx = explain::Context::new(s.trace, s.outputs).with_alone_outcomes(alone.iter().copied());
    let mut known = StateKeys::new(s.trace, s.outputs, s.sector);
    let synced = Synced::of(s.trace);
    let mut groups: Vec<Building> = Vec::new();
    let causes = explain_all(&cx, failing, &mut known, cache, ask)?;
    for (c, cause) in failing.iter().zip(causes) {
        let desc = c.desc();
        let source = s.trace.ops[cause.blamed.op]
            .origin
            .as_ref()
            .and_then(|o| Some(format!("{}:{}", o.file.as_deref()?, o.line?)));
        let (place, path) = place_of(s, &synced, &cause, &source);
        let op = cause.blamed.op;
        let rank = breaks(s, c.crash, op);
        // A crash point that fails with nothing lost bites right after its
        // last op, whatever op began the failure it is in.
        let plain_op = (desc.damage() == 0 && cause.kind == explain::CauseKind::NotAtomic)
            .then(|| c.crash.saturating_sub(1));
        let bite = plain_op.unwrap_or(op);
        let same_kind = |b: &Building| {
            matches!(b.place, Place::NeverSynced(_)) || b.group.cause.kind == cause.kind
        };
        if let Some(b) = groups.iter_mut().find(|b| b.place == place && same_kind(b)) {
            b.add(c, &cause, rank, plain_op);
            continue;
        }
        let nothing_lost = StateDesc::whole(c.crash);
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
                    .outputs
                    .latest_promise_before(c.crash)
                    .map(|(_, l)| String::from_utf8_lossy(l).into_owned()),
                fixes: cause.fix.iter().cloned().collect(),
                replace: None,
                log: false,
                window: Window::at(c.crash, bite, path.clone()),
                windows: Vec::new(),
                cause,
                source,
                states: 1,
                ids: vec![c.id.clone()],
                simplest: c.clone(),
                process_passes,
                fix: None,
            },
            at: vec![(c.crash, bite, Arc::from(path.as_str()))],
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
        // No sync fixes it: the update in place it belongs to, made
        // atomic; never a log's (only ever appended to, record after
        // record), which its recovery fixes.
        let blamed = &cx.trace.ops[b.group.cause.blamed.op];
        b.group.log = blamed.kind.inode().is_some_and(|i| cx.is_log(i));
        if b.group.fixes.is_empty() && !b.group.log {
            b.group.replace = replace::propose(cx.trace, cx.outputs, b.group.cause.blamed.op);
        }
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

pub use crate::explain::role;

/// One mechanism, one cause: causes of the same kind, issued by the same
/// call, on files of the same role (a record split at a block boundary of
/// each of several log files of one kind, a promise printed before the sync
/// of each log rotated through), whatever the checker said of each (the
/// consequences differ from file to file, the mechanism does not), are one
/// cause over all their windows; and so are causes that blame one op (a
/// write to a manifest lost alone, and lost while a later one reached the
/// disk). Each keeps the place of the simplest.
fn merge_alike_places(groups: &mut Vec<Building>) {
    let key = |b: &Building| match &b.place {
        Place::At { path, syscall } => Some((b.group.cause.kind, *syscall, role(path))),
        _ => None,
    };
    let mut i = 0;
    while i < groups.len() {
        let k = key(&groups[i]);
        let blamed = groups[i].group.cause.blamed;
        let mut j = i + 1;
        while j < groups.len() {
            let same_place = k.is_some() && key(&groups[j]) == k;
            // A tear of the blamed write joins its loss later, said so.
            let same_op = groups[j].group.cause.blamed == blamed
                && !is_torn(groups[j].group.cause.kind)
                && !is_torn(groups[i].group.cause.kind);
            if !same_place && !same_op {
                j += 1;
                continue;
            }
            let b = groups.remove(j);
            groups[i].absorb(b);
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
