//! How fast a scenario checks crash states in-process: a workload with
//! thousands of distinct crash states, a trivial check, and the rate.
//!
//! ```sh
//! cargo run --release -p durable-test --example check_rate -- TRACE [dir|fuse]
//! ```
//!
//! (the optional second argument forces how states reach the check) prints the states checked, the seconds spent checking them and the rate,
//! and saves the trace at TRACE, so that the command line can check the very
//! same states through a process per state:
//!
//! ```sh
//! blackout run --trace TRACE --model posix --consistency-only --checker 'sh -c true'
//! ```
//!
//! The scenario's check accepts every state but the one before the
//! workload, where a check must fail (the pre-check); `sh -c true` accepts
//! even that one, so the command line runs with `--consistency-only`, which
//! skips the pre-check. Both then check the same distinct states.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use blackout::explore::model::Model;
use blackout::Scenario;

/// Rounds: each appends three records to a log, fdatasyncs it and
/// promises; every crash point has its own few pending writes, so the
/// states are many and small (one file), as a store's usually are.
const ROUNDS: usize = 12;

fn workload(dir: &Path, p: &blackout::Promises) -> blackout::scenario::WorkloadResult {
    let mut log = File::create(dir.join("log"))?;
    File::open(dir)?.sync_all()?;
    for round in 0..ROUNDS {
        for part in 0..3 {
            writeln!(log, "round {round} part {part}")?;
        }
        log.sync_data()?;
        p.promise(format!("round {round}"));
    }
    Ok(())
}

fn main() {
    let trace = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "check-rate.trace".into());
    let mut scenario = Scenario::new("rate");
    // (The recorded run of this same program gets other arguments.)
    if let Some(kind) = std::env::args().nth(2).and_then(|k| k.parse().ok()) {
        scenario = scenario.materializer(kind);
    }
    let report = scenario
        .test_name("rate")
        .models([Model::Posix])
        .stacks(false)
        .keep_trace(&trace)
        .workload(workload)
        // Trivial: accepts every state but the one before the workload
        // with promises made (the pre-check, which must fail).
        .check(|state, promised| {
            if promised.is_empty() || state.join("log").exists() {
                Ok(())
            } else {
                Err("nothing written")
            }
        })
        .run();
    report.assert_pass();
    let run = report.run_report().expect("a run");
    println!(
        "{} states checked in {:.2} s: {:.0} states/s (trace: {trace})",
        run.states_checked,
        run.check_seconds,
        run.states_checked as f64 / run.check_seconds
    );
}
