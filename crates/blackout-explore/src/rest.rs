//! The rest of an exploration. Representatives (a few crash points of each
//! class, [`crate::classes`]) find failures fast, but a verdict drawn on
//! them alone is a sample. The rest is every crash point explored in full
//! ([`explore_rest`], within [`REST_BOUND`]), its distinct
//! states added to the representatives' ([`Explored::absorb`]) and put in
//! the order that covers the most new ground first ([`check_order`]): the
//! states that lose or tear a kind of unit no state before them did, then
//! the crash points class by class, the next of each class spread between
//! those taken (the first and last of a class, then its middle, then the
//! quarters), so a check budget that ends the rest ends it on a sample
//! spread over every class and the whole trace. A run explores the rest a
//! round at a time ([`RestRounds`]) and checks each round before the next.

use std::collections::{HashSet, VecDeque};

use blackout_oplog::ops::{OpKind, Part, Unit};
use blackout_oplog::promises::Outputs;
use blackout_oplog::trace::Trace;
use rustc_hash::FxHashMap;

use crate::classes::Classes;
use crate::dedup::{
    explore_points, simplicity, Distinct, ExploreError, Explored, ModelStates, StateKey, Watch,
};
use crate::enumerate::{unit_spans, Bound, Coverage, ExploreConfig, Representatives, StateDesc};
use crate::model::Model;
use blackout_oplog::ops::synced_by;

/// The most states the rest of an exploration may enumerate (over every
/// model), and the most units they may lose or tear in all (each costs its
/// place in a state's description): a trace whose crash points would make
/// more is explored in full at as many crash points as fit, spread over
/// its classes, and its verdict can then not be exact. A million states
/// key in a few seconds; their descriptions, with at most eight million
/// units lost or torn, are held in about 300 MB.
pub const REST_BOUND: Bound = Bound {
    states: 1_000_000,
    units: 8_000_000,
};

/// The positions `0..m` in the order that spreads them most: the first, the
/// last, then the middle of each gap, wider gaps first.
///
/// ```
/// use blackout_explore::rest::bisection_order;
/// assert_eq!(bisection_order(5), [0, 4, 2, 1, 3]);
/// assert_eq!(bisection_order(1), [0]);
/// assert!(bisection_order(0).is_empty());
/// ```
pub fn bisection_order(m: usize) -> Vec<usize> {
    if m == 0 {
        return Vec::new();
    }
    let mut out = vec![0];
    if m > 1 {
        out.push(m - 1);
    }
    let mut gaps = VecDeque::from([(0, m - 1)]);
    while let Some((lo, hi)) = gaps.pop_front() {
        if hi - lo < 2 {
            continue;
        }
        let mid = lo + (hi - lo) / 2;
        out.push(mid);
        gaps.push_back((lo, mid));
        gaps.push_back((mid, hi));
    }
    out
}

/// Each crash point's rank in its class: where the class's
/// [`bisection_order`] takes it (its first and last crash points 0 and 1,
/// its middle 2, ...).
fn ranks(classes: &Classes) -> Vec<usize> {
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); classes.counts.len()];
    for (k, &c) in classes.class_of.iter().enumerate() {
        members[c].push(k);
    }
    let mut rank = vec![0usize; classes.class_of.len()];
    for ks in &members {
        for (r, p) in bisection_order(ks.len()).into_iter().enumerate() {
            rank[ks[p]] = r;
        }
    }
    rank
}

/// The crash points `0..=ops.len()` in the order the rest takes them:
/// class by class, each class's next crash point spread between those
/// taken before.
fn spread_order(classes: &Classes) -> Vec<usize> {
    let rank = ranks(classes);
    let mut points: Vec<usize> = (0..classes.class_of.len()).collect();
    points.sort_by_key(|&k| (rank[k], classes.class_of[k], k));
    points
}

/// The crash points the rest explores (ascending), and whether they are
/// every crash point: all of them when the models' bound on their states
/// ([`crate::enumerate::CrashModel::states_bound`]) adds up to at most
/// `max`; else as many as fit, taken class by class, spread within each
/// ([`check_order`]'s order).
pub fn rest_points(
    trace: &Trace,
    models: &[Model],
    cfg: &ExploreConfig,
    classes: &Classes,
    max: Bound,
) -> (Vec<usize>, bool) {
    let (taken, all) = rest_taken(trace, models, cfg, classes, max);
    let mut points: Vec<usize> = taken.into_iter().map(|(k, _)| k).collect();
    points.sort_unstable();
    (points, all)
}

/// The crash points the rest explores, each with the models' bound on its
/// states: every crash point (ascending) when they all fit in `max`, else
/// those that fit in the order the rest takes them ([`spread_order`]);
/// and whether they are every crash point.
fn rest_taken(
    trace: &Trace,
    models: &[Model],
    cfg: &ExploreConfig,
    classes: &Classes,
    max: Bound,
) -> (Vec<(usize, Bound)>, bool) {
    let ops = &trace.ops;
    let points = ops.len() + 1;
    // Units and writes pending at each crash point, from where each unit
    // starts and stops being pending.
    let mut units = vec![0i64; points + 1];
    let mut writes = vec![0i64; points + 1];
    for (unit, from, to) in unit_spans(ops, &synced_by(ops)) {
        let to = to.min(points);
        let is_write = matches!(ops[unit.op].kind, OpKind::Write { .. });
        for (counts, on) in [(&mut units, true), (&mut writes, is_write)] {
            if on && from < to {
                counts[from] += 1;
                counts[to] -= 1;
            }
        }
    }
    let (mut n, mut w) = (0i64, 0i64);
    let bounds: Vec<Bound> = (0..points)
        .map(|k| {
            n += units[k];
            w += writes[k];
            let (n, w) = (n.max(0) as usize, w.max(0) as usize);
            models
                .iter()
                .map(|m| m.crash_model().states_bound(n, w, cfg))
                .fold(Bound::default(), Bound::plus)
        })
        .collect();
    let total = bounds.iter().copied().fold(Bound::default(), Bound::plus);
    if total.states <= max.states && total.units <= max.units {
        return (bounds.into_iter().enumerate().collect(), true);
    }
    let mut left = max;
    let taken = spread_order(classes)
        .into_iter()
        .filter(|&k| {
            let b = bounds[k];
            let fits = b.states <= left.states && b.units <= left.units;
            if fits {
                left.states -= b.states;
                left.units -= b.units;
            }
            fits
        })
        .map(|k| (k, bounds[k]))
        .collect();
    (taken, false)
}

/// The first round of [`RestRounds`], at most: each round after it may be
/// twice the one before, so a check budget that ends the rest ends it
/// having explored at most about twice what it checked.
pub const FIRST_ROUND: Bound = Bound {
    states: 4_096,
    units: 524_288,
};

/// The rest of an exploration explored a round at a time, so that a run
/// checks each round before it explores the next and a check budget that
/// ends the rest ends its exploring too (neither the time nor the memory
/// of states no one will check is spent). The rounds take the crash
/// points [`rest_points`] gives in the order the rest spreads them (class
/// by class, spread within each): the first round at most a bound given
/// ([`FIRST_ROUND`] in a run), each after it at most twice the one before (and at
/// least one crash point). Every round added ([`Explored::absorb`]) makes
/// the exploration [`explore_rest`] makes.
pub struct RestRounds<'t> {
    trace: &'t Trace,
    outputs: &'t Outputs,
    cfg: ExploreConfig,
    sector: u64,
    models: Vec<Model>,
    rounds: VecDeque<Vec<usize>>,
    all: bool,
    /// Per model: the states its rounds enumerated and what they covered.
    totals: Vec<(usize, Coverage)>,
}

impl<'t> RestRounds<'t> {
    /// The rounds of the rest of a trace whose representatives `reps` were
    /// explored (with `cfg`, under its models), within `max`, the first
    /// round within `first` (a run's is [`FIRST_ROUND`]); none when `reps`
    /// has no classes (no rest).
    pub fn new(
        trace: &'t Trace,
        outputs: &'t Outputs,
        cfg: &ExploreConfig,
        sector: u64,
        reps: &Explored,
        (max, first): (Bound, Bound),
    ) -> Result<RestRounds<'t>, ExploreError> {
        let models: Vec<Model> = reps.models.iter().map(|m| m.model).collect();
        let cfg = ExploreConfig {
            representatives: Representatives::Exhaustive,
            ..cfg.clone()
        };
        cfg.validate()?;
        let (taken, all) = match &reps.classes {
            Some(classes) => rest_taken(trace, &models, &cfg, classes, max),
            None => (Vec::new(), false),
        };
        let mut rounds = VecDeque::new();
        let (mut size, mut round, mut used) = (first, Vec::new(), Bound::default());
        for (k, b) in taken {
            let more = used.plus(b);
            if !round.is_empty() && (more.states > size.states || more.units > size.units) {
                rounds.push_back(std::mem::take(&mut round));
                size = size.plus(size);
                used = Bound::default();
            }
            used = used.plus(b);
            round.push(k);
        }
        if !round.is_empty() {
            rounds.push_back(round);
        }
        for r in &mut rounds {
            r.sort_unstable();
        }
        let totals = models.iter().map(|_| (0, Coverage::default())).collect();
        Ok(RestRounds {
            trace,
            outputs,
            cfg,
            sector,
            models,
            rounds,
            all,
            totals,
        })
    }

    /// Whether the rounds take every crash point (else the rest's bound
    /// left some out).
    pub fn every_point(&self) -> bool {
        self.all
    }

    /// Rounds not yet explored.
    pub fn left(&self) -> usize {
        self.rounds.len()
    }

    /// The next round explored, if any is left. The last round of rounds
    /// that take every crash point is `in_full`, and each of its models
    /// states and coverage are those of all the rounds (what
    /// [`Explored::absorb`] takes from a rest in full).
    pub fn next_round(&mut self, watch: Watch<'_>) -> Result<Option<Explored>, ExploreError> {
        let Some(points) = self.rounds.pop_front() else {
            return Ok(None);
        };
        let mut round = explore_points(
            self.trace,
            self.outputs,
            &self.models,
            &self.cfg,
            self.sector,
            watch,
            &points,
        )?;
        for (m, (states, cov)) in round.models.iter_mut().zip(&mut self.totals) {
            *states += m.states;
            cov.add(m.coverage.clone());
        }
        round.in_full = self.rounds.is_empty() && self.all;
        if round.in_full {
            for (m, (states, cov)) in round.models.iter_mut().zip(&mut self.totals) {
                m.states = *states;
                cov.settle();
                m.coverage = std::mem::take(cov);
            }
        }
        Ok(Some(round))
    }
}

/// Explores the rest of a trace whose representatives `reps` were
/// explored (with `cfg`, under its models): the crash points
/// [`rest_points`] gives, every pending unit taken
/// ([`Representatives::Exhaustive`]). The result is `in_full` when those
/// are every crash point; with no classes in `reps` there is no rest (an
/// empty exploration, in full when `reps` is).
pub fn explore_rest(
    trace: &Trace,
    outputs: &Outputs,
    cfg: &ExploreConfig,
    sector: u64,
    watch: Watch<'_>,
    reps: &Explored,
    max: Bound,
) -> Result<Explored, ExploreError> {
    let models: Vec<Model> = reps.models.iter().map(|m| m.model).collect();
    let models = &models[..];
    let Some(classes) = &reps.classes else {
        return Ok(Explored {
            distinct: Vec::new(),
            models: Vec::new(),
            classes: None,
            in_full: reps.in_full,
        });
    };
    let cfg = ExploreConfig {
        representatives: Representatives::Exhaustive,
        ..cfg.clone()
    };
    cfg.validate()?;
    let (points, all) = rest_points(trace, models, &cfg, classes, max);
    let mut rest = explore_points(trace, outputs, models, &cfg, sector, watch, &points)?;
    rest.in_full = all;
    Ok(rest)
}

impl Explored {
    /// Adds what `rest` (an exploration of the same trace, outputs and
    /// sector) found: each distinct state not here goes after those here
    /// (whose indices stay), a state here gets a simpler description when
    /// `rest` has one, and each model reaches what it reaches in either.
    /// When `rest` explored every crash point in full, so does the result,
    /// and each model's coverage is `rest`'s (its classes kept, with how
    /// many crash points were explored in full); else the crash points
    /// `rest` explored add to those explored in full before (a round of
    /// [`RestRounds`] after another).
    pub fn absorb(&mut self, rest: Explored) {
        let mut index: FxHashMap<StateKey, usize> = self
            .distinct
            .iter()
            .enumerate()
            .map(|(i, d)| (d.key, i))
            .collect();
        let mut renamed = Vec::with_capacity(rest.distinct.len());
        for d in rest.distinct {
            match index.get(&d.key) {
                Some(&i) => {
                    if simplicity(&d.desc) < simplicity(&self.distinct[i].desc) {
                        self.distinct[i].desc = d.desc;
                    }
                    renamed.push(i);
                }
                None => {
                    let i = self.distinct.len();
                    index.insert(d.key, i);
                    self.distinct.push(d);
                    renamed.push(i);
                }
            }
        }
        for more in rest.models {
            let reach = more.reach.into_iter().map(|(j, d)| (renamed[j], d));
            let Some(m) = self.models.iter_mut().find(|m| m.model == more.model) else {
                self.models.push(ModelStates {
                    model: more.model,
                    states: more.states,
                    reach: reach.collect(),
                    coverage: more.coverage,
                });
                continue;
            };
            let mut at: FxHashMap<usize, usize> = m
                .reach
                .iter()
                .enumerate()
                .map(|(p, (i, _))| (*i, p))
                .collect();
            for (i, desc) in reach {
                match at.get(&i) {
                    Some(&p) => {
                        if simplicity(&desc) < simplicity(&m.reach[p].1) {
                            m.reach[p].1 = desc;
                        }
                    }
                    None => {
                        at.insert(i, m.reach.len());
                        m.reach.push((i, desc));
                    }
                }
            }
            let mut full = more.coverage.crash_points;
            if rest.in_full {
                // Every state the representatives' enumeration made is one
                // the full enumeration made too.
                m.states = more.states;
                let classes = m.coverage.classes.take();
                m.coverage = more.coverage;
                m.coverage.classes = classes;
            } else {
                m.states += more.states;
                // A crash point both explored counts once; the rest's
                // rounds explore crash points apart.
                full += m.coverage.full_crash_points.unwrap_or(0);
                m.coverage.add(more.coverage);
                m.coverage.settle();
            }
            m.coverage.full_crash_points = Some(full);
        }
        self.in_full |= rest.in_full;
    }
}

/// What a state loses or tears, as kinds: each lost unit's shape, each
/// torn write's shape and tear.
fn damage_kinds(classes: &Classes, d: &StateDesc) -> Vec<(usize, u8)> {
    let shape = |u: &Unit| classes.unit_shapes.get(u).copied().unwrap_or(usize::MAX);
    let mut kinds: Vec<(usize, u8)> = d.lost.iter().map(|u| (shape(u), 0)).collect();
    if let Some((op, tear)) = d.torn {
        let u = Unit {
            op,
            part: Part::Whole,
        };
        kinds.push((shape(&u), 1 + tear as u8));
    }
    kinds
}

/// The distinct states of `explored` not yet `checked`, in the order to
/// check them: first each state that loses or tears a kind of unit (its
/// shape, and how: lost, or which tear) that no checked state and no
/// state before it in this order did; then the rest, crash points taken
/// class by class, spread within each class ([`bisection_order`]),
/// simplest state first at each crash point. Without classes (no
/// representatives), in exploration order. Each run of [`STRIDE`] states
/// of that order is then put in crash-point order: a checker's state is
/// built from the one it built before, cheaply when it lies ahead in the
/// trace, and a budget that ends the rest still ends it on a spread sample
/// (at most a stride from the order above).
pub fn check_order(explored: &Explored, checked: impl Fn(&StateKey) -> bool) -> Vec<usize> {
    let distinct: &[Distinct] = &explored.distinct;
    let todo: Vec<usize> = (0..distinct.len())
        .filter(|&i| !checked(&distinct[i].key))
        .collect();
    let Some(classes) = &explored.classes else {
        return todo;
    };
    let rank = ranks(classes);
    let at = |k: usize| {
        (
            rank.get(k).copied().unwrap_or(usize::MAX),
            classes.class_of.get(k).copied().unwrap_or(usize::MAX),
        )
    };
    let mut seen: HashSet<(usize, u8)> = HashSet::new();
    for d in distinct.iter().filter(|d| checked(&d.key)) {
        seen.extend(damage_kinds(classes, &d.desc));
    }
    let mut spread = todo;
    spread.sort_by(|&a, &b| {
        let (da, db) = (&distinct[a].desc, &distinct[b].desc);
        (at(da.crash), simplicity(da)).cmp(&(at(db.crash), simplicity(db)))
    });
    let mut first = Vec::new();
    let mut later = Vec::new();
    for i in spread {
        let kinds = damage_kinds(classes, &distinct[i].desc);
        if kinds.iter().any(|k| !seen.contains(k)) {
            seen.extend(kinds);
            first.push(i);
        } else {
            later.push(i);
        }
    }
    first.extend(later);
    for run in first.chunks_mut(STRIDE) {
        run.sort_by_key(|&i| distinct[i].desc.crash);
    }
    first
}

/// How many states of [`check_order`] are checked in crash-point order.
pub const STRIDE: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dedup::distinct_states;

    const UNBOUNDED: Bound = Bound {
        states: u64::MAX,
        units: u64::MAX,
    };

    #[test]
    fn bisection_takes_every_position_once() {
        for m in 0..200 {
            let mut order = bisection_order(m);
            assert_eq!(order.len(), m);
            order.sort_unstable();
            assert_eq!(order, (0..m).collect::<Vec<_>>());
        }
    }

    /// A durable 4,000-byte table of 40-byte records updated in place,
    /// each update fdatasynced and acknowledged; the record at 480 crosses
    /// the sector boundary at 512.
    fn table(updates: usize) -> Trace {
        let mut log = String::from("1 openat(AT_FDCWD, \"\\x74\", O_WRONLY|O_CREAT, 0644) = 3\n");
        log.push_str(&format!(
            "1 pwrite64(3, \"{}\", 4000, 0) = 4000\n1 fsync(3) = 0\n",
            "\\x30".repeat(4000)
        ));
        for u in 0..updates {
            let off = (u * 7 % 100) * 40;
            log.push_str(&format!(
                "1 pwrite64(3, \"{}\", 40, {off}) = 40\n1 fdatasync(3) = 0\n1 write(1, \"\\x61\\x0a\", 2) = 2\n",
                "\\x31".repeat(40)
            ));
        }
        blackout_record::replay::trace_of_log(log.as_bytes(), b"/d").unwrap()
    }

    fn explore(t: &Trace, representatives: Representatives) -> Explored {
        let cfg = ExploreConfig {
            representatives,
            ..ExploreConfig::default()
        };
        let outputs = Outputs::new(t, None);
        distinct_states(t, &outputs, &[Model::Posix], &cfg, 512).unwrap()
    }

    #[test]
    fn representatives_and_the_rest_are_every_state_of_an_exhaustive_run() {
        let t = table(60);
        let outputs = Outputs::new(&t, None);
        let mut reps = explore(&t, Representatives::PerClass(3));
        let all = explore(&t, Representatives::Exhaustive);
        assert!(reps.distinct.len() < all.distinct.len());
        let first = reps.distinct.len();
        let cfg = ExploreConfig::default();
        let watch = Watch::default();
        let rest = explore_rest(&t, &outputs, &cfg, 512, watch, &reps, UNBOUNDED).unwrap();
        assert!(rest.in_full);
        let before: Vec<StateKey> = reps.distinct.iter().map(|d| d.key).collect();
        reps.absorb(rest);
        assert!(reps.in_full);
        // The representatives' states keep their places.
        let kept: Vec<StateKey> = reps.distinct[..first].iter().map(|d| d.key).collect();
        assert_eq!(kept, before);
        let mut got: Vec<(StateKey, String)> =
            reps.distinct.iter().map(|d| (d.key, d.desc.id())).collect();
        let mut want: Vec<(StateKey, String)> =
            all.distinct.iter().map(|d| (d.key, d.desc.id())).collect();
        got.sort();
        want.sort();
        assert_eq!(got, want);
        assert_eq!(reps.models[0].reach.len(), all.models[0].reach.len());
        assert_eq!(reps.models[0].states, all.models[0].states);
        assert_eq!(
            reps.models[0].coverage.full_crash_points,
            Some(t.ops.len() + 1)
        );
    }

    #[test]
    fn the_rest_in_rounds_is_the_rest_at_once() {
        let t = table(60);
        let outputs = Outputs::new(&t, None);
        let cfg = ExploreConfig::default();
        for max in [
            UNBOUNDED,
            Bound {
                states: 150,
                units: u64::MAX,
            },
        ] {
            let mut once = explore(&t, Representatives::PerClass(1));
            let mut rounds = once.clone();
            let rest = explore_rest(&t, &outputs, &cfg, 512, Watch::default(), &once, max).unwrap();
            once.absorb(rest);
            let first = Bound {
                states: 20,
                units: u64::MAX,
            };
            let mut r = RestRounds::new(&t, &outputs, &cfg, 512, &rounds, (max, first)).unwrap();
            assert_eq!(r.every_point(), max == UNBOUNDED);
            assert!(r.left() > 2, "{} rounds", r.left());
            while let Some(round) = r.next_round(Watch::default()).unwrap() {
                assert_eq!(
                    round.in_full,
                    r.left() == 0 && max == UNBOUNDED,
                    "{} left, {max:?}",
                    r.left()
                );
                rounds.absorb(round);
            }
            assert_eq!(rounds.in_full, once.in_full);
            let keys = |e: &Explored| {
                let mut k: Vec<(StateKey, String)> =
                    e.distinct.iter().map(|d| (d.key, d.desc.id())).collect();
                k.sort();
                k
            };
            assert_eq!(keys(&rounds), keys(&once));
            let (a, b) = (&rounds.models[0], &once.models[0]);
            assert_eq!(a.states, b.states);
            assert_eq!(a.reach.len(), b.reach.len());
            assert_eq!(a.coverage, b.coverage);
        }
    }

    #[test]
    fn the_rest_is_checked_most_novel_first_then_spread_over_each_class() {
        let t = table(60);
        let outputs = Outputs::new(&t, None);
        let mut e = explore(&t, Representatives::PerClass(1));
        let checked: HashSet<StateKey> = e.distinct.iter().map(|d| d.key).collect();
        let cfg = ExploreConfig::default();
        let rest = explore_rest(&t, &outputs, &cfg, 512, Watch::default(), &e, UNBOUNDED).unwrap();
        e.absorb(rest);
        let order = check_order(&e, |k| checked.contains(k));
        assert_eq!(order.len(), e.distinct.len() - checked.len());
        let mut sorted = order.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), order.len());
        // Crash points of the largest class come spread: the first stride
        // of the rest is not all at the start of the trace, and each
        // stride goes forward.
        for run in order.chunks(STRIDE) {
            assert!(run
                .windows(2)
                .all(|w| e.distinct[w[0]].desc.crash <= e.distinct[w[1]].desc.crash));
        }
        let crashes: Vec<usize> = order
            .iter()
            .take(STRIDE)
            .map(|&i| e.distinct[i].desc.crash)
            .collect();
        let n = t.ops.len();
        assert!(crashes.iter().any(|&k| k > n / 2), "{crashes:?}");
    }

    #[test]
    fn a_rest_too_large_is_explored_at_the_crash_points_that_fit_spread_over_classes() {
        let t = table(60);
        let e = explore(&t, Representatives::PerClass(1));
        let classes = e.classes.unwrap();
        let cfg = ExploreConfig::default();
        let (all, whole) = rest_points(&t, &[Model::Posix], &cfg, &classes, UNBOUNDED);
        assert!(whole);
        assert_eq!(all.len(), t.ops.len() + 1);
        let few = Bound {
            states: 100,
            units: u64::MAX,
        };
        let (some, whole) = rest_points(&t, &[Model::Posix], &cfg, &classes, few);
        assert!(!whole);
        assert!(!some.is_empty() && some.len() < all.len());
        assert!(some.windows(2).all(|w| w[0] < w[1]));
        // Every class has a crash point among them.
        let mut classes_taken: Vec<usize> = some.iter().map(|&k| classes.class_of[k]).collect();
        classes_taken.sort_unstable();
        classes_taken.dedup();
        assert_eq!(classes_taken.len(), classes.counts.len());
    }
}
