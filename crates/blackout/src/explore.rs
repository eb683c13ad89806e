//! Explore: which crash states a persistence model allows.
//!
//! A crash happens after op *k* (crash point `k` keeps a prefix of `k` ops).
//! An op is **forced** at `k` once a sync that covers it lies inside the
//! prefix; every other durable change in the prefix is **pending**. A model
//! says which subsets of the pending ops may survive, and which writes may be
//! torn:
//!
//! - [`Model::Process`]: the program dies, the OS lives: all kept.
//! - [`Model::Ordered`]: as process, but the last op, if a write, may be torn.
//! - [`Model::Posix`]: any subset of the pending ops may be lost, and each
//!   pending write may be torn (half at a sector boundary, one sector short,
//!   or the range as zeros).
//!
//! Enumeration is pure and deterministic for a given trace, config and seed:
//! it yields [`StateDesc`]s (what was lost or torn), never touching disk.
//! Under posix it is exhaustive when a crash point has at most
//! `exhaustive_limit` pending units, and beyond that it takes structured
//! families plus a seeded sample, counting what it did not cover.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::ops::{synced_by, Op, OpKind};

/// A persistence model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Model {
    /// The process dies; the OS keeps everything it was given.
    Process,
    /// Power fails on a disk that writes in order: the last write may tear.
    Ordered,
    /// Only what a sync promised is safe.
    Posix,
}

impl Model {
    /// The model's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Model::Process => "process",
            Model::Ordered => "ordered",
            Model::Posix => "posix",
        }
    }
}

/// Which part of an op a pending unit is. A rename between two directories is
/// two halves, each covered by its own directory's sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Part {
    /// The whole op.
    Whole,
    /// A rename's removal from its source directory.
    Source,
    /// A rename's addition to its destination directory.
    Dest,
}

/// One op, or one half of a rename, that a crash may lose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Unit {
    /// The op's index.
    pub op: usize,
    /// Which part of it.
    pub part: Part,
}

/// How a kept write is torn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tear {
    /// Only the first half (cut at a sector boundary) reached the disk.
    Half,
    /// All but the last sector reached the disk.
    ShortSector,
    /// The range reads as zeros.
    Zeros,
}

impl Tear {
    /// What a crash left of the write, for people.
    pub fn describe(self) -> &'static str {
        match self {
            Tear::Half => "only its first half reached the disk",
            Tear::ShortSector => "its last sector did not reach the disk",
            Tear::Zeros => "it reads back as zeros",
        }
    }

    fn code(self) -> &'static str {
        match self {
            Tear::Half => "h",
            Tear::ShortSector => "s",
            Tear::Zeros => "z",
        }
    }
}

/// A crash state, described by what it lost and tore.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StateDesc {
    /// Ops `0..crash` were issued before the crash.
    pub crash: usize,
    /// Pending units lost (sorted).
    pub lost: Vec<Unit>,
    /// A write kept but torn.
    pub torn: Option<(usize, Tear)>,
}

impl StateDesc {
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
                    Part::Whole => u.op.to_string(),
                    Part::Source => format!("{}s", u.op),
                    Part::Dest => format!("{}d", u.op),
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
        let mut desc = StateDesc {
            crash,
            lost: Vec::new(),
            torn: None,
        };
        for p in parts {
            if let Some(list) = p.strip_prefix("lost") {
                for u in list.split('+') {
                    let (num, part) = match u.as_bytes().last()? {
                        b's' => (&u[..u.len() - 1], Part::Source),
                        b'd' => (&u[..u.len() - 1], Part::Dest),
                        _ => (u, Part::Whole),
                    };
                    desc.lost.push(Unit {
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
                desc.torn = Some((num.parse().ok()?, tear));
            } else {
                return None;
            }
        }
        desc.lost.sort();
        Some(desc)
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
        for u in &self.lost {
            if u.op >= self.crash {
                return Err(format!(
                    "op {} was not issued before crash point c{}",
                    u.op, self.crash
                ));
            }
            let cross = matches!(&ops[u.op].kind, OpKind::Rename { from_dir, to_dir, .. } if from_dir != to_dir);
            if !ops[u.op].kind.is_durable_change() {
                return Err(format!("op {} changes nothing a crash can lose", u.op));
            }
            if (u.part != Part::Whole) != cross {
                return Err(format!(
                    "op {}: halves (s, d) exist only for renames between two directories, and such a rename is lost by halves",
                    u.op
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

/// Enumeration settings.
#[derive(Debug, Clone)]
pub struct ExploreConfig {
    /// The persistence model.
    pub model: Model,
    /// Exhaustive over subsets when a crash point has at most this many
    /// pending units.
    pub exhaustive_limit: usize,
    /// Random subsets sampled per crash point beyond the limit.
    pub sample_per_crash_point: usize,
    /// Seed of the sample.
    pub seed: u64,
}

impl Default for ExploreConfig {
    fn default() -> Self {
        ExploreConfig {
            model: Model::Posix,
            exhaustive_limit: 10,
            sample_per_crash_point: 64,
            seed: 0,
        }
    }
}

/// What an enumeration did not cover.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Coverage {
    /// Crash points enumerated.
    pub crash_points: usize,
    /// Crash points whose subsets were not all enumerated.
    pub partial_crash_points: Vec<usize>,
    /// Subsets of pending units left out, summed over crash points
    /// (saturating). In JSON a decimal string: it can exceed what a JSON
    /// number holds exactly.
    #[serde(serialize_with = "as_decimal")]
    pub subsets_not_covered: u128,
}

fn as_decimal<S: serde::Serializer>(n: &u128, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(n)
}

/// The pending units at crash point `k`.
pub fn pending_at(ops: &[Op], synced: &[crate::ops::SyncedBy], k: usize) -> Vec<Unit> {
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

/// Enumerates the crash states a model allows, calling `emit` for each
/// (possibly with repeats across crash points; the caller dedups by content).
/// Returns what was not covered.
pub fn enumerate(ops: &[Op], cfg: &ExploreConfig, mut emit: impl FnMut(StateDesc)) -> Coverage {
    let synced = synced_by(ops);
    let mut cov = Coverage::default();
    for k in 0..=ops.len() {
        cov.crash_points += 1;
        let plain = StateDesc {
            crash: k,
            lost: Vec::new(),
            torn: None,
        };
        match cfg.model {
            Model::Process => emit(plain),
            Model::Ordered => {
                emit(plain);
                if k > 0 && matches!(ops[k - 1].kind, OpKind::Write { .. }) {
                    for tear in [Tear::Half, Tear::ShortSector, Tear::Zeros] {
                        emit(StateDesc {
                            crash: k,
                            lost: Vec::new(),
                            torn: Some((k - 1, tear)),
                        });
                    }
                }
            }
            Model::Posix => {
                let pending = pending_at(ops, &synced, k);
                posix_at(ops, k, &pending, cfg, &mut cov, &mut emit);
            }
        }
    }
    cov
}

fn posix_at(
    ops: &[Op],
    k: usize,
    pending: &[Unit],
    cfg: &ExploreConfig,
    cov: &mut Coverage,
    emit: &mut impl FnMut(StateDesc),
) {
    let n = pending.len();
    let state = |lost: Vec<Unit>| StateDesc {
        crash: k,
        lost,
        torn: None,
    };
    if n <= cfg.exhaustive_limit {
        for mask in 0u64..(1u64 << n) {
            let lost = (0..n)
                .filter(|b| mask & (1 << b) != 0)
                .map(|b| pending[b])
                .collect();
            emit(state(lost));
        }
    } else {
        let mut seen: BTreeSet<Vec<Unit>> = BTreeSet::new();
        let mut push = |lost: Vec<Unit>, emit: &mut dyn FnMut(StateDesc)| {
            if seen.insert(lost.clone()) {
                emit(state(lost));
            }
        };
        push(Vec::new(), emit);
        push(pending.to_vec(), emit);
        for u in pending {
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
            for j in 1..units.len() {
                push(units[j..].to_vec(), emit);
            }
        }
        let mut rng = SplitMix(cfg.seed ^ (k as u64).wrapping_mul(0x2545_F491_4F6C_DD1D));
        for _ in 0..cfg.sample_per_crash_point {
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
    }
    // Each pending write torn, everything else kept.
    for u in pending {
        if matches!(ops[u.op].kind, OpKind::Write { .. }) {
            for tear in [Tear::Half, Tear::ShortSector, Tear::Zeros] {
                emit(StateDesc {
                    crash: k,
                    lost: Vec::new(),
                    torn: Some((u.op, tear)),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::test_ops::{op, write};

    fn collect(ops: &[Op], cfg: &ExploreConfig) -> (Vec<StateDesc>, Coverage) {
        let mut v = Vec::new();
        let cov = enumerate(ops, cfg, |s| v.push(s));
        (v, cov)
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
        let mut cfg = ExploreConfig {
            model: Model::Process,
            ..ExploreConfig::default()
        };
        assert_eq!(collect(&ops, &cfg).0.len(), 3);
        cfg.model = Model::Ordered;
        // 3 plain + 3 tears of the last write at crash points 1 and 2.
        assert_eq!(collect(&ops, &cfg).0.len(), 9);
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
