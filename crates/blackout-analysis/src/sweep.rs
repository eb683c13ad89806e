//! Checking an exploration: its states first, every one (with
//! representatives, those of a few crash points of each class: they find
//! failures fast); then, while a deadline allows, the rest of the trace
//! explored in full and checked most novel first
//! ([`blackout_explore::rest`]). A verdict speaks for what was checked:
//! exact when every distinct state of every crash point was.

use std::time::Instant;

use blackout_check::pool::{Cache, CannotRun, Pool};
use blackout_explore::dedup::{Explored, Watch};
use blackout_explore::enumerate::ExploreConfig;
use blackout_explore::rest::{check_order, explore_rest, REST_BOUND};

use crate::RunError;

/// Checks every state of `explored` the cache does not know, adding the
/// outcomes to it.
pub fn check_all(
    pool: &Pool<'_>,
    explored: &Explored,
    cache: &mut Cache,
) -> Result<Option<CannotRun>, RunError> {
    Ok(pool.check_distinct(explored, cache, None, None)?.err())
}

/// After the representatives of `explored` were checked: explores the
/// rest of the trace with `explore`'s settings and adds it to `explored`
/// (nothing to do when it is in full already).
pub fn add_rest(
    pool: &Pool<'_>,
    explored: &mut Explored,
    explore: &ExploreConfig,
    watch: Watch<'_>,
) -> Result<(), RunError> {
    if explored.in_full {
        return Ok(());
    }
    let rest = explore_rest(
        pool.trace,
        pool.outputs,
        explore,
        pool.cfg.sector,
        watch,
        explored,
        REST_BOUND,
    )?;
    explored.absorb(rest);
    Ok(())
}

/// Checks the states of `explored` the cache does not know, most novel
/// first ([`check_order`]), starting none after `deadline`.
pub fn check_rest(
    pool: &Pool<'_>,
    explored: &Explored,
    cache: &mut Cache,
    deadline: Option<Instant>,
) -> Result<Option<CannotRun>, RunError> {
    let order = check_order(explored, |k| cache.contains_key(k));
    Ok(pool
        .check_distinct(explored, cache, Some(&order), deadline)?
        .err())
}
