//! Every planted bug of `kvstore`, checked once whole and once in three
//! shards merged: the merged report is the single run's (timings aside),
//! verdicts, causes, verified fixes and coverage alike.

use std::time::Duration;

use blackout::analysis::report::RunReport;
use blackout::check::shell::ShellChecker;
use blackout::explore::model::Model;
use blackout::record::{RecordConfig, Recorder, StraceRecorder};
use blackout::run::{check_shard, check_trace, merge_parts, RunConfig};
use blackout::shard::{Part, Shard};
use serde_json::Value;

fn kvstore() -> &'static str {
    env!("CARGO_BIN_EXE_kvstore")
}

/// Every bug's flags, `none` first.
fn bugs() -> Vec<Vec<String>> {
    let out = std::process::Command::new(kvstore())
        .arg("bugs")
        .output()
        .unwrap();
    let mut all = vec![Vec::new()];
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let name = line.split_whitespace().next().unwrap();
        all.push(vec!["--bug".to_string(), name.to_string()]);
    }
    all
}

/// A report as JSON, without its timings.
fn without_timings(r: &RunReport) -> Value {
    let mut v = serde_json::to_value(r).unwrap();
    let m = v.as_object_mut().unwrap();
    m.remove("explore_seconds");
    m.remove("check_seconds");
    v
}

#[test]
fn three_shards_merged_equal_one_run_for_every_planted_bug() {
    let all = bugs();
    assert!(all.len() > 6, "at least six bugs");
    for flags in all {
        let mut command: Vec<std::ffi::OsString> = vec![kvstore().into()];
        command.extend(flags.iter().map(Into::into));
        command.extend(["load".into(), "8".into()]);
        let rec = StraceRecorder
            .record(&RecordConfig::new(command))
            .expect("recording kvstore");
        let checker = format!("{} {} check", kvstore(), flags.join(" "));
        let mut cfg = RunConfig::with_checker(Box::new(ShellChecker {
            command: checker,
            timeout: Duration::from_secs(60),
        }));
        cfg.models = Model::ALL.to_vec();
        let one = check_trace(&rec.trace, &cfg).expect("checking kvstore");
        let parts: Vec<Part> = (1..=3)
            .map(|index| check_shard(&rec.trace, &cfg, Shard { index, count: 3 }).unwrap())
            .map(|p| Part::read(p.to_json().as_bytes()).unwrap())
            .collect();
        let merged = merge_parts(&rec.trace, &cfg, &parts).expect("merging");
        assert_eq!(
            without_timings(&merged),
            without_timings(&one),
            "{flags:?}: the merged report differs from one run's"
        );
    }
}
