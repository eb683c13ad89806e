//! End-to-end tests of `blackout run`, `states` and `state`: real workloads
//! under real strace, real checkers in real crash-state directories.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{
    examples, on_a_small_tmpfs, ops_json, processes_with, run_json, save_checker, signal_when,
    text, unique_sleep, Scratch,
};
use serde_json::Value;

/// Records the save example in `mode` into a trace, checking all models.
fn run_save(s: &Scratch, mode: &str) -> (i32, Value, PathBuf) {
    let trace = s.path(&format!("{mode}.trace"));
    let script = examples().join("save.sh");
    let checker = save_checker();
    let (code, v, _) = run_json(
        s,
        &[
            "-o",
            trace.to_str().unwrap(),
            "--setup",
            "echo 'version 1' > doc.txt",
            "--checker",
            &checker,
            "--",
            script.to_str().unwrap(),
            mode,
        ],
    );
    (code, v, trace)
}

fn model<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["result"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == name)
        .unwrap_or_else(|| panic!("no model {name} in {v}"))
}

fn verdict<'a>(v: &'a Value, name: &str) -> &'a str {
    model(v, name)["verdict"].as_str().unwrap()
}

fn failing<'a>(v: &'a Value, name: &str) -> &'a Vec<Value> {
    model(v, name)["failing"].as_array().unwrap()
}

/// The op indexes a checked state lost.
fn lost(state: &Value) -> Vec<u64> {
    state["lost"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["op"].as_u64().unwrap())
        .collect()
}

/// Index of the first op with this label in a trace's op log.
fn op_index(s: &Scratch, trace: &Path, label: &str) -> u64 {
    let v = ops_json(s, trace);
    v["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["label"] == label)
        .unwrap_or_else(|| panic!("no {label} op"))["index"]
        .as_u64()
        .unwrap()
}

#[test]
fn save_in_place_fails_even_under_process() {
    let s = Scratch::new();
    let (code, v, _) = run_save(&s, "in-place");
    assert_eq!(code, 1);
    assert_eq!(v["verdict"], "FAIL");
    for m in ["process", "ordered", "posix"] {
        assert_eq!(verdict(&v, m), "FAIL", "{m}");
    }
    // Under process nothing is lost: the crash lands between the truncate
    // and the write.
    let simplest = &failing(&v, "process")[0];
    assert!(lost(simplest).is_empty());
    assert_eq!(simplest["reason"], "doc.txt is empty");
}

#[test]
fn save_without_fsync_fails_only_under_posix_with_an_empty_renamed_file() {
    let s = Scratch::new();
    let (code, v, trace) = run_save(&s, "no-fsync");
    assert_eq!(code, 1);
    assert_eq!(verdict(&v, "process"), "PASS");
    assert_eq!(verdict(&v, "posix"), "FAIL");
    // Among the failures: the rename kept, the write lost — an empty file
    // under the document's name.
    let write = op_index(&s, &trace, "write");
    let rename = op_index(&s, &trace, "rename");
    let empty = failing(&v, "posix").iter().find(|f| {
        let l = lost(f);
        l.contains(&write) && !l.contains(&rename) && f["reason"] == "doc.txt is empty"
    });
    assert!(empty.is_some(), "no empty renamed file among {v}");
    // The process model alone passes: exit 0.
    let (code, v, _) = run_json(
        &s,
        &[
            "--trace",
            trace.to_str().unwrap(),
            "--model",
            "process",
            "--checker",
            &save_checker(),
        ],
    );
    assert_eq!((code, v["verdict"].as_str()), (0, Some("PASS")));
}

#[test]
fn save_without_directory_fsync_loses_the_rename_after_saved() {
    let s = Scratch::new();
    let (code, v, trace) = run_save(&s, "no-dir-fsync");
    assert_eq!(code, 1);
    assert_eq!(verdict(&v, "process"), "PASS");
    assert_eq!(verdict(&v, "ordered"), "PASS");
    assert_eq!(verdict(&v, "posix"), "FAIL");
    let rename = op_index(&s, &trace, "rename");
    let simplest = &failing(&v, "posix")[0];
    assert_eq!(lost(simplest), vec![rename]);
    assert_eq!(simplest["promises_made"], 1);
    assert_eq!(v["result"]["promises"], serde_json::json!(["saved"]));
    assert_eq!(
        simplest["reason"],
        "\"saved\" was printed, but doc.txt is still version 1"
    );
    // The text report names the lost rename and gives a reproduce line.
    let out = s
        .blackout()
        .args(["run", "--model", "posix", "--trace"])
        .arg(&trace)
        .args(["--checker", &save_checker()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report = text(&out.stdout);
    assert!(
        report.contains("lost:      op 3: rename doc.txt.tmp -> doc.txt (renameat"),
        "{report}"
    );
    assert!(report.contains("reproduce: blackout state"), "{report}");
    assert!(report.contains("verdict: FAIL"), "{report}");
    s.assert_clean();
}

#[test]
fn save_with_the_full_recipe_passes_every_model() {
    let s = Scratch::new();
    let (code, v, _) = run_save(&s, "full");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["verdict"], "PASS");
    for m in ["process", "ordered", "posix"] {
        assert_eq!(verdict(&v, m), "PASS", "{m}");
        assert!(model(&v, m)["distinct"].as_u64().unwrap() > 1);
    }
    // The pre-check ran and rejected the pre-workload state.
    assert_eq!(v["result"]["precheck"]["outcome"], "fail");
}

/// A new file written and fsynced, then "saved"; its directory fsynced only
/// when `dir_fsync`.
fn new_file(dir_fsync: bool) -> (i32, Value) {
    let s = Scratch::new();
    let script = format!(
        "printf 'hello\\n' > new.txt; sync new.txt; {} echo saved",
        if dir_fsync { "sync .;" } else { "" }
    );
    let checker = "if printf '%s\\n' \"$BLACKOUT_ACKED\" | grep -qx saved; then \
                   [ \"$(cat new.txt 2>/dev/null)\" = hello ] || { echo 'new.txt lost after saved' >&2; exit 1; }; fi";
    let (code, v, _) = run_json(
        &s,
        &[
            "--model",
            "posix",
            "--checker",
            checker,
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    (code, v)
}

#[test]
fn a_created_file_fsynced_without_its_directory_fails_under_posix() {
    let (code, v) = new_file(false);
    assert_eq!(code, 1, "{v}");
    let simplest = &failing(&v, "posix")[0];
    assert_eq!(simplest["reason"], "new.txt lost after saved");
    assert_eq!(lost(simplest), vec![0], "the create is op 0 and is lost");
    let (code, v) = new_file(true);
    assert_eq!(code, 0, "{v}");
    assert_eq!(verdict(&v, "posix"), "PASS");
}

#[test]
fn a_workload_that_promises_nothing_is_inconclusive() {
    let s = Scratch::new();
    let (code, v, _) = run_json(&s, &["--checker", "true", "--", "sh", "-c", "echo x > f"]);
    assert_eq!(code, 2);
    assert_eq!(v["verdict"], "INCONCLUSIVE");
    assert!(v["result"]["reason"]
        .as_str()
        .unwrap()
        .contains("nothing was promised"));
    // Unless the checker tests consistency alone: then it runs, and the
    // torn write (zeros) is what a consistency check catches.
    let checker = "[ ! -s f ] || [ \"$(cat f)\" = x ] || { echo 'f is garbage' >&2; exit 1; }";
    let workload = ["--", "sh", "-c", "echo x > f"];
    let mut args = vec![
        "--consistency-only",
        "--model",
        "process",
        "--checker",
        checker,
    ];
    args.extend(workload);
    let (code, v, _) = run_json(&s, &args);
    assert_eq!((code, v["verdict"].as_str()), (0, Some("PASS")), "{v}");
    args[2] = "posix";
    let (code, v, _) = run_json(&s, &args);
    assert_eq!((code, v["verdict"].as_str()), (1, Some("FAIL")), "{v}");
    assert!(failing(&v, "posix")
        .iter()
        .any(|f| f["torn"][1] == "zeros" && f["reason"] == "f is garbage"));
}

/// Runs a checker on a workload that writes a file and promises it.
fn run_checker_on_a_save(s: &Scratch, checker: &str) -> (i32, Value) {
    let (code, v, _) = run_json(
        s,
        &[
            "--checker",
            checker,
            "--",
            "sh",
            "-c",
            "echo x > f; echo saved",
        ],
    );
    (code, v)
}

#[test]
fn a_checker_that_cannot_fail_is_inconclusive() {
    let s = Scratch::new();
    let (code, v) = run_checker_on_a_save(&s, "true");
    assert_eq!(code, 2);
    assert_eq!(v["verdict"], "INCONCLUSIVE");
    assert!(v["result"]["reason"]
        .as_str()
        .unwrap()
        .contains("the check cannot fail"));
}

#[test]
fn a_checker_that_always_fails_is_a_broken_harness() {
    let s = Scratch::new();
    let (code, v) = run_checker_on_a_save(&s, "echo always >&2; exit 3");
    assert_eq!(code, 2);
    assert_eq!(v["verdict"], "HARNESS BROKEN");
    assert_eq!(v["result"]["verdict"], "HARNESS BROKEN");
    assert_eq!(v["result"]["all_applied"]["reason"], "always");
    assert!(v["result"]["models"].as_array().unwrap().is_empty());
}

#[test]
fn a_hanging_checker_is_killed_at_the_timeout_and_reported() {
    let s = Scratch::new();
    // Hangs only where the new file exists but is still empty; a grandchild
    // would write a marker later if the group were not killed.
    let marker = s.path("marker");
    let checker = format!(
        "if [ -e f ] && [ ! -s f ]; then (sleep 3; touch {}) & sleep 100; fi; \
         [ -s f ] || ! grep -qx saved \"$BLACKOUT_ACKS_FILE\"",
        marker.display()
    );
    let start = Instant::now();
    let (code, v, out) = run_json(
        &s,
        &[
            "--model",
            "process",
            "--timeout",
            "1",
            "--checker",
            &checker,
            "--",
            "sh",
            "-c",
            "echo x > f; echo saved",
        ],
    );
    assert!(start.elapsed() < Duration::from_secs(60));
    assert_eq!(code, 2, "{}", text(&out.stderr));
    assert_eq!(v["verdict"], "ERROR");
    let errors = model(&v, "process")["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{v}");
    assert_eq!(errors[0]["outcome"], "timed_out");
    assert!(v["result"]["reason"]
        .as_str()
        .unwrap()
        .contains("timed out"));
    std::thread::sleep(Duration::from_secs(4));
    assert!(!marker.exists(), "the checker's process group survived");
}

#[test]
fn a_missing_checker_is_an_error_after_the_first_state() {
    let s = Scratch::new();
    let count = s.path("count");
    let checker = format!("echo run >> {}; no-such-checker-anywhere", count.display());
    let (code, v, _) = run_json(
        &s,
        &[
            "--checker",
            &checker,
            "--",
            "sh",
            "-c",
            "for i in 1 2 3 4 5 6; do echo $i > f$i; done; echo saved",
        ],
    );
    assert_eq!(code, 2);
    assert_eq!(v["verdict"], "ERROR");
    assert!(v["result"]["reason"]
        .as_str()
        .unwrap()
        .contains("no-such-checker-anywhere: not found"));
    assert_eq!(fs::read_to_string(&count).unwrap(), "run\n");
}

#[test]
fn a_written_out_state_fails_the_same_way_by_hand() {
    let s = Scratch::new();
    let (_, v, trace) = run_save(&s, "no-dir-fsync");
    let simplest = &failing(&v, "posix")[0];
    let id = simplest["id"].as_str().unwrap();
    let out_dir = s.path("state");
    let out = s
        .blackout()
        .arg("state")
        .arg(&trace)
        .arg(id)
        .arg(&out_dir)
        .args(["--checker", &save_checker()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("check it by hand:"));
    assert_eq!(
        fs::read_to_string(out_dir.join("doc.txt")).unwrap(),
        "version 1\n"
    );
    let acks = s.path("state.acks");
    assert_eq!(fs::read_to_string(&acks).unwrap(), "saved\n");
    // The checker by hand, as a user would run it.
    let by_hand = Command::new("sh")
        .arg("-c")
        .arg(save_checker())
        .current_dir(&out_dir)
        .env(
            "BLACKOUT_ACKED",
            fs::read_to_string(&acks).unwrap().trim_end(),
        )
        .env("BLACKOUT_ACKS_FILE", &acks)
        .env("BLACKOUT_STATE", id)
        .output()
        .unwrap();
    assert_eq!(by_hand.status.code(), Some(1));
    assert_eq!(
        text(&by_hand.stderr).trim_end(),
        simplest["reason"].as_str().unwrap()
    );
    // A state id that does not fit the trace is refused.
    let out = s
        .blackout()
        .arg("state")
        .arg(&trace)
        .arg("c99.lost1")
        .arg(s.path("other"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).starts_with("error: state c99.lost1: crash point c99 is past"));
}

#[test]
fn states_lists_the_distinct_states_of_a_model() {
    let s = Scratch::new();
    let (_, _, trace) = run_save(&s, "no-dir-fsync");
    let out = s
        .blackout()
        .arg("states")
        .arg(&trace)
        .args(["--model", "posix"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let listing = text(&out.stdout);
    let ids: Vec<&str> = listing.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(ids.contains(&"c0"));
    assert!(ids.contains(&"c5.lost3"), "{listing}");
    assert!(listing.starts_with("# posix: "));
    assert!(listing.contains("covered: every subset"));
    // Each listed id is distinct and parses back.
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), ids.len());
}

/// Stops blackout with `sig` while a checker sleeps, and asserts nothing is
/// left: no temp dir, no checker process.
fn stop_while_checking(sig: nix::sys::signal::Signal) {
    let s = Scratch::new();
    let started = s.path("started");
    let marker = unique_sleep();
    let checker = format!("touch {}; sleep {marker}", started.display());
    let mut child = s
        .blackout()
        .args([
            "run",
            // Where it can be mounted, the FUSE view must go too.
            "--materializer",
            crate::common::view_or_dir(),
            "--checker",
            &checker,
            "--",
            "sh",
            "-c",
            "echo x > f; echo saved",
        ])
        .spawn()
        .unwrap();
    signal_when(&s, &mut child, sig, || started.exists());
    assert_eq!(processes_with(&marker), Vec::<String>::new());
}

#[test]
fn sigterm_while_checking_leaves_nothing() {
    stop_while_checking(nix::sys::signal::Signal::SIGTERM);
}

#[test]
fn sighup_while_checking_leaves_nothing() {
    stop_while_checking(nix::sys::signal::Signal::SIGHUP);
}

#[test]
fn ctrl_c_while_checking_leaves_no_temp_dir() {
    stop_while_checking(nix::sys::signal::Signal::SIGINT);
}

#[test]
fn a_checker_that_rejects_the_start_with_nothing_promised_is_harness_broken() {
    // It demands the new document whatever was promised: the state before
    // the workload, with nothing promised, fails it.
    let s = Scratch::new();
    let script = examples().join("save.sh");
    let (code, v, out) = run_json(
        &s,
        &[
            "--setup",
            "echo 'version 1' > doc.txt",
            "--checker",
            "grep -qx 'version 2' doc.txt || { echo 'doc.txt is not version 2' >&2; exit 1; }",
            "--",
            script.to_str().unwrap(),
            "full",
        ],
    );
    assert_eq!(code, 2, "{}", text(&out.stderr));
    assert_eq!(v["verdict"], "HARNESS BROKEN");
    let reason = v["result"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("before the workload with nothing promised"),
        "{reason}"
    );
    assert!(reason.contains("doc.txt is not version 2"), "{reason}");
}

/// A trace of a program that creates `files` files, writes a byte to each,
/// and prints "saved", built from a generated log (recording 20,000 files
/// under strace would take minutes).
fn many_files_trace(path: &std::path::Path, files: usize) {
    use blackout::oplog::trace::{Trace, TraceMeta};
    use blackout::oplog::tree::Tree;
    let hex = |s: &str| -> String { s.bytes().map(|b| format!("\\x{b:02x}")).collect() };
    let mut log = String::new();
    for i in 0..files {
        log.push_str(&format!(
            "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT, 0644) = 3\n1 write(3, \"\\x78\", 1) = 1\n1 close(3) = 0\n",
            hex(&format!("f{i}"))
        ));
    }
    log.push_str(&format!("1 write(1, \"{}\", 6) = 6\n", hex("saved\n")));
    let tree = Tree::default();
    let replayed = blackout::record::replay::replay(log.as_bytes(), &tree, b"/d").unwrap();
    Trace::new(&tree, replayed, TraceMeta::default())
        .save(path)
        .unwrap();
}

#[test]
fn ctrl_c_while_states_are_built_stops_within_a_second() {
    use std::time::{Duration, Instant};
    let s = Scratch::new();
    let trace = s.path("many.trace");
    many_files_trace(&trace, 20_000);
    let runs = s.path("runs");
    fs::create_dir(&runs).unwrap();
    // The pre-check and the nothing-lost check run first; once both have
    // run, the states are being built.
    let checker = format!(
        "touch {}/$BLACKOUT_STATE; [ -e f0 ] || exit 1",
        runs.display()
    );
    let mut child = s
        .blackout()
        .args(["run", "--model", "posix", "--checker", &checker, "--trace"])
        .arg(&trace)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while fs::read_dir(&runs).unwrap().count() < 2 {
        assert!(start.elapsed() < Duration::from_secs(60), "never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    let signalled = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = child.wait().unwrap();
    let took = signalled.elapsed();
    assert_eq!(status.code(), Some(130));
    assert!(took < Duration::from_secs(1), "took {took:?} to stop");
    // Nothing but the two pre-checks ran: the signal came while building.
    assert_eq!(fs::read_dir(&runs).unwrap().count(), 2);
    s.assert_clean();
}

/// Runs the no-fsync save with `-j 2` and a checker that first removes
/// every other worker's slot it can reach (`../../w*` but its own).
fn run_with_a_sibling_deleting_checker(s: &Scratch, isolation: bool) -> std::process::Output {
    let script = examples().join("save.sh");
    let checker = format!(
        r#"own=$(cd .. && pwd); for d in ../../w*; do [ "$(cd "$d" && pwd)" = "$own" ] || rm -rf "$d"; done 2>/dev/null; {}"#,
        save_checker()
    );
    let mut cmd = s.blackout();
    if !isolation {
        cmd.env("BLACKOUT_NO_ISOLATION", "1");
    }
    // Slots whose states are written out: what a sibling's checker can
    // remove (a FUSE view's files live in memory, out of its reach with
    // isolation, and in its reach without, as these are).
    cmd.args([
        "run",
        "--materializer",
        "dir",
        "-j",
        "2",
        "--model",
        "posix",
        "--setup",
        "echo 'version 1' > doc.txt",
    ])
    .args([
        "--checker",
        &checker,
        "--",
        script.to_str().unwrap(),
        "no-fsync",
    ])
    .output()
    .unwrap()
}

#[test]
fn a_checker_cannot_reach_a_siblings_slot() {
    // Isolated (root here may make mount namespaces): the removal fails
    // inside the checker's own view, and the verdict is the one the plain
    // checker gets.
    if std::env::var_os("BLACKOUT_NO_ISOLATION").is_some() {
        return;
    }
    let s = Scratch::new();
    let out = run_with_a_sibling_deleting_checker(&s, true);
    s.assert_clean();
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(report.contains("FAIL"), "{report}");
    let script = examples().join("save.sh");
    let plain = s
        .blackout()
        .args(["run", "-j", "2", "--model", "posix"])
        .args(["--setup", "echo 'version 1' > doc.txt"])
        .args(["--checker", &save_checker(), "--"])
        .args([script.to_str().unwrap(), "no-fsync"])
        .output()
        .unwrap();
    s.assert_clean();
    // Two recordings: the same ops, at log lines that may differ.
    let verdicts = |r: &str| {
        r.lines()
            .filter(|l| l.contains("states") || l.starts_with("cause"))
            .map(blackout::export::text::without_log_lines)
            .collect::<Vec<_>>()
    };
    assert_eq!(verdicts(&report), verdicts(&text(&plain.stdout)));
}

#[test]
fn without_isolation_a_checker_that_deletes_a_siblings_slot_stops_the_run_naming_the_path() {
    // Two workers; the checker of every state removes the other worker's
    // whole slot: the next state written there fails, and the error names
    // the path and what was being done.
    let s = Scratch::new();
    let out = run_with_a_sibling_deleting_checker(&s, false);
    s.assert_clean();
    let err = text(&out.stderr);
    let last = err.lines().last().unwrap_or_default();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(last.starts_with("error: "), "{err}");
    assert!(last.contains("/w"), "the path is named: {last}");
    assert_eq!(
        last.matches("did a checker change files outside its own state directory")
            .count(),
        1,
        "said once: {last}"
    );
}

#[test]
fn what_a_checker_detaches_is_killed_and_reported() {
    let s = Scratch::new();
    let script = examples().join("save.sh");
    let marker = unique_sleep();
    let checker = format!("setsid sleep {marker} >/dev/null 2>&1 & {}", save_checker());
    let out = s
        .blackout()
        .args([
            "run",
            "--model",
            "process",
            "--setup",
            "echo 'version 1' > doc.txt",
        ])
        .args([
            "--checker",
            &checker,
            "--",
            script.to_str().unwrap(),
            "full",
        ])
        .output()
        .unwrap();
    s.assert_clean();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(processes_with(&marker), Vec::<String>::new());
    let report = text(&out.stdout);
    assert!(
        report.contains("note: the checker left") && report.contains("killed"),
        "{report}"
    );
}

#[test]
fn a_reproduce_line_refuses_a_trace_overwritten_by_another_run() {
    let s = Scratch::new();
    let script = examples().join("save.sh");
    let trace = s.path("run.trace");
    let record = |mode: &str| {
        s.blackout()
            .current_dir(s.root.path())
            .args(["run", "--model", "posix", "-o", "run.trace"])
            .args(["--setup", "echo 'version 1' > doc.txt"])
            .args(["--checker", &save_checker(), "--"])
            .arg(&script)
            .arg(mode)
            .output()
            .unwrap()
    };
    let out = record("no-dir-fsync");
    assert_eq!(out.status.code(), Some(1));
    let report = text(&out.stdout);
    let line = report
        .lines()
        .find_map(|l| l.trim().strip_prefix("reproduce: "))
        .unwrap()
        .to_string();
    assert!(line.contains("--trace-id "), "{line}");
    let reproduce = || {
        Command::new("sh")
            .arg("-c")
            .arg(line.replacen("blackout", s.blackout().get_program().to_str().unwrap(), 1))
            .current_dir(s.root.path())
            .output()
            .unwrap()
    };
    let ok = reproduce();
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    // Another run saves its recording at the same path: the line no longer
    // names that recording, and says so.
    assert_eq!(record("full").status.code(), Some(0));
    assert!(trace.exists());
    fs::remove_dir_all(s.root.path().join(line.split_whitespace().nth(4).unwrap())).unwrap();
    let refused = reproduce();
    assert_eq!(refused.status.code(), Some(2));
    let err = text(&refused.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("is not the recording that state was found in"),
        "{err}"
    );
}

#[test]
fn a_full_tmpdir_while_writing_states_is_named() {
    // The state with every op applied does not fit in the scratch when it
    // is written out; shown through the FUSE view it takes no room there.
    let s = Scratch::new();
    let trace = s.path("many.trace");
    many_files_trace(&trace, 2_000);
    let args = |m: &'static str| {
        let mut args: Vec<&std::ffi::OsStr> = ["run", "--materializer", m, "--model", "process"]
            .into_iter()
            .chain(["--consistency-only", "--checker", "true", "--trace"])
            .map(std::ffi::OsStr::new)
            .collect();
        args.push(trace.as_os_str());
        args
    };
    let Some((out, left)) = on_a_small_tmpfs(&s, &args("dir")) else {
        return;
    };
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    let last = err.lines().last().unwrap_or_default();
    assert!(last.contains("No space left on device"), "{err}");
    assert!(last.contains("TMPDIR"), "{err}");
    assert!(left.is_empty(), "left behind: {left:?}");
    if std::path::Path::new("/dev/fuse").exists() {
        fs::remove_dir(s.path("small")).unwrap();
        let (out, left) = on_a_small_tmpfs(&s, &args("fuse")).unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(left.is_empty(), "left behind: {left:?}");
    }
}

#[test]
fn require_exact_turns_a_pass_on_a_sample_into_inconclusive() {
    let s = Scratch::new();
    let (code, _, trace) = run_save(&s, "full");
    assert_eq!(code, 0);
    let trace = trace.to_str().unwrap();
    let checker = save_checker();
    let run = |extra: &[&str]| {
        let mut args = vec!["--trace", trace, "--checker", &checker, "--require-exact"];
        args.extend_from_slice(extra);
        run_json(&s, &args)
    };
    // Every state checked: an exact PASS passes the gate.
    let (code, v, _) = run(&[]);
    assert_eq!((code, v["verdict"].as_str()), (0, Some("PASS")), "{v:#}");
    // One representative per class, nothing more: a sample.
    let (code, v, _) = run(&["--representatives", "1", "--check-budget", "0"]);
    assert_eq!(code, 2, "{v:#}");
    assert_eq!(v["verdict"], "INCONCLUSIVE");
    let reason = v["result"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("a PASS on a sample, and --require-exact accepts none: ")
            && reason.contains("distinct states checked")
            && reason.contains("--check-budget 0 checked no more"),
        "{reason}"
    );
}

#[test]
fn a_check_budget_that_is_not_a_duration_is_refused_in_one_line() {
    let s = Scratch::new();
    for (args, says) in [
        (vec!["--check-budget", "soon"], "--check-budget"),
        (vec!["--check-budget=-5"], "--check-budget"),
        (vec!["--check-budget", "5m", "--exhaustive"], "--exhaustive"),
    ] {
        let out = s
            .blackout()
            .arg("run")
            .args(&args)
            .args(["--checker", "true", "--", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(out.stdout.is_empty());
    }
    for ok in ["0", "90", "1.5", "90s", "2m", "1h 30m", "500ms"] {
        let out = s
            .blackout()
            .args(["run", "--check-budget", ok, "--help"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{ok}: {}", text(&out.stderr));
    }
    s.assert_clean();
}

/// Kills blackout with SIGKILL while a checker sleeps (and the checker it
/// left): its scratch stays; `blackout clean` removes it, and so does the
/// next run when it starts. A live run's scratch is never touched.
#[test]
fn scratch_left_by_a_killed_run_is_removed_by_clean_and_by_the_next_run() {
    let s = Scratch::new();
    let tmp = s.path("tmp");
    let killed_run = |s: &Scratch| {
        let started = s.path("started");
        let _ = fs::remove_file(&started);
        let marker = unique_sleep();
        let checker = format!("touch {}; sleep {marker}", started.display());
        let mut child = s
            .blackout()
            .args(["run", "--materializer", crate::common::view_or_dir()])
            .args(["--checker", &checker, "--"])
            .args(["sh", "-c", "echo x > f; echo saved"])
            .spawn()
            .unwrap();
        while !started.exists() {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        for p in processes_with(&marker) {
            let pid: i32 = p.split(':').next().unwrap().parse().unwrap();
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let left: Vec<_> = fs::read_dir(&tmp)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(!left.is_empty(), "a SIGKILL leaves the scratch behind");
        left
    };
    let left = killed_run(&s);
    let out = s
        .blackout()
        .args(["clean", "--dir"])
        .arg(&tmp)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for dir in &left {
        assert!(text(&out.stdout).contains(&format!("removed {}", dir.display())));
    }
    assert_eq!(crate::common::mounts_under(&tmp), Vec::<String>::new());
    s.assert_clean();
    let out = s.blackout().args(["clean"]).output().unwrap();
    assert!(text(&out.stdout).starts_with("nothing to clean in "));
    // The next run cleans up before it starts; a directory that looks like
    // ours but has no owner mark is never judged.
    killed_run(&s);
    let foreign = tmp.join("blackout-foreign");
    fs::create_dir(&foreign).unwrap();
    let out = s
        .blackout()
        .args(["run", "--consistency-only", "--checker", "true", "--"])
        .args(["sh", "-c", "echo saved"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("scratch director"),
        "{}",
        text(&out.stderr)
    );
    let left: Vec<_> = fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(left, [foreign]);
}

/// `--fix-time` sets how long fix verification may take in all (the
/// report says the bound it had); a value that is not a duration is one
/// line and exit 2.
#[test]
fn fix_time_sets_the_bound_of_fix_verification() {
    let s = Scratch::new();
    let script = examples().join("save.sh");
    let checker = save_checker();
    let args = |fix_time: &'static str| {
        let mut a: Vec<String> = ["--model", "posix", "--fix-time", fix_time, "--setup"]
            .map(String::from)
            .to_vec();
        a.extend([
            "echo 'version 1' > doc.txt".into(),
            "--checker".into(),
            checker.clone(),
        ]);
        a.extend([
            "--".into(),
            script.to_string_lossy().into_owned(),
            "no-fsync".into(),
        ]);
        a
    };
    let with = args("7m");
    let with: Vec<&str> = with.iter().map(String::as_str).collect();
    let (code, v, _) = run_json(&s, &with);
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(v["result"]["fix_bound_seconds"], 420.0, "{v:#}");
    let set = &model(&v, "posix")["fix_set"];
    assert_eq!(
        (&set["result"], &set["check"]["passes"]),
        (&serde_json::json!("found"), &serde_json::json!(true)),
        "{v:#}"
    );
    let out = s.blackout().arg("run").args(args("soon")).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--fix-time") && err.contains("`soon` is not a duration"),
        "{err}"
    );
}
