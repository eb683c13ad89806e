//! How crash states reach the checker: written out as directories
//! (`--materializer dir`) or shown through a FUSE view per worker
//! (`--materializer fuse`, the default for states of 4 MiB or more where it
//! can be mounted). A checker
//! that writes in every state sees only its own writes under both, SQLite
//! rolling back a hot journal in every state gives the same verdicts and
//! causes under both, and nothing is left behind.

use serde_json::Value;

use crate::common::{fuse_here, mounts_under, run_json, sqlite_setup, text, Scratch};

/// The verdict and each model's causes (the sentence, the simplest state,
/// the fix).
fn verdicts_and_causes(v: &Value) -> Vec<String> {
    let mut out = vec![v["verdict"].to_string()];
    for m in v["result"]["models"].as_array().unwrap() {
        out.push(format!("{} {} {}", m["model"], m["verdict"], m["failing"]));
        for c in m["causes"].as_array().unwrap() {
            out.push(format!("{} {} {}", c["cause"], c["simplest"], c["fix"]));
        }
    }
    out
}

/// A checker that fails a state holding a file another state's checker
/// wrote, then writes in every way a recovery might: a new file, an
/// append, a directory tree, a rename, a symlink, a removal, a truncate.
const WRITING_CHECKER: &str = r#"
test ! -e leaked || { echo "leaked holds: $(cat leaked)" >&2; exit 1; }
test ! -e sub || { echo "another state's directory is here" >&2; exit 1; }
echo "$BLACKOUT_STATE_ID" > leaked
echo more >> a 2>/dev/null
mkdir -p sub/deep && echo x > sub/deep/f
mv b b2 2>/dev/null
ln -s a link
rm -f c
: > a
exit 0"#;

/// The workload: three files, one of them renamed over, a sync in the
/// middle (so states differ by what they kept).
const WORKLOAD: &str =
    "echo one > a; echo two > b; sync; echo three > c; mv c b; echo four >> a; echo saved";

#[test]
fn a_checker_that_writes_in_every_state_sees_only_its_own_writes() {
    let mut seen = Vec::new();
    for m in ["dir", "fuse"] {
        if m == "fuse" && !fuse_here() {
            continue;
        }
        let s = Scratch::new();
        let (code, v, out) = run_json(
            &s,
            &[
                "--materializer",
                m,
                "--consistency-only",
                "--model",
                "posix",
                "--checker",
                WRITING_CHECKER,
                "--",
                "sh",
                "-c",
                WORKLOAD,
            ],
        );
        let stderr = text(&out.stderr);
        assert_eq!(code, 0, "{m}: {v}\n{stderr}");
        let checked = v["result"]["states_checked"].as_u64().unwrap();
        assert!(checked > 10, "{m}: only {checked} states checked");
        let shown = &v["result"]["shown"];
        assert_eq!(shown["kind"], m, "{v}");
        assert!(shown["states"].as_u64().unwrap() >= checked, "{v}");
        let line = if m == "dir" {
            "states written as directories: "
        } else {
            "states shown by fuse: "
        };
        assert!(stderr.contains(line), "{m}: {stderr}");
        assert!(mounts_under(&s.path("")).is_empty());
        seen.push(verdicts_and_causes(&v));
    }
    if seen.len() == 2 {
        assert_eq!(seen[0], seen[1]);
    }
}

/// SQLite in rollback-journal mode, its own checker: in most crash states
/// opening the database rolls a hot journal back (writing the database
/// and removing the journal). Every state judged the same way under both
/// materializers, and under fuse what the rollbacks wrote is counted.
#[test]
fn sqlite_rolling_back_a_hot_journal_in_every_state_gives_the_same_report_under_both() {
    if !crate::common::have_tool("sqlite3") || !fuse_here() {
        return;
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sqlite");
    let checker = format!("sh {}", dir.join("check.sh").display());
    let workload = dir.join("workload.sh");
    let s = Scratch::new();
    let trace = s.path("sqlite.trace");
    let setup = sqlite_setup("DELETE");
    let settings = [
        "--model",
        "process,posix",
        "--verify-fixes",
        "1",
        "--ack-prefix",
        "ack ",
        "--checker",
        &checker,
    ];
    let mut reports = Vec::new();
    for m in ["fuse", "dir"] {
        let mut args: Vec<&str> = settings.to_vec();
        args.extend(["--materializer", m]);
        if m == "fuse" {
            args.extend(["-o", trace.to_str().unwrap(), "--volatile", "*-shm"]);
            args.extend(["--setup", &setup, "--", workload.to_str().unwrap()]);
            args.extend(["DELETE", "FULL", "3"]);
        } else {
            args.extend(["--trace", trace.to_str().unwrap()]);
        }
        let (code, v, out) = run_json(&s, &args);
        assert!(code <= 1, "{m}: {v}\n{}", text(&out.stderr));
        if m == "fuse" {
            assert!(
                v["result"]["shown"]["written"].as_u64().unwrap() > 0,
                "no rollback wrote: {}",
                v["result"]["shown"]
            );
        }
        assert!(mounts_under(&s.path("")).is_empty());
        reports.push(verdicts_and_causes(&v));
    }
    assert_eq!(reports[0], reports[1]);
    assert_eq!(reports[0][0], "\"FAIL\"", "{:?}", reports[0]);
}

#[test]
fn an_unknown_materializer_is_refused_in_one_line() {
    let s = Scratch::new();
    let out = s
        .blackout()
        .args([
            "run",
            "--materializer",
            "overlay",
            "--checker",
            "true",
            "--",
        ])
        .args(["sh", "-c", "echo saved"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("--materializer"), "{err}");
    s.assert_clean();
}
