//! Which syncs are needed, judged (`--syncs`): each call site's syncs
//! taken out of the trace ([`crate::explain::without_syncs`]), the trace
//! re-explored as the run explored its own and its states checked through
//! [`Ask::check`] (those only the removal allows first), as fix
//! verification ([`crate::fix`]) does with syncs added; [`crate::syncs`]
//! says what the states mean. Sites share the bound evenly; the checker's
//! verdicts are reused by content.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use blackout_explore::dedup::{simplicity, Explored, StateKey};
use blackout_explore::model::Model;
use blackout_explore::rest::check_order;
use blackout_oplog::outcome::Outcome;
use blackout_oplog::promises::Outputs;

use crate::explain::{self, without_syncs};
use crate::fix::{explore_as_the_run, explore_with_syncs, share_of};
use crate::group::{fail_reason, Analysis};
use crate::syncs::{sync_sites, Removal, SyncCheck, SyncSite, SyncVerdict, SyncsReport};
use crate::{Ask, Cache, Stopped};

/// Judges every sync site of the run's trace under `model`, each in an
/// even share of the time left before `deadline`; `ask` checks the states.
/// `cache` holds what the run's checker said (by content); its failing
/// states are the run's own, which a removal does not count as its doing.
pub fn judge_syncs(
    s: &Analysis<'_>,
    ask: &mut dyn Ask,
    model: Model,
    cache: &mut Cache,
    deadline: Option<Instant>,
) -> Result<SyncsReport, Stopped> {
    let t0 = Instant::now();
    let was_failing: HashSet<StateKey> = cache
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Fail { .. }))
        .map(|(k, _)| *k)
        .collect();
    let sites = sync_sites(s.trace);
    let micros: HashMap<usize, u64> = s.trace.sync_micros.iter().copied().collect();
    let mut left = sites.len();
    let mut checks = Vec::with_capacity(sites.len());
    for site in sites {
        let share = share_of(deadline, left);
        left = left.saturating_sub(1).max(1);
        let took: Option<u64> = site.ops.iter().map(|i| micros.get(i)).sum();
        let mut check = judge_site(s, ask, model, site, cache, &was_failing, share)?;
        check.seconds = took.filter(|_| !micros.is_empty()).map(|m| m as f64 / 1e6);
        checks.push(check);
    }
    Ok(SyncsReport {
        model,
        sites: checks,
        seconds: t0.elapsed().as_secs_f64(),
        bound_seconds: deadline.map_or(0.0, |d| d.saturating_duration_since(t0).as_secs_f64()),
    })
}

/// One site judged: its syncs taken out, the trace re-explored and its
/// states checked until `deadline`.
fn judge_site(
    s: &Analysis<'_>,
    ask: &mut dyn Ask,
    model: Model,
    site: SyncSite,
    cache: &mut Cache,
    was_failing: &HashSet<StateKey>,
    deadline: Option<Instant>,
) -> Result<SyncCheck, Stopped> {
    let unknown = |site: SyncSite| SyncCheck {
        site,
        verdict: SyncVerdict::NotKnown,
        exact: false,
        states: 0,
        states_checked: 0,
        new_failing: 0,
        loses_promised: false,
        accepted_loss: None,
        seconds: None,
        on_fs: None,
    };
    if deadline.is_some_and(|d| Instant::now() >= d) {
        return Ok(unknown(site));
    }
    let trace = without_syncs(s.trace, &site.ops);
    let outputs = Outputs::new(&trace, s.ack_prefix);
    let removal = Removal::new(s.trace, s.outputs, &site.ops);
    let explore = explore_as_the_run(s.explore, &s.trace.ops);
    let bounded = Analysis {
        fix_deadline: deadline,
        ..*s
    };
    let s2 = Analysis {
        trace: &trace,
        outputs: &outputs,
        ..bounded
    };
    let explored = match explore_with_syncs(&bounded, &s2, ask.cancel_flag(), model, &explore) {
        Ok(e) => e,
        Err(Stopped::Interrupted) if !ask.cancelled() => return Ok(unknown(site)),
        Err(e) => return Err(e),
    };
    // The states only the removal allows first: at crash points after the
    // first sync's place.
    let first = site.ops[0];
    let mut order = check_order(&explored, |k| cache.contains_key(k));
    order.sort_by_cached_key(|&i| {
        let d = &explored.distinct[i].desc;
        (d.crash <= first, !removal.is_new(d))
    });
    let Ok(results) = ask.check(&trace, &outputs, &explored, cache, &order, deadline)? else {
        return Ok(unknown(site));
    };
    let cx = explain::Context::with_removed_syncs(&trace, &outputs, &site.ops);
    let read = Read {
        explored: &explored,
        results: &results,
        removal: &removal,
        cx: &cx,
        was_failing,
    };
    Ok(read.check(site).unwrap_or_else(unknown))
}

/// What a site's re-exploration found, to be read.
struct Read<'a> {
    explored: &'a Explored,
    results: &'a [Option<Outcome>],
    removal: &'a Removal<'a>,
    cx: &'a explain::Context<'a>,
    was_failing: &'a HashSet<StateKey>,
}

impl Read<'_> {
    /// The site's check, simplest states first: needed at the first state
    /// only the removal allows that fails (and was not failing in the
    /// run), weak at the first one the checker accepted though it lacks
    /// data synced before a promise. The site back when no state was
    /// checked.
    fn check(&self, site: SyncSite) -> Result<SyncCheck, SyncSite> {
        let (explored, results, removal) = (self.explored, self.results, self.removal);
        let m = &explored.models[0];
        let mut reach: Vec<&(usize, _)> = m.reach.iter().collect();
        reach.sort_by_key(|(_, d)| simplicity(d));
        let states_checked = reach.iter().filter(|(i, _)| results[*i].is_some()).count();
        if states_checked == 0 && !reach.is_empty() {
            return Err(site);
        }
        // A state whose content is that of the state losing nothing at its
        // crash point lost nothing anyone can see (a write to a file
        // deleted since): the checker is right to accept it.
        let plain: HashMap<usize, StateKey> = m
            .reach
            .iter()
            .filter(|(_, d)| d.lost.is_empty() && d.torn.is_none())
            .map(|(i, d)| (d.crash, explored.distinct[*i].key))
            .collect();
        let mut verdict = SyncVerdict::NotNeeded;
        let (mut new_failing, mut loses_promised, mut accepted_loss) = (0, false, None);
        for (i, desc) in reach {
            let key = explored.distinct[*i].key;
            let visible = plain.get(&desc.crash) != Some(&key);
            let promise = removal.promise_lost(desc).filter(|_| visible);
            loses_promised |= promise.is_some();
            match &results[*i] {
                Some(o @ Outcome::Fail { .. })
                    if removal.is_new(desc) && !self.was_failing.contains(&key) =>
                {
                    new_failing += 1;
                    if new_failing == 1 {
                        let reason = fail_reason(o).unwrap_or_default().to_string();
                        let why = explain::explain(self.cx, desc, Some(&reason), &mut |_| None);
                        let state = removal.recorded(desc).id();
                        let why = why.sentence;
                        verdict = SyncVerdict::Needed { state, reason, why };
                    }
                }
                Some(Outcome::Pass) if accepted_loss.is_none() => {
                    accepted_loss = promise.map(|p| (removal.recorded(desc).id(), p));
                }
                _ => {}
            }
        }
        Ok(SyncCheck {
            site,
            verdict,
            exact: explored.in_full && states_checked == m.reach.len(),
            states: m.reach.len(),
            states_checked,
            new_failing,
            loses_promised,
            accepted_loss,
            seconds: None,
            on_fs: None,
        })
    }
}
