//! `blackout run --baseline`: the ratchet on the checked-in recordings of
//! the save example, whose variants give real verdict changes (`full`
//! passes; `no-dir-fsync` fails under posix with `entry_not_synced`;
//! `no-fsync` adds `data_not_synced_before_rename`; `in-place` fails under
//! every model). The environment variables are set on the child only.

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::common::{examples, repo, save_checker, text, Scratch};

/// `blackout run` on the recording of save variant `mode` with the
/// baseline `file`, as case `case` (default: the trace file's name), with
/// only the environment variables `env` of the ratchet's set.
fn ratchet(
    s: &Scratch,
    mode: &str,
    case: Option<&str>,
    env: &[(&str, &str)],
    extra: &[&str],
) -> Output {
    let trace = repo().join(format!("tests/reports/save-{mode}.trace"));
    let mut c = s.blackout();
    c.env_remove("CI").env_remove("BLACKOUT_UPDATE_BASELINE");
    c.envs(env.iter().copied());
    c.arg("run").arg("--trace").arg(&trace);
    c.args(["--checker", &save_checker(), "--baseline"]);
    c.arg(s.path("baseline.tsv"));
    if let Some(case) = case {
        c.args(["--case", case]);
    }
    let out = c.args(extra).output().unwrap();
    s.assert_clean();
    out
}

/// The recording of the `full` variant, as case `save`, checked by another
/// checker (`checker`: its flags) against the scratch's baseline.
fn full_with_checker(s: &Scratch, checker: &[&str]) -> Output {
    let trace = repo().join("tests/reports/save-full.trace");
    s.blackout()
        .env_remove("CI")
        .env_remove("BLACKOUT_UPDATE_BASELINE")
        .arg("run")
        .arg("--trace")
        .arg(&trace)
        .args(checker)
        .args(["--case", "save", "--baseline"])
        .arg(s.path("baseline.tsv"))
        .output()
        .unwrap()
}

const UPDATE: &[(&str, &str)] = &[("BLACKOUT_UPDATE_BASELINE", "1")];

/// Records variant `mode` as case `case` into the scratch's baseline.
fn record(s: &Scratch, mode: &str, case: &str) {
    let out = ratchet(s, mode, Some(case), UPDATE, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(&format!("case `{case}` recorded")),
        "{}",
        text(&out.stderr)
    );
}

fn baseline(s: &Scratch) -> String {
    fs::read_to_string(s.path("baseline.tsv")).unwrap()
}

/// The violation lines a run printed after its report.
fn violations(out: &Output) -> Vec<String> {
    text(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("  case `"))
        .map(|l| l.trim().to_string())
        .collect()
}

#[test]
fn a_recorded_fail_passes_and_a_fix_says_the_baseline_can_be_tightened() {
    let s = Scratch::new();
    record(&s, "no-dir-fsync", "save");
    let file = baseline(&s);
    assert!(file.starts_with("# blackout baseline"), "{file}");
    let rows: Vec<&str> = file.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        rows,
        [
            "save\tprocess\tPASS\t-",
            "save\tordered\tPASS\t-",
            "save\tposix\tFAIL\tentry_not_synced",
        ]
    );
    // The same FAIL again: accepted, the report printed first.
    let out = ratchet(&s, "no-dir-fsync", Some("save"), &[], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let stdout = text(&out.stdout);
    let verdict = stdout.find("verdict: FAIL").expect("the report");
    let said = stdout
        .find("case `save` is no worse than recorded")
        .unwrap();
    assert!(verdict < said, "{stdout}");
    // Fixed: better, not a violation, and the baseline can be tightened.
    let out = ratchet(&s, "full", Some("save"), &[], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains(
            "note: case `save`, model posix: better verdict: baseline FAIL (entry_not_synced), \
             now PASS: the baseline"
        ),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(baseline(&s), file, "a comparison never writes");
}

#[test]
fn rule_1_a_worse_verdict_exits_1_listing_every_model() {
    let s = Scratch::new();
    record(&s, "full", "save");
    let out = ratchet(&s, "in-place", Some("save"), &[], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert_eq!(
        violations(&out),
        [
            "case `save`, model process: worse verdict: baseline PASS, now FAIL (not_atomic)",
            "case `save`, model ordered: worse verdict: baseline PASS, now FAIL (not_atomic)",
            "case `save`, model posix: worse verdict: baseline PASS, now FAIL (data_not_synced, not_atomic)",
        ]
    );
    assert!(text(&out.stdout).contains("3 violation(s) of the baseline"));
}

#[test]
fn rule_2_a_new_cause_kind_at_the_same_verdict_exits_1() {
    let s = Scratch::new();
    record(&s, "no-dir-fsync", "save");
    let out = ratchet(&s, "no-fsync", Some("save"), &[], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert_eq!(
        violations(&out),
        ["case `save`, model posix: new cause kind data_not_synced_before_rename: baseline FAIL \
          (entry_not_synced), now FAIL (data_not_synced_before_rename, entry_not_synced)"]
    );
}

#[test]
fn rule_3_a_model_no_longer_explored_has_vanished_and_other_cases_are_not_compared() {
    let s = Scratch::new();
    record(&s, "in-place", "other");
    record(&s, "full", "save");
    let out = ratchet(&s, "full", Some("save"), &[], &["--model", "posix"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    // The command line compares only its own case: `other` is not missing.
    assert_eq!(
        violations(&out),
        [
            "case `save`, model process: vanished: baseline PASS, now not run",
            "case `save`, model ordered: vanished: baseline PASS, now not run",
        ]
    );
}

#[test]
fn rule_4_a_case_that_became_inconclusive_exits_1() {
    let s = Scratch::new();
    record(&s, "full", "save");
    // A checker that accepts everything cannot fail: INCONCLUSIVE.
    let out = full_with_checker(&s, &["--checker", "true"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let v = violations(&out);
    assert_eq!(v.len(), 3, "{v:?}");
    assert_eq!(
        v[2],
        "case `save`, model posix: became INCONCLUSIVE: baseline PASS, now INCONCLUSIVE"
    );
}

#[test]
fn rule_5_an_unrecorded_case_exits_1_named_by_the_trace_file_by_default() {
    let s = Scratch::new();
    record(&s, "full", "save");
    let out = ratchet(&s, "full", None, &[], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert_eq!(
        violations(&out)[0],
        "case `save-full.trace`, model process: not in the baseline: baseline none, now PASS"
    );
    // Recording it keeps the other case's rows.
    let out = ratchet(&s, "full", None, UPDATE, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let file = baseline(&s);
    assert!(file.contains("save\tposix\tPASS\t-\n"), "{file}");
    assert!(file.contains("save-full.trace\tposix\tPASS\t-\n"), "{file}");
}

#[test]
fn ci_ignores_the_update_and_compares() {
    let s = Scratch::new();
    record(&s, "full", "save");
    let before = baseline(&s);
    let env = [("BLACKOUT_UPDATE_BASELINE", "1"), ("CI", "true")];
    let out = ratchet(&s, "no-dir-fsync", Some("save"), &env, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let warnings: Vec<_> = text(&out.stderr)
        .lines()
        .filter(|l| l.contains("BLACKOUT_UPDATE_BASELINE is ignored when CI is set: "))
        .map(String::from)
        .collect();
    assert_eq!(warnings.len(), 1, "{}", text(&out.stderr));
    assert_eq!(
        violations(&out),
        ["case `save`, model posix: worse verdict: baseline PASS, now FAIL (entry_not_synced)"]
    );
    assert_eq!(baseline(&s), before, "CI rewrote the baseline");
    // An empty CI is unset: the update is made.
    let env = [("BLACKOUT_UPDATE_BASELINE", "1"), ("CI", "")];
    let out = ratchet(&s, "no-dir-fsync", Some("save"), &env, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(baseline(&s).contains("save\tposix\tFAIL\tentry_not_synced\n"));
}

#[test]
fn a_missing_or_malformed_baseline_is_one_error_line_and_exit_2() {
    let s = Scratch::new();
    let out = ratchet(&s, "full", Some("save"), &[], &[]);
    assert_eq!(out.status.code(), Some(2));
    let want = format!(
        "error: no baseline at {}: record it with BLACKOUT_UPDATE_BASELINE=1, review it and commit it\n",
        s.path("baseline.tsv").display()
    );
    assert_eq!(text(&out.stderr), want);
    assert!(out.stdout.is_empty(), "nothing ran: {}", text(&out.stdout));
    fs::write(
        s.path("baseline.tsv"),
        "# a baseline\nsave\tposix\tPASS\t-\nsave\tposix\tSOMETIMES\t-\n# end of baseline\n",
    )
    .unwrap();
    let out = ratchet(&s, "full", Some("save"), &[], &[]);
    assert_eq!(out.status.code(), Some(2));
    let want = format!(
        "error: {}:3: `SOMETIMES` is not a verdict (PASS, FAIL, INCONCLUSIVE, HARNESS BROKEN, ERROR)\n",
        s.path("baseline.tsv").display()
    );
    assert_eq!(text(&out.stderr), want);
}

#[test]
fn a_baseline_cut_in_the_middle_of_a_row_is_one_error_line_and_exit_2() {
    let s = Scratch::new();
    record(&s, "full", "save");
    let whole = baseline(&s);
    let cut_at = whole.find("save\tposix\tPA").unwrap() + "save\tposix\tPA".len();
    fs::write(s.path("baseline.tsv"), &whole[..cut_at]).unwrap();
    let out = ratchet(&s, "full", Some("save"), &[], &[]);
    assert_eq!(out.status.code(), Some(2));
    let line = whole[..cut_at].lines().count();
    let want = format!(
        "error: {}:{line}: the file ends inside this line: it was cut short; record it again with BLACKOUT_UPDATE_BASELINE=1 (or restore it from version control)\n",
        s.path("baseline.tsv").display()
    );
    assert_eq!(text(&out.stderr), want);
    assert!(out.stdout.is_empty(), "nothing ran: {}", text(&out.stdout));
    // Cut at the end of a row, it is still not read as a shorter baseline.
    let row_end = whole.find("save\tposix").unwrap();
    fs::write(s.path("baseline.tsv"), &whole[..row_end]).unwrap();
    let out = ratchet(&s, "full", Some("save"), &[], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("the file ends without its last line `# end of baseline`"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(text(&out.stderr).lines().count(), 1);
}

#[test]
fn with_json_the_violations_go_to_stderr() {
    let s = Scratch::new();
    record(&s, "full", "save");
    let out = ratchet(&s, "no-dir-fsync", Some("save"), &[], &["--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"], "FAIL");
    assert!(text(&out.stderr).contains(
        "  case `save`, model posix: worse verdict: baseline PASS, now FAIL (entry_not_synced)\n"
    ));
}

#[test]
fn a_recorded_run_is_named_by_its_command_line() {
    let s = Scratch::new();
    let script = examples().join("save.sh");
    let file = s.path("baseline.tsv");
    let run = |env: &[(&str, &str)]| {
        let out = s
            .blackout()
            .env_remove("CI")
            .env_remove("BLACKOUT_UPDATE_BASELINE")
            .envs(env.iter().copied())
            .args(["run", "--setup", "echo 'version 1' > doc.txt"])
            .args([
                "--checker",
                &save_checker(),
                "--model",
                "posix",
                "--baseline",
            ])
            .arg(&file)
            .arg("--")
            .arg(&script)
            .arg("no-dir-fsync")
            .output()
            .unwrap();
        s.assert_clean();
        out
    };
    let out = run(UPDATE);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let row = format!(
        "{} no-dir-fsync\tposix\tFAIL\tentry_not_synced\n",
        script.display()
    );
    assert!(fs::read_to_string(&file).unwrap().contains(&row));
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(Path::new(&file).exists());
}

#[test]
fn a_run_that_could_not_check_its_states_exits_2_with_its_violations() {
    let s = Scratch::new();
    record(&s, "full", "save");
    // A checker that never answers in time: every state an error.
    let out = full_with_checker(&s, &["--checker", "sleep 5", "--timeout", "0.2"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(
        violations(&out)
            .iter()
            .any(|v| v == "case `save`, model posix: worse verdict: baseline PASS, now ERROR"),
        "{}",
        text(&out.stdout)
    );
}
