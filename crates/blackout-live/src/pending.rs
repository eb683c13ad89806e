//! What the live file system was asked to do and has not made durable:
//! the pending ops, in blackout's terms ([`OpKind`] over the mount's
//! inodes) or changes to an inode's attributes ([`Attr`]), which sync
//! covers each (the forcing rules of [`blackout_oplog::ops::synced_by`],
//! applied as the syncs arrive; an attribute change by its inode's fsync,
//! not fdatasync), and which of them a crash keeps.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use blackout_oplog::ops::{Ino, OpKind, Part};
use blackout_oplog::store::Halves;
use serde::Serialize;

/// A change to an inode's attributes: durable once the inode is fsynced
/// (an fdatasync leaves it pending). Times are not changes of their own:
/// an fsync makes the inode's times durable as they are then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attr {
    /// chmod: the permission bits.
    Mode(u32),
    /// chown: the owner and the group, each if set.
    Owner(Option<u32>, Option<u32>),
    /// setxattr: a name and its value.
    SetXattr(Vec<u8>, Vec<u8>),
    /// removexattr: a name.
    RemoveXattr(Vec<u8>),
}

/// What a pending op changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// An op in blackout's terms: data or an entry.
    Op(OpKind),
    /// An inode's attributes.
    Attr(Ino, Attr),
}

impl From<OpKind> for Change {
    fn from(kind: OpKind) -> Change {
        Change::Op(kind)
    }
}

impl Change {
    /// The op in blackout's terms, if it is one.
    pub fn op(&self) -> Option<&OpKind> {
        match self {
            Change::Op(k) => Some(k),
            Change::Attr(..) => None,
        }
    }

    /// Whether it is a rename.
    fn is_rename(&self) -> bool {
        matches!(self, Change::Op(OpKind::Rename { .. }))
    }
}

/// One pending op: what it does and how a person names it.
#[derive(Debug, Clone)]
pub struct PendingOp {
    /// What it changes, over the mount's inodes (a write's data is
    /// [`PendingOp::data`]; its `DataRef` is unused).
    pub change: Change,
    /// The request that made it, as the call's name (`write`, `rename`).
    pub call: &'static str,
    /// The path it acted on, relative to the mount, as it was then
    /// (shared: every write through one handle names the same).
    pub path: Arc<str>,
    /// A rename's destination path, relative to the mount.
    pub to: Option<String>,
    /// The path whose sync makes it (a rename's destination half) durable:
    /// the file for a data op, the directory for an entry op.
    pub sync_path: Arc<str>,
    /// The directory whose sync makes a rename's removal durable.
    pub source_sync_path: Arc<str>,
    /// A write's bytes.
    pub data: Box<[u8]>,
    /// The halves still pending (both for every op but a rename half-made
    /// durable).
    pub left: Halves,
}

/// A pending op as it is reported: in blackout's terms, with the sync
/// that would make it durable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct OpView {
    /// The op's number since the mount (or the last crash).
    pub seq: u64,
    /// The call (`write`, `truncate`, `create`, `mkdir`, `rename`, ...).
    pub call: String,
    /// The path, relative to the mount.
    pub path: String,
    /// A rename's destination.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// A write's or fallocate's offset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// A write's or fallocate's length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length: Option<u64>,
    /// A truncate's new size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Which part: the whole op, or one half of a rename.
    pub part: Part,
    /// The sync that would make it durable, as a call (`fsync(db.wal)`).
    pub durable_by: String,
}

impl OpView {
    /// The op in one line: `write db.wal [0, 4096)`, `rename a -> b`.
    pub fn describe(&self) -> String {
        let mut s = format!("{} {}", self.call, self.path);
        if let Some(to) = &self.to {
            s.push_str(&format!(" -> {to}"));
        }
        if let (Some(off), Some(len)) = (self.offset, self.length) {
            s.push_str(&format!(" [{off}, {})", off + len));
        }
        if let Some(size) = self.size {
            s.push_str(&format!(" to {size} bytes"));
        }
        match self.part {
            Part::Whole => {}
            Part::Source => s.push_str(" (its removal of the old name)"),
            Part::Dest => s.push_str(" (its new name)"),
        }
        s
    }
}

/// Ops in one line each, a run of consecutive ops of one call on one path
/// with one sync folded into one line (`1643 writes data.log in [0, 27246)`),
/// so a crash that dropped thousands of appends reads in a line.
///
/// ```
/// use blackout_live::pending::{summarize, OpView};
/// use blackout_oplog::ops::Part;
/// let w = |seq, off| OpView {
///     seq, call: "write".into(), path: "log".into(), to: None,
///     offset: Some(off), length: Some(10), size: None, part: Part::Whole,
///     durable_by: "fsync(log)".into(),
/// };
/// assert_eq!(summarize(&[w(0, 0), w(1, 10)]), ["2 writes log in [0, 20): durable only after fsync(log)"]);
/// assert_eq!(summarize(&[w(0, 0)]), ["write log [0, 10): durable only after fsync(log)"]);
/// ```
pub fn summarize(views: &[OpView]) -> Vec<String> {
    let noted: Vec<(&OpView, String)> = views
        .iter()
        .map(|v| (v, format!("durable only after {}", v.durable_by)))
        .collect();
    summarize_noted(&noted)
}

/// As [`summarize`], each op with its own note after it (`what a tear
/// left`); a run shares its note.
pub fn summarize_noted(items: &[(&OpView, String)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < items.len() {
        let (v, note) = &items[i];
        let mut j = i + 1;
        while j < items.len()
            && items[j].0.call == v.call
            && items[j].0.path == v.path
            && items[j].0.to == v.to
            && items[j].1 == *note
        {
            j += 1;
        }
        let run = &items[i..j];
        let line = if run.len() == 1 {
            v.describe()
        } else {
            let lo = run.iter().filter_map(|r| r.0.offset).min();
            let hi = run
                .iter()
                .filter_map(|r| Some(r.0.offset? + r.0.length?))
                .max();
            let range = match (lo, hi) {
                (Some(lo), Some(hi)) => format!(" in [{lo}, {hi})"),
                _ => String::new(),
            };
            format!("{} {}s {}{range}", run.len(), v.call, v.path)
        };
        out.push(format!("{line}: {note}"));
        i = j;
    }
    out
}

/// The pending ops, in the order they were made.
#[derive(Debug, Default)]
pub struct Pending {
    ops: BTreeMap<u64, PendingOp>,
    /// Pending halves by the inode whose sync covers them: (op, is the
    /// rename's source half), as `synced_by` keeps them.
    by_sync: HashMap<Ino, Vec<(u64, bool)>>,
    /// How many pending ops name each inode (in any field).
    refs: HashMap<Ino, u32>,
    next: u64,
}

/// A pending op taken for the durable tree: what to apply of it, and the
/// op itself, to go back on the list ([`Pending::restore`]) if the backing
/// directory refuses it.
#[derive(Debug)]
pub struct Taken {
    /// Its number.
    pub seq: u64,
    /// The op (a write's bytes in its `data`: possibly a torn prefix).
    pub op: PendingOp,
    /// Which halves to apply.
    pub halves: Halves,
    /// A write torn by a crash: only the file's new size reaches the disk.
    pub size_only: bool,
}

/// The inodes whose sync covers `halves` of an op, each with whether it is
/// a rename's source half (as [`Pending::push`] files them).
fn sync_keys(change: &Change, halves: Halves) -> Vec<(Ino, bool)> {
    let kind = match change {
        Change::Op(k) => k,
        Change::Attr(ino, _) => return vec![(*ino, false)],
    };
    match kind {
        OpKind::Rename {
            from_dir, to_dir, ..
        } => {
            let mut keys = Vec::new();
            if halves.dest {
                keys.push((*to_dir, false));
            }
            if halves.source {
                keys.push((*from_dir, true));
            }
            keys
        }
        OpKind::Write { ino: at, .. }
        | OpKind::Truncate { ino: at, .. }
        | OpKind::Fallocate { ino: at, .. }
        | OpKind::Link { dir: at, .. }
        | OpKind::Unlink { dir: at, .. } => vec![(*at, false)],
        _ => Vec::new(),
    }
}

/// The inodes an op names, in any field.
pub fn named(change: &Change) -> Vec<Ino> {
    let kind = match change {
        Change::Op(k) => k,
        Change::Attr(ino, _) => return vec![*ino],
    };
    match kind {
        OpKind::Write { ino, .. }
        | OpKind::Truncate { ino, .. }
        | OpKind::Fallocate { ino, .. } => vec![*ino],
        OpKind::Link { dir, ino, .. } | OpKind::Unlink { dir, ino, .. } => vec![*dir, *ino],
        OpKind::Rename {
            from_dir,
            to_dir,
            ino,
            replaced,
            ..
        } => {
            let mut v = vec![*from_dir, *to_dir, *ino];
            v.extend(replaced);
            v
        }
        _ => Vec::new(),
    }
}

impl Pending {
    /// Adds an op (a data or entry op) and returns its number.
    pub fn push(&mut self, op: PendingOp) -> u64 {
        let seq = self.next;
        self.next += 1;
        let keys = sync_keys(&op.change, Halves::BOTH);
        if keys.is_empty() {
            return seq;
        }
        for (ino, source) in keys {
            self.by_sync.entry(ino).or_default().push((seq, source));
        }
        for ino in named(&op.change) {
            *self.refs.entry(ino).or_default() += 1;
        }
        self.ops.insert(seq, op);
        seq
    }

    /// Puts an op taken for a sync back on the list, pending as it was
    /// (its `halves` of it), in its place: the backing directory refused
    /// it, and nothing the program was told was written may be lost.
    pub fn restore(&mut self, t: Taken) {
        let Taken {
            seq, op, halves, ..
        } = t;
        for key in sync_keys(&op.change, halves) {
            let list = self.by_sync.entry(key.0).or_default();
            if !list.contains(&(seq, key.1)) {
                let at = list.partition_point(|&(s, _)| s < seq);
                list.insert(at, (seq, key.1));
            }
        }
        match self.ops.get_mut(&seq) {
            Some(o) => {
                o.left.source |= halves.source;
                o.left.dest |= halves.dest;
            }
            None => {
                for ino in named(&op.change) {
                    *self.refs.entry(ino).or_default() += 1;
                }
                let mut op = op;
                op.left = halves;
                self.ops.insert(seq, op);
            }
        }
    }

    /// How many ops are pending.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Whether a pending op names `ino` (its data, an entry for it, or an
    /// entry in it).
    pub fn names(&self, ino: Ino) -> bool {
        self.refs.get(&ino).is_some_and(|&n| n > 0)
    }

    /// Takes what a sync of `ino` covers (its data ops; for a directory,
    /// its entry ops and its halves of renames; and, unless `data_only`
    /// (an fdatasync), the changes to its attributes), in order.
    pub fn take_synced(&mut self, ino: Ino, data_only: bool) -> Vec<Taken> {
        let list = self.by_sync.remove(&ino).unwrap_or_default();
        let (taken, left): (Vec<_>, Vec<_>) = list.into_iter().partition(|(seq, _)| {
            !data_only
                || self
                    .ops
                    .get(seq)
                    .is_some_and(|o| matches!(o.change, Change::Op(_)))
        });
        if !left.is_empty() {
            self.by_sync.insert(ino, left);
        }
        taken
            .into_iter()
            .filter_map(|(seq, source)| self.take_half(seq, source))
            .collect()
    }

    /// Drops, for good, what a sync of `ino` covers (its data ops, its
    /// attribute changes, for a directory its entry ops and its halves of
    /// renames, whether the failed sync was an fsync or an fdatasync: the
    /// forcing rules' [`blackout_oplog::ops::synced_by`] after a writeback
    /// error), and returns them as they are reported, in order. What is
    /// dropped is never made durable: no later sync takes it.
    pub fn drop_synced(&mut self, ino: Ino) -> Vec<OpView> {
        let Some(list) = self.by_sync.get(&ino) else {
            return Vec::new();
        };
        let covered = |seq: u64, part: Part| match part {
            Part::Whole => list.iter().any(|&(s, _)| s == seq),
            Part::Source => list.contains(&(seq, true)),
            Part::Dest => list.contains(&(seq, false)),
        };
        let views: Vec<OpView> = self
            .units()
            .into_iter()
            .filter(|&(seq, part)| covered(seq, part))
            .filter_map(|(seq, part)| self.view(seq, part))
            .collect();
        drop(self.take_synced(ino, false));
        views
    }

    /// Takes every pending op, in order (a `sync`).
    pub fn take_all(&mut self) -> Vec<Taken> {
        let seqs: Vec<u64> = self.ops.keys().copied().collect();
        self.by_sync.clear();
        seqs.into_iter()
            .filter_map(|seq| self.remove(seq, None))
            .collect()
    }

    /// Drops every pending op (what a crash does with what it lost), and
    /// the numbering starts again.
    pub fn clear(&mut self) {
        *self = Pending::default();
    }

    /// One unit, taken for a crash that keeps it (the whole op's pending
    /// halves, or one of them). Only a crash takes units: what it does not
    /// take is dropped with [`Pending::clear`] after.
    pub fn take_unit(&mut self, seq: u64, part: Part) -> Option<Taken> {
        match part {
            Part::Whole => self.remove(seq, None),
            Part::Source => self.take_half(seq, true),
            Part::Dest => self.take_half(seq, false),
        }
    }

    /// One half (or the whole) of op `seq`, taken.
    fn take_half(&mut self, seq: u64, source: bool) -> Option<Taken> {
        let op = self.ops.get_mut(&seq)?;
        let rename = op.change.is_rename();
        let halves = if !rename {
            Halves::BOTH
        } else if source {
            op.left.source = false;
            Halves {
                source: true,
                dest: false,
            }
        } else {
            op.left.dest = false;
            Halves {
                source: false,
                dest: true,
            }
        };
        if rename && (op.left.source || op.left.dest) {
            return Some(Taken {
                seq,
                op: op.clone(),
                halves,
                size_only: false,
            });
        }
        self.remove(seq, Some(halves))
    }

    /// Op `seq` taken out whole: `halves` of it applied (else the halves
    /// still pending).
    fn remove(&mut self, seq: u64, halves: Option<Halves>) -> Option<Taken> {
        let op = self.ops.remove(&seq)?;
        self.unref(&op.change);
        Some(Taken {
            seq,
            halves: halves.unwrap_or(op.left),
            op,
            size_only: false,
        })
    }

    fn unref(&mut self, change: &Change) {
        for ino in named(change) {
            if let Some(n) = self.refs.get_mut(&ino) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.refs.remove(&ino);
                }
            }
        }
    }

    /// The pending units (ops, and each pending half of a rename between
    /// two directories), in order.
    pub fn units(&self) -> Vec<(u64, Part)> {
        let mut out = Vec::new();
        for (&seq, op) in &self.ops {
            match op.change {
                Change::Op(OpKind::Rename {
                    from_dir, to_dir, ..
                }) if from_dir != to_dir || !(op.left.source && op.left.dest) => {
                    if op.left.source {
                        out.push((seq, Part::Source));
                    }
                    if op.left.dest {
                        out.push((seq, Part::Dest));
                    }
                }
                _ => out.push((seq, Part::Whole)),
            }
        }
        out
    }

    /// A pending op.
    pub fn get(&self, seq: u64) -> Option<&PendingOp> {
        self.ops.get(&seq)
    }

    /// A unit as it is reported.
    pub fn view(&self, seq: u64, part: Part) -> Option<OpView> {
        let op = self.ops.get(&seq)?;
        let (offset, length, size) = match op.change {
            Change::Op(OpKind::Write { off, .. }) => (Some(off), Some(op.data.len() as u64), None),
            Change::Op(OpKind::Fallocate { off, len, .. }) => (Some(off), Some(len), None),
            Change::Op(OpKind::Truncate { size, .. }) => (None, None, Some(size)),
            _ => (None, None, None),
        };
        let durable_by = match (op.change.op(), part) {
            (Some(OpKind::Rename { .. }), Part::Source) => {
                format!("fsync({})", op.source_sync_path)
            }
            (Some(OpKind::Rename { .. }), Part::Whole) if op.sync_path != op.source_sync_path => {
                format!("fsync({}) and fsync({})", op.sync_path, op.source_sync_path)
            }
            (Some(k), _) if k.data_inode().is_some() => {
                format!("fsync({}) or fdatasync({})", op.sync_path, op.sync_path)
            }
            _ => format!("fsync({})", op.sync_path),
        };
        Some(OpView {
            seq,
            call: op.call.to_string(),
            path: op.path.to_string(),
            to: op.to.clone(),
            offset,
            length,
            size,
            part,
            durable_by,
        })
    }
}

/// Which pending units a crash keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Keep {
    /// None: everything never synced is lost (a cache cleared).
    None,
    /// Each unit kept or lost, as the seed picks: any subset the posix
    /// model allows.
    Random,
    /// The units up to a point the seed picks, in order (a disk that
    /// writes in order).
    Prefix,
}

impl Keep {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Keep::None => "none",
            Keep::Random => "random",
            Keep::Prefix => "prefix",
        }
    }
}

/// A small seeded generator (splitmix64): the same seed picks the same
/// crash.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x6a09_e667_f3bc_c909)
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// The units a crash keeps, out of `units` (in order): `None` keeps none,
/// `Random` each with even odds, `Prefix` the first k (k from 0 to all).
///
/// ```
/// use blackout_live::pending::{kept, Keep};
/// use blackout_oplog::ops::Part;
/// let units = [(0, Part::Whole), (1, Part::Whole), (2, Part::Whole)];
/// assert!(kept(&units, Keep::None, 7).is_empty());
/// let p = kept(&units, Keep::Prefix, 7);
/// assert_eq!(p[..], units[..p.len()]);
/// assert_eq!(kept(&units, Keep::Random, 7), kept(&units, Keep::Random, 7));
/// ```
pub fn kept(units: &[(u64, Part)], keep: Keep, seed: u64) -> Vec<(u64, Part)> {
    let mut rng = Rng::new(seed);
    match keep {
        Keep::None => Vec::new(),
        Keep::Random => units
            .iter()
            .copied()
            .filter(|_| rng.next_u64() & 1 == 1)
            .collect(),
        Keep::Prefix => {
            let k = rng.below(units.len() as u64 + 1) as usize;
            units[..k].to_vec()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blackout_oplog::ops::Name;

    fn op(kind: OpKind) -> PendingOp {
        PendingOp {
            change: Change::Op(kind),
            call: "x",
            path: "p".into(),
            to: None,
            sync_path: "p".into(),
            source_sync_path: "p".into(),
            data: Box::default(),
            left: Halves::BOTH,
        }
    }

    fn write(ino: Ino) -> PendingOp {
        let mut o = op(OpKind::Write {
            ino,
            off: 0,
            data: Default::default(),
        });
        o.data = b"abc".to_vec().into_boxed_slice();
        o
    }

    fn rename(from_dir: Ino, to_dir: Ino, ino: Ino) -> PendingOp {
        op(OpKind::Rename {
            from_dir,
            from_name: Name::from("a"),
            to_dir,
            to_name: Name::from("b"),
            ino,
            replaced: None,
            exchange: false,
        })
    }

    #[test]
    fn a_file_sync_takes_its_data_ops_and_nothing_else() {
        let mut p = Pending::default();
        p.push(write(1));
        p.push(write(2));
        p.push(op(OpKind::Link {
            dir: 0,
            name: Name::from("f"),
            ino: 1,
            new: true,
        }));
        p.push(write(1));
        let taken = p.take_synced(1, false);
        assert_eq!(taken.iter().map(|t| t.seq).collect::<Vec<_>>(), [0, 3]);
        assert_eq!(&*taken[0].op.data, b"abc");
        assert_eq!(p.len(), 2);
        // The entry still names inode 1.
        assert!(p.names(1));
        assert_eq!(p.take_synced(0, false).len(), 1);
        assert!(!p.names(1));
    }

    #[test]
    fn a_rename_between_directories_is_durable_by_halves() {
        let mut p = Pending::default();
        p.push(rename(1, 2, 3));
        assert_eq!(p.units(), [(0, Part::Source), (0, Part::Dest)]);
        let t = p.take_synced(2, false);
        assert!(t[0].halves.dest && !t[0].halves.source);
        assert_eq!(p.units(), [(0, Part::Source)]);
        assert_eq!(p.view(0, Part::Source).unwrap().durable_by, "fsync(p)");
        let t = p.take_synced(1, false);
        assert!(t[0].halves.source && !t[0].halves.dest);
        assert!(p.is_empty());
        assert!(!p.names(3));
    }

    #[test]
    fn a_rename_inside_one_directory_is_one_unit() {
        let mut p = Pending::default();
        p.push(rename(1, 1, 3));
        assert_eq!(p.units(), [(0, Part::Whole)]);
        let t = p.take_synced(1, false);
        assert_eq!(t.len(), 2, "both halves, one after the other");
        assert!(p.is_empty());
    }

    #[test]
    fn sync_takes_everything_in_order() {
        let mut p = Pending::default();
        p.push(write(1));
        p.push(rename(1, 2, 3));
        p.take_synced(2, false);
        let t = p.take_all();
        assert_eq!(t.len(), 2);
        assert!(t[1].halves.source && !t[1].halves.dest);
        assert!(p.is_empty() && !p.names(1));
    }

    #[test]
    fn an_op_put_back_is_pending_as_before_in_its_place() {
        let mut p = Pending::default();
        p.push(write(1));
        p.push(write(1));
        p.push(write(2));
        let mut taken = p.take_synced(1, false);
        assert!(!p.names(1));
        // The first write is refused: back in its place, before the
        // second, which was made durable.
        taken.truncate(1);
        p.restore(taken.remove(0));
        assert_eq!(p.units(), [(0, Part::Whole), (2, Part::Whole)]);
        assert!(p.names(1));
        let again = p.take_synced(1, false);
        assert_eq!(again.iter().map(|t| t.seq).collect::<Vec<_>>(), [0]);
        assert_eq!(&*again[0].op.data, b"abc");
    }

    #[test]
    fn a_rename_half_put_back_is_the_only_half_pending() {
        let mut p = Pending::default();
        p.push(rename(1, 1, 3));
        let mut t = p.take_synced(1, false);
        assert!(p.is_empty());
        // Its removal of the old name applied, its new name refused.
        let dest = t.remove(1);
        assert!(dest.halves.dest || t[0].halves.dest);
        let (refused, _) = if dest.halves.dest {
            (dest, t.remove(0))
        } else {
            (t.remove(0), dest)
        };
        p.restore(refused);
        assert_eq!(p.units(), [(0, Part::Dest)]);
        assert!(p.names(3));
        let again = p.take_synced(1, false);
        assert_eq!(again.len(), 1);
        assert!(again[0].halves.dest && !again[0].halves.source);
        assert!(p.is_empty() && !p.names(3));
    }

    #[test]
    fn an_attribute_change_waits_for_its_file_s_fsync_not_its_fdatasync() {
        let mut p = Pending::default();
        p.push(write(1));
        let mut chmod = op(OpKind::Truncate { ino: 9, size: 0 });
        chmod.change = Change::Attr(1, Attr::Mode(0o600));
        p.push(chmod);
        let data = p.take_synced(1, true);
        assert_eq!(data.iter().map(|t| t.seq).collect::<Vec<_>>(), [0]);
        assert_eq!(p.units(), [(1, Part::Whole)]);
        assert!(p.names(1));
        let all = p.take_synced(1, false);
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].op.change, Change::Attr(1, Attr::Mode(0o600)));
        assert!(p.is_empty() && !p.names(1));
    }

    #[test]
    fn a_failed_sync_drops_what_it_covered_and_nothing_else() {
        let mut p = Pending::default();
        p.push(write(1));
        p.push(write(2));
        let mut chmod = op(OpKind::Truncate { ino: 9, size: 0 });
        chmod.change = Change::Attr(1, Attr::Mode(0o600));
        p.push(chmod);
        p.push(write(1));
        let dropped = p.drop_synced(1);
        // The data and the attribute change, whatever the failed call.
        assert_eq!(dropped.iter().map(|v| v.seq).collect::<Vec<_>>(), [0, 2, 3]);
        assert_eq!(dropped[0].describe(), "x p [0, 3)");
        assert_eq!(p.units(), [(1, Part::Whole)]);
        assert!(!p.names(1));
        // Gone for good: a later sync of the file takes only what came
        // after.
        p.push(write(1));
        let later = p.take_synced(1, false);
        assert_eq!(later.iter().map(|t| t.seq).collect::<Vec<_>>(), [4]);
        assert!(p.drop_synced(7).is_empty());
    }

    #[test]
    fn a_failed_directory_sync_drops_its_half_of_a_rename() {
        let mut p = Pending::default();
        p.push(rename(1, 2, 3));
        p.push(rename(2, 2, 4));
        let dropped = p.drop_synced(2);
        assert_eq!(
            dropped.iter().map(|v| (v.seq, v.part)).collect::<Vec<_>>(),
            [(0, Part::Dest), (1, Part::Whole)]
        );
        // The source directory's half is still pending.
        assert_eq!(p.units(), [(0, Part::Source)]);
    }

    #[test]
    fn a_random_keep_differs_by_seed_and_keeps_some() {
        let units: Vec<(u64, Part)> = (0..64).map(|i| (i, Part::Whole)).collect();
        let a = kept(&units, Keep::Random, 1);
        let b = kept(&units, Keep::Random, 2);
        assert_ne!(a, b);
        assert!(!a.is_empty() && a.len() < 64);
    }

    #[test]
    fn a_write_is_described_with_its_range() {
        let mut p = Pending::default();
        p.push(write(1));
        let v = p.view(0, Part::Whole).unwrap();
        assert_eq!(v.describe(), "x p [0, 3)");
        assert_eq!(v.durable_by, "fsync(p) or fdatasync(p)");
    }
}
