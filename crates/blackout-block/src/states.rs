//! The crash states of a block recording. At a crash point the device
//! holds every record up to the last flush before it; the writes and
//! zeroed ranges since that flush (its **window**) may have reached the
//! disk in any subset, since a disk with a write-back cache orders nothing
//! between flushes. Each state is a crash point and the writes of its
//! window that did not persist.
//!
//! A crash between two marks leaves what a crash at the later mark with
//! the writes after the first one lost leaves, with one promise fewer:
//! the state is checked with the later mark's promises, which finds every
//! failure of both (a checker that accepts a state with more promises
//! accepts it with fewer).
//!
//! A window of `w` writes has `2^w` subsets. Up to [`SUBSETS_MAX_DEFAULT`]
//! (or the bound given) per crash point, every subset is a state; above
//! it, the families most likely to matter come first — the device wrote in
//! order and stopped (every prefix), one write went missing (each one) —
//! then seeded random subsets up to the bound, and the coverage says how
//! many subsets were left out and how deep the deepest window was.

use std::collections::HashSet;
use std::fs::File;
use std::io;
use std::path::Path;

use crate::crash::{Barrier, LogPoint};
use crate::image::{apply, Cursor};
use crate::log::{BlockLog, Record, RecordKind};

/// Subsets tried per crash point unless told otherwise: every subset of a
/// window of up to 6 writes.
pub const SUBSETS_MAX_DEFAULT: usize = 64;

/// One crash state: crash point `point` (an index into the crash points)
/// with the window's writes `lost` (indexes into [`Window::writes`],
/// ascending) not on the disk.
///
/// # Examples
///
/// ```
/// use blackout_block::states::BlockState;
/// assert_eq!(BlockState { point: 7, lost: vec![] }.id(), "b7");
/// assert_eq!(BlockState { point: 7, lost: vec![0, 2] }.id(), "b7.lost1+3");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BlockState {
    /// Index of the crash point.
    pub point: usize,
    /// The window's writes that did not persist (0-based, ascending).
    pub lost: Vec<usize>,
}

impl BlockState {
    /// The state's id: `b7` for crash point 7 with every write of its
    /// window on the disk, `b7.lost1+3` with its first and third missing
    /// (counted from 1, as people count).
    pub fn id(&self) -> String {
        let mut id = format!("b{}", self.point);
        if !self.lost.is_empty() {
            let lost: Vec<String> = self.lost.iter().map(|i| (i + 1).to_string()).collect();
            id.push_str(".lost");
            id.push_str(&lost.join("+"));
        }
        id
    }
}

/// What a crash point's window holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// The position just after the last flush before the point (or the
    /// base): every record before it is on the disk.
    pub start: usize,
    /// Record indexes of the writes and zeroed ranges in flight, in order.
    pub writes: Vec<usize>,
}

/// The window of crash point `point` in `log`, whose base is `base`: the
/// writes since the last flush before it — for a point just after a
/// flush, the writes that flush made durable (power failing while it was
/// under way leaves any subset of them).
///
/// # Examples
///
/// ```
/// use blackout_block::crash::crash_points;
/// use blackout_block::log::{BlockLog, Record, RecordKind};
/// use blackout_block::states::window;
/// let r = |kind| Record { nanos: 0, kind };
/// let w = || RecordKind::Write { offset: 0, len: 512, data_at: 0 };
/// let log = BlockLog { records: vec![r(w()), r(RecordKind::Flush), r(w()), r(w()),
///     r(RecordKind::Mark { name: "saved".into() })] };
/// let points = crash_points(&log, 0);
/// // The mark: two writes since the flush.
/// assert_eq!(window(&log, 0, &points[2]).writes, [2, 3]);
/// assert_eq!(window(&log, 0, &points[2]).start, 2);
/// // Just after the flush: the write it made durable.
/// assert_eq!(window(&log, 0, &points[1]).writes, [0]);
/// assert_eq!(window(&log, 0, &points[1]).start, 0);
/// ```
pub fn window(log: &BlockLog, base: usize, point: &LogPoint) -> Window {
    let end = point.position.min(log.records.len());
    let base = base.min(end);
    // A flush point's window is the writes the flush made durable: power
    // failing just before it completed leaves any subset of them.
    let own_flush = point.barrier == Barrier::Flush
        && end > base
        && log.records[end - 1].kind == RecordKind::Flush;
    let search = if own_flush { end - 1 } else { end };
    let start = log.records[base..search]
        .iter()
        .rposition(|r| r.kind == RecordKind::Flush)
        .map_or(base, |i| base + i + 1);
    let writes = (start..end)
        .filter(|&i| {
            matches!(
                log.records[i].kind,
                RecordKind::Write { .. } | RecordKind::Zero { .. }
            )
        })
        .collect();
    Window { start, writes }
}

/// How much of the subset space the states cover.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SubsetCoverage {
    /// Crash points.
    pub crash_points: usize,
    /// States enumerated (crash points and subsets).
    pub states: usize,
    /// The most writes in flight at one crash point.
    pub deepest_window: usize,
    /// Crash points whose subsets were not all enumerated.
    pub partial_points: usize,
    /// Subsets left out over all crash points (saturating).
    pub subsets_left_out: u128,
}

/// Every crash point's states within `max_subsets` per point (at least
/// 1: the state with its whole window on the disk, always first), and
/// what was left out. Deterministic for a given `seed`.
///
/// # Examples
///
/// ```
/// use blackout_block::crash::crash_points;
/// use blackout_block::log::{BlockLog, Record, RecordKind};
/// use blackout_block::states::enumerate;
/// let r = |kind| Record { nanos: 0, kind };
/// let w = || RecordKind::Write { offset: 0, len: 512, data_at: 0 };
/// let log = BlockLog { records: vec![r(w()), r(w()), r(w()), r(RecordKind::Mark { name: "a".into() })] };
/// let points = crash_points(&log, 0);
/// let (states, cov) = enumerate(&log, 0, &points, 64, 1);
/// assert_eq!(states.len(), 1 + 8); // the base; 2^3 subsets at the mark
/// assert_eq!(cov.subsets_left_out, 0);
/// let (states, cov) = enumerate(&log, 0, &points, 4, 1);
/// assert_eq!(states.len(), 1 + 4);
/// assert_eq!((cov.deepest_window, cov.partial_points, cov.subsets_left_out), (3, 1, 4));
/// ```
pub fn enumerate(
    log: &BlockLog,
    base: usize,
    points: &[LogPoint],
    max_subsets: usize,
    seed: u64,
) -> (Vec<BlockState>, SubsetCoverage) {
    let max_subsets = max_subsets.max(1);
    let mut states = Vec::new();
    let mut cov = SubsetCoverage {
        crash_points: points.len(),
        ..SubsetCoverage::default()
    };
    for (i, p) in points.iter().enumerate() {
        let w = window(log, base, p).writes.len();
        cov.deepest_window = cov.deepest_window.max(w);
        let subsets = lost_sets(w, max_subsets, seed ^ (i as u64));
        let all = 1u128.checked_shl(w as u32).unwrap_or(u128::MAX);
        let left = all.saturating_sub(subsets.len() as u128);
        if left > 0 {
            cov.partial_points += 1;
            cov.subsets_left_out = cov.subsets_left_out.saturating_add(left);
        }
        states.extend(
            subsets
                .into_iter()
                .map(|lost| BlockState { point: i, lost }),
        );
    }
    cov.states = states.len();
    (states, cov)
}

/// Which writes of a window of `w` are lost, for at most `max` states:
/// every subset when they fit (fewest lost first), else nothing lost, the
/// prefixes, each single write lost, then seeded random subsets.
fn lost_sets(w: usize, max: usize, seed: u64) -> Vec<Vec<usize>> {
    let fits = w < 64 && (1usize << w) <= max;
    if fits {
        let mut all: Vec<Vec<usize>> = (0..1usize << w)
            .map(|bits| (0..w).filter(|i| bits >> i & 1 == 1).collect())
            .collect();
        all.sort_by_key(|lost: &Vec<usize>| (lost.len(), lost.clone()));
        return all;
    }
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut seen: HashSet<Vec<usize>> = HashSet::new();
    let mut push = |lost: Vec<usize>, out: &mut Vec<Vec<usize>>| {
        if out.len() < max && seen.insert(lost.clone()) {
            out.push(lost);
        }
    };
    push(Vec::new(), &mut out);
    // The device wrote the first `keep` in order, then power failed.
    for keep in (0..w).rev() {
        push((keep..w).collect(), &mut out);
    }
    for i in 0..w {
        push(vec![i], &mut out);
    }
    let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut tries = 0;
    while out.len() < max && tries < max * 8 {
        tries += 1;
        let lost: Vec<usize> = (0..w).filter(|_| splitmix(&mut rng) & 1 == 1).collect();
        push(lost, &mut out);
    }
    out
}

/// SplitMix64: a small, well-mixed generator for seeded sampling.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Writes `state`'s image to `out`: `cursor` (carried forward through the
/// log; states must come in crash-point order) brought to the window's
/// start and copied, then the window's writes that persisted applied in
/// order.
///
/// # Errors
///
/// I/O errors, and a cursor already past the window's start.
pub fn write_state(
    cursor: &mut Cursor<'_>,
    records: &[Record],
    data: &File,
    window: &Window,
    lost: &[usize],
    out: &Path,
) -> io::Result<()> {
    cursor.advance(window.start)?;
    cursor.write_image(out)?;
    let image = File::options().write(true).open(out)?;
    let kept: Vec<Record> = window
        .writes
        .iter()
        .enumerate()
        .filter(|(i, _)| lost.binary_search(i).is_err())
        .map(|(_, &r)| records[r].clone())
        .collect();
    apply(&kept, data, &image)
}

/// What a state's image is made of, in one form whatever window it came
/// from: every write or zeroed range before position `.0` of the log, and
/// the records listed in `.1` (all after it). Two states with the same
/// [`ImageId`] have the same bytes, so the file system recovers both the
/// same way.
pub type ImageId = (usize, Vec<usize>);

/// The [`ImageId`] of the state of `window` that lost the window's writes
/// at `lost` (0-based, ascending): the window's start moved past every
/// flush, mark and kept write that follows it.
///
/// # Examples
///
/// ```
/// use blackout_block::log::{Record, RecordKind};
/// use blackout_block::states::{image_id, Window};
/// let r = |kind| Record { nanos: 0, kind };
/// let w = || RecordKind::Write { offset: 0, len: 512, data_at: 0 };
/// let records = [r(w()), r(RecordKind::Flush), r(w()), r(w())];
/// let window = Window { start: 0, writes: vec![0, 2, 3] };
/// // Keeping every write: the same image as a window starting after them.
/// assert_eq!(image_id(&records, &window, &[]), (4, vec![]));
/// // Losing the second: the first on the disk, the third kept after it.
/// assert_eq!(image_id(&records, &window, &[1]), (2, vec![3]));
/// ```
pub fn image_id(records: &[Record], window: &Window, lost: &[usize]) -> ImageId {
    let kept: Vec<usize> = window
        .writes
        .iter()
        .enumerate()
        .filter(|(i, _)| lost.binary_search(i).is_err())
        .map(|(_, &r)| r)
        .collect();
    let (mut at, mut k) = (window.start, 0);
    while let Some(record) = records.get(at) {
        let data = matches!(
            record.kind,
            RecordKind::Write { .. } | RecordKind::Zero { .. }
        );
        if data && kept.get(k) != Some(&at) {
            break;
        }
        k += usize::from(data);
        at += 1;
    }
    (at, kept[k..].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_windows_give_every_subset_fewest_lost_first() {
        let sets = lost_sets(3, 64, 0);
        assert_eq!(sets.len(), 8);
        assert_eq!(sets[0], Vec::<usize>::new());
        assert_eq!(sets[1..4], [vec![0], vec![1], vec![2]]);
        assert_eq!(sets[7], vec![0, 1, 2]);
        let distinct: HashSet<_> = sets.iter().collect();
        assert_eq!(distinct.len(), 8);
    }

    #[test]
    fn large_windows_keep_prefixes_and_single_losses_within_the_bound() {
        let sets = lost_sets(10, 64, 7);
        assert_eq!(sets.len(), 64);
        assert_eq!(sets[0], Vec::<usize>::new());
        // Every prefix kept (the rest lost), then every single loss.
        for keep in 0..10 {
            assert!(sets.contains(&(keep..10).collect()), "prefix {keep}");
        }
        for i in 0..10 {
            assert!(sets.contains(&vec![i]), "single {i}");
        }
        let distinct: HashSet<_> = sets.iter().collect();
        assert_eq!(distinct.len(), 64);
        assert_eq!(sets, lost_sets(10, 64, 7), "deterministic for a seed");
        // A bound below the families cuts them, never exceeds itself.
        assert_eq!(lost_sets(10, 5, 7).len(), 5);
        assert_eq!(lost_sets(200, 3, 7).len(), 3);
    }
}

#[cfg(test)]
mod prefix_tests {
    use super::*;
    use crate::crash::crash_points;

    /// A small generator: the same logs every run.
    fn logs() -> Vec<BlockLog> {
        let mut seed = 0x2545_F491_4F6C_DD1D_u64;
        (0..200)
            .map(|_| {
                let n = (splitmix(&mut seed) % 14) as usize;
                let records = (0..n)
                    .map(|i| {
                        let kind = match splitmix(&mut seed) % 6 {
                            0 => RecordKind::Flush,
                            1 => RecordKind::Mark {
                                name: format!("ack {i}"),
                            },
                            2 => RecordKind::Zero {
                                offset: 0,
                                len: 512,
                            },
                            _ => RecordKind::Write {
                                offset: 512 * i as u64,
                                len: 512,
                                data_at: 0,
                            },
                        };
                        Record {
                            nanos: i as u64,
                            kind,
                        }
                    })
                    .collect();
                BlockLog { records }
            })
            .collect()
    }

    /// Enumerating at flushes and marks with the subsets of each window
    /// agrees with a crash after every single record: each prefix of the
    /// log is one of the states (the same writes kept), with the same
    /// promises made or, for a prefix just before a mark, that mark's too
    /// (a checker that accepts a state with more promises accepts it with
    /// fewer, so the state with more finds every failure of both), so
    /// nothing a crash between two flushes can leave in order is missed.
    #[test]
    fn every_prefix_of_the_log_is_an_enumerated_state() {
        for log in logs() {
            let points = crash_points(&log, 0);
            let (states, _) = enumerate(&log, 0, &points, usize::MAX >> 1, 0);
            let is_data =
                |r: &Record| matches!(r.kind, RecordKind::Write { .. } | RecordKind::Zero { .. });
            let made: Vec<(Vec<usize>, usize)> = states
                .iter()
                .map(|s| {
                    let p = &points[s.point];
                    let w = window(&log, 0, p);
                    let mut kept: Vec<usize> =
                        (0..w.start).filter(|&i| is_data(&log.records[i])).collect();
                    kept.extend(
                        w.writes
                            .iter()
                            .enumerate()
                            .filter(|(i, _)| !s.lost.contains(i))
                            .map(|(_, &r)| r),
                    );
                    (kept, p.marks)
                })
                .collect();
            for end in 0..=log.records.len() {
                let kept: Vec<usize> = (0..end).filter(|&i| is_data(&log.records[i])).collect();
                let marks = log.records[..end]
                    .iter()
                    .filter(|r| matches!(r.kind, RecordKind::Mark { .. }))
                    .count();
                // Writes after the last point are past what is explored.
                if end > points.last().map_or(0, |p| p.position) {
                    continue;
                }
                assert!(
                    made.iter().any(|(k, m)| *k == kept && *m >= marks),
                    "the prefix of {end} records ({kept:?}, {marks} marks) is not a state of {log:?}"
                );
            }
        }
    }

    /// Two states share an [`ImageId`] exactly when the same writes and
    /// zeroed ranges were applied to make their images.
    #[test]
    fn image_ids_are_equal_exactly_when_the_same_writes_were_applied() {
        let is_data =
            |r: &Record| matches!(r.kind, RecordKind::Write { .. } | RecordKind::Zero { .. });
        let mut shared = 0;
        for log in logs() {
            let points = crash_points(&log, 0);
            let (states, _) = enumerate(&log, 0, &points, usize::MAX >> 1, 0);
            let made: Vec<(ImageId, Vec<usize>)> = states
                .iter()
                .map(|s| {
                    let w = window(&log, 0, &points[s.point]);
                    let mut applied: Vec<usize> =
                        (0..w.start).filter(|&i| is_data(&log.records[i])).collect();
                    applied.extend(
                        w.writes
                            .iter()
                            .enumerate()
                            .filter(|(i, _)| !s.lost.contains(i))
                            .map(|(_, &r)| r),
                    );
                    (image_id(&log.records, &w, &s.lost), applied)
                })
                .collect();
            for (a, (id_a, set_a)) in made.iter().enumerate() {
                for (id_b, set_b) in &made[a + 1..] {
                    assert_eq!(id_a == id_b, set_a == set_b, "{id_a:?} {id_b:?} in {log:?}");
                    shared += usize::from(id_a == id_b);
                }
            }
        }
        assert!(shared > 0, "no two states of the logs share an image");
    }
}
