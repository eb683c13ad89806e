//! Explore: which crash states a persistence model allows.
//!
//! A crash happens after op *k* (crash point `k` keeps a prefix of `k` ops).
//! An op is **forced** at `k` once a sync that covers it lies inside the
//! prefix; every other durable change in the prefix is **pending**. A model
//! says which subsets of the pending ops may survive, and which writes may be
//! torn:
//!
//! - process: the program dies, the OS lives: all kept.
//! - ordered: as process, but the last op, if a write, may be torn.
//! - posix: any subset of the pending ops may be lost, and each
//!   pending write may be torn as storage tears it ([`Tear`]: at a sector
//!   boundary near its middle, one sector short, or, for a write that
//!   extends the file, the new size without the data).
//!
//! Enumeration is pure and deterministic for a given trace, config and seed:
//! it yields [`StateDesc`]s (what was lost or torn), never touching disk.
//! Under posix it is exhaustive when a crash point has at most
//! `exhaustive_limit` pending units, and beyond that it takes structured
//! families plus a seeded sample, counting what it did not cover.

use serde::Serialize;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use blackout_oplog::ops::{synced_by, Op, OpKind, SyncedBy};
pub use blackout_oplog::ops::{Part, Unit};
pub use blackout_oplog::tear::{Cut, Tear};

/// What a model needs to know of a trace to tell which tears storage can
/// make of each write: each op's file size before it
/// (`Trace::sizes_before`) and the sector size. Without them
/// ([`Tearing::UNKNOWN`]) every write is taken to offer every tear (the
/// caller drops those storage cannot make).
#[derive(Debug, Clone, Copy)]
pub struct Tearing<'a> {
    /// For each op, its file's size just before it; `None`: not known.
    pub sizes_before: Option<&'a [u64]>,
    /// The sector size, in bytes.
    pub sector: u64,
}

impl Tearing<'_> {
    /// Sizes not known: every write offers every tear.
    pub const UNKNOWN: Tearing<'static> = Tearing {
        sizes_before: None,
        sector: 1,
    };

    /// The tears storage can make of op `i` (none for an op that is not a
    /// write; every tear when the sizes are not known).
    pub fn offered(&self, ops: &[Op], i: usize) -> Vec<Tear> {
        let OpKind::Write { off, data, .. } = &ops[i].kind else {
            return Vec::new();
        };
        match self.sizes_before.and_then(|s| s.get(i)) {
            Some(&size) => Tear::offered(*off, data.len, size, self.sector),
            None => Tear::ALL.to_vec(),
        }
    }
}

/// A crash state, described by what it lost and tore.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StateDesc {
    /// Ops `0..crash` were issued before the crash.
    pub crash: usize,
    /// Pending units lost (sorted), shared by the copies of a description
    /// (a state that loses hundreds of ops is held once).
    pub lost: Arc<[Unit]>,
    /// A write kept but torn.
    pub torn: Option<(usize, Tear)>,
}

impl StateDesc {
    /// The state at crash point `crash` with nothing lost or torn: ops
    /// `0..crash` all reached the disk (`c0` is the state before the
    /// workload, `c{N}` after all N ops).
    ///
    /// ```
    /// use blackout_explore::enumerate::StateDesc;
    ///
    /// assert_eq!(StateDesc::whole(5).id(), "c5");
    /// assert_eq!(StateDesc::whole(5).damage(), 0);
    /// ```
    pub fn whole(crash: usize) -> StateDesc {
        StateDesc {
            crash,
            lost: Default::default(),
            torn: None,
        }
    }

    /// How far from "nothing lost" this state is: lost units plus torn writes.
    pub fn damage(&self) -> usize {
        self.lost.len() + usize::from(self.torn.is_some())
    }

    /// The state's id: `c5` (crash after 5 ops, nothing lost), `c5.lost3`,
    /// `c5.lost3+4`, `c5.lost3s` (a rename's source half), `c5.torn4h`.
    pub fn id(&self) -> String {
        let mut s = format!("c{}", self.crash);
        if !self.lost.is_empty() {
            s.push_str(".lost");
            let parts: Vec<String> = self
                .lost
                .iter()
                .map(|u| match u.part {
                    Part::Whole => { u.op }.to_string(),
                    Part::Source => format!("{}s", { u.op }),
                    Part::Dest => format!("{}d", { u.op }),
                })
                .collect();
            s.push_str(&parts.join("+"));
        }
        if let Some((op, tear)) = self.torn {
            s.push_str(&format!(".torn{op}{}", tear.code()));
        }
        s
    }

    /// Parses an id made by [`StateDesc::id`].
    pub fn parse(id: &str) -> Option<StateDesc> {
        let mut parts = id.split('.');
        let crash = parts.next()?.strip_prefix('c')?.parse().ok()?;
        let mut lost: Vec<Unit> = Vec::new();
        let mut torn = None;
        for p in parts {
            if let Some(list) = p.strip_prefix("lost") {
                for u in list.split('+') {
                    let (num, part) = match u.as_bytes().last()? {
                        b's' => (&u[..u.len() - 1], Part::Source),
                        b'd' => (&u[..u.len() - 1], Part::Dest),
                        _ => (u, Part::Whole),
                    };
                    lost.push(Unit {
                        op: num.parse().ok()?,
                        part,
                    });
                }
            } else if let Some(t) = p.strip_prefix("torn") {
                let (num, code) = t.split_at(t.len().checked_sub(1)?);
                let tear = match code {
                    "h" => Tear::Half,
                    "s" => Tear::ShortSector,
                    "z" => Tear::Zeros,
                    _ => return None,
                };
                torn = Some((num.parse().ok()?, tear));
            } else {
                return None;
            }
        }
        lost.sort();
        Some(StateDesc {
            crash,
            lost: lost.into(),
            torn,
        })
    }
}

impl StateDesc {
    /// Checks that the state makes sense for `ops`: the crash point exists,
    /// every lost unit is a change made before the crash (a rename half only
    /// of a rename between two directories), and the torn op is a write made
    /// before the crash. Whether a model allows it is not checked.
    pub fn validate(&self, ops: &[Op]) -> Result<(), String> {
        if self.crash > ops.len() {
            return Err(format!(
                "crash point c{} is past the last op (the trace has {} ops)",
                self.crash,
                ops.len()
            ));
        }
        for u in self.lost.iter() {
            if u.op >= self.crash {
                return Err(format!(
                    "op {} was not issued before crash point c{}",
                    { u.op },
                    self.crash
                ));
            }
            let cross = matches!(&ops[u.op].kind, OpKind::Rename { from_dir, to_dir, .. } if from_dir != to_dir);
            if !ops[u.op].kind.is_durable_change() {
                return Err(format!("op {} changes nothing a crash can lose", { u.op }));
            }
            if (u.part != Part::Whole) != cross {
                return Err(format!(
                    "op {}: halves (s, d) exist only for renames between two directories, and such a rename is lost by halves",
                    { u.op }
                ));
            }
        }
        if let Some((op, _)) = self.torn {
            if op >= self.crash || !matches!(ops[op].kind, OpKind::Write { .. }) {
                return Err(format!(
                    "op {op} is not a write issued before crash point c{}",
                    self.crash
                ));
            }
        }
        Ok(())
    }
}

impl StateDesc {
    /// Checks that a crash could leave this state under the strongest model
    /// (posix, which allows every state a weaker one does): each lost unit
    /// still pending at its crash point (no sync before the crash covered
    /// it), and the torn write pending and torn as storage can tear it
    /// (`tearing`: a write inside one sector cannot be). Call
    /// [`StateDesc::validate`] first.
    ///
    /// # Errors
    ///
    /// Why no crash leaves this state, in one line.
    pub fn possible(&self, ops: &[Op], tearing: Tearing<'_>) -> Result<(), String> {
        let synced = synced_by(ops);
        let pending = pending_at(ops, &synced, self.crash);
        for u in self.lost.iter() {
            if !pending.contains(u) {
                return Err(format!(
                    "op {} was made durable by a sync before crash point c{}: no crash there loses it",
                    { u.op },
                    self.crash
                ));
            }
        }
        if let Some((op, tear)) = self.torn {
            let whole = Unit {
                op,
                part: blackout_oplog::ops::Part::Whole,
            };
            if !pending.contains(&whole) {
                return Err(format!(
                    "op {op} was made durable by a sync before crash point c{}: no crash there tears it",
                    self.crash
                ));
            }
            let offered = tearing.offered(ops, op);
            if !offered.contains(&tear) {
                let can = if offered.is_empty() {
                    "storage writes it whole or not at all (it lies inside one sector)".to_string()
                } else {
                    let ids: Vec<String> = offered
                        .iter()
                        .map(|t| format!("torn{op}{}", t.code()))
                        .collect();
                    format!("the tears storage can make of it are {}", ids.join(", "))
                };
                return Err(format!("op {op} cannot be torn `{}`: {can}", tear.code()));
            }
        }
        Ok(())
    }
}

/// Enumeration settings.
#[derive(Debug, Clone)]
pub struct ExploreConfig {
    /// Exhaustive over subsets when a crash point has at most this many
    /// pending units.
    pub exhaustive_limit: usize,
    /// Random subsets sampled per crash point beyond the limit (`--budget`).
    pub budget: usize,
    /// Seed of the sample.
    pub seed: u64,
    /// Which crash points are explored: all, or a few representatives of
    /// each class of crash points whose pending work has the same shape
    /// (representative exploration, in the classes module).
    pub representatives: Representatives,
}

/// Which crash points an exploration visits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Representatives {
    /// Every crash point up to [`REPRESENTATIVES_MIN_OPS`] ops, then
    /// [`REPRESENTATIVES_DEFAULT`] per class.
    #[default]
    Auto,
    /// Every crash point (`--exhaustive`).
    Exhaustive,
    /// This many crash points per class (`--representatives N`, at least
    /// 1), whatever the trace's length.
    PerClass(usize),
}

/// Crash points explored per class by default, once a trace is long
/// enough for classes to pay.
pub const REPRESENTATIVES_DEFAULT: usize = 3;
/// Traces of more ops than this are explored by representatives unless
/// told otherwise.
pub const REPRESENTATIVES_MIN_OPS: usize = 500;
/// Traces that write more bytes than this are explored by representatives
/// unless told otherwise, however few their ops: each state of such a
/// trace is costly to check.
pub const REPRESENTATIVES_MIN_BYTES: u64 = 8 << 20;

/// `r` of `members` spread from the first to the last (the first alone
/// when `r` is 1).
///
/// ```
/// use blackout_explore::enumerate::spread;
/// assert_eq!(spread(&[10, 11, 12, 13, 14], 3), [10, 12, 14]);
/// assert_eq!(spread(&[10, 11], 3), [10, 11]);
/// ```
pub fn spread(members: &[usize], r: usize) -> Vec<usize> {
    let m = members.len();
    if r >= m {
        return members.to_vec();
    }
    if r <= 1 {
        return vec![members[0]];
    }
    let mut picked: Vec<usize> = (0..r).map(|i| members[i * (m - 1) / (r - 1)]).collect();
    picked.dedup();
    picked
}

impl Representatives {
    /// Crash points explored per class for a trace of `ops`; `None` for
    /// every crash point. `Auto` explores by representatives a trace of
    /// more than [`REPRESENTATIVES_MIN_OPS`] ops or that writes more than
    /// [`REPRESENTATIVES_MIN_BYTES`].
    ///
    /// # Examples
    ///
    /// ```
    /// use blackout_explore::enumerate::Representatives;
    /// use blackout_oplog::ops::test_ops::write;
    /// let short: Vec<_> = (0..100).map(|_| write(1)).collect();
    /// let long: Vec<_> = (0..5_000).map(|_| write(1)).collect();
    /// assert_eq!(Representatives::Auto.per_class(&short), None);
    /// assert_eq!(Representatives::Auto.per_class(&long), Some(3));
    /// assert_eq!(Representatives::PerClass(1).per_class(&short), Some(1));
    /// assert_eq!(Representatives::Exhaustive.per_class(&long), None);
    /// ```
    pub fn per_class(self, ops: &[Op]) -> Option<usize> {
        let written = || -> u64 {
            ops.iter()
                .map(|op| match &op.kind {
                    OpKind::Write { data, .. } => data.len,
                    _ => 0,
                })
                .sum()
        };
        match self {
            Representatives::Auto
                if ops.len() > REPRESENTATIVES_MIN_OPS || written() > REPRESENTATIVES_MIN_BYTES =>
            {
                Some(REPRESENTATIVES_DEFAULT)
            }
            Representatives::Auto | Representatives::Exhaustive => None,
            Representatives::PerClass(n) => Some(n),
        }
    }

    /// The setting as the command line and a part file spell it: `auto`,
    /// `exhaustive` or a number.
    pub fn name(self) -> String {
        match self {
            Representatives::Auto => "auto".into(),
            Representatives::Exhaustive => "exhaustive".into(),
            Representatives::PerClass(n) => n.to_string(),
        }
    }

    /// The setting a [`Representatives::name`] names.
    pub fn by_name(name: &str) -> Option<Representatives> {
        match name {
            "auto" => Some(Representatives::Auto),
            "exhaustive" => Some(Representatives::Exhaustive),
            n => n
                .parse()
                .ok()
                .filter(|&n| n > 0)
                .map(Representatives::PerClass),
        }
    }
}

/// A part file spells the setting as [`Representatives::name`] does.
impl Serialize for Representatives {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Representatives {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Representatives::by_name(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "representatives `{}` is neither `auto`, `exhaustive` nor a number above 0",
                name.escape_debug()
            ))
        })
    }
}

/// Pending units up to which posix enumerates every subset, by default.
pub const EXHAUSTIVE_LIMIT_DEFAULT: usize = 10;
/// The largest exhaustive limit: 2^20 subsets per crash point.
pub const EXHAUSTIVE_LIMIT_MAX: usize = 20;
/// Random subsets sampled per crash point beyond the limit, by default.
pub const BUDGET_DEFAULT: usize = 64;
/// The largest sample per crash point.
pub const BUDGET_MAX: usize = 1 << 20;

impl Default for ExploreConfig {
    fn default() -> Self {
        ExploreConfig {
            exhaustive_limit: EXHAUSTIVE_LIMIT_DEFAULT,
            budget: BUDGET_DEFAULT,
            seed: 0,
            representatives: Representatives::Auto,
        }
    }
}

impl ExploreConfig {
    /// Checks the limits: a library caller can pass what the command line
    /// refuses.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.exhaustive_limit > EXHAUSTIVE_LIMIT_MAX {
            return Err(ConfigError::ExhaustiveLimit(self.exhaustive_limit));
        }
        if self.budget > BUDGET_MAX {
            return Err(ConfigError::Budget(self.budget));
        }
        if self.representatives == Representatives::PerClass(0) {
            return Err(ConfigError::Representatives);
        }
        Ok(())
    }
}

/// A setting out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// `exhaustive_limit` above [`EXHAUSTIVE_LIMIT_MAX`].
    #[error("exhaustive limit {0} is out of range (0 to {EXHAUSTIVE_LIMIT_MAX} pending ops)")]
    ExhaustiveLimit(usize),
    /// `budget` above [`BUDGET_MAX`].
    #[error("budget {0} is out of range (0 to {BUDGET_MAX} sampled subsets per crash point)")]
    Budget(usize),
    /// Representatives per class of 0.
    #[error("at least one representative per class is needed")]
    Representatives,
    /// A sector of 0 bytes.
    #[error("the sector size must be at least 1 byte")]
    Sector,
    /// No worker to check with.
    #[error("at least one job is needed to check states")]
    Jobs,
    /// A checker timeout of zero.
    #[error("the checker timeout must be positive")]
    Timeout,
    /// Settings that name a closure checker, which no command runs again.
    #[error("a closure checker cannot be rebuilt from settings: only a command can")]
    CheckerKind,
    /// A materializer asked for that cannot work here (why, in one line).
    #[error("{0}")]
    Materializer(String),
}

/// What an enumeration did not cover.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Coverage {
    /// Crash points enumerated (`explored`'s length once merged).
    pub crash_points: usize,
    /// Which crash points were enumerated, ascending: so that coverage
    /// merged from two explorations of one trace (representatives, then
    /// the rest) counts a crash point once.
    #[serde(skip)]
    pub explored: Vec<usize>,
    /// Crash points whose subsets were not all enumerated.
    pub partial_crash_points: Vec<usize>,
    /// Subsets of pending units left out, summed over crash points
    /// (saturating). In JSON a decimal string: it can exceed what a JSON
    /// number holds exactly.
    #[serde(serialize_with = "as_decimal")]
    pub subsets_not_covered: u128,
    /// With representatives: the classes of crash points, each with the
    /// ones explored and how many it stood for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classes: Option<Vec<ClassCount>>,
    /// With representatives and the rest explored after them: how many
    /// crash points the rest explored with every pending unit taken (all
    /// of them, unless the trace would make more than the rest's bound of
    /// states).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_crash_points: Option<usize>,
}

/// One class of crash points whose pending work has the same shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClassCount {
    /// The shape, for people: the pending ops' calls and files
    /// (`pwrite64 db-wal, fsync db-wal; promise pending`).
    pub shape: String,
    /// Crash points in the class.
    pub crash_points: usize,
    /// The crash points explored for it.
    pub explored: Vec<usize>,
}

impl Coverage {
    /// Adds what another enumeration of the same trace covered (a batch of
    /// crash points, or the rest after the representatives); then
    /// [`Coverage::settle`].
    pub fn add(&mut self, more: Coverage) {
        self.explored.extend(more.explored);
        self.partial_crash_points.extend(more.partial_crash_points);
        self.subsets_not_covered = self
            .subsets_not_covered
            .saturating_add(more.subsets_not_covered);
    }

    /// The crash points in order, each once, and counted: a crash point two
    /// enumerations both explored is one.
    pub fn settle(&mut self) {
        self.explored.sort_unstable();
        self.explored.dedup();
        self.partial_crash_points.sort_unstable();
        self.partial_crash_points.dedup();
        self.crash_points = self.explored.len();
    }
}

fn as_decimal<S: serde::Serializer>(n: &u128, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(n)
}

/// The pending units at crash point `k`.
pub fn pending_at(ops: &[Op], synced: &[SyncedBy], k: usize) -> Vec<Unit> {
    let mut out = Vec::new();
    for (i, op) in ops[..k].iter().enumerate() {
        if !op.kind.is_durable_change() {
            continue;
        }
        let forced = |s: Option<usize>| s.is_some_and(|s| s < k);
        match &op.kind {
            OpKind::Rename {
                from_dir, to_dir, ..
            } if from_dir != to_dir => {
                if !forced(synced[i].main) {
                    out.push(Unit {
                        op: i,
                        part: Part::Dest,
                    });
                }
                if !forced(synced[i].source) {
                    out.push(Unit {
                        op: i,
                        part: Part::Source,
                    });
                }
            }
            _ => {
                if !(forced(synced[i].main) && forced(synced[i].source)) {
                    out.push(Unit {
                        op: i,
                        part: Part::Whole,
                    });
                }
            }
        }
    }
    out
}

/// Each pending unit: when it starts being pending (just after its op)
/// and when a sync covering it has completed (never: `usize::MAX`), as
/// [`pending_at`] decides.
pub(crate) fn unit_spans(ops: &[Op], synced: &[SyncedBy]) -> Vec<(Unit, usize, usize)> {
    let after = |s: Option<usize>| s.map_or(usize::MAX, |s| s + 1);
    let mut spans = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        if !op.kind.is_durable_change() {
            continue;
        }
        let unit = |part| Unit { op: i, part };
        match &op.kind {
            OpKind::Rename {
                from_dir, to_dir, ..
            } if from_dir != to_dir => {
                spans.push((unit(Part::Dest), i + 1, after(synced[i].main)));
                spans.push((unit(Part::Source), i + 1, after(synced[i].source)));
            }
            _ => {
                let end = after(synced[i].main).max(after(synced[i].source));
                spans.push((unit(Part::Whole), i + 1, end));
            }
        }
    }
    spans
}

/// The units pending at ascending crash points, kept up as the crash
/// point moves (each unit added once and dropped once): the same units, in
/// the same order, as [`pending_at`] gives.
struct PendingAlong {
    spans: Vec<(Unit, usize, usize)>,
    /// Spans before this one have started.
    next: usize,
    /// The units pending, and the crash point each stops being pending at.
    units: Vec<Unit>,
    ends: Vec<usize>,
    /// The earliest of those crash points.
    first_end: usize,
}

impl PendingAlong {
    fn new(ops: &[Op], synced: &[SyncedBy]) -> PendingAlong {
        PendingAlong {
            spans: unit_spans(ops, synced),
            next: 0,
            units: Vec::new(),
            ends: Vec::new(),
            first_end: usize::MAX,
        }
    }

    /// The units pending at crash point `k` (at least the last one asked).
    fn at(&mut self, k: usize) -> &[Unit] {
        while let Some(&(unit, from, to)) = self.spans.get(self.next) {
            if from > k {
                break;
            }
            self.next += 1;
            self.units.push(unit);
            self.ends.push(to);
            self.first_end = self.first_end.min(to);
        }
        if self.first_end <= k {
            let mut keep = 0;
            for i in 0..self.units.len() {
                if self.ends[i] > k {
                    self.units[keep] = self.units[i];
                    self.ends[keep] = self.ends[i];
                    keep += 1;
                }
            }
            self.units.truncate(keep);
            self.ends.truncate(keep);
            self.first_end = self.ends.iter().copied().min().unwrap_or(usize::MAX);
        }
        &self.units
    }
}

/// Enumerates the crash states a model allows, calling `emit` for each
/// (possibly with repeats across crash points; the caller dedups by content).
/// Returns what was not covered.
pub fn enumerate(
    ops: &[Op],
    model: &dyn CrashModel,
    cfg: &ExploreConfig,
    emit: impl FnMut(StateDesc),
) -> Result<Coverage, ConfigError> {
    enumerate_until(ops, model, cfg, None, emit)
}

/// [`enumerate`], stopping soon after `cancel` is set (models look at it in
/// their loops; what was emitted by then is all there is).
pub fn enumerate_until(
    ops: &[Op],
    model: &dyn CrashModel,
    cfg: &ExploreConfig,
    cancel: Option<&AtomicBool>,
    emit: impl FnMut(StateDesc),
) -> Result<Coverage, ConfigError> {
    let all: Vec<usize> = (0..=ops.len()).collect();
    enumerate_points(ops, model, cfg, Tearing::UNKNOWN, cancel, &all, emit)
}

/// [`enumerate_until`] at the crash points `points` only (ascending, each
/// at most `ops.len()`): what representative exploration visits. With
/// `tearing` known, representatives tell writes apart by the tears
/// storage can make of them.
pub fn enumerate_points(
    ops: &[Op],
    model: &dyn CrashModel,
    cfg: &ExploreConfig,
    tearing: Tearing<'_>,
    cancel: Option<&AtomicBool>,
    points: &[usize],
    mut emit: impl FnMut(StateDesc),
) -> Result<Coverage, ConfigError> {
    cfg.validate()?;
    let synced = synced_by(ops);
    let representatives = cfg.representatives.per_class(ops);
    let mut cov = Coverage::default();
    let mut along = PendingAlong::new(ops, &synced);
    for &k in points.iter().filter(|&&k| k <= ops.len()) {
        cov.crash_points += 1;
        cov.explored.push(k);
        let point = CrashPoint {
            ops,
            synced: &synced,
            k,
            cfg,
            cancel,
            representatives,
            pending: along.at(k),
            tearing,
        };
        if point.stopped() {
            break;
        }
        model.states_at(&point, &mut cov, &mut emit);
    }
    Ok(cov)
}

/// A persistence model: which states a crash at one crash point may leave.
///
/// Implementations are pure: they look only at the ops and the settings,
/// and emit each allowed state (repeats are fine: the caller dedups by
/// content). What they leave out is counted in the coverage.
pub trait CrashModel: Sync {
    /// The model's name on the command line.
    fn name(&self) -> &'static str;

    /// Emits the states allowed at `point`, adding what it did not cover to
    /// `cov`.
    fn states_at(
        &self,
        point: &CrashPoint<'_>,
        cov: &mut Coverage,
        emit: &mut dyn FnMut(StateDesc),
    );

    /// The coverage statement every run prints for this model.
    fn coverage_text(&self, cov: &Coverage, cfg: &ExploreConfig) -> String;

    /// At most how many states the model emits at a crash point with
    /// `pending` units pending, `writes` of them writes, when every unit
    /// is taken (no representatives), and how many units they lose or tear
    /// in all (what holding their descriptions costs): what bounds an
    /// exploration before it runs.
    fn states_bound(&self, pending: usize, writes: usize, cfg: &ExploreConfig) -> Bound;
}

/// What a crash point's states cost at most ([`CrashModel::states_bound`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bound {
    /// States.
    pub states: u64,
    /// Units lost or torn, summed over them.
    pub units: u64,
}

impl Bound {
    /// Both bounds added, saturating.
    pub fn plus(self, other: Bound) -> Bound {
        Bound {
            states: self.states.saturating_add(other.states),
            units: self.units.saturating_add(other.units),
        }
    }
}

/// One crash point, as a [`CrashModel`] sees it.
pub struct CrashPoint<'a> {
    /// Every op of the trace.
    pub ops: &'a [Op],
    /// Which sync covers each op ([`synced_by`]).
    pub synced: &'a [SyncedBy],
    /// The crash point: ops `0..k` were issued.
    pub k: usize,
    /// The enumeration settings.
    pub cfg: &'a ExploreConfig,
    /// Set from outside to stop.
    pub cancel: Option<&'a AtomicBool>,
    /// With representative exploration, how many of a set of alike
    /// pending units a model's families of states take (see
    /// [`Representatives::per_class`]); `None` for all.
    pub representatives: Option<usize>,
    /// The units still pending here, as [`pending_at`] gives them.
    pub pending: &'a [Unit],
    /// Which tears storage can make of each write.
    pub tearing: Tearing<'a>,
}

impl CrashPoint<'_> {
    /// The state with nothing lost or torn.
    pub fn plain(&self) -> StateDesc {
        StateDesc::whole(self.k)
    }

    /// Whether the enumeration should stop now.
    pub fn stopped(&self) -> bool {
        self.cancel.is_some_and(|c| c.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Model;
    use blackout_oplog::ops::test_ops::{op, write};

    fn collect_in(ops: &[Op], model: Model, cfg: &ExploreConfig) -> (Vec<StateDesc>, Coverage) {
        let mut v = Vec::new();
        let cov = enumerate(ops, model.crash_model(), cfg, |s| v.push(s)).unwrap();
        (v, cov)
    }

    fn collect(ops: &[Op], cfg: &ExploreConfig) -> (Vec<StateDesc>, Coverage) {
        collect_in(ops, Model::Posix, cfg)
    }

    #[test]
    fn limits_out_of_range_are_errors_not_panics() {
        let ops: Vec<Op> = (0..70u32).map(|i| write(i + 1)).collect();
        for limit in [EXHAUSTIVE_LIMIT_MAX + 1, 64, usize::MAX] {
            let cfg = ExploreConfig {
                exhaustive_limit: limit,
                ..ExploreConfig::default()
            };
            let e = enumerate(&ops, Model::Posix.crash_model(), &cfg, |_| {}).unwrap_err();
            assert_eq!(e, ConfigError::ExhaustiveLimit(limit));
        }
        let cfg = ExploreConfig {
            budget: BUDGET_MAX + 1,
            ..ExploreConfig::default()
        };
        assert!(enumerate(&ops, Model::Posix.crash_model(), &cfg, |_| {}).is_err());
    }

    #[test]
    fn exhaustive_count_matches_the_closed_form() {
        // n unsynced writes to distinct files: crash point k has k pending,
        // so 2^k subsets plus 3 tears per pending write.
        for n in 0..8usize {
            let ops: Vec<Op> = (0..n as u32).map(|i| write(i + 1)).collect();
            let (states, cov) = collect(&ops, &ExploreConfig::default());
            let expected: usize = (0..=n).map(|k| (1usize << k) + 3 * k).sum();
            assert_eq!(states.len(), expected, "n = {n}");
            assert!(cov.partial_crash_points.is_empty());
            assert_eq!(cov.subsets_not_covered, 0);
        }
    }

    #[test]
    fn synced_ops_are_never_lost() {
        let ops = vec![
            write(1),
            op(OpKind::Fsync {
                ino: 1,
                barrier: 1,
                implied: false,
            }),
            write(1),
        ];
        let (states, _) = collect(&ops, &ExploreConfig::default());
        assert!(states
            .iter()
            .filter(|s| s.crash >= 2)
            .all(|s| s.lost.iter().all(|u| u.op != 0)));
        assert!(states
            .iter()
            .any(|s| s.crash == 3 && s.lost.iter().any(|u| u.op == 2)));
    }

    #[test]
    fn process_and_ordered_counts() {
        let ops = vec![write(1), write(2)];
        let cfg = ExploreConfig::default();
        assert_eq!(collect_in(&ops, Model::Process, &cfg).0.len(), 3);
        // 3 plain + 3 tears of the last write at crash points 1 and 2.
        assert_eq!(collect_in(&ops, Model::Ordered, &cfg).0.len(), 9);
    }

    #[test]
    fn beyond_the_limit_it_samples_and_says_what_it_missed() {
        let ops: Vec<Op> = (0..12u32).map(|i| write(i + 1)).collect();
        let cfg = ExploreConfig {
            exhaustive_limit: 10,
            ..ExploreConfig::default()
        };
        let (a, cov) = collect(&ops, &cfg);
        assert_eq!(cov.partial_crash_points, vec![11, 12]);
        assert!(cov.subsets_not_covered > 0);
        // Deterministic for a seed.
        assert_eq!(a, collect(&ops, &cfg).0);
    }

    #[test]
    fn representatives_take_a_few_of_each_run_of_alike_pending_ops() {
        // 100 alike writes to file 1, then one to file 2: at the last crash
        // point, the families lose, keep, cut at and tear a few of the run.
        let mut ops: Vec<Op> = (0..100).map(|_| write(1)).collect();
        ops.push(write(2));
        let at_end = |representatives| {
            let cfg = ExploreConfig {
                representatives,
                ..ExploreConfig::default()
            };
            let mut states = Vec::new();
            let posix = Model::Posix.crash_model();
            enumerate_points(&ops, posix, &cfg, Tearing::UNKNOWN, None, &[101], |s| {
                states.push(s)
            })
            .unwrap();
            states
        };
        let all = at_end(Representatives::Exhaustive);
        let few = at_end(Representatives::PerClass(3));
        assert!(all.len() > 500, "{}", all.len());
        assert!(few.len() < 100, "{}", few.len());
        let lost_alone = |states: &[StateDesc]| -> Vec<usize> {
            states
                .iter()
                .filter(|s| s.lost.len() == 1)
                .map(|s| s.lost[0].op)
                .collect()
        };
        // The first, middle and last of the run, and the odd one out.
        assert_eq!(lost_alone(&few), [0, 49, 99, 100]);
        assert_eq!(lost_alone(&all).len(), 101);
        let torn: Vec<usize> = few.iter().filter_map(|s| s.torn.map(|t| t.0)).collect();
        assert_eq!(torn.len(), 4 * Tear::ALL.len());
    }

    #[test]
    fn pending_kept_up_along_the_crash_points_is_pending_at_each() {
        let mut seed = 11u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        };
        for round in 0..60 {
            let n = (next() % 50) as usize;
            let ops: Vec<Op> = (0..n)
                .map(|i| {
                    let ino = 1 + (next() % 4) as u32;
                    op(match next() % 5 {
                        0 => OpKind::Fsync {
                            ino,
                            barrier: i,
                            implied: false,
                        },
                        1 => OpKind::Rename {
                            from_dir: 1,
                            from_name: "a".into(),
                            to_dir: 1 + (next() % 2) as u32,
                            to_name: "b".into(),
                            ino: 5,
                            replaced: None,
                            exchange: false,
                        },
                        _ => write(ino).kind,
                    })
                })
                .collect();
            let synced = synced_by(&ops);
            // Every crash point, then every third.
            for step in [1, 3] {
                let mut along = PendingAlong::new(&ops, &synced);
                for k in (0..=n).step_by(step) {
                    assert_eq!(
                        along.at(k),
                        pending_at(&ops, &synced, k),
                        "round {round}, c{k}"
                    );
                }
            }
        }
    }

    #[test]
    fn cross_directory_renames_have_two_halves() {
        let ops = vec![op(OpKind::Rename {
            from_dir: 1,
            from_name: "a".into(),
            to_dir: 2,
            to_name: "a".into(),
            ino: 3,
            replaced: None,
            exchange: false,
        })];
        let p = pending_at(&ops, &synced_by(&ops), 1);
        assert_eq!(p.len(), 2);
    }

    #[test]
    fn ids_round_trip() {
        for id in [
            "c0",
            "c5.lost3",
            "c5.lost3+4s+7d",
            "c9.torn4h",
            "c2.lost1.torn0z",
        ] {
            assert_eq!(StateDesc::parse(id).unwrap().id(), id);
        }
        assert!(StateDesc::parse("x5").is_none());
        assert!(StateDesc::parse("c5.lostx").is_none());
    }
}
