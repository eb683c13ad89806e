//! A run split over machines: [`check_shard`] checks one shard's share
//! of a run's states into a [`ShardPart`], and [`merge_parts`] makes the
//! one run's report from every part, on the same path as `check_trace`
//! (`run`'s `begin` up to exploring, `finish` from outcomes to the report).

use std::io;
use std::time::Instant;

pub use crate::sweep::RunError;
use crate::sweep::{PoolAsk, Session};
use blackout_analysis::report::{Checked, RunReport};
use blackout_analysis::steps::{begin, cannot_run, finish, Begun, Start, StartState, Steps};
use blackout_analysis::{Ask, CannotRun as Unrunnable, Stopped};
use blackout_check::outcome::Outcome;
use blackout_check::pool::{outcomes, Cache, Parallel};
use blackout_explore::dedup::{Distinct, Explored};
use blackout_explore::enumerate::StateDesc;
use blackout_explore::rest::check_order;
use blackout_explore::state::FsState;
use blackout_oplog::promises::Outputs;
use blackout_oplog::trace::Trace;
use std::sync::atomic::AtomicBool;

use crate::shard::{
    CannotRun, Known, PartError, PartState, Settings, Shard, ShardPart, PART_FORMAT, PART_SCHEMA,
};

use crate::run::{with_pool, RunConfig};

/// Checks one shard of a trace: everything [`crate::run::check_trace`] does before
/// checking (the pre-check, the nothing-lost check, exploring every model),
/// then only the distinct states in `shard`. The part it returns names no
/// trace file (set [`ShardPart::trace`]); `blackout merge` draws the verdict.
pub fn check_shard(trace: &Trace, cfg: &RunConfig, shard: Shard) -> Result<ShardPart, RunError> {
    shard_with(trace, cfg, cfg.settings(), shard)
}

/// [`check_shard`], its part carrying `settings`: `cfg`'s, and on a real
/// file system the device's too (`BlockRun::settings`).
pub(crate) fn shard_with(
    trace: &Trace,
    cfg: &RunConfig,
    settings: Settings,
    shard: Shard,
) -> Result<ShardPart, RunError> {
    shard
        .validate()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let pooled = with_pool::<_, RunError>(trace, cfg, |s, promises| {
        let steps = cfg.steps();
        let mut start = match begin(s, &steps, &mut PoolAsk::new(&s.pool), promises)? {
            Begun::Stopped(report) => return Ok(ShardRun::stopped(&report)),
            Begun::Going(start) => start,
        };
        let t1 = Instant::now();
        let explored_before = start.explore_seconds;
        let ((checked, cannot), unchecked) = check_share(s, &steps, &mut start, shard)?;
        let distinct = &start.explored.distinct;
        Ok(ShardRun {
            precheck: start.precheck.map(|c| c.outcome),
            all_applied: start.all_applied.map(|c| c.outcome),
            stop: cannot.as_ref().map(|(id, reason)| cannot_run(id, reason).1),
            cannot_run: cannot.map(|(state, reason)| CannotRun { state, reason }),
            states: checked
                .iter()
                .map(|(i, o)| PartState::new(distinct[*i].desc.id(), &distinct[*i].key, o))
                .collect(),
            unchecked,
            distinct: distinct.len(),
            check_seconds: t1.elapsed().as_secs_f64() - (start.explore_seconds - explored_before),
            explore_seconds: start.explore_seconds,
        })
    })?;
    let run = pooled.value;
    Ok(ShardPart {
        format: PART_FORMAT.into(),
        schema: PART_SCHEMA,
        made_by: concat!("blackout ", env!("CARGO_PKG_VERSION")).into(),
        trace: None,
        trace_id: trace.content_id(),
        fingerprint: settings.fingerprint(),
        settings,
        shard,
        distinct: run.distinct,
        precheck: run.precheck,
        all_applied: run.all_applied,
        stop: run.stop,
        cannot_run: run.cannot_run,
        states: run.states,
        unchecked: run.unchecked,
        explore_seconds: run.explore_seconds,
        check_seconds: run.check_seconds,
        orphans_killed: pooled.orphans_killed,
        block: None,
        origin: None,
    })
}

/// A shard's share of a run's states checked: its representatives' states,
/// then (with a check budget above zero) its share of the rest, most novel
/// first, until the budget ends. Returns each state checked (by index in
/// the exploration, which grows by the rest), where the checker could not
/// be run if it could not, and how many states of the share the budget
/// left unchecked.
pub(crate) fn check_share(
    s: &Session<'_>,
    steps: &Steps<'_>,
    start: &mut Start,
    shard: Shard,
) -> Result<(Parallel, usize), RunError> {
    let ours = |cache: &Cache, d: &Distinct| shard.holds(&d.key) && !cache.contains_key(&d.key);
    let distinct = &start.explored.distinct;
    let todo: Vec<usize> = (0..distinct.len())
        .filter(|&i| ours(&start.cache, &distinct[i]))
        .collect();
    let (mut checked, cannot) = s.pool.check_parallel(distinct, &todo)?;
    if cannot.is_some() || !steps.checks_rest() {
        return Ok(((checked, cannot), 0));
    }
    let deadline = steps.check_deadline();
    for (i, o) in &checked {
        start
            .cache
            .insert(start.explored.distinct[*i].key, o.clone());
    }
    start.add_rest(s, steps)?;
    let order = check_order(&start.explored, |k| {
        start.cache.contains_key(k) || !shard.holds(k)
    });
    let (more, cannot) = s
        .pool
        .check_until(&start.explored.distinct, &order, deadline)?;
    let unchecked = order.len() - more.len();
    checked.extend(more);
    Ok(((checked, cannot), unchecked))
}

/// Why parts could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// The parts do not make one run of this trace with these settings.
    #[error(transparent)]
    Part(#[from] PartError),
    /// The merge itself could not finish (its fix verifications run the
    /// checker).
    #[error(transparent)]
    Run(#[from] RunError),
}

/// Merges the parts of a sharded run of `trace` into the report a single
/// [`crate::run::check_trace`] with `cfg` would have made: every shard of one split
/// must be there once, made from this trace with `cfg`'s settings
/// ([`RunConfig::settings`]). The trace is explored again, every distinct
/// state's outcome taken from the parts (a state no part holds is an
/// error, never a pass), and the analysis runs as in a single run: fix
/// verifications run the checker on the states they add.
pub fn merge_parts(
    trace: &Trace,
    cfg: &RunConfig,
    parts: &[ShardPart],
) -> Result<RunReport, MergeError> {
    merge_with(trace, cfg, &cfg.settings(), parts)
}

/// [`merge_parts`] of parts that must carry `settings` (with a real file
/// system's, `BlockRun::settings`), compared whole.
pub(crate) fn merge_with(
    trace: &Trace,
    cfg: &RunConfig,
    settings: &Settings,
    parts: &[ShardPart],
) -> Result<RunReport, MergeError> {
    let known = Known::of_parts(parts, &trace.content_id(), settings)?;
    let pooled = with_pool::<_, MergeError>(trace, cfg, |s, promises| {
        let steps = cfg.steps();
        let mut ask = PartsAsk {
            known: &known,
            pool: PoolAsk::new(&s.pool),
        };
        let mut start = match begin(s, &steps, &mut ask, promises).map_err(RunError::from)? {
            Begun::Stopped(report) => return Ok(report),
            Begun::Going(start) => start,
        };
        if let Some(c) = &known.cannot_run {
            return Ok(start.stop(cannot_run(&c.state, &c.reason)));
        }
        if steps.checks_rest() {
            start.add_rest(s, &steps).map_err(RunError::from)?;
        }
        if known.distinct != start.explored.distinct.len() {
            return Err(PartError::Mismatch(format!(
                "the parts explored {} distinct states, this merge {}: were they made by another blackout version?",
                known.distinct,
                start.explored.distinct.len()
            ))
            .into());
        }
        for (key, outcome) in &known.outcomes {
            start.cache.entry(*key).or_insert_with(|| outcome.clone());
        }
        let results = outcomes(&start.explored, &start.cache);
        let mut missing = start
            .explored
            .distinct
            .iter()
            .zip(&results)
            .filter(|(_, o)| o.is_none());
        let count = missing.clone().count();
        if count != known.unchecked {
            let first = missing.next().map(|(d, _)| d.desc.id()).unwrap_or_default();
            return Err(PartError::Mismatch(format!(
                "state {first} is in no part: the parts do not hold every state of this exploration ({count} held by none, {} left unchecked by the check budget)",
                known.unchecked
            ))
            .into());
        }
        drop(results);
        let report = finish(s, &steps, &mut ask, start, known.check_seconds);
        Ok(report.map_err(RunError::from)?)
    })?;
    let mut report = pooled.report();
    report.orphans_killed += known.orphans_killed;
    Ok(report)
}

/// A merge's asking: the two start states' outcomes are the parts'
/// (shard 1's), every other question (a fix's states) is checked by the
/// merge's own pool.
struct PartsAsk<'p> {
    known: &'p Known,
    pool: PoolAsk<'p>,
}

impl Ask for PartsAsk<'_> {
    fn outcome(&mut self, desc: &StateDesc) -> Result<Option<Outcome>, Stopped> {
        self.pool.outcome(desc)
    }

    fn check(
        &mut self,
        trace: &Trace,
        outputs: &Outputs,
        explored: &Explored,
        cache: &mut Cache,
        order: &[usize],
        deadline: Option<Instant>,
    ) -> Result<Result<Vec<Option<Outcome>>, Unrunnable>, Stopped> {
        self.pool
            .check(trace, outputs, explored, cache, order, deadline)
    }

    fn start_outcome(
        &mut self,
        which: StartState,
        _id: &str,
        _fs: &FsState,
        _crash: usize,
    ) -> Result<Outcome, Stopped> {
        let (outcome, what) = match which {
            StartState::Before => (&self.known.precheck, "pre-check"),
            StartState::AllApplied => (&self.known.all_applied, "state where nothing was lost"),
        };
        outcome.clone().ok_or_else(|| {
            Stopped::Io(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("shard 1 holds no outcome of the {what}, which this merge needs"),
            ))
        })
    }

    fn cancelled(&self) -> bool {
        self.pool.cancelled()
    }

    fn cancel_flag(&self) -> Option<&AtomicBool> {
        self.pool.cancel_flag()
    }
}

/// What a shard found, before it becomes a [`ShardPart`].
pub(crate) struct ShardRun {
    pub(crate) precheck: Option<Outcome>,
    pub(crate) all_applied: Option<Outcome>,
    pub(crate) stop: Option<String>,
    pub(crate) cannot_run: Option<CannotRun>,
    pub(crate) states: Vec<PartState>,
    pub(crate) unchecked: usize,
    pub(crate) distinct: usize,
    pub(crate) explore_seconds: f64,
    pub(crate) check_seconds: f64,
}

impl ShardRun {
    /// A shard whose run stopped before checking any state.
    pub(crate) fn stopped(report: &RunReport) -> ShardRun {
        let outcome = |c: &Option<Checked>| c.as_ref().map(|c| c.outcome.clone());
        ShardRun {
            precheck: outcome(&report.precheck),
            all_applied: outcome(&report.all_applied),
            stop: Some(format!("{}: {}", report.verdict.name(), report.reason)),
            cannot_run: None,
            states: Vec::new(),
            unchecked: 0,
            distinct: 0,
            explore_seconds: 0.0,
            check_seconds: 0.0,
        }
    }
}
