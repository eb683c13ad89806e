//! `--recorder native`: the same op log as strace's from the command line,
//! reports naming calls where strace's name log lines, the flags only
//! strace records refused on one line, and a recording stopped from
//! outside (SIGKILL, SIGTERM) leaving no process behind.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{processes_with, unique_sleep, Scratch};

fn repo() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `blackout ops` of save.sh recorded with `recorder`, call numbers left
/// out.
fn ops_of_save(s: &Scratch, recorder: &str, mode: &str) -> String {
    let trace = s.path(&format!("{recorder}-{mode}.trace"));
    let save = repo().join("examples/save/save.sh");
    let out = s
        .blackout()
        .args(["record", "--recorder", recorder, "-o"])
        .arg(&trace)
        .args(["--setup", "printf 'version 1\\n' > doc.txt", "--", "sh"])
        .arg(&save)
        .arg(mode)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = s.blackout().arg("ops").arg(&trace).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .skip(1)
        .map(|l| {
            let (head, tail) = l.split_once('@').unwrap_or((l, ""));
            let tail = tail.trim_start_matches(|c: char| c.is_ascii_digit());
            format!("{head}@{tail}\n")
        })
        .collect()
}

#[test]
fn native_and_strace_recordings_print_the_same_op_log() {
    let s = Scratch::new();
    for mode in ["full", "in-place"] {
        let strace = ops_of_save(&s, "strace", mode);
        let native = ops_of_save(&s, "native", mode);
        assert_eq!(strace, native, "{mode}");
        assert!(native.contains("doc.txt"), "{native}");
    }
    s.assert_clean();
}

#[test]
fn flags_only_strace_records_are_refused_with_one_line() {
    let s = Scratch::new();
    let cases: [&[&str]; 5] = [
        &[
            "record",
            "-o",
            "t",
            "--recorder",
            "native",
            "--stacks",
            "--",
            "true",
        ],
        &[
            "record",
            "-o",
            "t",
            "--recorder",
            "native",
            "--sync-times",
            "--",
            "true",
        ],
        &[
            "record",
            "-o",
            "t",
            "--recorder",
            "native",
            "--without-sync",
            "fsync(f)",
            "--",
            "true",
        ],
        &[
            "run",
            "--checker",
            "true",
            "--recorder",
            "native",
            "--fail-syncs",
            "--",
            "true",
        ],
        &[
            "run",
            "--checker",
            "true",
            "--recorder",
            "native",
            "--backend",
            "block",
            "--",
            "true",
        ],
    ];
    for args in cases {
        let out = s.blackout().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("needs --recorder strace"), "{args:?}: {err}");
    }
    s.assert_clean();
}

/// Starts `blackout record --recorder native` of a shell that leaves a
/// sleep in the background and waits on another, and waits until both
/// sleeps run.
fn recording_with_sleeps(s: &Scratch, marker: &str) -> std::process::Child {
    let script = format!("sleep {marker} & sleep {marker}; echo never");
    let child = s
        .blackout()
        .args(["record", "--recorder", "native", "-o"])
        .arg(s.path("t.trace"))
        .args(["--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while processes_with(marker).len() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the sleeps never ran"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// Waits (up to 10 s) until no process with `marker` is left.
fn assert_none_left(marker: &str) {
    let start = Instant::now();
    loop {
        let left = processes_with(marker);
        if left.is_empty() {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "left behind: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_killed_native_recording_leaves_no_process_behind() {
    let s = Scratch::new();
    let marker = unique_sleep();
    let mut child = recording_with_sleeps(&s, &marker);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_none_left(&marker);
}

#[test]
fn an_interrupted_or_terminated_native_recording_stops_its_workload_and_cleans_up() {
    use nix::sys::signal::Signal;
    // Ctrl-C, SIGTERM, SIGHUP: exit 128 + the signal's number.
    for (signal, code) in [
        (Signal::SIGINT, 130),
        (Signal::SIGTERM, 143),
        (Signal::SIGHUP, 129),
    ] {
        let s = Scratch::new();
        let marker = unique_sleep();
        let mut child = recording_with_sleeps(&s, &marker);
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        nix::sys::signal::kill(pid, signal).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(code), "{signal}");
        assert_none_left(&marker);
        s.assert_clean();
    }
}

#[test]
fn a_native_recording_waits_for_a_child_left_running_as_strace_does() {
    let s = Scratch::new();
    let out = s
        .blackout()
        .args(["record", "--recorder", "native", "-o"])
        .arg(s.path("t.trace"))
        .args([
            "--",
            "sh",
            "-c",
            "(sleep 0.3; echo late > late.txt) & echo early > early.txt",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ops = s
        .blackout()
        .arg("ops")
        .arg(s.path("t.trace"))
        .output()
        .unwrap();
    let ops = String::from_utf8_lossy(&ops.stdout);
    assert!(
        ops.contains("late.txt") && ops.contains("early.txt"),
        "{ops}"
    );
    s.assert_clean();
}

/// `blackout run` of save.sh with `recorder`: its exit code and its text
/// report.
fn report_of_save(s: &Scratch, recorder: &str, mode: &str) -> (Option<i32>, String) {
    let save = repo().join("examples/save/save.sh");
    let check = repo().join("examples/save/check.sh");
    let out = s
        .blackout()
        .args(["run", "--recorder", recorder, "--checker"])
        .arg(format!("sh {}", check.display()))
        .args(["--setup", "printf 'version 1\\n' > doc.txt", "--", "sh"])
        .arg(&save)
        .arg(mode)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.code(), text)
}

/// `blackout run` of save.sh with `recorder`: its exit code and the lines
/// of its report, log line and call numbers left out (the recorders number
/// calls differently), the lines that still name a line or time a state
/// left out.
fn run_save(s: &Scratch, recorder: &str, mode: &str) -> (Option<i32>, Vec<String>) {
    let (code, text) = report_of_save(s, recorder, mode);
    let lines = text
        .lines()
        .map(blackout::export::text::without_log_lines)
        .filter(|l| !l.contains("line ") && !l.contains("per state"))
        .collect();
    (code, lines)
}

#[test]
fn a_run_recorded_natively_reports_what_a_run_under_strace_does() {
    let s = Scratch::new();
    for mode in ["full", "no-dir-fsync"] {
        let (strace_code, strace) = run_save(&s, "strace", mode);
        let (native_code, native) = run_save(&s, "native", mode);
        assert_eq!(strace_code, native_code, "{mode}");
        assert_eq!(strace, native, "{mode}");
        assert!(
            native.iter().any(|l| l.starts_with("verdict:")),
            "{native:?}"
        );
    }
    s.assert_clean();
}

#[test]
fn a_native_report_names_calls_where_a_strace_one_names_log_lines() {
    let s = Scratch::new();
    let (code, native) = report_of_save(&s, "native", "no-dir-fsync");
    assert_eq!(code, Some(1), "{native}");
    assert!(native.contains("(op 3, call "), "{native}");
    assert!(native.contains("call "), "{native}");
    assert!(!native.contains("log line"), "{native}");
    let (code, strace) = report_of_save(&s, "strace", "no-dir-fsync");
    assert_eq!(code, Some(1), "{strace}");
    assert!(strace.contains("(op 3, log line "), "{strace}");
    s.assert_clean();
}

#[test]
fn a_program_that_forks_threads_is_signalled_and_execs_gets_the_same_verdicts_natively() {
    let s = Scratch::new();
    // tests/programs/processes.c: a thread, a forked child writing its own
    // file, a signal interrupting a restarted read, a group-stop, an exec, a
    // rename, a child still running at the end; it promises "done".
    let src = std::fs::read_to_string(repo().join("tests/programs/processes.c")).unwrap();
    let bin = crate::common::compile(&s, "processes", &src);
    let report = |recorder: &str| {
        let out = s
            .blackout()
            .args(["run", "--recorder", recorder, "--checker"])
            .arg("test -z \"$BLACKOUT_ACKED\" || { grep -q thread log && test -s sub/child.txt; }")
            .arg("--")
            .arg(&bin)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let lines: Vec<String> = text
            .lines()
            .map(blackout::export::text::without_log_lines)
            .filter(|l| !l.contains("per state"))
            .collect();
        (out.status.code(), lines)
    };
    let (strace_code, strace) = report("strace");
    let (native_code, native) = report("native");
    assert_eq!(strace_code, native_code, "{native:#?}");
    assert_eq!(strace, native);
    // sub/child.txt's name is never made durable: a FAIL under posix only.
    assert_eq!(native_code, Some(1), "{native:#?}");
    assert!(
        native.iter().any(|l| l.starts_with("posix    FAIL")),
        "{native:#?}"
    );
    assert!(
        native.iter().any(|l| l.starts_with("process  PASS")),
        "{native:#?}"
    );
    s.assert_clean();
}
