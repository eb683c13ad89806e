//! How fast a scenario checks a large database in-process, by how states
//! reach its check: ten rollback-journal transactions (`synchronous=FULL`)
//! on a SQLite table of MB megabytes (rows of 1,000 random bytes made by the
//! setup), every distinct posix state checked by a primary-key lookup per
//! acknowledged row through rusqlite (opening the database rolls a hot
//! journal back), `-j 2`.
//!
//! ```sh
//! cargo run --release -p durable-test --example sqlite_size -- MB dir|fuse
//! ```
//!
//! prints the states checked, the seconds spent checking them, the rate and
//! what showing the states cost. `fuse` serves each state's view from a
//! child process (the check runs in this process); `dir` writes each state
//! out.

use std::path::Path;

use blackout::check::materialize::MaterializerKind;
use blackout::explore::model::Model;
use blackout::Scenario;
use rusqlite::Connection;

/// Transactions, each acknowledged as `ack N` once its `COMMIT` returned.
const COMMITS: i64 = 10;

fn setup(dir: &Path, mb: u64) -> blackout::scenario::WorkloadResult {
    let db = Connection::open(dir.join("db"))?;
    let rows = mb * 1024 * 1024 / 1100;
    db.execute_batch(&format!(
        "PRAGMA journal_mode=DELETE;
         CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB);
         WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT {rows})
         INSERT INTO t SELECT x+1000000, randomblob(1000) FROM c;"
    ))?;
    Ok(())
}

fn workload(dir: &Path, p: &blackout::Promises) -> blackout::scenario::WorkloadResult {
    let db = Connection::open(dir.join("db"))?;
    db.execute_batch("PRAGMA synchronous=FULL")?;
    for n in 1..=COMMITS {
        db.execute_batch("BEGIN")?;
        db.execute("INSERT INTO t VALUES(?1, ?2)", (n, format!("{n:02000}")))?;
        db.execute_batch("COMMIT")?;
        p.promise(format!("ack {n}"));
    }
    Ok(())
}

fn check(state: &Path, promised: &[String]) -> Result<(), String> {
    let db = Connection::open(state.join("db")).map_err(|e| format!("cannot open db: {e}"))?;
    for ack in promised {
        let n: i64 = ack
            .strip_prefix("ack ")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("not an acknowledgement: {ack:?}"))?;
        let there: bool = db
            .query_row("SELECT count(*) FROM t WHERE id = ?1", [n], |r| r.get(0))
            .map_err(|e| format!("cannot read db: {e}"))?;
        if !there {
            return Err(format!("acknowledged row {n} is missing"));
        }
    }
    Ok(())
}

fn main() {
    let mut args = std::env::args().skip(1);
    // (The recorded run of this same program gets other arguments: it only
    // runs the workload.)
    let mb: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let kind: Option<MaterializerKind> = args.next().and_then(|a| a.parse().ok());
    let mut scenario = Scenario::new("sqlite-size")
        .test_name("sqlite-size")
        .models([Model::Posix])
        .volatile(["*-shm"])
        .jobs(2)
        .stacks(false)
        .setup(move |dir| setup(dir, mb))
        .workload(workload)
        .check(check);
    if let Some(kind) = kind {
        scenario = scenario.materializer(kind);
    }
    let report = scenario.run();
    let run = report.run_report().expect("a run");
    let shown = run.shown.expect("states shown");
    let per = |b: u64| b as f64 / shown.states.max(1) as f64 / 1e6;
    println!(
        "{mb} MB, {}: {} states checked in {:.1} s: {:.0} states/s; {:.3} MB written, {:.3} MB read per state; {:?}",
        shown.kind.map_or("?", MaterializerKind::name),
        run.states_checked,
        run.check_seconds,
        run.states_checked as f64 / run.check_seconds,
        per(shown.written),
        per(shown.read),
        report.verdict(),
    );
}
