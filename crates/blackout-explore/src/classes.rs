//! Representative exploration. Crash points whose pending work has the
//! same shape tend to be consistent or not together: a storage engine's
//! thousandth commit leaves the same kinds of ops in flight as its second.
//!
//! Two crash points share a class only if the crash model makes the same
//! choices at both, up to renaming ops ([`choice_signature`]): the same
//! kinds of pending units (call, rename half) each offering the same tears
//! (which of [`Tear::ALL`](crate::enumerate::Tear::ALL) storage can make of a write: one inside a sector
//! offers none, one across a boundary offers `h`, an append `z`), each
//! kind counted 1, 2, 3 or many; every subset taken or not (at most
//! `exhaustive_limit` pending); the same last op with the same tears (what
//! the ordered model tears). On top of those choices a crash point's
//! **shape** holds what makes the states of two crash points alike for a
//! checker: each pending op's system call, the role of its file (its path
//! with digits blurred: `seg-17.log` and `seg-18.log` play one role), the
//! directory an entry op changes, the source line that made it (with
//! `--stacks`), where a write or truncate falls against the file's size
//! (at 0, inside, at the end, past it), how many bytes and sectors it
//! moves, whether an `O_SYNC`/`O_DSYNC` descriptor syncs it and whether
//! its file is volatile; and whether a promise was printed while something
//! was pending. Crash points of one shape form a **class**; a few of each
//! (spread from the first to the last) are explored first, and the
//! coverage statement names every class and how many crash points it
//! stood for. A failure is always a state that was built and checked.

use std::collections::{BTreeMap, HashMap};

use blackout_oplog::ops::{
    escape_controls, synced_by, InodeKind, Op, OpKind, Part, SyncedBy, Unit,
};

use crate::enumerate::{pending_at, spread, unit_spans, ClassCount, Tearing};

/// The crash points to explore and the classes they stand for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classes {
    /// The crash points explored, ascending.
    pub explore: Vec<usize>,
    /// Every class, in the order of its first crash point.
    pub counts: Vec<ClassCount>,
    /// The class of each crash point (an index into `counts`).
    pub class_of: Vec<usize>,
    /// Each unit a crash may lose (an op, or a half of a rename between
    /// two directories), with the id of its shape: units of one shape are
    /// alike wherever they are pending.
    pub unit_shapes: HashMap<Unit, usize>,
}

/// What the shapes of crash points are made from: the ops, each op's file
/// size before it (`Trace::sizes_before`: what tells which tears storage
/// can make of a write), the sector size, and the exhaustive limit.
#[derive(Debug, Clone, Copy)]
pub struct ShapeInput<'a> {
    /// Every op of the trace.
    pub ops: &'a [Op],
    /// For each op, its file's size just before it.
    pub sizes_before: &'a [u64],
    /// The sector size, in bytes.
    pub sector: u64,
    /// Pending units up to which a model takes every subset.
    pub exhaustive_limit: usize,
}

impl ShapeInput<'_> {
    fn tearing(&self) -> Tearing<'_> {
        Tearing {
            sizes_before: Some(self.sizes_before),
            sector: self.sector,
        }
    }

    fn size_before(&self, i: usize) -> u64 {
        self.sizes_before.get(i).copied().unwrap_or(0)
    }
}

/// Each op's file size before it, as the ops alone say (files the trace
/// began with counted from 0): for callers with ops and no trace.
///
/// ```
/// use blackout_explore::classes::sizes_from_ops;
/// use blackout_oplog::ops::test_ops::write;
/// assert_eq!(sizes_from_ops(&[write(1), write(1)]), [0, 1]);
/// ```
pub fn sizes_from_ops(ops: &[Op]) -> Vec<u64> {
    let mut sizes: HashMap<u64, u64> = HashMap::new();
    ops.iter()
        .map(|op| match &op.kind {
            OpKind::Write { ino, off, data } => {
                let size = sizes.entry(u64::from(*ino)).or_insert(0);
                let before = *size;
                *size = (*size).max(off + data.len);
                before
            }
            OpKind::Truncate { ino, size } => {
                let s = sizes.entry(u64::from(*ino)).or_insert(0);
                let before = *s;
                *s = *size;
                before
            }
            _ => 0,
        })
        .collect()
}

/// Where a write or truncate falls against its file's size before it.
fn place(off: u64, len: u64, size: u64) -> &'static str {
    if off == 0 && len >= size {
        "whole"
    } else if off == 0 {
        "at 0"
    } else if off < size && off + len <= size {
        "inside"
    } else if off <= size {
        "at end"
    } else {
        "past end"
    }
}

/// What an op does, in one word the models tell apart by: the op log's
/// label, files and directories alike (no model tells a mkdir from a
/// create).
fn kind_word(kind: &OpKind) -> &'static str {
    kind.label(|_| InodeKind::File)
}

/// A count as classes hold it: 1, 2, 3 or many.
fn bucket(n: usize) -> String {
    match n {
        0..=3 => n.to_string(),
        _ => "many".into(),
    }
}

/// The tears storage can make of op `i`, for people: `tears h+s`,
/// `atomic` for a write it cannot tear, nothing for other ops.
fn tears_text(input: &ShapeInput<'_>, i: usize) -> Option<String> {
    if !matches!(input.ops[i].kind, OpKind::Write { .. }) {
        return None;
    }
    let tears = input.tearing().offered(input.ops, i);
    Some(if tears.is_empty() {
        "atomic".into()
    } else {
        let codes: Vec<&str> = tears.iter().map(|t| t.code()).collect();
        format!("tears {}", codes.join("+"))
    })
}

/// The choices a model makes about op `i`: what it does and, for a write,
/// the tears storage can make of it.
fn op_choice(input: &ShapeInput<'_>, i: usize) -> String {
    let mut s = kind_word(&input.ops[i].kind).to_string();
    if let Some(t) = tears_text(input, i) {
        s.push(' ');
        s.push_str(&t);
    }
    s
}

/// A unit's choices: its op's and which half of a rename it is.
fn unit_choice(input: &ShapeInput<'_>, u: Unit) -> String {
    let mut s = op_choice(input, u.op);
    s.push_str(part_text(u.part));
    s
}

fn part_text(part: Part) -> &'static str {
    match part {
        Part::Source => " (source half)",
        Part::Dest => " (destination half)",
        Part::Whole => "",
    }
}

/// A name's role: its last component with digits blurred, control
/// characters escaped (a name from a trace is hostile: none reaches a
/// report).
fn role(name: &str) -> String {
    let blurred: String = name
        .chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect();
    escape_controls(&blurred)
}

/// One op's shape: its call, its file's role, its choices (what it does,
/// the tears a write offers), the directory an entry op changes, for a
/// write or truncate where it falls and how much it moves, its source
/// line, and whether its file is volatile.
fn op_shape(input: &ShapeInput<'_>, i: usize) -> String {
    let op = &input.ops[i];
    let path = String::from_utf8_lossy(&op.path.0);
    let (dir, base) = match path.rsplit_once('/') {
        Some((d, b)) => (if d.is_empty() { "/" } else { d }, b),
        None => (".", path.as_ref()),
    };
    let mut s = format!("{} {}", op.syscall, role(base));
    // What the call did, where its name does not say (`openat` creates
    // or truncates).
    let word = kind_word(&op.kind);
    if !op.syscall.contains(word) && !matches!(op.kind, OpKind::Output { .. }) {
        s.push_str(&format!(" ({word})"));
    }
    match &op.kind {
        OpKind::Write { off, data, .. } => {
            let size_before = input.size_before(i);
            let sector = input.sector.max(1);
            let sectors = if data.len == 0 {
                0
            } else {
                (off + data.len - 1) / sector - off / sector + 1
            };
            // Its size to the power of two above: a file rewritten a
            // little longer each time is rewritten alike.
            s.push_str(&format!(
                " {} ≤{}B, {} sector{}",
                place(*off, data.len, size_before),
                data.len.max(1).next_power_of_two(),
                bucket(usize::try_from(sectors).unwrap_or(usize::MAX)),
                if sectors == 1 { "" } else { "s" }
            ));
            if let Some(t) = tears_text(input, i) {
                s.push_str(&format!(", {t}"));
            }
        }
        OpKind::Truncate { size, .. } => {
            let size_before = input.size_before(i);
            s.push_str(&format!(
                " to {}",
                if *size == 0 {
                    "0"
                } else if *size < size_before {
                    "shorter"
                } else {
                    "longer"
                }
            ));
        }
        OpKind::Link { .. } | OpKind::Unlink { .. } | OpKind::Rename { .. } => {
            s.push_str(&format!(" in {}", role(dir)));
        }
        _ => {}
    }
    if let Some(origin) = &op.origin {
        if let (Some(file), Some(line)) = (&origin.file, origin.line) {
            s.push_str(&format!(" at {file}:{line}"));
        }
    }
    if op.volatile {
        s.push_str(" (volatile)");
    }
    s
}

/// A pending unit's shape: its op's, which half of a rename it is, and
/// whether a sync the descriptor implies covers it (`O_SYNC`, `O_DSYNC`).
fn unit_shape(input: &ShapeInput<'_>, synced: &[SyncedBy], u: Unit) -> String {
    let mut s = op_shape(input, u.op);
    s.push_str(part_text(u.part));
    let implied = synced[u.op].main.is_some_and(|j| {
        matches!(
            input.ops.get(j).map(|o| &o.kind),
            Some(OpKind::Fsync { implied: true, .. } | OpKind::Fdatasync { implied: true, .. })
        )
    });
    if implied {
        s.push_str(" through O_SYNC");
    }
    s
}

/// Whether every subset of `n` pending units is taken, for people.
fn subsets_text(n: usize, limit: usize) -> &'static str {
    if n <= limit {
        "every subset"
    } else {
        "beyond the limit"
    }
}

/// The choices the crash model makes at crash point `k`, up to renaming
/// ops: whether every subset of the pending units is taken, each kind of
/// pending unit (its call and rename half, the tears a write offers) with
/// its count (1, 2, 3 or many), and the last op's kind and tears. Two crash
/// points of one class ([`classes`]) always have the same signature.
///
/// ```
/// use blackout_explore::classes::{choice_signature, ShapeInput};
/// use blackout_oplog::ops::{synced_by, test_ops::op, DataRef, OpKind};
/// // A 40-byte record overwritten inside a sector, then across one.
/// let record = |off| op(OpKind::Write { ino: 1, off, data: DataRef { start: 0, len: 40 } });
/// let ops = [record(0), record(480)];
/// let sizes = [4000, 4000];
/// let input = ShapeInput { ops: &ops, sizes_before: &sizes, sector: 512, exhaustive_limit: 10 };
/// let synced = synced_by(&ops);
/// assert_eq!(choice_signature(&input, &synced, 1), "every subset; write atomic ×1; last write atomic");
/// assert_eq!(
///     choice_signature(&input, &synced, 2),
///     "every subset; write atomic ×1, write tears h ×1; last write tears h"
/// );
/// ```
pub fn choice_signature(input: &ShapeInput<'_>, synced: &[SyncedBy], k: usize) -> String {
    let pending = pending_at(input.ops, synced, k);
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for u in &pending {
        *counts.entry(unit_choice(input, *u)).or_insert(0) += 1;
    }
    let units: Vec<String> = counts
        .iter()
        .map(|(c, &n)| format!("{c} ×{}", bucket(n)))
        .collect();
    let last = k
        .checked_sub(1)
        .map_or_else(|| "none".to_string(), |i| op_choice(input, i));
    format!(
        "{}; {}; last {last}",
        subsets_text(pending.len(), input.exhaustive_limit),
        if units.is_empty() {
            "nothing pending".to_string()
        } else {
            units.join(", ")
        }
    )
}

/// The shape of a crash point from what is pending there: whether every
/// subset is taken, each distinct pending unit shape (sorted) with its
/// count (1, 2, 3 or many), the last op, and whether something was
/// printed while anything was pending.
fn shape_text(
    shapes: &[String],
    pending: &BTreeMap<usize, usize>,
    subsets: &str,
    last: Option<String>,
    printed_while_pending: bool,
) -> String {
    let mut out: Vec<String> = pending
        .iter()
        .map(|(&id, &n)| match n {
            1 => shapes[id].clone(),
            2 | 3 => format!("{} ×{n}", shapes[id]),
            _ => format!("{} ×many", shapes[id]),
        })
        .collect();
    let mut text = if out.is_empty() {
        "nothing pending".to_string()
    } else {
        out.sort();
        format!("{}; {subsets}", out.join(", "))
    };
    if let Some(last) = last {
        text.push_str(&format!("; last {last}"));
    }
    if printed_while_pending {
        text.push_str("; printed while pending");
    }
    text
}

/// The classes of the crash points `0..=ops.len()` and `per_class`
/// representatives of each.
///
/// # Examples
///
/// ```
/// use blackout_explore::classes::{classes, sizes_from_ops, ShapeInput};
/// use blackout_oplog::ops::test_ops::{op, write};
/// use blackout_oplog::ops::OpKind;
/// // Ten rounds of a write then its fsync: two shapes repeat (a write
/// // pending, nothing pending), whatever the round.
/// let ops: Vec<_> = (0..10)
///     .flat_map(|i| [write(1), op(OpKind::Fsync { ino: 1, barrier: 2 * i + 1, implied: false })])
///     .collect();
/// let sizes = sizes_from_ops(&ops);
/// let input = ShapeInput { ops: &ops, sizes_before: &sizes, sector: 512, exhaustive_limit: 10 };
/// let c = classes(&input, 2);
/// assert!(c.counts.len() < 6, "{:#?}", c.counts);
/// assert_eq!(c.counts.iter().map(|k| k.crash_points).sum::<usize>(), ops.len() + 1);
/// assert!(c.explore.len() < ops.len() / 2);
/// ```
pub fn classes(input: &ShapeInput<'_>, per_class: usize) -> Classes {
    let ops = input.ops;
    // Each distinct unit shape once, by id: the crash points' keys are
    // built from ids and counts, in time linear in the ops.
    let mut shape_ids: HashMap<String, usize> = HashMap::new();
    let mut shapes: Vec<String> = Vec::new();
    let mut id_of = |s: String| -> usize {
        let next = shapes.len();
        *shape_ids.entry(s.clone()).or_insert_with(|| {
            shapes.push(s);
            next
        })
    };
    let synced = synced_by(ops);
    let spans = unit_spans(ops, &synced);
    let mut starts: Vec<Vec<usize>> = vec![Vec::new(); ops.len() + 2];
    let mut ends: Vec<Vec<usize>> = vec![Vec::new(); ops.len() + 2];
    let mut unit_ids = Vec::with_capacity(spans.len());
    let mut unit_shapes = HashMap::with_capacity(spans.len());
    for (n, (unit, from, to)) in spans.iter().enumerate() {
        let id = id_of(unit_shape(input, &synced, *unit));
        unit_ids.push(id);
        unit_shapes.insert(*unit, id);
        starts[*from].push(n);
        if *to <= ops.len() {
            ends[*to].push(n);
        }
    }
    let outputs_before = outputs_before(ops);
    let mut pending: BTreeMap<usize, usize> = BTreeMap::new();
    let mut pending_ops: BTreeMap<usize, usize> = BTreeMap::new();
    let mut units_pending = 0usize;
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut members: Vec<(String, Vec<usize>)> = Vec::new();
    let mut class_of = Vec::with_capacity(ops.len() + 1);
    for k in 0..=ops.len() {
        for &n in &starts[k] {
            *pending.entry(unit_ids[n]).or_insert(0) += 1;
            *pending_ops.entry(spans[n].0.op).or_insert(0) += 1;
            units_pending += 1;
        }
        for &n in &ends[k] {
            if spans[n].1 > k {
                continue;
            }
            units_pending -= 1;
            for (map, key) in [
                (&mut pending, unit_ids[n]),
                (&mut pending_ops, spans[n].0.op),
            ] {
                if let Some(c) = map.get_mut(&key) {
                    *c -= 1;
                    if *c == 0 {
                        map.remove(&key);
                    }
                }
            }
        }
        let first = pending_ops.keys().next().copied();
        let printed = first.is_some_and(|f| outputs_before[k] > outputs_before[f]);
        let last = k.checked_sub(1).map(|i| op_shape(input, i));
        let subsets = subsets_text(units_pending, input.exhaustive_limit);
        let s = shape_text(&shapes, &pending, subsets, last, printed);
        let next = members.len();
        let i = *index.entry(s.clone()).or_insert(next);
        if i == next {
            members.push((s, Vec::new()));
        }
        members[i].1.push(k);
        class_of.push(i);
    }
    let (explore, counts) = pick(members, per_class);
    Classes {
        explore,
        counts,
        class_of,
        unit_shapes,
    }
}

/// How many outputs come before each crash point (`0..=ops.len()`).
fn outputs_before(ops: &[Op]) -> Vec<usize> {
    std::iter::once(0)
        .chain(ops.iter().scan(0, |n, o| {
            *n += usize::from(matches!(o.kind, OpKind::Output { .. }));
            Some(*n)
        }))
        .collect()
}

/// The crash points to explore, `per_class` of each class spread from its
/// first to its last (sorted), and each class's count; `members` are the
/// classes' shapes with their crash points in order.
fn pick(members: Vec<(String, Vec<usize>)>, per_class: usize) -> (Vec<usize>, Vec<ClassCount>) {
    let mut explore = Vec::new();
    let counts = members
        .into_iter()
        .map(|(shape, ks)| {
            let picked = spread(&ks, per_class);
            explore.extend(&picked);
            ClassCount {
                shape,
                crash_points: ks.len(),
                explored: picked,
            }
        })
        .collect();
    explore.sort_unstable();
    (explore, counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use blackout_oplog::ops::test_ops::{op, write};
    use blackout_oplog::ops::{DataRef, Name};
    use proptest::prelude::*;

    fn input<'a>(ops: &'a [Op], sizes: &'a [u64]) -> ShapeInput<'a> {
        ShapeInput {
            ops,
            sizes_before: sizes,
            sector: 512,
            exhaustive_limit: 10,
        }
    }

    #[test]
    fn representatives_spread_from_the_first_to_the_last() {
        let m: Vec<usize> = (10..20).collect();
        assert_eq!(spread(&m, 1), [10]);
        assert_eq!(spread(&m, 2), [10, 19]);
        assert_eq!(spread(&m, 3), [10, 14, 19]);
        assert_eq!(spread(&m, 50), m);
    }

    #[test]
    fn every_crash_point_is_in_one_class_and_each_class_is_explored() {
        let ops: Vec<Op> = (0..40)
            .flat_map(|i| {
                let fsync = OpKind::Fsync {
                    ino: 1 + i % 3,
                    barrier: 2 * i as usize + 1,
                    implied: false,
                };
                [write(1 + i % 3), op(fsync)]
            })
            .collect();
        let sizes = sizes_from_ops(&ops);
        let c = classes(&input(&ops, &sizes), 3);
        let total: usize = c.counts.iter().map(|k| k.crash_points).sum();
        assert_eq!(total, ops.len() + 1);
        assert!(c.counts.iter().all(|k| !k.explored.is_empty()));
        assert!(c.counts.iter().all(|k| k.explored.len() <= 3));
        let mut seen: Vec<usize> = c.counts.iter().flat_map(|k| k.explored.clone()).collect();
        seen.sort_unstable();
        assert_eq!(seen, c.explore);
        assert!(c.explore.windows(2).all(|w| w[0] < w[1]));
        for (k, &class) in c.class_of.iter().enumerate() {
            assert!(c.counts[class].crash_points > 0, "c{k}");
        }
    }

    /// A crash point's shape made from `pending_at` alone, crash point by
    /// crash point (what the incremental classes must agree with).
    fn brute_shape(input: &ShapeInput<'_>, synced: &[SyncedBy], k: usize) -> String {
        let units = pending_at(input.ops, synced, k);
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for u in &units {
            *counts.entry(unit_shape(input, synced, *u)).or_insert(0) += 1;
        }
        let mut shapes: Vec<String> = Vec::new();
        let mut pending = BTreeMap::new();
        for (shape, n) in counts {
            pending.insert(shapes.len(), n);
            shapes.push(shape);
        }
        let first = units.iter().map(|u| u.op).min();
        let printed = first.is_some_and(|f| {
            input.ops[f..k]
                .iter()
                .any(|o| matches!(o.kind, OpKind::Output { .. }))
        });
        let last = k.checked_sub(1).map(|i| op_shape(input, i));
        let subsets = subsets_text(units.len(), input.exhaustive_limit);
        shape_text(&shapes, &pending, subsets, last, printed)
    }

    /// A random trace: writes of a few sizes at a few offsets (in place,
    /// across sector boundaries, appending), truncates, syncs of files and
    /// of the directory, writes synced by their descriptor, creates,
    /// renames within and between directories, outputs; files that held
    /// bytes before the trace, and an exhaustive limit of a few.
    fn trace_strategy() -> impl Strategy<Value = (Vec<Op>, Vec<u64>, u64, usize)> {
        // Offsets and lengths that make writes inside a sector, across one
        // boundary or several, at 0, in place and appending.
        let offs = vec![0u64, 0, 8, 40, 480, 500, 511, 512, 1000];
        let lens = vec![1u64, 8, 40, 100, 512, 700];
        let step = (
            0u8..12,
            1u32..4,
            prop::sample::select(offs),
            prop::sample::select(lens),
        );
        (
            prop::collection::vec(step, 0..40),
            prop::collection::vec(prop::sample::select(vec![0u64, 8, 40, 100, 512, 1500]), 4),
            prop::sample::select(vec![64u64, 512, 4096]),
            0usize..6,
        )
            .prop_map(|(steps, initial, sector, limit)| {
                let mut ops: Vec<Op> = Vec::new();
                for (what, ino, off, len) in steps {
                    let o = step_op(&mut ops, what, ino, off, len);
                    ops.push(o);
                }
                let sizes = sizes_before(&ops, &initial);
                (ops, sizes, sector, limit)
            })
    }

    /// The op of one generated step (`what` picks the kind; an `O_DSYNC`
    /// write pushes its write first and is its implied fdatasync).
    fn step_op(ops: &mut Vec<Op>, what: u8, ino: u32, off: u64, len: u64) -> Op {
        let i = ops.len();
        let data = DataRef { start: 0, len };
        let mut o = match what {
            0..=3 => op(OpKind::Write { ino, off, data }),
            4 => op(OpKind::Truncate { ino, size: off }),
            5 => op(OpKind::Fsync {
                ino,
                barrier: i,
                implied: false,
            }),
            6 => op(OpKind::Fdatasync {
                ino: 10,
                barrier: i,
                implied: false,
            }),
            7 => {
                ops.push(op(OpKind::Write { ino, off, data }));
                op(OpKind::Fdatasync {
                    ino,
                    barrier: i + 1,
                    implied: true,
                })
            }
            8 => op(OpKind::Link {
                dir: 10,
                name: Name(b"t".to_vec()),
                ino,
                new: true,
            }),
            9 => op(OpKind::Rename {
                from_dir: 10,
                from_name: Name(b"t".to_vec()),
                to_dir: 10 + (off % 2) as u32,
                to_name: Name(b"u".to_vec()),
                ino,
                replaced: None,
                exchange: false,
            }),
            10 => op(OpKind::Output {
                data: DataRef { start: 0, len: 3 },
            }),
            _ => op(OpKind::Fsync {
                ino: 10 + (off % 2) as u32,
                barrier: i,
                implied: false,
            }),
        };
        o.path = Name(format!("d{}/f{ino}", off % 2).into_bytes());
        o.syscall = if what == 4 {
            "openat".into()
        } else {
            "x".into()
        };
        o
    }

    /// The size of its file before each op, from the files' initial sizes.
    fn sizes_before(ops: &[Op], initial: &[u64]) -> Vec<u64> {
        let mut size: HashMap<u32, u64> = (1..4u32).map(|i| (i, initial[i as usize])).collect();
        ops.iter()
            .map(|o| match &o.kind {
                OpKind::Write { ino, off, data } => {
                    let s = size.entry(*ino).or_insert(0);
                    let before = *s;
                    *s = (*s).max(off + data.len);
                    before
                }
                OpKind::Truncate { ino, size: to } => {
                    let s = size.entry(*ino).or_insert(0);
                    std::mem::replace(s, *to)
                }
                _ => 0,
            })
            .collect()
    }

    proptest! {
        // Cheap cases, and a shape that drops a choice shows only in a
        // few in a thousand: many of them.
        #![proptest_config(ProptestConfig::with_cases(8192))]

        /// Within one class every crash point's choice signature is the
        /// same (the rule of docs/MODELS.md), and the classes kept up along
        /// the crash points are the ones `pending_at` gives crash point by
        /// crash point.
        #[test]
        fn a_class_holds_every_choice_the_model_makes((ops, sizes, sector, limit) in trace_strategy()) {
            let input = ShapeInput { ops: &ops, sizes_before: &sizes, sector, exhaustive_limit: limit };
            let synced = synced_by(&ops);
            let c = classes(&input, usize::MAX);
            prop_assert_eq!(&c.explore, &(0..=ops.len()).collect::<Vec<_>>());
            for class in &c.counts {
                let k0 = class.explored[0];
                let signature = choice_signature(&input, &synced, k0);
                let shape = brute_shape(&input, &synced, k0);
                prop_assert_eq!(&shape, &class.shape);
                for &k in &class.explored {
                    prop_assert_eq!(&choice_signature(&input, &synced, k), &signature, "c{} and c{}", k0, k);
                    prop_assert_eq!(&brute_shape(&input, &synced, k), &shape);
                    prop_assert_eq!(&c.counts[c.class_of[k]].shape, &shape);
                }
            }
            let distinct: std::collections::HashSet<String> =
                (0..=ops.len()).map(|k| brute_shape(&input, &synced, k)).collect();
            prop_assert_eq!(c.counts.len(), distinct.len());
        }
    }

    #[test]
    fn a_record_across_a_sector_boundary_is_its_own_class() {
        // 40-byte records of a durable 4,000-byte table overwritten in
        // place, each fdatasynced: one inside a sector, one across 512.
        let record = |off| {
            let mut o = op(OpKind::Write {
                ino: 1,
                off,
                data: DataRef { start: 0, len: 40 },
            });
            o.syscall = "pwrite64".into();
            o.path = Name(b"table".to_vec());
            o
        };
        let sync = |barrier| {
            op(OpKind::Fdatasync {
                ino: 1,
                barrier,
                implied: false,
            })
        };
        let ops = vec![
            record(40),
            sync(1),
            record(480),
            sync(3),
            record(80),
            sync(5),
        ];
        let sizes = vec![4000; ops.len()];
        let c = classes(&input(&ops, &sizes), 3);
        assert_ne!(c.class_of[1], c.class_of[3], "{:#?}", c.counts);
        assert_eq!(c.class_of[1], c.class_of[5], "{:#?}", c.counts);
        assert!(
            c.counts[c.class_of[3]].shape.contains("tears h"),
            "{:#?}",
            c.counts
        );
        assert!(c.counts[c.class_of[1]]
            .shape
            .contains("inside ≤64B, 1 sector, atomic"));
    }

    #[test]
    fn a_file_role_blurs_digits_and_escapes_control_characters() {
        let mut o = write(1);
        o.path = Name(b"/d/seg-17\x1b[2J.log".to_vec());
        o.syscall = "pwrite64".into();
        let ops = [o];
        let s = op_shape(&input(&ops, &[0]), 0);
        assert!(s.starts_with("pwrite64 seg-##"), "{s}");
        assert!(!s.contains('\x1b'), "{s}");
    }

    #[test]
    fn writes_are_told_apart_by_where_they_fall() {
        assert_eq!(place(0, 10, 0), "whole");
        assert_eq!(place(0, 4, 10), "at 0");
        assert_eq!(place(2, 4, 10), "inside");
        assert_eq!(place(10, 4, 10), "at end");
        assert_eq!(place(20, 4, 10), "past end");
    }
}
