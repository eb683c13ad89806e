//! Every planted bug of `kvstore`, checked once whole and once in three
//! shards merged: the merged report is the single run's (timings aside),
//! verdicts, causes, verified fixes and coverage alike.

mod common;

use blackout::analysis::report::RunReport;
use blackout::explore::model::Model;
use blackout::run::check_trace;
use blackout::shard::{Shard, ShardPart};
use blackout::sharded::{check_shard, merge_parts};
use common::{bugs, recorded};
use serde_json::Value;

/// A report as JSON, without its timings (and the time bound of fix
/// verification, which is one).
fn without_timings(r: &RunReport) -> Value {
    let mut v = serde_json::to_value(r).unwrap();
    let m = v.as_object_mut().unwrap();
    // Timings, and what showing states cost each process.
    m.retain(|k, _| !k.ends_with("_seconds") && k != "shown");
    v
}

#[test]
fn three_shards_merged_equal_one_run_for_every_planted_bug() {
    let mut all = vec!["none".to_string()];
    all.extend(bugs().into_iter().map(|(name, _)| name));
    assert!(all.len() > 6, "at least six bugs");
    for bug in all {
        let (trace, cfg) = recorded(&bug, &Model::ALL);
        let one = check_trace(&trace, &cfg).expect("checking kvstore");
        let parts: Vec<ShardPart> = (1..=3)
            .map(|index| check_shard(&trace, &cfg, Shard { index, count: 3 }).unwrap())
            .map(|p| ShardPart::read(p.to_json().as_bytes()).unwrap())
            .collect();
        let merged = merge_parts(&trace, &cfg, &parts).expect("merging");
        assert_eq!(
            without_timings(&merged),
            without_timings(&one),
            "{bug}: the merged report differs from one run's"
        );
    }
}
