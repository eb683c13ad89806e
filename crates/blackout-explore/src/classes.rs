//! Representative exploration. Crash points whose pending work has the
//! same shape tend to be consistent or not together: a storage engine's
//! thousandth commit leaves the same kinds of ops in flight as its second.
//! A crash point's **shape** is what is pending there — each pending op's
//! system call, the role of its file (its path with digits blurred:
//! `seg-17.log` and `seg-18.log` play one role), the source line that made
//! it (with `--stacks`), where a write or truncate falls against the
//! file's size (at 0, inside, at the end, past it) and how many bytes it
//! moves — each such shape counted 1, 2, 3 or many, whatever the order, the
//! last op before the crash point, and whether a promise was printed
//! while something was pending. Crash points of one shape form a
//! **class**; a few of each (spread from the first to the last) are
//! explored in full, the rest counted, and the coverage statement names
//! every class and how many crash points it stood for. A failure is always
//! a state that was built and checked.

use std::collections::HashMap;

use blackout_oplog::ops::{escape_controls, synced_by, Op, OpKind, Part};

use crate::enumerate::{spread, unit_spans, ClassCount};

/// The crash points to explore and the classes they stand for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classes {
    /// The crash points explored, ascending.
    pub explore: Vec<usize>,
    /// Every class, in the order of its first crash point.
    pub counts: Vec<ClassCount>,
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

/// Each op's file size before it, as the ops alone say (files the trace
/// began with count from 0: the same for every crash point).
fn sizes_before(ops: &[Op]) -> Vec<u64> {
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

/// One op's shape: its call, its file's role, its source line, and for a
/// write or truncate where it falls and how much it moves.
fn op_shape(op: &Op, size_before: u64) -> String {
    let role: String = String::from_utf8_lossy(&op.path.0)
        .rsplit('/')
        .next()
        .unwrap_or("")
        .chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect();
    // A name from a trace is hostile: no control character reaches a
    // report.
    let role = escape_controls(&role);
    let mut s = format!("{} {role}", op.syscall);
    match &op.kind {
        OpKind::Write { off, data, .. } => {
            // Its size to the power of two above: a file rewritten a
            // little longer each time is rewritten alike.
            s.push_str(&format!(
                " {} ≤{}B",
                place(*off, data.len, size_before),
                data.len.max(1).next_power_of_two()
            ));
        }
        OpKind::Truncate { size, .. } => {
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
        _ => {}
    }
    if let Some(origin) = &op.origin {
        if let (Some(file), Some(line)) = (&origin.file, origin.line) {
            s.push_str(&format!(" at {file}:{line}"));
        }
    }
    s
}

/// A pending unit's shape: its op's, and which half of a rename it is.
fn unit_shape(op: &Op, size_before: u64, part: Part) -> String {
    let mut s = op_shape(op, size_before);
    match part {
        Part::Source => s.push_str(" (source half)"),
        Part::Dest => s.push_str(" (destination half)"),
        Part::Whole => {}
    }
    s
}

/// The shape of a crash point from what is pending there: each distinct
/// pending unit shape (sorted) with its count (1, 2, 3 or many), the last
/// op, and whether something was printed while anything was pending.
fn shape_text(
    shapes: &[String],
    pending: &std::collections::BTreeMap<usize, usize>,
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
    if out.is_empty() {
        out.push("nothing pending".into());
    }
    let mut text = out.join(", ");
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
/// use blackout_explore::classes::classes;
/// use blackout_oplog::ops::test_ops::{op, write};
/// use blackout_oplog::ops::OpKind;
/// // Ten rounds of a write then its fsync: two shapes repeat (a write
/// // pending, nothing pending), whatever the round.
/// let ops: Vec<_> = (0..10)
///     .flat_map(|i| [write(1), op(OpKind::Fsync { ino: 1, barrier: 2 * i + 1, implied: false })])
///     .collect();
/// let c = classes(&ops, 2);
/// assert!(c.counts.len() < 6, "{:#?}", c.counts);
/// assert_eq!(c.counts.iter().map(|k| k.crash_points).sum::<usize>(), ops.len() + 1);
/// assert!(c.explore.len() < ops.len() / 2);
/// ```
pub fn classes(ops: &[Op], per_class: usize) -> Classes {
    use std::collections::BTreeMap;
    let sizes = sizes_before(ops);
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
    let spans = unit_spans(ops, &synced_by(ops));
    let mut starts: Vec<Vec<usize>> = vec![Vec::new(); ops.len() + 2];
    let mut ends: Vec<Vec<usize>> = vec![Vec::new(); ops.len() + 2];
    let mut unit_ids = Vec::with_capacity(spans.len());
    for (n, (unit, from, to)) in spans.iter().enumerate() {
        unit_ids.push(id_of(unit_shape(&ops[unit.op], sizes[unit.op], unit.part)));
        starts[*from].push(n);
        if *to <= ops.len() {
            ends[*to].push(n);
        }
    }
    let outputs_before: Vec<usize> = std::iter::once(0)
        .chain(ops.iter().scan(0, |n, o| {
            *n += usize::from(matches!(o.kind, OpKind::Output { .. }));
            Some(*n)
        }))
        .collect();
    let mut pending: BTreeMap<usize, usize> = BTreeMap::new();
    let mut pending_ops: BTreeMap<usize, usize> = BTreeMap::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut members: Vec<(String, Vec<usize>)> = Vec::new();
    for k in 0..=ops.len() {
        for &n in &starts[k] {
            *pending.entry(unit_ids[n]).or_insert(0) += 1;
            *pending_ops.entry(spans[n].0.op).or_insert(0) += 1;
        }
        for &n in &ends[k] {
            if spans[n].1 > k {
                continue;
            }
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
        let last = k.checked_sub(1).map(|i| op_shape(&ops[i], sizes[i]));
        let s = shape_text(&shapes, &pending, last, printed);
        let next = members.len();
        let i = *index.entry(s.clone()).or_insert(next);
        if i == next {
            members.push((s, Vec::new()));
        }
        members[i].1.push(k);
    }
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
    Classes { explore, counts }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::enumerate::{pending_at, spread};
    use blackout_oplog::ops::test_ops::{op, write};
    use blackout_oplog::ops::Unit;

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
        let c = classes(&ops, 3);
        let total: usize = c.counts.iter().map(|k| k.crash_points).sum();
        assert_eq!(total, ops.len() + 1);
        assert!(c.counts.iter().all(|k| !k.explored.is_empty()));
        assert!(c.counts.iter().all(|k| k.explored.len() <= 3));
        let mut seen: Vec<usize> = c.counts.iter().flat_map(|k| k.explored.clone()).collect();
        seen.sort_unstable();
        assert_eq!(seen, c.explore);
        assert!(c.explore.windows(2).all(|w| w[0] < w[1]));
    }

    /// The classes kept up incrementally are the ones `pending_at` gives
    /// crash point by crash point.
    #[test]
    fn incremental_classes_match_pending_at_at_every_crash_point() {
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        };
        for _ in 0..50 {
            let n = (next() % 40) as usize;
            let mut ops: Vec<Op> = Vec::new();
            for i in 0..n {
                let ino = 1 + (next() % 3) as u32;
                let kind = match next() % 4 {
                    0 => OpKind::Fsync {
                        ino,
                        barrier: i,
                        implied: false,
                    },
                    1 => OpKind::Output {
                        data: blackout_oplog::ops::DataRef { start: 0, len: 1 },
                    },
                    _ => OpKind::Write {
                        ino,
                        off: next() % 3,
                        data: blackout_oplog::ops::DataRef { start: 0, len: 1 },
                    },
                };
                ops.push(op(kind));
            }
            let synced = synced_by(&ops);
            let sizes = sizes_before(&ops);
            let brute: Vec<String> = (0..=ops.len())
                .map(|k| {
                    let mut ids: HashMap<String, usize> = HashMap::new();
                    let mut shapes = Vec::new();
                    let mut pending = std::collections::BTreeMap::new();
                    let units = pending_at(&ops, &synced, k);
                    // Ids in the order the incremental version meets them:
                    // by op, as unit_spans lists them.
                    let mut all: Vec<Unit> =
                        unit_spans(&ops, &synced).into_iter().map(|s| s.0).collect();
                    all.retain(|u| units.contains(u));
                    for u in all {
                        let sh = unit_shape(&ops[u.op], sizes[u.op], u.part);
                        let l = shapes.len();
                        let id = *ids.entry(sh.clone()).or_insert(l);
                        if id == l {
                            shapes.push(sh);
                        }
                        *pending.entry(id).or_insert(0) += 1;
                    }
                    // Compare by content, not by id.
                    let mut parts: Vec<(String, usize)> = pending
                        .iter()
                        .map(|(&id, &c)| (shapes[id].clone(), c.min(4)))
                        .collect();
                    parts.sort();
                    let first = units.iter().map(|u| u.op).min();
                    let printed = first.is_some_and(|f| {
                        ops[f..k]
                            .iter()
                            .any(|o| matches!(o.kind, OpKind::Output { .. }))
                    });
                    let last = k.checked_sub(1).map(|i| op_shape(&ops[i], sizes[i]));
                    format!("{parts:?} {last:?} {printed}")
                })
                .collect();
            let c = classes(&ops, usize::MAX);
            assert_eq!(c.explore, (0..=ops.len()).collect::<Vec<_>>());
            for class in &c.counts {
                let first = &brute[class.explored[0]];
                assert!(
                    class.explored.iter().all(|&k| &brute[k] == first),
                    "{ops:?}"
                );
            }
            let distinct: std::collections::HashSet<&String> = brute.iter().collect();
            assert_eq!(c.counts.len(), distinct.len(), "{ops:?}");
        }
    }

    #[test]
    fn a_file_role_blurs_digits_and_escapes_control_characters() {
        let mut o = write(1);
        o.path = blackout_oplog::ops::Name(b"/d/seg-17\x1b[2J.log".to_vec());
        o.syscall = "pwrite64".into();
        let s = op_shape(&o, 0);
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
