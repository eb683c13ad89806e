//! A block run split over machines: every shard enumerates the same states
//! of one saved recording ([`super::saved`]) and mounts and checks those
//! whose image falls in its [`Shard`] (the first 8 bytes of the BLAKE3 hash
//! of the state's [`image_id`], big-endian, modulo N, equal to K − 1: states
//! with the same bytes go to the same shard, so each image is mounted
//! once). What it found is a [`BlockPart`], carried in the shard's
//! [`crate::shard::ShardPart`]: each distinct state after recovery by key,
//! with the first state (in enumeration order) that recovered to it, how
//! many did, the checker's outcome and, for a failure, the files (the merge
//! blames it against the merged posix report). [`merge_block`] makes the
//! one run's block report from every part.

use std::collections::HashMap;
use std::time::Instant;

use blackout_block::mount::FsckSaid;
use blackout_block::states::image_id;
use blackout_check::image::{Found, ImageTally, Listing};
use blackout_oplog::outcome::Outcome;

use super::{tallied, BlockCheck, BlockError, BlockRecording, BlockReport, Plan};
use crate::shard::{BlockPart, PartError, PartFound, Shard};

/// Checks the states of `rec` in `shard` (see the module docs); no blame
/// (the merge has the posix report to blame with).
///
/// # Errors
///
/// As [`super::check_block`].
pub fn check_block_shard(
    rec: &BlockRecording,
    how: &BlockCheck<'_>,
    shard: Shard,
) -> Result<BlockPart, BlockError> {
    let started = Instant::now();
    let plan = Plan::new(rec, how);
    let records = &rec.device.log().records;
    let todo: Vec<usize> = (0..plan.states.len())
        .filter(|&i| {
            let s = &plan.states[i];
            shard.holds_image(&image_id(records, &plan.windows[s.point], &s.lost))
        })
        .collect();
    let tally = plan.check(rec, how, &todo, started)?;
    let found = tally
        .found
        .iter()
        .map(|(key, f)| PartFound {
            key: key.to_hex().to_string(),
            first: f.first,
            count: f.states,
            outcome: f.outcome.clone(),
            files: f
                .outcome
                .as_ref()
                .filter(|o| o.is_fail())
                .map(|_| f.files.clone().into_iter().collect()),
        })
        .collect::<Vec<_>>();
    let mut part = BlockPart {
        states: plan.states.len(),
        visited: tally.visited,
        found,
        unmounted: tally.unmounted.clone(),
        fsck_said: tally
            .fsck
            .iter()
            .map(|(i, s)| (*i, s.status.clone(), s.line.clone()))
            .collect(),
        time: tally.time.clone(),
        seconds: started.elapsed().as_secs_f64(),
    };
    part.found.sort_by_key(|f| f.first);
    part.unmounted.sort_by_key(|u| u.0);
    part.fsck_said.sort_by_key(|s| s.0);
    Ok(part)
}

/// The one run's block report from every shard's part (`parts` in shard
/// order, already checked to be one run's by the posix side's merge).
///
/// # Errors
///
/// Parts counting other states than this run's, or holding a state that
/// is not in the run or not in their shard (their settings are compared
/// whole before, with the posix side's: [`crate::shard::Settings`]).
pub fn merge_block(
    rec: &BlockRecording,
    how: &BlockCheck<'_>,
    parts: &[(Shard, &BlockPart)],
) -> Result<BlockReport, PartError> {
    let plan = Plan::new(rec, how);
    let records = &rec.device.log().records;
    let mismatch = |m: String| Err(PartError::Mismatch(m));
    let mut tally = ImageTally::default();
    let mut seconds: f64 = 0.0;
    for (shard, p) in parts {
        // The settings were compared whole with the posix side's.
        if p.states != plan.states.len() {
            return mismatch(format!(
                "shard {shard}'s part counts {} block states, this merge {}: were they made by another blackout version?",
                p.states,
                plan.states.len()
            ));
        }
        let in_shard = |i: usize| {
            plan.states.get(i).is_some_and(|s| {
                shard.holds_image(&image_id(records, &plan.windows[s.point], &s.lost))
            })
        };
        let indexes = p.found.iter().map(|f| f.first);
        let indexes = indexes.chain(p.unmounted.iter().map(|u| u.0));
        if let Some(i) = indexes
            .chain(p.fsck_said.iter().map(|s| s.0))
            .find(|&i| !in_shard(i))
        {
            return mismatch(format!(
                "shard {shard}'s part names block state {i}, which is not one of its states"
            ));
        }
        tally.visited = tally.visited.saturating_add(p.visited);
        tally.unmounted.extend(p.unmounted.iter().cloned());
        tally
            .fsck
            .extend(p.fsck_said.iter().map(|(i, status, line)| {
                (
                    *i,
                    FsckSaid {
                        status: status.clone(),
                        line: line.clone(),
                    },
                )
            }));
        tally.time.add(&p.time);
        // As if the shards had run one after another.
        seconds += p.seconds;
        for f in &p.found {
            merge_found(&mut tally.found, f, shard)?;
        }
    }
    Ok(tallied(rec, how, plan.found(seconds), tally))
}

/// Files one part's distinct state: a key two shards found (two images
/// that recover to the same files) counts both's states, under the first.
fn merge_found(
    found: &mut HashMap<blake3::Hash, Found>,
    f: &PartFound,
    shard: &Shard,
) -> Result<(), PartError> {
    let key = blake3::Hash::from_hex(&f.key).map_err(|_| {
        PartError::Mismatch(format!(
            "shard {shard}'s part holds `{}`, which is not a state key",
            f.key
        ))
    })?;
    if f.outcome.as_ref().is_some_and(Outcome::is_fail) && f.files.is_none() {
        return Err(PartError::Mismatch(format!(
            "shard {shard}'s part holds a failing state ({}) without its files",
            f.first
        )));
    }
    let files: Listing = f.files.clone().unwrap_or_default().into_iter().collect();
    let entry = found.entry(key).or_insert_with(|| Found {
        first: f.first,
        states: 0,
        files: files.clone(),
        outcome: f.outcome.clone(),
    });
    entry.states = entry.states.saturating_add(f.count);
    if f.first < entry.first {
        entry.first = f.first;
        entry.files = files;
        entry.outcome = f.outcome.clone();
    }
    Ok(())
}
