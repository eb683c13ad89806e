//! `blackout run --fail-syncs`: each sync call site's first call made to
//! fail with EIO (strace injects it), the program run again under real
//! strace, and that run's states checked with what the failed sync covered
//! never durable.

use serde_json::Value;

use crate::common::{repo, run_json, sqlite_run_args, text, Scratch};

/// `run --fail-syncs` of `examples/failsync/save.py MODE`: (exit code,
/// the report's result).
fn save(s: &Scratch, mode: &str) -> (i32, Value) {
    let dir = repo().join("examples/failsync");
    let checker = format!("sh {}", dir.join("check.sh").display());
    let script = dir.join("save.py");
    let (code, v, _) = run_json(
        s,
        &[
            "--model",
            "posix",
            "--fail-syncs",
            "--checker",
            &checker,
            "--",
            "python3",
            script.to_str().unwrap(),
            mode,
        ],
    );
    (code, v["result"].clone())
}

/// The site whose call is `call`.
fn site<'a>(r: &'a Value, call: &str) -> &'a Value {
    r["failed_syncs"]["sites"]
        .as_array()
        .unwrap_or_else(|| panic!("no failed syncs: {r}"))
        .iter()
        .find(|c| c["site"]["call"] == call)
        .unwrap_or_else(|| panic!("no site {call}: {r}"))
}

#[test]
fn a_program_that_retries_a_failed_fsync_and_promises_fails_with_the_lost_promise_named() {
    let s = Scratch::new();
    let (code, r) = save(&s, "retry");
    assert_eq!(code, 1, "{r}");
    assert_eq!(r["verdict"], "FAIL");
    let c = site(&r, "fsync(data.txt)");
    assert_eq!(c["verdict"], "trusted", "{c}");
    assert_eq!(c["trust"], "retried", "{c}");
    assert!(c["failed"]
        .as_str()
        .unwrap()
        .starts_with("fsync of data.txt (log line "));
    assert!(c["state"].as_str().unwrap().starts_with("f1:c"), "{c}");
    assert!(
        c["reason"]
            .as_str()
            .unwrap()
            .contains("\"saved\" was printed, but data.txt does not hold the record"),
        "{c}"
    );
    // The run as recorded passes: only the failure loses the promise.
    assert!(
        r["reason"]
            .as_str()
            .unwrap()
            .contains("as recorded, every crash state was accepted"),
        "{r}"
    );
    // The text says it in one line.
    let out = s
        .blackout()
        .args(["run", "--model", "posix", "--fail-syncs", "--checker"])
        .arg(format!(
            "sh {}",
            repo().join("examples/failsync/check.sh").display()
        ))
        .args(["--", "python3"])
        .arg(repo().join("examples/failsync/save.py"))
        .arg("retry")
        .output()
        .unwrap();
    let t = text(&out.stdout);
    assert!(
        t.contains("  fsync(data.txt): fsync of data.txt (log line ")
            && t.contains("failed with EIO; FAIL: it trusted a retried fsync"),
        "{t}"
    );
}

#[test]
fn a_program_that_treats_a_failed_fsync_as_fatal_passes() {
    let s = Scratch::new();
    let (code, r) = save(&s, "fatal");
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["verdict"], "PASS");
    let c = site(&r, "fsync(data.txt)");
    assert_eq!(c["verdict"], "handled", "{c}");
    assert_eq!(c["exit"], 1, "{c}");
    assert_eq!(c["promised"], false, "{c}");
    assert!(
        c["said"].as_str().unwrap().contains("nothing was saved"),
        "{c}"
    );
}

#[test]
fn sqlite_reports_a_failed_wal_sync_and_ignores_a_failed_directory_sync() {
    // WAL with synchronous FULL: a failed fdatasync of the WAL surfaces as
    // the CLI's "disk I/O error" before the row is acknowledged; a failed
    // fsync of the directory after the WAL is created is not checked (the
    // library ignores it), and the WAL's entry can be lost after an
    // acknowledgement.
    if !crate::common::have_tool("sqlite3") {
        return;
    }
    let s = Scratch::new();
    let args = sqlite_run_args("WAL", "FULL", "8", &["--fail-syncs"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, v, _) = run_json(&s, &args);
    assert_eq!(code, 1, "{v}");
    let r = &v["result"];
    let wal = site(r, "fdatasync(db-wal)");
    assert_eq!(wal["verdict"], "handled", "{wal}");
    assert!(
        wal["said"].as_str().unwrap().contains("disk I/O error"),
        "{wal}"
    );
    let dir = site(r, "fdatasync(.)");
    assert_eq!(dir["verdict"], "trusted", "{dir}");
    assert_eq!(dir["trust"], "ignored", "{dir}");
    assert!(
        dir["reason"].as_str().unwrap().contains("acknowledged row"),
        "{dir}"
    );
}

#[test]
fn fail_syncs_needs_the_workload_not_a_trace() {
    let s = Scratch::new();
    let out = s
        .blackout()
        .args([
            "run",
            "--fail-syncs",
            "--trace",
            "x.trace",
            "--checker",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--fail-syncs"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn every_report_format_shows_the_failed_syncs_with_their_state_ids() {
    let s = Scratch::new();
    let (md, html, junit) = (s.path("r.md"), s.path("r.html"), s.path("r.xml"));
    let dir = repo().join("examples/failsync");
    let out = s
        .blackout()
        .args(["run", "--model", "posix", "--fail-syncs", "--checker"])
        .arg(format!("sh {}", dir.join("check.sh").display()))
        .arg("--markdown")
        .arg(&md)
        .arg("--html")
        .arg(&html)
        .arg("--junit")
        .arg(&junit)
        .args(["--", "python3"])
        .arg(dir.join("save.py"))
        .arg("retry")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("### Failed syncs"), "{md}");
    assert!(
        md.contains("| fsync(data.txt) | fsync of data.txt (log line "),
        "{md}"
    );
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(html.contains("<section id=\"failed-syncs\">"), "{html}");
    assert!(html.contains("it trusted a retried fsync"), "{html}");
    let junit = std::fs::read_to_string(&junit).unwrap();
    assert!(junit.contains("fsync(data.txt) failing"), "{junit}");
    assert!(junit.contains("type=\"failed_sync\""), "{junit}");
    for report in [&md, &html, &junit] {
        assert!(report.contains("f1:c"), "no f1: state id");
    }
}
