//! SQLite, compiled into this test binary (rusqlite's bundled build), under
//! `blackout::Scenario`: its own syncs, as its unix VFS issues them, are
//! what is recorded; nothing in its configuration is changed to route them
//! through blackout. Four transactions, each acknowledged once `COMMIT`
//! returns; a crash state must open (SQLite's own recovery: a hot journal
//! rolled back, a WAL replayed), pass `PRAGMA integrity_check` and hold
//! every acknowledged row.
//!
//! What SQLite documents, and what these tests find under the posix model:
//! with a rollback journal, `synchronous=FULL` does not fsync the directory
//! after deleting the journal, so a crash can bring the journal back and
//! roll the last acknowledged commit back; `EXTRA` does. With a WAL,
//! `NORMAL` syncs the log only at checkpoints, so the last commits can be
//! lost; `FULL` syncs it at every commit.

use std::path::Path;

use blackout::analysis::explain::CauseKind;
use blackout::analysis::report::Verdict;
use blackout::explore::model::Model;
use blackout::export::text::without_log_lines;
use blackout::{Report, Scenario};
use rusqlite::Connection;

/// Transactions per scenario: each inserts one row of 2,000 bytes (a
/// transaction touches several pages) and is acknowledged as `ack N`.
const COMMITS: i64 = 4;

/// The database in `dir`: table `t` created, in `mode`.
fn create(dir: &Path, mode: &str) -> blackout::scenario::WorkloadResult {
    let db = Connection::open(dir.join("db"))?;
    let _: String = db.query_row(&format!("PRAGMA journal_mode={mode}"), [], |r| r.get(0))?;
    db.execute_batch("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)")?;
    Ok(())
}

/// One connection, `COMMITS` transactions, each acknowledged once its
/// `COMMIT` returned.
fn commits(
    dir: &Path,
    p: &blackout::Promises,
    mode: &str,
    level: &str,
) -> blackout::scenario::WorkloadResult {
    let db = Connection::open(dir.join("db"))?;
    let _: String = db.query_row(&format!("PRAGMA journal_mode={mode}"), [], |r| r.get(0))?;
    db.execute_batch(&format!("PRAGMA synchronous={level}"))?;
    for n in 1..=COMMITS {
        db.execute_batch("BEGIN")?;
        db.execute("INSERT INTO t VALUES(?1, ?2)", (n, format!("{n:02000}")))?;
        db.execute_batch("COMMIT")?;
        p.promise(format!("ack {n}"));
    }
    Ok(())
}

/// A crash state: it opens, passes the integrity check and holds every
/// acknowledged row.
fn check(state: &Path, promised: &[String]) -> Result<(), String> {
    let db = Connection::open(state.join("db")).map_err(|e| format!("cannot open db: {e}"))?;
    let integrity: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .map_err(|e| format!("cannot read db: {e}"))?;
    if integrity != "ok" {
        return Err(format!("integrity_check: {integrity}"));
    }
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

/// Records and checks one configuration under the posix model.
fn sqlite(mode: &'static str, level: &'static str) -> Report {
    Scenario::new(format!("{mode}/{level}"))
        .models([Model::Posix])
        .volatile(["*-shm"])
        .setup(move |dir| create(dir, mode))
        .workload(move |dir, p| commits(dir, p, mode, level))
        .check(check)
        .run()
}

/// Asserts a FAIL whose causes include one that loses an acknowledged row.
fn loses_an_acknowledged_commit(report: &Report) {
    assert_eq!(report.verdict(), Verdict::Fail, "{}", report.text());
    assert!(
        report
            .causes()
            .iter()
            .any(|c| c.simplest.outcome.describe().contains("acknowledged row")),
        "no cause loses an acknowledged row:\n{}",
        report.text()
    );
}

/// SQLite's own syncs were recorded: the trace holds an fsync or fdatasync
/// of the database and of its journal or log.
fn syncs_recorded(report: &Report, log: &str) {
    let ops = report.trace().unwrap().op_log_text();
    for file in ["db", log] {
        let synced = ops.lines().any(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            words.windows(2).any(|w| {
                (w[0].starts_with("fsync@") || w[0].starts_with("fdatasync@")) && w[1] == file
            })
        });
        assert!(synced, "no sync of {file} recorded:\n{ops}");
    }
}

#[test]
fn rollback_journal_full_loses_the_last_commit() {
    let report = sqlite("DELETE", "FULL");
    loses_an_acknowledged_commit(&report);
    syncs_recorded(&report, "db-journal");
    // The journal's unlink is never made durable before the promise: a
    // crash brings the journal back, and recovery rolls the commit back.
    assert!(
        report
            .causes()
            .iter()
            .any(|c| c.cause.kind == CauseKind::PromiseBeforeSync
                && c.cause.op.contains("unlink db-journal")),
        "{}",
        report.text()
    );
}

#[test]
fn rollback_journal_extra_passes() {
    let report = sqlite("DELETE", "EXTRA");
    report.assert_pass();
}

#[test]
fn wal_normal_loses_the_last_commit() {
    let report = sqlite("WAL", "NORMAL");
    loses_an_acknowledged_commit(&report);
    syncs_recorded(&report, "db-wal");
}

#[test]
fn wal_full_passes() {
    let report = sqlite("WAL", "FULL");
    report.assert_pass();
}

/// Whether the FUSE view can be mounted here (root and /dev/fuse).
fn fuse_here() -> bool {
    use std::os::unix::fs::MetadataExt;
    // /proc/self belongs to the process's effective user.
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    root && Path::new("/dev/fuse").exists()
}

/// The verdict and, per cause, its sentence (without log line numbers:
/// two recordings of one program can differ by a line), simplest state and
/// states.
fn findings(report: &Report) -> Vec<String> {
    let mut out = vec![format!("{:?}", report.verdict())];
    out.extend(report.causes().iter().map(|c| {
        format!(
            "{} | {} | {} states",
            without_log_lines(&c.cause.sentence),
            c.simplest.id,
            c.states
        )
    }));
    out
}

/// The check's states shown through the FUSE view, each served by a child
/// process (the check runs in this process, where SQLite maps the `-shm`
/// file: a view served by a thread of this process deadlocked it): the
/// same verdicts and causes as written out, with a WAL (the mapped `-shm`)
/// and with a rollback journal (rolled back in every state that has one).
#[test]
fn the_fuse_view_served_by_a_child_gives_the_report_directories_give() {
    use blackout::check::materialize::MaterializerKind;
    if !fuse_here() {
        eprintln!("note: the FUSE view needs root and /dev/fuse; skipped");
        return;
    }
    let run = |mode: &'static str, level: &'static str, kind: MaterializerKind| {
        Scenario::new(format!("{mode}/{level}/{}", kind.name()))
            .models([Model::Posix])
            .volatile(["*-shm"])
            .materializer(kind)
            .setup(move |dir| create(dir, mode))
            .workload(move |dir, p| commits(dir, p, mode, level))
            .check(check)
            .run()
    };
    let configs = [("WAL", "NORMAL"), ("DELETE", "FULL")];
    let reports: Vec<(Report, Report)> = configs
        .iter()
        .map(|&(m, l)| {
            (
                run(m, l, MaterializerKind::Fuse),
                run(m, l, MaterializerKind::Dir),
            )
        })
        .collect();
    for ((fuse, dir), (mode, level)) in reports.iter().zip(configs) {
        if fuse.run_report().is_none() {
            continue; // inside the recording of another scenario
        }
        loses_an_acknowledged_commit(dir);
        assert_eq!(findings(fuse), findings(dir), "{mode}/{level}");
        let shown = |r: &Report| r.run_report().and_then(|r| r.shown).expect("states shown");
        assert_eq!(
            shown(fuse).kind,
            Some(MaterializerKind::Fuse),
            "{mode}/{level}"
        );
        assert_eq!(
            shown(dir).kind,
            Some(MaterializerKind::Dir),
            "{mode}/{level}"
        );
        assert_eq!(shown(fuse).states, shown(dir).states, "{mode}/{level}");
        // Through the view only what the checks read was produced.
        assert!(shown(fuse).read > 0, "{mode}/{level}: {:?}", shown(fuse));
    }
}
