//! A run split over machines: [`check_shard`] checks one shard's share
//! of a run's states into a [`ShardPart`], and [`merge_parts`] makes the
//! one run's report from every part, on the same steps as `check_trace`
//! (analysis's [`blackout_analysis::steps`]), asked of the pool as a
//! shard's share ([`Answers::Share`]: only the states the shard holds are
//! checked) or a merge's parts ([`Answers::Parts`]: the start states'
//! outcomes are the parts', a fix's states are checked by the merge's
//! pool).

use std::io;
use std::time::Instant;

pub use crate::sweep::RunError;
use crate::sweep::{Answers, PoolAsk};
use blackout_analysis::report::{Checked, RunReport};
use blackout_analysis::steps::{begin, cannot_run, finish, Begun};
use blackout_analysis::Stopped;
use blackout_check::outcome::Outcome;
use blackout_explore::dedup::{Distinct, StateKey};
use blackout_oplog::trace::Trace;

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
        let known_before: Vec<StateKey> = start.cache.keys().copied().collect();
        let mut share = PoolAsk::answering(&s.pool, Answers::Share(shard));
        let mut cannot = start.check_all(s, &mut share)?;
        if cannot.is_none() && steps.checks_rest() {
            // The rest explored at once, as the merge explores it.
            let deadline = steps.check_deadline();
            start.add_rest(s, &steps)?;
            cannot = start.check_rest(s, &mut share, deadline)?;
        }
        let ours = start
            .explored
            .distinct
            .iter()
            .filter(|d| shard.holds(&d.key));
        let (checked, left): (Vec<&Distinct>, Vec<&Distinct>) =
            ours.partition(|d| start.cache.contains_key(&d.key));
        let states = checked
            .iter()
            .filter(|d| !known_before.contains(&d.key))
            .map(|d| PartState::new(d.desc.id(), &d.key, &start.cache[&d.key]))
            .collect();
        Ok(ShardRun {
            precheck: start.precheck.map(|c| c.outcome),
            all_applied: start.all_applied.map(|c| c.outcome),
            stop: cannot.as_ref().map(|(id, reason)| cannot_run(id, reason).1),
            unchecked: if cannot.is_some() { 0 } else { left.len() },
            cannot_run: cannot.map(|(state, reason)| CannotRun { state, reason }),
            states,
            distinct: start.explored.distinct.len(),
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

impl From<Stopped> for MergeError {
    fn from(e: Stopped) -> Self {
        MergeError::Run(e.into())
    }
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
        let mut ask = PoolAsk::answering(&s.pool, Answers::Parts(&known));
        let mut start = match begin(s, &steps, &mut ask, promises)? {
            Begun::Stopped(report) => return Ok(report),
            Begun::Going(start) => start,
        };
        if let Some(c) = &known.cannot_run {
            return Ok(start.stop(cannot_run(&c.state, &c.reason)));
        }
        if steps.checks_rest() {
            start.add_rest(s, &steps)?;
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
        let cache = &start.cache;
        let mut missing = (start.explored.distinct.iter()).filter(|d| !cache.contains_key(&d.key));
        let count = missing.clone().count();
        if count != known.unchecked {
            let first = missing.next().map(|d| d.desc.id()).unwrap_or_default();
            return Err(PartError::Mismatch(format!(
                "state {first} is in no part: the parts do not hold every state of this exploration ({count} held by none, {} left unchecked by the check budget)",
                known.unchecked
            ))
            .into());
        }
        Ok(finish(s, &steps, &mut ask, start, known.check_seconds)?)
    })?;
    let mut report = pooled.report();
    report.orphans_killed += known.orphans_killed;
    Ok(report)
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
