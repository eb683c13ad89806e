//! Crash points on a block log: where power may fail so that the device
//! holds the base plus every write up to that point — at the base, after
//! each flush and at each mark (a promise made).
//!
//! A prefix of the log is sound but not complete: writes since the last
//! flush may reach the disk in any subset. Each point says how many such
//! writes are in flight, so a later stage can enumerate subsets within a
//! bound and say what it left out.

use std::time::Duration;

use crate::log::{BlockLog, Record, RecordKind};

/// Why a position is a crash point.
///
/// # Examples
///
/// ```
/// use blackout_block::crash::Barrier;
/// assert_eq!(Barrier::Mark("saved".into()).to_string(), "mark \"saved\"");
/// assert_eq!(Barrier::Flush.to_string(), "flush");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Barrier {
    /// The base: after mkfs, mount and sync, before the workload wrote.
    Base,
    /// Just after a flush.
    Flush,
    /// Just after a mark (the promise named was made).
    Mark(String),
    /// The end of what is explored: the workload's exit, or the end of
    /// the time the file system was left up after it.
    End,
}

impl std::fmt::Display for Barrier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Barrier::Base => f.write_str("base"),
            Barrier::Flush => f.write_str("flush"),
            Barrier::Mark(name) => write!(f, "mark {name:?}"),
            Barrier::End => f.write_str("end"),
        }
    }
}

/// One crash point: the device is the log applied up to `position`.
///
/// # Examples
///
/// ```
/// use blackout_block::crash::{crash_points, Barrier};
/// use blackout_block::log::BlockLog;
/// let points = crash_points(&BlockLog::default(), 0);
/// assert_eq!(points[0].barrier, Barrier::Base);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogPoint {
    /// Records `0..position` are on the device.
    pub position: usize,
    /// What the point is just after.
    pub barrier: Barrier,
    /// Monotonic nanoseconds of the record it is just after (the base's
    /// for the base).
    pub nanos: u64,
    /// Marks before `position`: the promises made when power fails here.
    pub marks: usize,
    /// Writes and zeroed ranges after the last flush before `position`:
    /// the ones a real disk might hold any subset of.
    pub in_flight: usize,
    /// Whether the image is the previous point's (no write or zeroed range
    /// between them): only the promises differ, the image need not be
    /// rebuilt.
    pub same_image_as_previous: bool,
}

/// The crash points of `log` from its base: the base itself, then the
/// position just after every flush and every mark, in order. States are the
/// base plus the writes up to each point.
///
/// # Examples
///
/// ```
/// use blackout_block::crash::{crash_points, Barrier};
/// use blackout_block::log::{BlockLog, Record, RecordKind};
/// let r = |kind| Record { nanos: 0, kind };
/// let log = BlockLog {
///     records: vec![
///         r(RecordKind::Flush), // mkfs: before the base
///         r(RecordKind::Write { offset: 0, len: 512, data_at: 0 }),
///         r(RecordKind::Flush),
///     ],
/// };
/// let points = crash_points(&log, 1);
/// let at: Vec<usize> = points.iter().map(|p| p.position).collect();
/// assert_eq!(at, [1, 3]);
/// assert_eq!(points[1].barrier, Barrier::Flush);
/// ```
pub fn crash_points(log: &BlockLog, base: usize) -> Vec<LogPoint> {
    points_in(&log.records, base)
}

/// [`crash_points`] over the records `records` (a log, or its head).
fn points_in(records: &[Record], base: usize) -> Vec<LogPoint> {
    let base = base.min(records.len());
    let mut marks = records[..base]
        .iter()
        .filter(|r| matches!(r.kind, RecordKind::Mark { .. }))
        .count();
    let mut in_flight = 0;
    let mut changed = false;
    let nanos = base.checked_sub(1).map_or(0, |i| records[i].nanos);
    let mut points = vec![LogPoint {
        position: base,
        barrier: Barrier::Base,
        nanos,
        marks,
        in_flight: 0,
        same_image_as_previous: false,
    }];
    for (i, r) in records.iter().enumerate().skip(base) {
        let barrier = match &r.kind {
            RecordKind::Write { .. } | RecordKind::Zero { .. } => {
                in_flight += 1;
                changed = true;
                continue;
            }
            RecordKind::Flush => {
                in_flight = 0;
                Barrier::Flush
            }
            RecordKind::Mark { name } => {
                marks += 1;
                Barrier::Mark(name.clone())
            }
        };
        points.push(LogPoint {
            position: i + 1,
            barrier,
            nanos: r.nanos,
            marks,
            in_flight,
            same_image_as_previous: !changed,
        });
        changed = false;
    }
    points
}

/// The crash points of the log's records `..end` ([`crash_points`]), and
/// a last one at `end` itself ([`Barrier::End`]) unless a point is there
/// already: what a recording is explored up to (the workload's exit, or
/// the end of the time the file system was left up after it).
///
/// # Examples
///
/// ```
/// use blackout_block::crash::{crash_points_until, Barrier};
/// use blackout_block::log::{BlockLog, Record, RecordKind};
/// let r = |kind| Record { nanos: 0, kind };
/// let w = RecordKind::Write { offset: 0, len: 512, data_at: 0 };
/// let log = BlockLog { records: vec![r(w.clone()), r(RecordKind::Flush), r(w)] };
/// let points = crash_points_until(&log, 0, 3);
/// assert_eq!(points.last().unwrap().barrier, Barrier::End);
/// assert_eq!(points.last().unwrap().in_flight, 1);
/// assert_eq!(crash_points_until(&log, 0, 2).len(), 2);
/// ```
pub fn crash_points_until(log: &BlockLog, base: usize, end: usize) -> Vec<LogPoint> {
    let end = end.min(log.records.len());
    let mut points = points_in(&log.records[..end], base);
    let last = points.last().map_or(0, |p| p.position);
    if last < end {
        // Every flush and mark before `end` is a point: only writes and
        // zeroed ranges lie between the last point and `end`.
        let since = log.records[last..end]
            .iter()
            .filter(|r| matches!(r.kind, RecordKind::Write { .. } | RecordKind::Zero { .. }))
            .count();
        let in_flight = points.last().map_or(0, |p| p.in_flight) + since;
        points.push(LogPoint {
            position: end,
            barrier: Barrier::End,
            nanos: log.records[end - 1].nanos,
            marks: points.last().map_or(0, |p| p.marks),
            in_flight,
            same_image_as_previous: since == 0,
        });
    }
    points
}

/// The crash points a recording is explored at: up to `end`, and when the
/// file system was left up `settle` after the workload exited (at log
/// position `exited`), only those at least that long after the last mark
/// before it (the last promise), the first of them placed exactly there:
/// power failing at the settle time's end, every flush before it done, the
/// writes since the last one in flight.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use blackout_block::crash::{crash_points_settled, crash_points_until, Barrier};
/// use blackout_block::log::{BlockLog, Record, RecordKind};
/// let at = |nanos, kind| Record { nanos, kind };
/// let w = RecordKind::Write { offset: 0, len: 512, data_at: 0 };
/// let mark = RecordKind::Mark { name: "saved".into() };
/// let log = BlockLog {
///     records: vec![at(0, w.clone()), at(10, mark), at(20, RecordKind::Flush), at(5_000, w)],
/// };
/// assert_eq!(crash_points_settled(&log, 0, 4, 2, None), crash_points_until(&log, 0, 4));
/// // Left up 1 µs after the promise: the points from 1,010 ns on.
/// let settled = crash_points_settled(&log, 0, 4, 2, Some(Duration::from_micros(1)));
/// assert_eq!(settled[0].nanos, 1_010);
/// assert_eq!(settled[0].position, 3);
/// assert_eq!(settled.last().unwrap().barrier, Barrier::End);
/// ```
pub fn crash_points_settled(
    log: &BlockLog,
    base: usize,
    end: usize,
    exited: usize,
    settle: Option<Duration>,
) -> Vec<LogPoint> {
    let points = crash_points_until(log, base, end);
    let Some(settle) = settle else {
        return points;
    };
    let last_mark = log.records[..exited.min(log.records.len())]
        .iter()
        .rev()
        .find(|r| matches!(r.kind, RecordKind::Mark { .. }))
        .map(|r| r.nanos);
    let from = last_mark.unwrap_or_else(|| {
        log.records
            .get(exited.saturating_sub(1))
            .map_or(0, |r| r.nanos)
    });
    let cut_nanos = from.saturating_add(u64::try_from(settle.as_nanos()).unwrap_or(u64::MAX));
    let cut = log.records[..end]
        .iter()
        .position(|r| r.nanos >= cut_nanos)
        .unwrap_or(end)
        .max(base);
    let marks = log.records[..cut]
        .iter()
        .filter(|r| matches!(r.kind, RecordKind::Mark { .. }))
        .count();
    let mut kept = vec![LogPoint {
        position: cut,
        barrier: Barrier::End,
        nanos: cut_nanos,
        marks,
        in_flight: 0,
        same_image_as_previous: false,
    }];
    kept.extend(points.into_iter().filter(|p| p.position > cut));
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::Record;

    fn log(kinds: Vec<RecordKind>) -> BlockLog {
        let records = kinds
            .into_iter()
            .enumerate()
            .map(|(i, kind)| Record {
                nanos: i as u64 * 10,
                kind,
            })
            .collect();
        BlockLog { records }
    }

    fn w() -> RecordKind {
        RecordKind::Write {
            offset: 0,
            len: 4096,
            data_at: 0,
        }
    }

    fn mark(name: &str) -> RecordKind {
        RecordKind::Mark { name: name.into() }
    }

    #[test]
    fn points_fall_at_the_base_every_flush_and_every_mark() {
        use RecordKind::{Flush, Zero};
        // Record indexes: 0-1 mkfs (the base is 2), 2-4 a write, a zeroed
        // range, a flush (point 5), 5 mark a (point 6, same image), 6-7 a
        // write and mark b (point 8, one write in flight), 8-9 a write and
        // a flush (point 10), 10 a write after the last point.
        let zero = Zero {
            offset: 0,
            len: 512,
        };
        let log = log(vec![
            w(),
            Flush,
            w(),
            zero,
            Flush,
            mark("a"),
            w(),
            mark("b"),
            w(),
            Flush,
            w(),
        ]);
        let points = crash_points(&log, 2);
        let got: Vec<(usize, String, usize, usize, bool)> = points
            .iter()
            .map(|p| {
                let b = p.barrier.to_string();
                (
                    p.position,
                    b,
                    p.marks,
                    p.in_flight,
                    p.same_image_as_previous,
                )
            })
            .collect();
        let want = [
            (2, "base", 0, 0, false),
            (5, "flush", 0, 0, false),
            (6, "mark \"a\"", 1, 0, true),
            (8, "mark \"b\"", 2, 1, false),
            (10, "flush", 2, 0, false),
        ];
        let want: Vec<(usize, String, usize, usize, bool)> = want
            .iter()
            .map(|(p, b, m, f, s)| (*p, b.to_string(), *m, *f, *s))
            .collect();
        assert_eq!(got, want);
        assert_eq!(points[0].nanos, 10);
        assert_eq!(points[4].nanos, 90);
        // The same positions as the log's own barrier list, plus the base.
        let mut barriers = vec![2];
        barriers.extend(log.barrier_positions(2));
        let at: Vec<usize> = points.iter().map(|p| p.position).collect();
        assert_eq!(at, barriers);
    }

    #[test]
    fn marks_before_the_base_count_as_promises_already_made() {
        let log = log(vec![mark("setup done"), RecordKind::Flush, w()]);
        let points = crash_points(&log, 2);
        assert_eq!(points.len(), 1);
        assert_eq!(points[0].marks, 1);
        // A base past the end is the end.
        assert_eq!(crash_points(&log, 99)[0].position, 3);
    }
}
