//! The posix model: only what a sync promised is safe. Any subset of the
//! pending units may be lost (every subset up to `exhaustive_limit` pending
//! units; beyond, structured families plus a seeded sample, counted as not
//! covered), and each pending write may be torn as storage tears it
//! ([`Tear`]) with everything else kept.

use blackout_oplog::ops::{Ino, OpKind, Part, Unit};
use blackout_oplog::store;
use rustc_hash::FxHashSet;

use crate::enumerate::{spread, Bound, Coverage, CrashPoint, ExploreConfig, StateDesc, Tear};
use crate::model::CrashModel;

/// See the module documentation.
#[derive(Debug, Clone, Copy)]
pub struct Posix;

impl CrashModel for Posix {
    fn name(&self) -> &'static str {
        "posix"
    }

    fn states_at(
        &self,
        point: &CrashPoint<'_>,
        cov: &mut Coverage,
        emit: &mut dyn FnMut(StateDesc),
    ) {
        posix_at(point, point.pending, cov, emit);
    }

    fn coverage_text(&self, cov: &Coverage, cfg: &ExploreConfig) -> String {
        coverage_text(cov, cfg)
    }

    fn states_bound(&self, pending: usize, writes: usize, cfg: &ExploreConfig) -> Bound {
        let (n, w) = (pending as u64, writes as u64);
        let tears = w.saturating_mul(Tear::ALL.len() as u64);
        let (subsets, units) = if pending <= cfg.exhaustive_limit {
            // Every subset: each unit is lost in half of them.
            (1u64 << n, n << n.saturating_sub(1))
        } else {
            // All kept, none kept, each lost alone, each kept alone, each
            // per-file prefix, the sample (half the units lost in each).
            let sampled = samples(cfg.budget, pending) as u64;
            let states = (3 * n).saturating_add(2).saturating_add(sampled);
            let units = n
                .saturating_mul(n)
                .saturating_mul(2)
                .saturating_add(sampled.saturating_mul(n) / 2)
                .saturating_add(2 * n);
            (states, units)
        };
        Bound {
            states: subsets.saturating_add(tears),
            units: units.saturating_add(tears),
        }
    }
}

/// A tiny deterministic generator (splitmix64) for the sample.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// The states at one crash point. Every loop looks at the cancel flag: with
/// thousands of pending ops one family alone is millions of units.
fn posix_at(
    point: &CrashPoint<'_>,
    pending: &[Unit],
    cov: &mut Coverage,
    emit: &mut dyn FnMut(StateDesc),
) {
    let (ops, k) = (point.ops, point.k);
    let finished = if pending.len() <= point.cfg.exhaustive_limit {
        every_subset(point, pending, emit)
    } else {
        families(point, pending, cov, emit)
    };
    if !finished {
        return;
    }
    // Each pending write torn, everything else kept.
    let writes: Vec<Unit> = pending
        .iter()
        .filter(|u| matches!(ops[u.op].kind, OpKind::Write { .. }))
        .copied()
        .collect();
    for i in chosen(point, &writes) {
        for tear in Tear::ALL {
            emit(StateDesc {
                crash: k,
                lost: Default::default(),
                torn: Some((writes[i].op, tear)),
            });
        }
    }
}

/// The state at `point` that loses `lost`, everything else kept.
fn losing(point: &CrashPoint<'_>, lost: Vec<Unit>) -> StateDesc {
    StateDesc {
        crash: point.k,
        lost: lost.into(),
        torn: None,
    }
}

/// Every subset of the pending units lost. Whether it finished (not
/// stopped).
fn every_subset(point: &CrashPoint<'_>, pending: &[Unit], emit: &mut dyn FnMut(StateDesc)) -> bool {
    let n = pending.len();
    for mask in 0u64..(1u64 << n) {
        if point.stopped() {
            return false;
        }
        let lost = (0..n)
            .filter(|b| mask & (1 << b) != 0)
            .map(|b| pending[b])
            .collect();
        emit(losing(point, lost));
    }
    true
}

/// Past the exhaustive limit, the structured families of subsets and the
/// seeded sample; what they leave out is counted in `cov`. Whether it
/// finished (not stopped).
fn families(
    point: &CrashPoint<'_>,
    pending: &[Unit],
    cov: &mut Coverage,
    emit: &mut dyn FnMut(StateDesc),
) -> bool {
    let (ops, k, cfg) = (point.ops, point.k, point.cfg);
    let n = pending.len();
    // The subsets emitted, by digest: with thousands of pending units a
    // family is millions of units, which a set of the subsets would
    // hold a second time.
    let mut seen: FxHashSet<[u8; 32]> = FxHashSet::default();
    let mut push = |lost: Vec<Unit>, emit: &mut dyn FnMut(StateDesc)| {
        if seen.insert(digest(&lost)) {
            emit(losing(point, lost));
        }
    };
    push(Vec::new(), emit);
    push(pending.to_vec(), emit);
    for i in chosen(point, pending) {
        if point.stopped() {
            return false;
        }
        let u = &pending[i];
        push(vec![*u], emit);
        push(pending.iter().filter(|p| *p != u).copied().collect(), emit);
    }
    // Per-inode prefixes: an inode's pending data ops reach the disk in
    // order up to some point, everything else kept.
    let mut by_ino: std::collections::BTreeMap<u32, Vec<Unit>> = Default::default();
    for u in pending {
        if let OpKind::Write { ino, .. }
        | OpKind::Truncate { ino, .. }
        | OpKind::Fallocate { ino, .. } = ops[u.op].kind
        {
            by_ino.entry(ino).or_default().push(*u);
        }
    }
    for units in by_ino.values() {
        let cuts = units.get(1..).unwrap_or_default();
        for j in chosen(point, cuts) {
            if point.stopped() {
                return false;
            }
            push(units[j + 1..].to_vec(), emit);
        }
    }
    let mut rng = SplitMix(cfg.seed ^ (k as u64).wrapping_mul(0x2545_F491_4F6C_DD1D));
    for _ in 0..samples(cfg.budget, n) {
        if point.stopped() {
            return false;
        }
        let lost: Vec<Unit> = pending
            .iter()
            .filter(|_| rng.next() & 1 == 1)
            .copied()
            .collect();
        push(lost, emit);
    }
    let total: u128 = if n >= 127 { u128::MAX } else { 1u128 << n };
    cov.partial_crash_points.push(k);
    cov.subsets_not_covered = cov
        .subsets_not_covered
        .saturating_add(total.saturating_sub(seen.len() as u128));
    true
}

/// Ops a crash point's sampled subsets may lose in all: each loses about
/// half the pending ops, so a crash point with hundreds of them takes
/// fewer samples than `--budget` (what a state costs to hold is what it
/// lost).
pub const SAMPLE_UNITS_MAX: usize = 4096;

/// The sampled subsets a crash point with `n` pending units takes: the
/// budget, fewer when they would lose more than [`SAMPLE_UNITS_MAX`] ops
/// in all (at least one while the budget is not zero).
///
/// ```
/// use blackout_explore::model::posix::samples;
/// assert_eq!(samples(64, 40), 64);
/// assert_eq!(samples(64, 500), 16);
/// assert_eq!(samples(64, 100_000), 1);
/// assert_eq!(samples(0, 500), 0);
/// ```
pub fn samples(budget: usize, n: usize) -> usize {
    if budget == 0 {
        return 0;
    }
    budget.min(2 * SAMPLE_UNITS_MAX / n.max(1)).max(1)
}

/// What makes two pending units alike for the families of states at one
/// crash point: the call, the inode it changes, the part, a write's length
/// and the tears storage can make of it (a record that straddles a sector
/// boundary is never stood for by one inside a sector).
type Alike = (
    std::mem::Discriminant<OpKind>,
    Option<Ino>,
    Part,
    u64,
    Vec<Tear>,
);

fn alike(point: &CrashPoint<'_>, u: &Unit) -> Alike {
    let kind = &point.ops[u.op].kind;
    let len = match kind {
        OpKind::Write { data, .. } => data.len,
        _ => 0,
    };
    (
        std::mem::discriminant(kind),
        store::changes(kind)[0],
        u.part,
        len,
        point.tearing.offered(point.ops, u.op),
    )
}

/// A digest of a set of units (blake3, as content keys are): two subsets
/// with one digest are the same subset.
fn digest(units: &[Unit]) -> [u8; 32] {
    let mut bytes = Vec::with_capacity(units.len() * 9);
    for u in units {
        bytes.extend_from_slice(&(u.op as u64).to_le_bytes());
        bytes.push(match u.part {
            Part::Whole => 0,
            Part::Source => 1,
            Part::Dest => 2,
        });
    }
    *blake3::hash(&bytes).as_bytes()
}

/// The positions in `units` a family of states takes one unit at: every
/// one, or with representatives `r`, `r` of each set of alike units,
/// spread from its first to its last (a thousand appends of a megabyte to
/// one file stand for each other, and so do the creations of a temporary
/// file between them), in order.
fn chosen(point: &CrashPoint<'_>, units: &[Unit]) -> Vec<usize> {
    let Some(r) = point.representatives else {
        return (0..units.len()).collect();
    };
    let mut sets: std::collections::HashMap<Alike, Vec<usize>> = Default::default();
    for (i, u) in units.iter().enumerate() {
        sets.entry(alike(point, u)).or_default().push(i);
    }
    let mut out: Vec<usize> = sets.values().flat_map(|set| spread(set, r)).collect();
    out.sort_unstable();
    out
}

/// The tear model, as the coverage statement gives it.
const TEARS: &str = "each pending write also torn as storage tears it, with everything else kept: each sector old or new, cut at the sector boundary at or before its middle and before its last sector, and, for a write that extends its file, the new size without the data (a write inside one sector is atomic; tears are not combined with losses)";

/// What posix enumeration covered at every crash point, and what it did not.
fn coverage_text(cov: &Coverage, cfg: &ExploreConfig) -> String {
    let limit = cfg.exhaustive_limit;
    if cov.partial_crash_points.is_empty() {
        return format!(
            "covered: every subset of pending ops at all {} crash points (none had more than {limit} pending); {TEARS}",
            cov.crash_points
        );
    }
    let pts = &cov.partial_crash_points;
    let shown: Vec<String> = pts.iter().take(8).map(|p| format!("c{p}")).collect();
    let more = if pts.len() > 8 {
        format!(" and {} more", pts.len() - 8)
    } else {
        String::new()
    };
    let missed = if cov.subsets_not_covered == u128::MAX {
        "more than 2^127".to_string()
    } else {
        super::for_people(cov.subsets_not_covered)
    };
    format!(
        "not covered: {} of {} crash points had more than {limit} pending ops ({}{more}); {missed} subsets of their pending ops were not enumerated (checked instead: all kept, none kept, each lost alone, each kept alone, per-file prefixes, and {} sampled subsets per crash point, fewer where they would lose more than {SAMPLE_UNITS_MAX} ops in all); {TEARS}",
        pts.len(),
        cov.crash_points,
        shown.join(", "),
        cfg.budget
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subsets_left_out_are_counted_for_people() {
        let cfg = ExploreConfig::default();
        let cov = |n| Coverage {
            crash_points: 40,
            explored: (0..40).collect(),
            partial_crash_points: vec![30, 31],
            subsets_not_covered: n,
            classes: None,
            full_crash_points: None,
        };
        let text = coverage_text(&cov(9_223_372_036_854_775_807), &cfg);
        assert!(
            text.contains("; 9.2e18 subsets of their pending ops"),
            "{text}"
        );
        let text = coverage_text(&cov(4_032), &cfg);
        assert!(
            text.contains("; 4032 subsets of their pending ops"),
            "{text}"
        );
        let text = coverage_text(&cov(u128::MAX), &cfg);
        assert!(text.contains("more than 2^127 subsets"), "{text}");
    }
}
