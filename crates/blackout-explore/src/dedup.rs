//! Every distinct crash state of a trace under some models: states are
//! built and deduplicated by content (the visible tree plus the bytes printed
//! before the crash), each kept under its simplest description.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use blackout_oplog::ops::OpKind;
use blackout_oplog::promises::Outputs;
use blackout_oplog::trace::Trace;
use rustc_hash::FxHashMap;

use crate::classes::{classes, Classes, ShapeInput};
use crate::enumerate::{
    enumerate_points, ConfigError, Coverage, ExploreConfig, StateDesc, Tearing,
};
use crate::keys::Keyer;
use crate::model::Model;
use crate::state::FsState;

/// Orders states simplest first: fewest lost or torn, then the earliest
/// crash, then a lost op before a torn one, then by id.
pub fn simplicity(d: &StateDesc) -> (usize, usize, bool, &StateDesc) {
    (d.damage(), d.crash, d.torn.is_some(), d)
}

fn simpler(a: &StateDesc, b: &StateDesc) -> bool {
    simplicity(a) < simplicity(b)
}

/// One distinct state: the simplest description that reaches it.
#[derive(Debug, Clone)]
pub struct Distinct {
    /// The simplest description over all models.
    pub desc: StateDesc,
    /// The content key: hash of the visible tree, bytes printed before.
    pub key: StateKey,
}

/// What makes two states the same for a checker: the hash of the visible
/// tree and how many bytes were printed before the crash.
pub type StateKey = ([u8; 32], usize);

/// What the checker said of each state checked so far, by content key:
/// shared by a run, its fix verifications and the pool that checks.
pub type Cache = std::collections::HashMap<StateKey, blackout_oplog::outcome::Outcome>;

/// The states of one model.
#[derive(Debug, Clone)]
pub struct ModelStates {
    /// The model.
    pub model: Model,
    /// States enumerated.
    pub states: usize,
    /// For each distinct state this model reaches: its index in
    /// [`Explored::distinct`] and the simplest description in this model.
    pub reach: Vec<(usize, StateDesc)>,
    /// What was not covered.
    pub coverage: Coverage,
}

/// Every distinct state of a trace under some models.
#[derive(Debug, Clone)]
pub struct Explored {
    /// Distinct states, in order of first appearance.
    pub distinct: Vec<Distinct>,
    /// Per model.
    pub models: Vec<ModelStates>,
    /// With representatives: the classes of the trace's crash points, of
    /// which a few each were explored.
    pub classes: Option<Classes>,
    /// Whether every crash point was explored with every pending unit
    /// taken (no representatives, or the rest explored after them): the
    /// distinct states are every distinct state the models allow.
    pub in_full: bool,
}

impl Explored {
    /// Each distinct state's outcome as `cache` knows it (`None`: not
    /// checked), in exploration order.
    pub fn outcomes(&self, cache: &Cache) -> Vec<Option<blackout_oplog::outcome::Outcome>> {
        self.distinct
            .iter()
            .map(|d| cache.get(&d.key).cloned())
            .collect()
    }
}

/// The content key of a built state at crash point `crash`: the one
/// function that makes keys, so a state is always deduplicated the same way.
pub fn state_key(fs: &FsState, outputs: &Outputs, crash: usize) -> StateKey {
    key_of(fs.content_hash(), outputs, crash)
}

/// The content key of a state at crash point `crash` whose content hash is
/// `hash`.
pub fn key_of(hash: blake3::Hash, outputs: &Outputs, crash: usize) -> StateKey {
    (*hash.as_bytes(), outputs.printed_len(crash))
}

/// How a caller follows and stops an exploration.
#[derive(Clone, Copy, Default)]
pub struct Watch<'a> {
    /// Set from outside (Ctrl-C) to stop; looked at before each state is
    /// built.
    pub cancel: Option<&'a AtomicBool>,
    /// Called every [`PROGRESS_EVERY_STATES`] states built, with how many.
    pub progress: Option<&'a (dyn Fn(usize) + Send + Sync)>,
}

/// How often [`Watch::progress`] is called, in states built.
pub const PROGRESS_EVERY_STATES: usize = 1024;

/// Why an exploration did not finish.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExploreError {
    /// A setting is out of range.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The cancel flag was set.
    #[error("interrupted")]
    Interrupted,
}

/// Enumerates the states of each model, builds each, and deduplicates them by
/// content: the visible tree plus the bytes printed before the crash. Fails
/// only on settings out of range (nothing can cancel it).
pub fn distinct_states(
    trace: &Trace,
    outputs: &Outputs,
    models: &[Model],
    cfg: &ExploreConfig,
    sector: u64,
) -> Result<Explored, ExploreError> {
    distinct_states_watched(trace, outputs, models, cfg, sector, Watch::default())
}

/// [`distinct_states`], stopping when `watch.cancel` is set and reporting
/// progress as states are built.
pub fn distinct_states_watched(
    trace: &Trace,
    outputs: &Outputs,
    models: &[Model],
    cfg: &ExploreConfig,
    sector: u64,
    watch: Watch<'_>,
) -> Result<Explored, ExploreError> {
    cfg.validate()?;
    if sector == 0 {
        return Err(ConfigError::Sector.into());
    }
    let sizes_before = trace.sizes_before();
    let shapes = ShapeInput {
        ops: &trace.ops,
        sizes_before: &sizes_before,
        sector,
        exhaustive_limit: cfg.exhaustive_limit,
    };
    // Representatives: the same crash points under every model.
    let classes = cfg
        .representatives
        .per_class(&trace.ops)
        .map(|r| classes(&shapes, r));
    let points: Vec<usize> = match &classes {
        Some(c) => c.explore.clone(),
        None => (0..=trace.ops.len()).collect(),
    };
    let mut explored = explore_points(trace, outputs, models, cfg, sector, watch, &points)?;
    for m in &mut explored.models {
        m.coverage.classes = classes.as_ref().map(|c| c.counts.clone());
    }
    explored.in_full = classes.is_none();
    explored.classes = classes;
    Ok(explored)
}

/// The distinct states of `models` at the crash points `points`
/// (ascending), with `cfg`'s enumeration settings.
pub(crate) fn explore_points(
    trace: &Trace,
    outputs: &Outputs,
    models: &[Model],
    cfg: &ExploreConfig,
    sector: u64,
    watch: Watch<'_>,
    points: &[usize],
) -> Result<Explored, ExploreError> {
    let cancelled = || watch.cancel.is_some_and(|c| c.load(Ordering::Relaxed));
    let sizes_before = trace.sizes_before();
    let mut built = 0usize;
    let mut index: FxHashMap<StateKey, usize> = FxHashMap::default();
    let mut distinct: Vec<Distinct> = Vec::new();
    // Where each distinct state first appeared: (model, position in its
    // enumeration). States are taken in whatever order threads key them;
    // sorting by first appearance at the end gives the order one thread
    // would have.
    let mut first: Vec<(usize, u64)> = Vec::new();
    let mut per_model = Vec::new();
    for (m, &model) in models.iter().enumerate() {
        // Per distinct state this model reaches: its simplest description
        // here and where the model first reached it.
        let mut reach: FxHashMap<usize, (StateDesc, u64)> = FxHashMap::default();
        let mut states = 0usize;
        let coverage = keyed(
            trace,
            model,
            cfg,
            sector,
            watch.cancel,
            points,
            |at, desc, hash| {
                if cancelled() || !tear_possible(trace, &sizes_before, &desc, sector) {
                    return;
                }
                states += 1;
                built += 1;
                if built % PROGRESS_EVERY_STATES == 0 {
                    if let Some(p) = watch.progress {
                        p(built);
                    }
                }
                let key = key_of(hash, outputs, desc.crash);
                let next = distinct.len();
                let i = *index.entry(key).or_insert(next);
                if i == next {
                    distinct.push(Distinct {
                        desc: desc.clone(),
                        key,
                    });
                    first.push((m, at));
                } else {
                    if simpler(&desc, &distinct[i].desc) {
                        distinct[i].desc = desc.clone();
                    }
                    first[i] = first[i].min((m, at));
                }
                match reach.get_mut(&i) {
                    Some((d, seen)) => {
                        *seen = (*seen).min(at);
                        if simpler(&desc, d) {
                            *d = desc;
                        }
                    }
                    None => {
                        reach.insert(i, (desc, at));
                    }
                }
            },
        )?;
        if cancelled() {
            return Err(ExploreError::Interrupted);
        }
        let mut reach: Vec<(usize, StateDesc, u64)> =
            reach.into_iter().map(|(i, (d, at))| (i, d, at)).collect();
        reach.sort_by_key(|r| r.2);
        per_model.push((model, states, reach, coverage));
    }
    Ok(in_first_order(distinct, &first, per_model))
}

/// What one model reached: the model, its states, each distinct state it
/// reached with its simplest description there and where it first
/// reached it, and its coverage.
type Reached = (Model, usize, Vec<(usize, StateDesc, u64)>, Coverage);

/// The distinct states in order of first appearance (`first`: the model
/// and position where each first appeared), as one thread finds them, and
/// each model's reach renumbered to match.
fn in_first_order(
    distinct: Vec<Distinct>,
    first: &[(usize, u64)],
    per_model: Vec<Reached>,
) -> Explored {
    let mut by_first: Vec<usize> = (0..distinct.len()).collect();
    by_first.sort_by_key(|&i| first[i]);
    let mut renamed = vec![0usize; distinct.len()];
    for (new, &old) in by_first.iter().enumerate() {
        renamed[old] = new;
    }
    let mut slots: Vec<Option<Distinct>> = distinct.into_iter().map(Some).collect();
    let distinct = by_first
        .iter()
        .filter_map(|&old| slots[old].take())
        .collect();
    let models = per_model
        .into_iter()
        .map(|(model, states, reach, coverage)| ModelStates {
            model,
            states,
            reach: reach.into_iter().map(|(i, d, _)| (renamed[i], d)).collect(),
            coverage,
        })
        .collect();
    Explored {
        distinct,
        models,
        classes: None,
        in_full: true,
    }
}

/// Crash points a worker enumerates and keys at a time.
const POINTS_PER_BATCH: usize = 16;
/// States a worker hands over at a time, or fewer when they lose or tear
/// [`UNITS_PER_MESSAGE`] units (a state at a crash point with thousands of
/// pending ops can lose thousands).
const STATES_PER_MESSAGE: usize = 256;
/// Units lost or torn by the states of one message, at most (past the
/// state that reaches it).
const UNITS_PER_MESSAGE: usize = 16_384;
/// Messages waiting to be taken, at most per worker: what bounds the states
/// in flight.
const MESSAGES_WAITING: usize = 4;

/// What a worker hands over: states with where each was enumerated and its
/// content hash, or a batch's coverage.
enum Keyed {
    States(Vec<(u64, StateDesc, blake3::Hash)>),
    Covered(Coverage),
}

/// Enumerates `model`'s states at `points` and hashes each, on up to as
/// many threads as there are cores (each with its own [`Keyer`], taking
/// batches of crash points in order), and hands each state to `take` with
/// its position in the enumeration one thread would make (a batch's index,
/// then the state's place in it) and its content hash. Returns the
/// coverage, the same whatever the number of threads.
fn keyed(
    trace: &Trace,
    model: Model,
    cfg: &ExploreConfig,
    sector: u64,
    cancel: Option<&AtomicBool>,
    points: &[usize],
    mut take: impl FnMut(u64, StateDesc, blake3::Hash),
) -> Result<Coverage, ExploreError> {
    cfg.validate()?;
    let batches: Vec<&[usize]> = points.chunks(POINTS_PER_BATCH).collect();
    let jobs = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, 4)
        .min(batches.len().max(1));
    let next = AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::sync_channel::<Keyed>(MESSAGES_WAITING * jobs);
    let mut coverage = Coverage::default();
    let sizes_before = trace.sizes_before();
    let tearing = Tearing {
        sizes_before: Some(&sizes_before),
        sector,
    };
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let tx = tx.clone();
            let (next, batches) = (&next, &batches);
            scope.spawn(move || {
                let mut keys = Keyer::new(trace, sector);
                loop {
                    let b = next.fetch_add(1, Ordering::Relaxed);
                    if b >= batches.len() || cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                        return;
                    }
                    let mut out = Vec::new();
                    let mut units = 0;
                    let mut seq = (b as u64) << 32;
                    let mut gone = false;
                    let cov = enumerate_points(
                        &trace.ops,
                        model.crash_model(),
                        cfg,
                        tearing,
                        cancel,
                        batches[b],
                        |desc| {
                            let hash = keys.hash(&desc);
                            units += desc.damage();
                            out.push((seq, desc, hash));
                            seq += 1;
                            if out.len() == STATES_PER_MESSAGE || units >= UNITS_PER_MESSAGE {
                                let full = std::mem::take(&mut out);
                                units = 0;
                                gone |= tx.send(Keyed::States(full)).is_err();
                            }
                        },
                    );
                    // A setting out of range was refused above.
                    let cov = cov.unwrap_or_default();
                    if gone
                        || tx.send(Keyed::States(out)).is_err()
                        || tx.send(Keyed::Covered(cov)).is_err()
                    {
                        return;
                    }
                }
            });
        }
        drop(tx);
        for keyed in rx.iter() {
            match keyed {
                Keyed::States(states) => {
                    for (at, desc, hash) in states {
                        take(at, desc, hash);
                    }
                }
                Keyed::Covered(cov) => coverage.add(cov),
            }
        }
    });
    coverage.settle();
    Ok(coverage)
}

/// Whether storage can tear a write the way `desc` asks (a model offers
/// every tear of a pending write; which are possible depends on the write's
/// place in its sectors and the file's size before it).
fn tear_possible(trace: &Trace, sizes_before: &[u64], desc: &StateDesc, sector: u64) -> bool {
    let Some((op, tear)) = desc.torn else {
        return true;
    };
    match trace.ops.get(op).map(|o| &o.kind) {
        Some(OpKind::Write { off, data, .. }) => {
            tear.cut(*off, data.len, sizes_before[op], sector).is_some()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::enumerate::{Tear, Unit};
    use blackout_oplog::ops::Part;

    fn trace(log: &str) -> Trace {
        blackout_record::replay::trace_of_log(log.as_bytes(), b"/d").unwrap()
    }

    fn lost(ops: &[usize]) -> Vec<Unit> {
        ops.iter()
            .map(|&op| Unit {
                op,
                part: Part::Whole,
            })
            .collect()
    }

    #[test]
    fn simplest_is_fewest_lost_then_earliest_then_lost_before_torn() {
        let d = |crash, l: &[usize], torn: Option<(usize, Tear)>| StateDesc {
            crash,
            lost: lost(l).into(),
            torn,
        };
        let mut v = [
            d(5, &[1, 2], None),
            d(4, &[], Some((3, Tear::Half))),
            d(6, &[1], None),
            d(4, &[2], None),
        ];
        v.sort_by(|a, b| simplicity(a).cmp(&simplicity(b)));
        let ids: Vec<String> = v.iter().map(StateDesc::id).collect();
        assert_eq!(ids, ["c4.lost2", "c4.torn3h", "c6.lost1", "c5.lost1+2"]);
    }

    /// The torn state ids of `model` over a log, sorted.
    fn torn_ids(log: &str, model: Model) -> Vec<String> {
        let t = trace(log);
        let outputs = Outputs::new(&t, None);
        let e = distinct_states(&t, &outputs, &[model], &ExploreConfig::default(), 512).unwrap();
        let mut ids: Vec<String> = e.models[0]
            .reach
            .iter()
            .map(|(_, d)| d.id())
            .filter(|id| id.contains("torn"))
            .collect();
        ids.sort();
        ids
    }

    #[test]
    fn a_small_overwrite_of_durable_bytes_is_atomic() {
        // A durable 8-byte file overwritten in place by 8 bytes through
        // O_DSYNC: inside one sector, so no tear at all; the appending
        // write that made the file may tear (to its size alone) until the
        // fsync.
        let log = "1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT, 0644) = 3\n\
             1 write(3, \"AAAAAAAA\", 8) = 8\n\
             1 fsync(3) = 0\n\
             1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_DSYNC) = 4\n\
             1 pwrite64(4, \"BBBBBBBB\", 8, 0) = 8\n";
        for model in [Model::Ordered, Model::Posix] {
            let ids = torn_ids(log, model);
            assert!(
                ids.iter().all(|id| !id.contains("torn4")),
                "{model:?}: {ids:?}"
            );
        }
        assert_eq!(torn_ids(log, Model::Posix), ["c2.torn1z"]);
    }

    #[test]
    fn states_are_deduplicated_by_content_and_printed_bytes() {
        // The same bytes written twice at one offset: losing either write
        // leaves the same file, so those states are one. The output line makes
        // the states after it differ from those before.
        let t = trace(
            "1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT, 0644) = 3\n\
             1 pwrite64(3, \"\\x78\", 1, 0) = 1\n\
             1 pwrite64(3, \"\\x78\", 1, 0) = 1\n\
             1 write(1, \"\\x6f\\x6b\\x0a\", 3) = 3\n",
        );
        let outputs = Outputs::new(&t, None);
        let e = distinct_states(
            &t,
            &outputs,
            &[Model::Posix],
            &ExploreConfig::default(),
            512,
        )
        .unwrap();
        let m = &e.models[0];
        assert!(m.reach.len() < m.states);
        // Every distinct state is reached under its simplest description:
        // c3 (second write applied) holds what c2 holds, and losing either
        // write at c4 is c4 itself.
        let ids: Vec<String> = m.reach.iter().map(|(_, d)| d.id()).collect();
        for absent in ["c3", "c4.lost1", "c4.lost2"] {
            assert!(!ids.contains(&absent.to_string()), "{ids:?}");
        }
        // c2 and c4 hold the same file, but c4 has printed "ok".
        assert!(ids.contains(&"c2".to_string()) && ids.contains(&"c4".to_string()));
        // A key is unique per distinct state.
        let mut keys: Vec<StateKey> = e.distinct.iter().map(|d| d.key).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), e.distinct.len());
    }
}
