//! Explain: why a crash state fails, in one sentence, and which single sync
//! would fix it.
//!
//! A failing state lost or tore some ops. One of them is **blamed** (a lost
//! op whose loss alone already fails, else the latest lost op), and the
//! **cause** says what the program should have done about it:
//!
//! - an entry change (create, mkdir, link, unlink, rename) whose directory is
//!   not fsynced before the promise;
//! - file data not synced before the rename that publishes it, or before the
//!   promise;
//! - a promise printed before the sync that covers the op completed;
//! - a rename between two directories with only one of them synced;
//! - reliance on `sync_file_range` or on an fsync that failed;
//! - a write torn while a later write to the same file reached the disk;
//! - a torn last write that recovery does not tolerate;
//! - an update that is not atomic: the state fails with nothing lost, or
//!   it lost or tore an op after which the program itself passed through a
//!   rejected state (with nothing promised since).
//!
//! Each cause but the last two names a sync to insert after an op; fix
//! verification (grouping, later in this crate) re-explores with it. A
//! torn write's cause is told from what the state holds (a later write, a
//! promise after it, a rename publishing it), never from a guess at what
//! recovery did: the checker's own reason says that.

use serde::Serialize;

use blackout_explore::enumerate::{StateDesc, Tear};
use blackout_oplog::naming::{describe_unit_numbered, line_words, rename_paths, DirPaths};
use blackout_oplog::ops::{escape_controls, synced_by, Ino, Op, OpKind, Part, SyncedBy, Unit};
use blackout_oplog::promises::Outputs;
use blackout_oplog::trace::Trace;

/// The kinds of cause blackout recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CauseKind {
    /// An entry change whose directory is never fsynced before the promise.
    EntryNotSynced,
    /// File data not synced before the rename that publishes the file.
    DataNotSyncedBeforeRename,
    /// File data never synced before the promise.
    DataNotSynced,
    /// A later write to the same file reached the disk while this one did
    /// not: no sync orders them (a header or commit record written before
    /// the data it describes is synced).
    UnorderedWrites,
    /// The promise was printed before the sync that covers the op completed.
    PromiseBeforeSync,
    /// A rename between two directories, only one of which is synced.
    CrossDirectoryRenameHalfSynced,
    /// The only sync of the file was `sync_file_range`, not a barrier.
    SyncFileRangeOnly,
    /// The program went on after an fsync failed.
    FailedSync,
    /// A write torn while a later write to the same file reached the disk:
    /// no sync orders them (recovery meets damage followed by good data).
    TornWriteUnordered,
    /// The last write to a file before the crash was torn, before anything
    /// promised it, and the checker rejects the state: recovery must
    /// tolerate a torn tail (no sync can prevent it).
    TornTail,
    /// The state fails with nothing lost or torn: the update is not atomic.
    NotAtomic,
    /// A file or directory that nothing in the run ever syncs: its ops can
    /// be lost, torn or reach the disk out of order, and its failing states
    /// have several of the kinds above (a cause of one file, said once).
    NeverSynced,
}

impl CauseKind {
    /// The kind as JSON names it: `entry_not_synced`.
    pub fn name(self) -> &'static str {
        match self {
            CauseKind::EntryNotSynced => "entry_not_synced",
            CauseKind::DataNotSyncedBeforeRename => "data_not_synced_before_rename",
            CauseKind::DataNotSynced => "data_not_synced",
            CauseKind::UnorderedWrites => "unordered_writes",
            CauseKind::PromiseBeforeSync => "promise_before_sync",
            CauseKind::CrossDirectoryRenameHalfSynced => "cross_directory_rename_half_synced",
            CauseKind::SyncFileRangeOnly => "sync_file_range_only",
            CauseKind::FailedSync => "failed_sync",
            CauseKind::TornWriteUnordered => "torn_write_unordered",
            CauseKind::TornTail => "torn_tail",
            CauseKind::NotAtomic => "not_atomic",
            CauseKind::NeverSynced => "never_synced",
        }
    }
}

/// A sync to insert: `fsync(ino)` right after op `after`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct SyncFix {
    /// The op after which the sync goes.
    pub after: usize,
    /// The op it must precede, when that is the point (a rename that
    /// publishes the file).
    pub before: Option<usize>,
    /// The inode to fsync.
    pub ino: Ino,
    /// Whether it is a directory.
    pub dir: bool,
    /// Its path, for people.
    pub path: String,
}

impl SyncFix {
    /// `fsync(.) after op 3 (log line 224)` (`call 224` in a native
    /// recording).
    pub fn describe(&self, trace: &Trace) -> String {
        let (place, i) = match self.before {
            Some(j) => ("before", j),
            None => ("after", self.after),
        };
        let line = trace.ops[i].line;
        format!(
            "fsync({}) {place} op {i} ({})",
            self.path,
            line_words(trace.numbering, line, line)
        )
    }
}

/// Why a state fails.
#[derive(Debug, Clone, Serialize)]
pub struct Cause {
    /// The kind.
    pub kind: CauseKind,
    /// The blamed op (for a torn write, the write; for a non-atomic update,
    /// the last op before the crash).
    pub blamed: Unit,
    /// The blamed op in the user's terms.
    pub op: String,
    /// The likely cause, one sentence.
    pub sentence: String,
    /// The sync that should fix it, if a sync can.
    pub fix: Option<SyncFix>,
}

/// What [`explain`] needs to know about a trace, computed once.
pub struct Context<'a> {
    /// The trace.
    pub trace: &'a Trace,
    /// Its promises.
    pub outputs: &'a Outputs,
    synced: Vec<SyncedBy>,
    /// Indices of added syncs ([`with_syncs`]), ascending: ops are shown
    /// under their numbers in the trace as recorded.
    added: Vec<usize>,
    /// Indices in the recorded trace of syncs taken out
    /// ([`without_syncs`]), ascending.
    removed: Vec<usize>,
    /// The files only ever appended to (every write at the end, nothing
    /// truncated): logs.
    appended: std::collections::HashMap<Ino, usize>,
    /// For ops alike (the same call on the same path): whether a checked
    /// state that lost one of them alone failed, and whether one passed
    /// ([`Context::with_alone_outcomes`]).
    alone: std::collections::HashMap<(String, Vec<u8>), (bool, bool)>,
}

impl<'a> Context<'a> {
    /// Prepares the context for a trace.
    pub fn new(trace: &'a Trace, outputs: &'a Outputs) -> Context<'a> {
        Context {
            trace,
            outputs,
            synced: synced_by(&trace.ops),
            added: Vec::new(),
            removed: Vec::new(),
            appended: appended_files(trace),
            alone: std::collections::HashMap::new(),
        }
    }

    /// The same, knowing what the checker said of states that lost one
    /// unit alone (`states`: each such state and whether it was
    /// rejected): a state that fails with no lost op failing alone is
    /// blamed on an op alike to ones whose loss alone fails, else on one
    /// whose loss alone was never checked, before one whose loss alone is
    /// known to pass (an info file that recovery never reads).
    pub fn with_alone_outcomes<'s>(
        mut self,
        states: impl IntoIterator<Item = (&'s StateDesc, bool)>,
    ) -> Context<'a> {
        for (d, failed) in states {
            if d.torn.is_some() || d.lost.len() != 1 {
                continue;
            }
            let op = &self.trace.ops[d.lost[0].op];
            let e = self
                .alone
                .entry((op.syscall.clone(), op.path.0.clone()))
                .or_insert((false, false));
            if failed {
                e.0 = true;
            } else {
                e.1 = true;
            }
        }
        self
    }

    /// How likely losing `u` breaks a state, from states that lost an op
    /// like it alone: 0 one failed, 1 none was checked, 2 all passed.
    fn suspicion(&self, u: Unit) -> u8 {
        let op = &self.trace.ops[u.op];
        match self.alone.get(&(op.syscall.clone(), op.path.0.clone())) {
            Some((true, _)) => 0,
            None => 1,
            Some((false, _)) => 2,
        }
    }

    /// Whether file `ino` is only ever appended to.
    pub fn only_appended(&self, ino: Ino) -> bool {
        self.appended.contains_key(&ino)
    }

    /// Whether file `ino` is a log: only ever appended to, record after
    /// record (more than one append). A file given one append is updated
    /// as a whole is: a new file renamed over it makes that atomic.
    pub fn is_log(&self, ino: Ino) -> bool {
        self.appended.get(&ino).is_some_and(|&n| n > 1)
    }

    /// The same, for a trace made by [`with_syncs`], given the indices of
    /// the added ops: ops keep the numbers they have in the recorded trace.
    pub fn with_added_syncs(
        trace: &'a Trace,
        outputs: &'a Outputs,
        added: &[usize],
    ) -> Context<'a> {
        Context {
            added: added.to_vec(),
            ..Context::new(trace, outputs)
        }
    }

    /// The same, for a trace made by [`without_syncs`], given the indices
    /// the syncs taken out had: ops keep the numbers they have in the
    /// recorded trace.
    pub fn with_removed_syncs(
        trace: &'a Trace,
        outputs: &'a Outputs,
        removed: &[usize],
    ) -> Context<'a> {
        let mut removed = removed.to_vec();
        removed.sort_unstable();
        removed.dedup();
        Context {
            removed,
            ..Context::new(trace, outputs)
        }
    }

    /// The number op `i` has in the recorded trace.
    fn n(&self, i: usize) -> usize {
        recorded_index(i - self.added.partition_point(|&a| a < i), &self.removed)
    }

    /// An op in the user's terms, under its recorded number.
    fn describe(&self, u: Unit) -> String {
        describe_unit_numbered(self.trace, u, self.n(u.op))
    }

    fn ops(&self) -> &[Op] {
        &self.trace.ops
    }

    /// Where op `i`'s call was: `log line 224`, or `call 224` in a native
    /// recording.
    fn at(&self, i: usize) -> String {
        let line = self.ops()[i].line;
        line_words(self.trace.numbering, line, line)
    }

    /// `"saved" was printed` or `the crash`, for "before ...".
    fn promise_text(&self, crash: usize) -> String {
        match self.outputs.latest_promise_before(crash) {
            Some((_, line)) => format!(
                "\"{}\" was printed",
                escape_controls(&String::from_utf8_lossy(line))
            ),
            None => "the crash".into(),
        }
    }

    fn path_of(&self, ino: Ino, at: usize) -> String {
        // The path the op that last named this inode used, else its inode.
        self.ops()[..at.min(self.ops().len())]
            .iter()
            .rev()
            .find(|o| o.kind.inode() == Some(ino))
            .map(|o| self.trace.show_path(&o.path))
            .unwrap_or_else(|| format!("(inode {ino})"))
    }

    fn dir_path(&self, dir: Ino, at: usize) -> String {
        escape_controls(&DirPaths::at(self.trace, at).dir(dir))
    }
}

/// The files a trace only ever appends to: every write at the file's end,
/// no truncate or fallocate; with how many appends each.
fn appended_files(trace: &Trace) -> std::collections::HashMap<Ino, usize> {
    let sizes = trace.sizes_before();
    let mut appended = std::collections::HashMap::new();
    let mut not = std::collections::HashSet::new();
    for (op, size) in trace.ops.iter().zip(sizes) {
        match op.kind {
            OpKind::Write { ino, off, .. } if off == size => {
                *appended.entry(ino).or_insert(0) += 1;
            }
            OpKind::Write { ino, .. }
            | OpKind::Truncate { ino, .. }
            | OpKind::Fallocate { ino, .. } => {
                not.insert(ino);
            }
            _ => {}
        }
    }
    appended.retain(|i, _| !not.contains(i));
    appended
}

/// What to do about an update that is not atomic, as the file it leaves
/// half-made calls for: a file only ever appended to (a log) is made
/// whole by its reader (drop a partial record at the end) or its writer
/// (one write per record); a file rewritten in place, by writing a new
/// file and renaming it over the old one.
fn atomic_advice(cx: &Context<'_>, last: usize) -> String {
    let op = cx.ops().get(last);
    match op.and_then(|o| o.kind.inode()) {
        Some(ino) if matches!(op.map(|o| &o.kind), Some(OpKind::Write { .. })) && cx.only_appended(ino) => {
            let path = cx.trace.show_path(&op.map(|o| o.path.clone()).unwrap_or_default());
            format!(
                "the update is not atomic: {path} is only ever appended to, so its recovery should drop a partial record at its end, as log readers do, or the program should write each record with one write"
            )
        }
        // A rename is atomic by itself: what is rejected is the state
        // between it and the program's next step.
        Some(_) if matches!(op.map(|o| &o.kind), Some(OpKind::Rename { .. })) => {
            "the change is spread over several steps, each atomic by itself, and recovery rejects what lies between them: recovery must accept every step, or the program must record what it is about to do first and finish or undo it on restart".into()
        }
        _ => "the update is not atomic; write a new file, fsync it and rename it over the old one instead".into(),
    }
}

/// Explains a failing state, which the checker rejected for `reason`.
/// `rejected` tells whether another state of the same trace is rejected,
/// and why (it is asked about the state with nothing lost at the same
/// crash point, and the states that lose only one of the lost units, to
/// find the one to blame).
///
/// **A crash point owns its own failures.** When the state with nothing
/// lost at the crash point is rejected for the same reason, the program
/// passes through a state its recovery rejects there: a state that also
/// lost or tore ops is explained by the crash point (not atomic), never by
/// what it lost. Only a state that fails differently (another reason, or
/// where its crash point's own state passes) blames a lost or torn op.
pub fn explain(
    cx: &Context<'_>,
    desc: &StateDesc,
    reason: Option<&str>,
    rejected: &mut dyn FnMut(&StateDesc) -> Option<String>,
) -> Cause {
    let k = desc.crash;
    let plain = |c: usize| StateDesc::whole(c);
    // Reasons are compared with their digits blurred: a checker that
    // names a size or an offset gives one reason in other words.
    let here = rejected(&plain(k)).map(|r| blur_digits(&r));
    // The crash point where the failure it is in began: the first of the
    // crash points before it whose own states are rejected for the same
    // reason, with no passing one between (a change spread over several
    // files is rejected from its first step on, not at its last).
    let began = |rejected: &mut dyn FnMut(&StateDesc) -> Option<String>| {
        let mut k0 = k;
        while k0 > 0 && k - k0 < RUN_BACK_MAX {
            match rejected(&plain(k0 - 1)) {
                Some(r) if here.as_deref() == Some(blur_digits(&r).as_str()) => k0 -= 1,
                _ => break,
            }
        }
        k0
    };
    if desc.damage() > 0 && here.is_some() && here == reason.map(blur_digits) {
        let mut cause = not_atomic(cx, began(rejected), None);
        cause.sentence.push_str(
            "; states there that also lost or tore ops are rejected for the same reason: what they lost is not what breaks them",
        );
        return cause;
    }
    let cause = if let (Some((op, tear)), true) = (desc.torn, desc.lost.is_empty()) {
        torn(cx, desc, op, tear)
    } else if desc.lost.is_empty() {
        return not_atomic(cx, began(rejected), None);
    } else {
        // A loss alone that fails as the crash point itself does says
        // nothing of the lost op.
        let same_as_here = |r: &String| here.as_ref() == Some(&blur_digits(r));
        let single = single_lost(desc, &mut |d: &StateDesc| {
            rejected(d).is_some_and(|r| !same_as_here(&r))
        });
        match single {
            Some(u) => lost_cause(cx, k, u, &alone(k, u)),
            // No loss alone known to fail: the ops lost just before the
            // crash (as likely to matter as any) taken off first, when they
            // leave an earlier crash point's state.
            None => match without_lost_tail(cx, desc) {
                Some(earlier) => return explain(cx, &earlier, reason, rejected),
                None => blame_latest_likely(cx, desc),
            },
        }
    };
    // Rejected for another reason than its own crash point's state: what
    // it lost or tore is what breaks it.
    if here.is_some() {
        return cause;
    }
    // The program itself passes through a rejected state between the
    // blamed op and the crash, and nothing was promised after the op:
    // losing or tearing it is one more state of an update that is not
    // atomic, which no sync can fix. (A loss that breaks a later promise
    // keeps its own cause: it is the more serious one.)
    let i = cause.blamed.op;
    if cx
        .outputs
        .latest_promise_before(k)
        .is_some_and(|(p, _)| p > i)
    {
        return cause;
    }
    match (i..k).find(|&c| rejected(&plain(c)).is_some()) {
        Some(c) => not_atomic(cx, c, Some(cause.blamed)),
        None => cause,
    }
}

/// The same disk as `desc` at an earlier crash point, when the ops just
/// before its crash are lost whole (or are syncs) and print nothing: the
/// state with those ops never made. `None` when no op can be taken off.
fn without_lost_tail(cx: &Context<'_>, desc: &StateDesc) -> Option<StateDesc> {
    let lost_whole = |lost: &[Unit], i: usize| {
        let has = |part| lost.binary_search(&Unit { op: i, part }).is_ok();
        has(Part::Whole) || (has(Part::Source) && has(Part::Dest))
    };
    let mut lost: Vec<Unit> = desc.lost.to_vec();
    let mut k = desc.crash;
    while k > 0 && cx.outputs.printed_len(k - 1) == cx.outputs.printed_len(k) {
        let i = k - 1;
        if desc.torn.is_some_and(|(op, _)| op == i) {
            break;
        }
        let sync = matches!(
            cx.ops()[i].kind,
            OpKind::Fsync { .. }
                | OpKind::Fdatasync { .. }
                | OpKind::Sync { .. }
                | OpKind::SyncFileRange { .. }
                | OpKind::FailedSync { .. }
        );
        if !sync && !lost_whole(&lost, i) {
            break;
        }
        lost.retain(|u| u.op != i);
        k = i;
    }
    // Nothing lost at the end, or only syncs: the same crash point.
    (lost.len() < desc.lost.len()).then(|| StateDesc {
        crash: k,
        lost: lost.into(),
        torn: desc.torn,
    })
}

/// How many crash points [`explain`] looks back for the start of a run of
/// them that fail alike with nothing lost (each asks for one state, known
/// when the run checked every crash point's own).
pub const RUN_BACK_MAX: usize = 64;

/// A path's role: its last component with each run of digits as `#`
/// (`000003.log` and `000005.log` play one).
///
/// ```
/// use blackout_analysis::group::role;
/// assert_eq!(role("db/000003.log"), role("000005.log"));
/// ```
pub fn role(path: &str) -> String {
    blur_digits(path.rsplit('/').next().unwrap_or(path))
}

/// A checker's reason with each run of digits as one `#`.
///
/// ```
/// use blackout_analysis::explain::blur_digits;
/// assert_eq!(blur_digits("record 12 at offset 480"), "record # at offset #");
/// ```
pub fn blur_digits(reason: &str) -> String {
    let mut out = String::with_capacity(reason.len());
    let mut in_digits = false;
    for c in reason.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('#');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

/// The state that loses unit `u` alone at crash point `k`.
fn alone(k: usize, u: Unit) -> StateDesc {
    StateDesc {
        crash: k,
        lost: vec![u].into(),
        torn: None,
    }
}

/// The unit of a state that lost some whose loss alone already fails (the
/// one lost unit, for a state that lost one).
fn single_lost(desc: &StateDesc, fails: &mut dyn FnMut(&StateDesc) -> bool) -> Option<Unit> {
    if desc.lost.len() == 1 {
        return Some(desc.lost[0]);
    }
    desc.lost
        .iter()
        .copied()
        .find(|u| fails(&alone(desc.crash, *u)))
}

/// The cause of a state whose lost units fail only together: the latest of
/// those most likely to matter (an op whose like ones fail when lost alone,
/// before one never tried alone, before one whose like ones are known to
/// pass).
fn blame_latest_likely(cx: &Context<'_>, desc: &StateDesc) -> Cause {
    let u = desc
        .lost
        .iter()
        .copied()
        .rev()
        .min_by_key(|u| cx.suspicion(*u))
        .unwrap_or(desc.lost[desc.lost.len() - 1]);
    let mut cause = lost_cause(cx, desc.crash, u, desc);
    cause.sentence.push_str(&format!(
        " (no lost op fails alone here: it fails together with {} other lost op(s))",
        desc.lost.len() - 1
    ));
    cause
}

/// The rename, kept in the state, that publishes file `f` after op `i` and
/// before crash point `k`.
fn publishing_rename(cx: &Context<'_>, i: usize, f: Ino, desc: &StateDesc) -> Option<usize> {
    (i + 1..desc.crash).find(|&j| {
        matches!(&cx.ops()[j].kind, OpKind::Rename { ino, .. } if *ino == f)
            && !desc.lost.iter().any(|l| l.op == j)
    })
}

/// "`data` is not fsynced before the rename that publishes it ...", with
/// the fix: an fsync of the file right before the rename.
fn published_unsynced(cx: &Context<'_>, data: &str, j: usize, fix: SyncFix) -> (String, SyncFix) {
    let (_, to) = rename_paths(cx.trace, j).unwrap_or_default();
    (
        format!(
            "{data} is not fsynced before the rename that publishes it as {to} (op {}, {}): after a crash {to} can name a file without its data",
            cx.n(j),
            cx.at(j)
        ),
        SyncFix {
            after: j - 1,
            before: Some(j),
            ..fix
        },
    )
}

/// The writes and truncates of file `f` after op `i` and before the crash
/// that the state kept, in order.
fn kept_data_ops<'a>(
    cx: &'a Context<'_>,
    f: Ino,
    i: usize,
    desc: &'a StateDesc,
) -> impl DoubleEndedIterator<Item = usize> + 'a {
    (i + 1..desc.crash).filter(move |&j| {
        matches!(&cx.ops()[j].kind, OpKind::Write { ino, .. } | OpKind::Truncate { ino, .. } if *ino == f)
            && !desc.lost.iter().any(|l| l.op == j)
    })
}

fn torn(cx: &Context<'_>, desc: &StateDesc, op: usize, tear: Tear) -> Cause {
    let unit = Unit {
        op,
        part: Part::Whole,
    };
    let how = tear.describe();
    let (len, f) = match &cx.ops()[op].kind {
        OpKind::Write { data, ino, .. } => (data.len, *ino),
        _ => (0, 0),
    };
    let path = cx.trace.show_path(&cx.ops()[op].path);
    let write = format!(
        "the write of {len} bytes to {path} (op {}, {})",
        cx.n(op),
        cx.at(op)
    );
    let fix = SyncFix {
        after: op,
        before: None,
        ino: f,
        dir: false,
        path: path.clone(),
    };
    let mk = |kind, sentence, fix| Cause {
        kind,
        blamed: unit,
        op: cx.describe(unit),
        sentence,
        fix,
    };
    if let Some(j) = publishing_rename(cx, op, f, desc) {
        let (sentence, fix) = published_unsynced(cx, &format!("{write}, torn ({how}),"), j, fix);
        return mk(CauseKind::DataNotSyncedBeforeRename, sentence, Some(fix));
    }
    // The next write to the file, kept: it reached the disk while this one
    // was torn.
    let next = kept_data_ops(cx, f, op, desc).next();
    if let Some(j) = next {
        return mk(
            CauseKind::TornWriteUnordered,
            format!(
                "{write} was torn ({how}) while the next write to {path} (op {}, {}) reached the disk, and the state is rejected: no sync between them orders them; fsync {path} before op {}",
                cx.n(j),
                cx.at(j),
                cx.n(j)
            ),
            Some(SyncFix {
                after: j - 1,
                before: Some(j),
                ..fix
            }),
        );
    }
    match cx.outputs.latest_promise_before(desc.crash) {
        // Promised after it was made: the cause is the one its loss has (a
        // missing sync, or a promise printed before the sync completed),
        // and its states are one group with the loss's.
        Some((p, _)) if p > op => {
            let alone = StateDesc {
                crash: desc.crash,
                lost: vec![unit].into(),
                torn: None,
            };
            let mut cause = lost_cause(cx, desc.crash, unit, &alone);
            cause
                .sentence
                .push_str(&format!(" (here it is torn: {how})"));
            cause
        }
        promised => {
            let when = match promised {
                Some(_) => format!("made after {}", cx.promise_text(desc.crash)),
                None => "made before any promise".to_string(),
            };
            mk(
                CauseKind::TornTail,
                format!(
                    "{write}, the last write to {path} before the crash ({when}), was torn ({how}) and the state is rejected: no sync can prevent a torn last write, so recovery must tolerate it (discard a torn tail, e.g. verify a checksum per record and truncate at the first bad one) or the program must write a new file and rename it into place"
                ),
                None,
            )
        }
    }
}

/// A crash at `k` fails with every op kept. With `blamed`, the state
/// explained lost or tore that unit, and the plain crash at `k` is the
/// first rejected one after it.
fn not_atomic(cx: &Context<'_>, k: usize, blamed: Option<Unit>) -> Cause {
    let last = k.saturating_sub(1);
    let shown = cx.n(last);
    let what = match cx.ops().get(last) {
        Some(op) if k > 0 => format!(
            " ({} of {})",
            op.kind.label(|x| cx.trace.kind(x)),
            cx.trace.show_path(&op.path)
        ),
        _ => String::new(),
    };
    let crash = if k == 0 {
        "a crash before the first op".to_string()
    } else {
        format!("a crash right after op {shown}{what}")
    };
    let unit = blamed.unwrap_or(Unit {
        op: last,
        part: Part::Whole,
    });
    let op = if k == 0 && blamed.is_none() {
        "no op".to_string()
    } else {
        cx.describe(unit)
    };
    let also = match blamed {
        Some(_) => format!(
            "; this state, which lost or tore {op} before that crash point, is one more state of the same update"
        ),
        None => String::new(),
    };
    Cause {
        kind: CauseKind::NotAtomic,
        blamed: unit,
        sentence: format!(
            "{crash} fails with every op kept: the program itself passes through a state its recovery rejects ({}){also}",
            atomic_advice(cx, last)
        ),
        op,
        fix: None,
    }
}

/// The sentence of a window of non-atomic crash points: every crash from
/// right after op `a` to right after op `b` fails with every op kept.
pub fn not_atomic_window(cx: &Context<'_>, a: usize, b: usize) -> String {
    let name = |i: usize| {
        let op = &cx.ops()[i];
        format!(
            "op {} ({} of {})",
            cx.n(i),
            op.kind.label(|x| cx.trace.kind(x)),
            cx.trace.show_path(&op.path)
        )
    };
    format!(
        "a crash anywhere from right after {} to right after {} fails with every op kept: the program itself passes through states its recovery rejects ({})",
        name(a),
        name(b),
        atomic_advice(cx, a)
    )
}

/// The sentence of a cause whose crash points fail with every op kept at
/// several places apart (`plain`: the crash points, ascending, at least
/// two): each right after an op like the first's.
pub fn not_atomic_places(cx: &Context<'_>, plain: &[usize]) -> String {
    let first = plain[0].saturating_sub(1);
    let op = &cx.ops()[first];
    let what = format!(
        "{} of {}",
        op.kind.label(|x| cx.trace.kind(x)),
        cx.trace.show_path(&op.path)
    );
    let shown: Vec<String> = plain.iter().take(5).map(|k| format!("c{k}")).collect();
    let more = match plain.len().saturating_sub(5) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    format!(
        "a crash right after op {} ({what}) fails with every op kept, and so does a crash at {} places in all ({}{more}): the program itself passes through a state its recovery rejects each time ({})",
        cx.n(first),
        plain.len(),
        shown.join(", "),
        atomic_advice(cx, first)
    )
}

/// What explaining the loss of one unit needs, computed once.
struct Lost<'a, 'c> {
    cx: &'a Context<'c>,
    /// The crash point.
    k: usize,
    /// The lost unit.
    u: Unit,
    /// The state it is explained in (for the renames kept in it).
    desc: &'a StateDesc,
    /// `"saved" was printed` or `the crash`.
    before: String,
    /// The op that completed the latest promise before the crash.
    promise_op: Option<usize>,
    /// The lost op in the user's terms.
    what: String,
    /// The sync that covers the unit, if any.
    cover: Option<usize>,
}

/// The cause of losing `u` at crash point `k`.
fn lost_cause(cx: &Context<'_>, k: usize, u: Unit, desc: &StateDesc) -> Cause {
    let i = u.op;
    let lost = Lost {
        cx,
        k,
        u,
        desc,
        before: cx.promise_text(k),
        promise_op: cx.outputs.latest_promise_before(k).map(|(p, _)| p),
        what: cx.describe(u),
        cover: cx.synced[i].of(u.part),
    };
    match &cx.ops()[i].kind {
        OpKind::Write { ino, .. }
        | OpKind::Truncate { ino, .. }
        | OpKind::Fallocate { ino, .. } => lost.data(*ino),
        OpKind::Link { dir, .. } | OpKind::Unlink { dir, .. } => {
            entry_cause(cx, k, u, *dir, lost.late_cover(), |kind, sentence, fix| {
                lost.mk(kind, sentence, fix)
            })
        }
        OpKind::Rename {
            from_dir, to_dir, ..
        } => lost.rename(*from_dir, *to_dir),
        _ => lost.mk(
            CauseKind::NotAtomic,
            format!("{} was lost", lost.what),
            None,
        ),
    }
}

impl Lost<'_, '_> {
    fn mk(&self, kind: CauseKind, sentence: String, fix: Option<SyncFix>) -> Cause {
        Cause {
            kind,
            blamed: self.u,
            op: self.what.clone(),
            sentence,
            fix,
        }
    }

    /// The covering sync, when it completed only after the promise.
    fn late_cover(&self) -> Option<usize> {
        let (i, k) = (self.u.op, self.k);
        self.cover
            .filter(|&s| self.promise_op.is_some_and(|p| p > i && p < s) && s >= k)
    }

    /// A lost data op of file `f` (`data` in words) followed before the
    /// crash only by what is not a durability barrier: a sync_file_range,
    /// or an fsync that failed and the program went on.
    fn no_barrier(&self, f: Ino, data: &str, path: &str, fix: &SyncFix) -> Option<Cause> {
        let (cx, k, before) = (self.cx, self.k, &self.before);
        let ops = cx.ops();
        for (j, later) in ops.iter().enumerate().take(k).skip(self.u.op + 1) {
            match &later.kind {
                OpKind::SyncFileRange { ino } if *ino == f => {
                    return Some(self.mk(
                        CauseKind::SyncFileRangeOnly,
                        format!(
                            "{data} is followed only by sync_file_range (op {}, {}), which is not a durability barrier, before {before}",
                            cx.n(j),
                            cx.at(j)
                        ),
                        Some(fix.clone()),
                    ))
                }
                OpKind::FailedSync { ino, errno } if *ino == f => {
                    let (advice, fix) = failed_sync_advice(errno, fix);
                    return Some(self.mk(
                        CauseKind::FailedSync,
                        format!(
                            "the fsync of {path} after {data} failed ({errno}, op {}, {}) and the program went on as if it had succeeded before {before}{advice}",
                            cx.n(j),
                            cx.at(j)
                        ),
                        fix,
                    ))
                }
                _ => {}
            }
        }
        None
    }

    /// A lost write, truncate or fallocate of file `f`.
    fn data(&self, f: Ino) -> Cause {
        let (cx, k, desc) = (self.cx, self.k, self.desc);
        let (before, cover) = (&self.before, self.cover);
        let ops = cx.ops();
        let i = self.u.op;
        let ni = cx.n(i);
        let op = &ops[i];
        let promise_op = self.promise_op;
        let mk = |kind, sentence, fix| self.mk(kind, sentence, fix);
        let after_promise = |s: usize| self.late_cover() == Some(s);
        let path = cx.path_of(f, i + 1);
        let fix = SyncFix {
            after: i,
            before: None,
            ino: f,
            dir: false,
            path: path.clone(),
        };
        let label = op.kind.label(|x| cx.trace.kind(x));
        let data = format!("the {label} to {path} (op {ni}, {})", cx.at(i));
        if let Some(s) = cover.filter(|&s| after_promise(s)) {
            return mk(
                CauseKind::PromiseBeforeSync,
                format!(
                    "{before} (op {}) before the sync that covers {data} completed (op {}, {}): print the promise only after the sync returns",
                    cx.n(promise_op.unwrap_or(0)),
                    cx.n(s),
                    cx.at(s)
                ),
                Some(fix),
            );
        }
        if let Some(cause) = self.no_barrier(f, &data, &path, &fix) {
            return cause;
        }
        if let Some(j) = publishing_rename(cx, i, f, desc) {
            let (sentence, fix) = published_unsynced(cx, &data, j, fix);
            return mk(CauseKind::DataNotSyncedBeforeRename, sentence, Some(fix));
        }
        // A later write to the same file, kept, that nothing orders after
        // this one.
        let later = kept_data_ops(cx, f, i, desc).next_back();
        if let Some(j) = later {
            return mk(
                CauseKind::UnorderedWrites,
                format!(
                    "{data} can be lost while the later write to {path} (op {}, {}) reaches the disk: no fsync between them orders them{}; fsync {path} before op {}",
                    cx.n(j),
                    cx.at(j),
                    match cover {
                        Some(s) => format!(" (the fsync that covers both, op {}, comes after)", cx.n(s)),
                        None => String::new(),
                    },
                    cx.n(j)
                ),
                Some(SyncFix {
                    after: j - 1,
                    before: Some(j),
                    ..fix
                }),
            );
        }
        let when = match cover {
            Some(s) if s >= k => format!(
                "is not fsynced before {before} (its fsync, op {}, comes after)",
                cx.n(s)
            ),
            _ => format!("is never fsynced before {before}"),
        };
        mk(
            CauseKind::DataNotSynced,
            format!("{data} {when}"),
            Some(fix),
        )
    }

    /// A lost rename, or one half of a rename between two directories.
    fn rename(&self, from_dir: Ino, to_dir: Ino) -> Cause {
        let (cx, k, u) = (self.cx, self.k, self.u);
        let i = u.op;
        let dir = if u.part == Part::Source {
            from_dir
        } else {
            to_dir
        };
        if u.part != Part::Whole {
            // The other half: synced before the crash?
            let (other, other_dir) = if u.part == Part::Source {
                (cx.synced[i].main, to_dir)
            } else {
                (cx.synced[i].source, from_dir)
            };
            if let Some(s) = other.filter(|&s| s < k) {
                let d = cx.dir_path(dir, i);
                return self.mk(
                    CauseKind::CrossDirectoryRenameHalfSynced,
                    format!(
                        "{} moved an entry between two directories: {} was fsynced (op {}, {}) but {d} is not before {}; both directories need an fsync",
                        self.what,
                        cx.dir_path(other_dir, i),
                        cx.n(s),
                        cx.at(s),
                        self.before
                    ),
                    Some(SyncFix {
                        after: i,
                        before: None,
                        ino: dir,
                        dir: true,
                        path: d,
                    }),
                );
            }
        }
        entry_cause(cx, k, u, dir, self.late_cover(), |kind, sentence, fix| {
            self.mk(kind, sentence, fix)
        })
    }
}

/// The cause of losing an entry change in directory `dir`; `late_cover` is
/// the sync that covers it if that sync completed only after the promise.
fn entry_cause(
    cx: &Context<'_>,
    k: usize,
    u: Unit,
    dir: Ino,
    late_cover: Option<usize>,
    mk: impl Fn(CauseKind, String, Option<SyncFix>) -> Cause,
) -> Cause {
    let ops = cx.ops();
    let i = u.op;
    let ni = cx.n(i);
    let d = cx.dir_path(dir, i);
    let before = cx.promise_text(k);
    let fix = SyncFix {
        after: i,
        before: None,
        ino: dir,
        dir: true,
        path: d.clone(),
    };
    let op = &ops[i];
    let label = op.kind.label(|x| cx.trace.kind(x));
    let name = match rename_paths(cx.trace, i) {
        Some((from, to)) => format!("{label} of {from} -> {to}"),
        None => format!("{label} of {}", cx.trace.show_path(&op.path)),
    };
    if let Some(s) = late_cover {
        return mk(
            CauseKind::PromiseBeforeSync,
            format!(
                "{before} before the fsync of directory {d} that covers the {name} (op {ni}) completed (op {}, {}): print the promise only after the sync returns",
                cx.n(s),
                cx.at(s)
            ),
            Some(fix),
        );
    }
    for (j, later) in ops.iter().enumerate().take(k).skip(i + 1) {
        if let OpKind::FailedSync { ino, errno } = &later.kind {
            if *ino == dir {
                let (advice, fix) = failed_sync_advice(errno, &fix);
                return mk(
                    CauseKind::FailedSync,
                    format!(
                        "the fsync of directory {d} after the {name} (op {ni}) failed ({errno}, op {}, {}) and the program went on as if it had succeeded before {before}{advice}",
                        cx.n(j),
                        cx.at(j)
                    ),
                    fix,
                );
            }
        }
    }
    mk(
        CauseKind::EntryNotSynced,
        format!(
            "{name} (op {ni}, {}) changed directory {d}, which is never fsynced before {before}",
            cx.at(i)
        ),
        Some(fix),
    )
}

/// A copy of `trace` with `fsync(fix.ino)` inserted right after op
/// `fix.after`; later syncs' barriers move with the ops they count.
pub fn with_sync(trace: &Trace, fix: &SyncFix) -> Trace {
    with_syncs(trace, std::slice::from_ref(fix)).0
}

/// A copy of `trace` with every fix's fsync inserted (the same place and
/// inode once), and the indices the added ops have in it.
pub fn with_syncs(trace: &Trace, fixes: &[SyncFix]) -> (Trace, Vec<usize>) {
    let mut places: Vec<(usize, Ino, &SyncFix)> =
        fixes.iter().map(|f| (f.after, f.ino, f)).collect();
    places.sort_by_key(|p| (p.0, p.1));
    places.dedup_by(|a, b| (a.0, a.1) == (b.0, b.1));
    // A barrier counts the ops below it: the added ones there too.
    let moved = |barrier: usize| barrier + places.partition_point(|p| p.0 < barrier);
    let mut ops = Vec::with_capacity(trace.ops.len() + places.len());
    let mut added = Vec::with_capacity(places.len());
    let mut next = places.iter().peekable();
    let mut t = trace.clone();
    // One pass, linear in the trace however many syncs are added.
    for (i, mut op) in std::mem::take(&mut t.ops).into_iter().enumerate() {
        match &mut op.kind {
            OpKind::Fsync { barrier, .. }
            | OpKind::Fdatasync { barrier, .. }
            | OpKind::Sync { barrier } => *barrier = moved(*barrier),
            _ => {}
        }
        ops.push(op);
        while let Some((_, ino, fix)) = next.next_if(|p| p.0 == i) {
            let base = &trace.ops[i];
            let at = ops.len();
            added.push(at);
            ops.push(Op {
                kind: OpKind::Fsync {
                    ino: *ino,
                    barrier: at,
                    implied: false,
                },
                syscall: "fsync (added)".into(),
                pid: base.pid,
                line: base.line,
                path: fix.path.as_str().into(),
                stack: Vec::new(),
                origin: None,
                volatile: false,
            });
        }
    }
    t.ops = ops;
    (t, added)
}

/// The index in the recorded trace of op `i` of a trace without the ops
/// at `removed` (indices in the recorded trace, ascending).
///
/// ```
/// use blackout_analysis::explain::recorded_index;
/// assert_eq!(recorded_index(3, &[1, 5]), 4);
/// assert_eq!(recorded_index(4, &[1, 5]), 6);
/// assert_eq!(recorded_index(0, &[1, 5]), 0);
/// ```
pub fn recorded_index(i: usize, removed: &[usize]) -> usize {
    let mut o = i;
    for &r in removed {
        if r <= o {
            o += 1;
        } else {
            break;
        }
    }
    o
}

/// A copy of `trace` without the sync ops at the indices `syncs` (fsync,
/// fdatasync, sync): the program as it would have run had it not made them.
/// Later syncs' barriers move down with the ops they count. An index that is
/// not a sync op is kept: only syncs are taken out.
pub fn without_syncs(trace: &Trace, syncs: &[usize]) -> Trace {
    let is_sync = |i: &usize| trace.ops.get(*i).is_some_and(|op| op.kind.is_sync());
    let mut gone: Vec<usize> = syncs.iter().copied().filter(is_sync).collect();
    gone.sort_unstable();
    gone.dedup();
    // A barrier counts the ops below it: the ones taken out no longer.
    let moved = |barrier: usize| barrier - gone.partition_point(|&g| g < barrier);
    let mut t = trace.clone();
    let ops = std::mem::take(&mut t.ops);
    t.ops = ops
        .into_iter()
        .enumerate()
        .filter(|(i, _)| gone.binary_search(i).is_err())
        .map(|(_, mut op)| {
            match &mut op.kind {
                OpKind::Fsync { barrier, .. }
                | OpKind::Fdatasync { barrier, .. }
                | OpKind::Sync { barrier } => *barrier = moved(*barrier),
                _ => {}
            }
            op
        })
        .collect();
    t
}

/// What a cause of a failed sync advises, and its fix: after a writeback
/// error no sync fixes it (the pages are forgotten); after a refused call
/// (a wrong descriptor) the sync it should have been does.
fn failed_sync_advice(errno: &str, fix: &SyncFix) -> (&'static str, Option<SyncFix>) {
    if blackout_oplog::ops::writeback_error(errno) {
        (
            "; no later sync makes that data durable (after a failed writeback the kernel does not write the pages again, and a retried fsync returns 0): treat a failed fsync as fatal, stop promising, and recover from what is on disk",
            None,
        )
    } else {
        ("", Some(fix.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(log: &str) -> Trace {
        blackout_record::replay::trace_of_log(log.as_bytes(), b"/d").unwrap()
    }

    /// `Some("rejected")` when `yes`: what a checker that gives one reason
    /// says.
    fn rejected(yes: bool) -> Option<String> {
        yes.then(|| "rejected".to_string())
    }

    fn cause(t: &Trace, id: &str) -> Cause {
        let outputs = Outputs::new(t, None);
        let cx = Context::new(t, &outputs);
        // Every loss alone fails; every crash point passes with nothing lost.
        explain(
            &cx,
            &StateDesc::parse(id).unwrap(),
            Some("rejected"),
            &mut |d| rejected(!d.lost.is_empty() || d.torn.is_some()),
        )
    }

    const NEW: &str = "1 openat(AT_FDCWD, \"\\x6e\", O_WRONLY|O_CREAT, 0644) = 3\n\
                       1 write(3, \"\\x68\\x69\", 2) = 2\n";

    #[test]
    fn a_change_over_two_files_is_blamed_on_its_first_step_not_its_last() {
        // a and b (hex 61, 62) each replaced by a rename, synced; a checker
        // that rejects a new a beside an old b rejects every crash point
        // from the first rename to the second.
        let t = trace(
            "1 openat(AT_FDCWD, \"\\x61\\x2e\\x6e\", O_WRONLY|O_CREAT, 0644) = 3\n\
             1 write(3, \"\\x32\", 1) = 1\n\
             1 fsync(3) = 0\n\
             1 rename(\"\\x61\\x2e\\x6e\", \"\\x61\") = 0\n\
             1 openat(AT_FDCWD, \"\\x62\\x2e\\x6e\", O_WRONLY|O_CREAT, 0644) = 4\n\
             1 write(4, \"\\x32\", 1) = 1\n\
             1 fsync(4) = 0\n\
             1 rename(\"\\x62\\x2e\\x6e\", \"\\x62\") = 0\n",
        );
        let first = t
            .ops
            .iter()
            .position(|o| matches!(o.kind, OpKind::Rename { .. }))
            .unwrap();
        let second = t
            .ops
            .iter()
            .rposition(|o| matches!(o.kind, OpKind::Rename { .. }))
            .unwrap();
        assert!(first + 3 < second, "{:?}", t.ops);
        let outputs = Outputs::new(&t, None);
        let cx = Context::new(&t, &outputs);
        // Rejected from right after the first rename to right after the
        // op before the second: "a and b disagree" (a number that varies
        // is the same reason).
        let disagree = |d: &StateDesc| {
            (d.damage() == 0 && d.crash > first && d.crash <= second)
                .then(|| format!("a and b disagree ({} bytes)", d.crash))
        };
        for k in first + 1..=second {
            let c = explain(
                &cx,
                &StateDesc::parse(&format!("c{k}")).unwrap(),
                Some("a and b disagree (1 bytes)"),
                &mut |d| disagree(d),
            );
            assert_eq!(c.kind, CauseKind::NotAtomic);
            let blamed = { c.blamed.op };
            assert_eq!(blamed, first, "at c{k}: {}", c.sentence);
            assert!(
                c.sentence
                    .starts_with(&format!("a crash right after op {first} (rename of a.n")),
                "{}",
                c.sentence
            );
            assert!(
                c.sentence.contains("spread over several steps"),
                "{}",
                c.sentence
            );
        }
    }

    #[test]
    fn an_unsynced_create_blames_its_directory() {
        let t = trace(&format!(
            "{NEW}1 fsync(3) = 0\n1 write(1, \"\\x6f\\x6b\\x0a\", 3) = 3\n"
        ));
        let c = cause(&t, "c4.lost0");
        assert_eq!(c.kind, CauseKind::EntryNotSynced);
        assert!(
            c.sentence
                .contains("changed directory ., which is never fsynced before \"ok\" was printed"),
            "{}",
            c.sentence
        );
        let fix = c.fix.unwrap();
        assert_eq!((fix.after, fix.ino, fix.dir), (0, 0, true));
    }

    #[test]
    fn a_native_trace_places_ops_by_call_where_strace_says_log_line() {
        let mut t = trace(&format!(
            "{NEW}1 rename(\"\\x6e\", \"\\x6d\") = 0\n1 write(1, \"\\x6f\\x6b\\x0a\", 3) = 3\n"
        ));
        let strace = cause(&t, "c4.lost1");
        assert!(strace.op.contains("(write, log line 2)"), "{}", strace.op);
        assert!(
            strace.sentence.contains("(op 2, log line 3)"),
            "{}",
            strace.sentence
        );
        let fix = strace.fix.unwrap();
        assert_eq!(fix.describe(&t), "fsync(n) before op 2 (log line 3)");
        t.numbering = blackout_oplog::trace::Numbering::Call;
        let native = cause(&t, "c4.lost1");
        assert!(native.op.contains("(write, call 2)"), "{}", native.op);
        assert!(
            native.sentence.contains("(op 2, call 3)"),
            "{}",
            native.sentence
        );
        assert!(!native.sentence.contains("log line"), "{}", native.sentence);
        assert_eq!(
            native.fix.unwrap().describe(&t),
            "fsync(n) before op 2 (call 3)"
        );
    }

    #[test]
    fn data_kinds() {
        // Never synced.
        let t = trace(&format!("{NEW}1 write(1, \"\\x6f\\x6b\\x0a\", 3) = 3\n"));
        assert_eq!(cause(&t, "c3.lost1").kind, CauseKind::DataNotSynced);
        // Synced after the promise.
        let t = trace(&format!(
            "{NEW}1 write(1, \"\\x6f\\x6b\\x0a\", 3) = 3\n1 fsync(3) = 0\n"
        ));
        assert_eq!(cause(&t, "c3.lost1").kind, CauseKind::PromiseBeforeSync);
        // Only sync_file_range.
        let t = trace(&format!("{NEW}1 sync_file_range(3, 0, 0, SYNC_FILE_RANGE_WRITE) = 0\n1 write(1, \"\\x6f\\x6b\\x0a\", 3) = 3\n"));
        assert_eq!(cause(&t, "c4.lost1").kind, CauseKind::SyncFileRangeOnly);
        // A failed fsync.
        let t = trace(&format!("{NEW}1 fsync(3) = -1 EIO (Input/output error)\n1 write(1, \"\\x6f\\x6b\\x0a\", 3) = 3\n"));
        assert_eq!(cause(&t, "c4.lost1").kind, CauseKind::FailedSync);
        // Published by a rename before being synced; the fix goes before it.
        let t = trace(&format!(
            "{NEW}1 rename(\"\\x6e\", \"\\x6d\") = 0\n1 write(1, \"\\x6f\\x6b\\x0a\", 3) = 3\n"
        ));
        let c = cause(&t, "c4.lost1");
        assert_eq!(c.kind, CauseKind::DataNotSyncedBeforeRename);
        assert_eq!(c.fix.unwrap().after, 1);
    }

    #[test]
    fn a_loss_inside_an_update_that_is_not_atomic_is_not_atomic_unless_promised_after() {
        // Two writes to n; the state right after the first fails with every
        // op kept (the program passes through a rejected state).
        let two = format!("{NEW}1 write(3, \"\\x68\\x69\", 2) = 2\n");
        let rejects_c2 = |d: &StateDesc| d.damage() > 0 || d.crash == 2;
        let t = trace(&two);
        let outputs = Outputs::new(&t, None);
        let cx = Context::new(&t, &outputs);
        let c = explain(
            &cx,
            &StateDesc::parse("c3.lost1").unwrap(),
            Some("rejected"),
            &mut |d| rejected(rejects_c2(d)),
        );
        assert_eq!(c.kind, CauseKind::NotAtomic, "{}", c.sentence);
        assert_eq!({ c.blamed.op }, 1);
        assert!(
            c.sentence
                .starts_with("a crash right after op 1 (write of n) fails with every op kept")
                && c.sentence.contains("is one more state of the same update"),
            "{}",
            c.sentence
        );
        // A promise after the lost write: losing it breaks the promise, and
        // that is its cause.
        let t = trace(&format!("{two}1 write(1, \"\\x6f\\x6b\\x0a\", 3) = 3\n"));
        let outputs = Outputs::new(&t, None);
        let cx = Context::new(&t, &outputs);
        let c = explain(
            &cx,
            &StateDesc::parse("c4.lost1").unwrap(),
            Some("rejected"),
            &mut |d| rejected(rejects_c2(d)),
        );
        assert_eq!(c.kind, CauseKind::UnorderedWrites, "{}", c.sentence);
    }

    #[test]
    fn a_crash_point_that_fails_with_nothing_lost_owns_the_failures_of_its_states() {
        // An info file written, then the first half of an update whose
        // crash point fails with every op kept ("partial"): the state that
        // also lost the info write, rejected for the same reason, is the
        // crash point's, not the info write's. Rejected for another
        // reason, it blames what it lost.
        let t = trace(
            "1 openat(AT_FDCWD, \"\\x69\", O_WRONLY|O_CREAT, 0644) = 3\n\
             1 write(3, \"\\x69\", 1) = 1\n\
             1 openat(AT_FDCWD, \"\\x64\", O_WRONLY|O_CREAT, 0644) = 4\n\
             1 write(4, \"\\x61\", 1) = 1\n\
             1 write(4, \"\\x62\", 1) = 1\n",
        );
        let outputs = Outputs::new(&t, None);
        let cx = Context::new(&t, &outputs);
        let state = StateDesc::parse("c4.lost1").unwrap();
        let partial = |d: &StateDesc| (d.crash == 4).then(|| "partial".to_string());
        let c = explain(&cx, &state, Some("partial"), &mut |d| partial(d));
        assert_eq!(c.kind, CauseKind::NotAtomic, "{}", c.sentence);
        assert_eq!(
            { c.blamed.op },
            3,
            "the crash point's last op, not the lost write"
        );
        assert!(
            c.sentence.contains("rejected for the same reason"),
            "{}",
            c.sentence
        );
        assert_eq!(c.fix, None);
        // Another reason: the lost info write is blamed.
        let c = explain(&cx, &state, Some("info missing"), &mut |d| partial(d));
        assert_eq!({ c.blamed.op }, 1, "{}", c.sentence);
        assert_ne!(c.kind, CauseKind::NotAtomic);
    }

    #[test]
    fn taking_syncs_out_shifts_later_barriers_and_keeps_every_other_op() {
        let t = trace(&format!(
            "{NEW}1 fsync(3) = 0\n1 fsync(3) = 0\n1 fsync(3) = 0\n"
        ));
        // open+create, write, fsync x3: the first and an op that is no sync.
        let fewer = without_syncs(&t, &[2, 1, 2]);
        assert_eq!(fewer.ops.len(), 4);
        assert_eq!(fewer.ops[1], t.ops[1]);
        for (i, op) in fewer.ops[2..].iter().enumerate() {
            assert!(
                matches!(op.kind, OpKind::Fsync { barrier, .. } if barrier == 2 + i),
                "{:?}",
                op.kind
            );
        }
        assert_eq!(without_syncs(&t, &[]).ops, t.ops);
    }

    #[test]
    fn inserting_a_sync_shifts_later_barriers() {
        let t = trace(&format!("{NEW}1 fsync(3) = 0\n"));
        let fix = SyncFix {
            after: 0,
            before: None,
            ino: 0,
            dir: true,
            path: ".".into(),
        };
        let t2 = with_sync(&t, &fix);
        assert_eq!(t2.ops.len(), 4);
        // Two places at once: indices of the added ops, barriers shifted.
        let later = SyncFix {
            after: 2,
            ino: 1,
            dir: false,
            path: "n".into(),
            before: None,
        };
        let (t3, added) = with_syncs(&t, &[later, fix.clone(), fix.clone()]);
        assert_eq!(added, vec![1, 4]);
        assert_eq!(t3.ops.len(), 5);
        assert!(matches!(
            t3.ops[4].kind,
            OpKind::Fsync {
                ino: 1,
                barrier: 4,
                ..
            }
        ));
        assert!(matches!(
            t3.ops[3].kind,
            OpKind::Fsync {
                ino: 1,
                barrier: 3,
                ..
            }
        ));
        assert!(matches!(
            t2.ops[1].kind,
            OpKind::Fsync {
                ino: 0,
                barrier: 1,
                ..
            }
        ));
        assert!(matches!(
            t2.ops[3].kind,
            OpKind::Fsync {
                ino: 1,
                barrier: 3,
                ..
            }
        ));
        let synced = synced_by(&t2.ops);
        assert_eq!(synced[0].main, Some(1));
    }
}
