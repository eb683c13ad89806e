//! End-to-end tests: live programs recorded under real strace, through the
//! `blackout` command a user types.

use std::fs;
use std::process::Command;

use crate::common::{
    compile, on_a_small_tmpfs, ops_json, processes_with, signal_when, unique_sleep, Scratch,
};
use serde_json::Value;

fn ops(v: &Value) -> &Vec<Value> {
    v["ops"].as_array().unwrap()
}

fn labels(v: &Value) -> Vec<String> {
    ops(v)
        .iter()
        .map(|o| o["label"].as_str().unwrap().to_string())
        .collect()
}

fn never_synced(v: &Value) -> Vec<bool> {
    ops(v)
        .iter()
        .map(|o| o["never_synced"].as_bool().unwrap())
        .collect()
}

/// Runs a command and returns (exit code, stderr).
fn run(mut c: Command) -> (Option<i32>, String) {
    let out = c.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn shell_save_without_directory_fsync_marks_the_rename_never_synced() {
    let s = Scratch::new();
    let v = s.record(
        &["--setup", "echo old > doc.txt"],
        &[
            "sh",
            "-c",
            "printf new > doc.tmp && sync doc.tmp && mv doc.tmp doc.txt && echo saved",
        ],
    );
    assert_eq!(labels(&v), ["create", "write", "fsync", "rename", "output"]);
    assert_eq!(never_synced(&v), [true, false, false, true, false]);
    let o = ops(&v);
    // The create, the write, the fsync and the rename all name one new inode;
    // the rename replaces the document's initial inode (1).
    let ino = o[0]["ino"].as_u64().unwrap();
    assert!(ino >= 2);
    assert_eq!(o[1]["ino"].as_u64(), Some(ino));
    assert_eq!(o[2]["ino"].as_u64(), Some(ino));
    assert_eq!(o[3]["ino"].as_u64(), Some(ino));
    assert_eq!(o[3]["replaced"].as_u64(), Some(1));
    assert_eq!(o[1]["text"], "new");
    assert_eq!(o[4]["text"], "saved\n");
}

#[test]
fn shell_save_with_directory_fsync_has_nothing_unsynced() {
    let s = Scratch::new();
    let v = s.record(
        &[],
        &[
            "sh",
            "-c",
            "printf new > doc.tmp && sync doc.tmp && mv doc.tmp doc.txt && sync . && echo saved",
        ],
    );
    assert_eq!(
        labels(&v),
        ["create", "write", "fsync", "rename", "fsync", "output"]
    );
    assert!(never_synced(&v).iter().all(|n| !n));
    assert_eq!(
        ops(&v)[4]["ino"].as_u64(),
        Some(0),
        "fsync of the directory"
    );
}

#[test]
fn python_appenders_and_a_forked_child_share_offsets() {
    let s = Scratch::new();
    let prog = r#"
import os
a = os.open("log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
b = os.open("log", os.O_WRONLY | os.O_APPEND)
os.write(a, b"aa")
os.write(b, b"bbb")
os.write(a, b"c")
f = os.open("data", os.O_WRONLY | os.O_CREAT, 0o644)
os.write(f, b"parent1")
pid = os.fork()
if pid == 0:
    os.write(f, b"child")
    os._exit(0)
os.waitpid(pid, 0)
os.write(f, b"parent2")
os.fdatasync(f)
print("done", flush=True)
"#;
    let v = s.record(&[], &["python3", "-c", prog]);
    let writes: Vec<(u64, u64, u64)> = ops(&v)
        .iter()
        .filter(|o| o["label"] == "write")
        .map(|o| {
            (
                o["ino"].as_u64().unwrap(),
                o["off"].as_u64().unwrap(),
                o["data"]["len"].as_u64().unwrap(),
            )
        })
        .collect();
    let log = writes[0].0;
    let data = writes[3].0;
    assert_ne!(log, data);
    assert_eq!(
        writes,
        [
            (log, 0, 2),
            (log, 2, 3),
            (log, 5, 1),
            (data, 0, 7),
            (data, 7, 5),
            (data, 12, 7)
        ]
    );
    // The log file is never synced; the data file's writes are (fdatasync).
    let marks: Vec<(String, bool)> = ops(&v)
        .iter()
        .map(|o| {
            (
                o["label"].as_str().unwrap().to_string(),
                o["never_synced"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        marks.iter().filter(|(l, n)| l == "write" && *n).count(),
        3,
        "{marks:?}"
    );
    assert_eq!(labels(&v).last().map(String::as_str), Some("output"));
}

#[test]
fn c_program_tmpfile_linkat_pwrite_and_threads() {
    let s = Scratch::new();
    let bin = compile(
        &s,
        "prog",
        r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static int fd;
static void *worker(void *arg) {
    char c = *(char *)arg;
    for (int i = 0; i < 5; i++) write(fd, &c, 1);
    return 0;
}
int main(void) {
    int t = open(".", O_TMPFILE | O_RDWR, 0644);
    pwrite(t, "hello", 5, 10);
    fdatasync(t);
    linkat(t, "", AT_FDCWD, "published", AT_EMPTY_PATH);
    fd = open("threads", O_WRONLY | O_CREAT | O_APPEND, 0644);
    pthread_t a, b;
    char ca = 'a', cb = 'b';
    pthread_create(&a, 0, worker, &ca);
    pthread_create(&b, 0, worker, &cb);
    pthread_join(a, 0);
    pthread_join(b, 0);
    int d = open(".", O_RDONLY | O_DIRECTORY);
    fsync(d);
    printf("ok\n");
    return 0;
}
"#,
    );
    let v = s.record(&[], &[bin.to_str().unwrap()]);
    let l = labels(&v);
    assert_eq!(&l[..4], ["write", "fdatasync", "link", "create"]);
    assert_eq!(l.iter().filter(|x| *x == "write").count(), 11);
    let o = ops(&v);
    assert_eq!(o[0]["off"].as_u64(), Some(10));
    assert_eq!(
        o[0]["ino"], o[2]["ino"],
        "linkat publishes the O_TMPFILE inode"
    );
    assert_eq!(o[2]["new"], false);
    // The ten one-byte appends from two threads land at offsets 0..10.
    let mut offs: Vec<u64> = o[4..14]
        .iter()
        .map(|w| w["off"].as_u64().unwrap())
        .collect();
    offs.sort();
    assert_eq!(offs, (0..10).collect::<Vec<_>>());
    // The directory fsync covers the link and the create; the appends stay
    // never synced.
    let ns = never_synced(&v);
    assert!(!ns[2] && !ns[3]);
    assert!(ns[4..14].iter().all(|n| *n));
}

#[test]
fn paths_outside_the_directory_are_ignored_in_a_live_run() {
    let s = Scratch::new();
    let outside = s.path("outside");
    fs::create_dir(&outside).unwrap();
    let script = format!(
        "ln -s {o} link && echo a > link/via-symlink && echo b > {o}/absolute && echo c > ../escape-$$ && rm ../escape-$$ && echo d > inside && echo ok",
        o = outside.display()
    );
    let v = s.record(&[], &["sh", "-c", &script]);
    assert_eq!(labels(&v), ["symlink", "create", "write", "output"]);
    assert_eq!(ops(&v)[1]["path"], "inside");
    assert!(v["stats"]["outside"].as_u64().unwrap() >= 4);
}

#[test]
fn a_hostile_log_never_reaches_outside_the_directory() {
    let s = Scratch::new();
    let victim = s.path("victim");
    fs::create_dir(&victim).unwrap();
    fs::write(victim.join("keep"), "precious").unwrap();
    let hex = |p: &str| -> String { p.bytes().map(|b| format!("\\x{b:02x}")).collect() };
    let dir = s.path("dut");
    let v = victim.display().to_string();
    let log = [
        format!(
            "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_TRUNC) = 3",
            hex(&format!("{v}/keep"))
        ),
        format!("1 write(3, \"{}\", 3) = 3", hex("bad")),
        format!("1 unlink(\"{}\") = 0", hex(&format!("{v}/keep"))),
        format!("1 symlink(\"{}\", \"{}\") = 0", hex(&v), hex("esc")),
        format!(
            "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT, 0644) = 4",
            hex("esc/new")
        ),
        format!("1 mkdir(\"{}\", 0755) = 0", hex("../../../../tmp/x")),
        format!("1 rename(\"{}\", \"{}\") = 0", hex("esc"), hex("../moved")),
        format!(
            "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT, 0644) = 5",
            hex("fine")
        ),
    ]
    .join("\n")
        + "\n";
    let log_path = s.path("hostile.log");
    fs::write(&log_path, log).unwrap();
    let out = s
        .blackout()
        .args(["ops", "--json", "--strace"])
        .arg(&log_path)
        .arg("--dir")
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Only the symlink, its removal by the rename out, and `fine` are ops.
    assert_eq!(labels(&v), ["symlink", "unlink", "create"]);
    assert_eq!(fs::read_to_string(victim.join("keep")).unwrap(), "precious");
    assert_eq!(fs::read_dir(&victim).unwrap().count(), 1);
    assert!(
        !dir.exists(),
        "replay must not create the directory it models"
    );
}

#[test]
fn a_missing_workload_is_a_clear_error() {
    let s = Scratch::new();
    let mut c = s.blackout();
    c.args(["record", "-o"])
        .arg(s.path("t"))
        .args(["--", "no-such-program-here"]);
    let (code, err) = run(c);
    assert_eq!(code, Some(2));
    assert_eq!(
        err.trim(),
        "error: workload `no-such-program-here` not found in PATH"
    );
    assert!(!s.path("t").exists());
    s.assert_clean();
}

#[test]
fn a_workload_killed_by_a_signal_is_reported() {
    let s = Scratch::new();
    let mut c = s.blackout();
    c.args(["record", "-o"]).arg(s.path("t")).args([
        "--",
        "sh",
        "-c",
        "echo started; kill -KILL $$",
    ]);
    let (code, err) = run(c);
    assert_eq!(code, Some(2));
    assert!(
        err.starts_with("error: workload was killed by SIGKILL"),
        "{err}"
    );
    s.assert_clean();
}

#[test]
fn a_workload_that_cannot_start_is_reported() {
    let s = Scratch::new();
    let not_exec = s.path("not-executable");
    fs::write(&not_exec, "#!/bin/sh\necho hi\n").unwrap();
    let mut c = s.blackout();
    c.args(["record", "-o"])
        .arg(s.path("t"))
        .arg("--")
        .arg(&not_exec);
    let (code, err) = run(c);
    assert_eq!(code, Some(2));
    assert!(err.contains("could not start: EACCES"), "{err}");
    s.assert_clean();
}

#[test]
fn a_missing_strace_is_a_clear_error() {
    let s = Scratch::new();
    let mut c = s.blackout();
    c.env("PATH", s.path("empty-path"))
        .args(["record", "--recorder", "strace", "-o"])
        .arg(s.path("t"))
        .args(["--", "/bin/true"]);
    let (code, err) = run(c);
    assert_eq!(code, Some(2));
    assert!(err.starts_with("error: cannot run strace"), "{err}");
    assert!(err.contains("apt-get install strace"), "{err}");
}

#[test]
fn garbled_and_truncated_logs_name_file_and_line() {
    let s = Scratch::new();
    let log = s.path("bad.log");
    fs::write(
        &log,
        "1 write(1, \"\\x61\\x0a\", 2) = 2\n1 this is not strace\n",
    )
    .unwrap();
    let mut c = s.blackout();
    c.args(["ops", "--strace"]).arg(&log).args(["--dir", "/d"]);
    let (code, err) = run(c);
    assert_eq!(code, Some(2));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("error: {}:2: not a strace line", log.display())),
        "{err}"
    );

    fs::write(&log, "1 write(1, \"\\x61\\x0a\", 2) = 2\n1 write(1, \"\\x6").unwrap();
    let mut c = s.blackout();
    c.args(["ops", "--strace"]).arg(&log).args(["--dir", "/d"]);
    let (code, err) = run(c);
    assert_eq!(code, Some(2));
    assert!(
        err.starts_with(&format!("error: {}:2: ", log.display())),
        "{err}"
    );
}

#[test]
fn an_unmodelable_call_is_refused_with_its_line() {
    let s = Scratch::new();
    let prog = "import mmap, os\nfd = os.open('db', os.O_RDWR | os.O_CREAT, 0o644)\nos.ftruncate(fd, 4096)\nm = mmap.mmap(fd, 4096)\nm[0:5] = b'hello'\nm.flush()\nprint('saved')\n";
    let mut c = s.blackout();
    c.args(["record", "-o"])
        .arg(s.path("t"))
        .arg("--keep-log")
        .arg(s.path("mmap.log"))
        .args(["--", "python3", "-c", prog]);
    let (code, err) = run(c);
    assert_eq!(code, Some(2));
    let prefix = format!("error: {}:", s.path("mmap.log").display());
    assert!(err.starts_with(&prefix), "{err}");
    assert!(
        err.contains(": mmap: maps `db` shared and writable"),
        "{err}"
    );
    assert!(err.contains("--volatile"), "{err}");
    s.assert_clean();
    // Named volatile (rebuilt on restart), the mapping is allowed.
    let mut c = s.blackout();
    c.args(["record", "-o"]).arg(s.path("t")).args([
        "--volatile",
        "d*",
        "--",
        "python3",
        "-c",
        prog,
    ]);
    let (code, err) = run(c);
    assert_eq!(code, Some(0), "{err}");
    let v = ops_json(&s, &s.path("t"));
    assert_eq!(labels(&v).first().map(String::as_str), Some("create"));
    // A bad glob is a clear error before anything runs.
    let mut c = s.blackout();
    c.args(["record", "-o"])
        .arg(s.path("t2"))
        .args(["--volatile", "[", "--", "true"]);
    let (code, err) = run(c);
    assert_eq!(code, Some(2));
    assert!(err.starts_with("error: --volatile `[`"), "{err}");
    s.assert_clean();
}

#[test]
fn a_damaged_trace_is_refused() {
    let s = Scratch::new();
    let t = s.path("t");
    fs::write(&t, "blackout-trace 1\n{\"nope\": 1}\n").unwrap();
    let mut c = s.blackout();
    c.arg("ops").arg(&t);
    let (code, err) = run(c);
    assert_eq!(code, Some(2));
    assert!(err.contains("not a valid trace"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// Records a workload that sleeps, stops blackout with `sig` once the
/// recording has run a bit, and asserts nothing is left: no temp dir, no
/// trace, no strace and no workload process.
fn stop_a_recording(sig: nix::sys::signal::Signal) {
    use std::time::{Duration, Instant};
    let s = Scratch::new();
    let marker = unique_sleep();
    let mut c = s.blackout();
    c.args(["record", "-o"]).arg(s.path("t")).args([
        "--",
        "sh",
        "-c",
        &format!("echo x > f; sleep {marker}"),
    ]);
    let mut child = c.spawn().unwrap();
    let tmp = s.path("tmp");
    let mut since: Option<Instant> = None;
    signal_when(&s, &mut child, sig, || {
        if fs::read_dir(&tmp).unwrap().count() == 0 {
            return false;
        }
        since.get_or_insert_with(Instant::now).elapsed() > Duration::from_millis(300)
    });
    assert!(!s.path("t").exists());
    assert_eq!(processes_with(&marker), Vec::<String>::new());
}

#[test]
fn sigterm_during_a_recording_leaves_nothing() {
    stop_a_recording(nix::sys::signal::Signal::SIGTERM);
}

#[test]
fn sighup_during_a_recording_leaves_nothing() {
    stop_a_recording(nix::sys::signal::Signal::SIGHUP);
}

#[test]
fn ctrl_c_during_a_recording_leaves_no_temp_dir() {
    stop_a_recording(nix::sys::signal::Signal::SIGINT);
}

#[test]
fn a_workload_past_its_timeout_is_killed_and_the_recording_fails() {
    let s = Scratch::new();
    let marker = unique_sleep();
    let started = std::time::Instant::now();
    let out = s
        .blackout()
        .args(["record", "--workload-timeout", "1", "-o"])
        .arg(s.path("t"))
        .args(["--", "sh", "-c", &format!("sleep {marker}")])
        .output()
        .unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: the workload did not finish within 1 s (--workload-timeout)"),
        "{err}"
    );
    assert!(!s.path("t").exists());
    assert_eq!(processes_with(&marker), Vec::<String>::new());
    s.assert_clean();
    // A timeout that is not a positive number is refused.
    let out = s
        .blackout()
        .args(["record", "--workload-timeout", "0", "-o"])
        .arg(s.path("t"))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_fatal_error_under_json_is_a_json_object_too() {
    let s = Scratch::new();
    let out = s
        .blackout()
        .args(["run", "--json", "--checker", "true", "--trace"])
        .arg(s.path("missing.trace"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["error"].as_str().unwrap().contains("missing.trace"),
        "{v}"
    );
    assert_eq!(v["exit_code"], 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: "), "{err}");
}

#[test]
fn zero_jobs_is_refused() {
    let s = Scratch::new();
    let out = s
        .blackout()
        .args(["run", "-j", "0", "--checker", "true", "--trace"])
        .arg(s.path("t"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("-j"));
}

/// Runs blackout with `args` and `TMPDIR` set to `tmpdir`; returns its exit
/// code and its stderr, which must be one `error:` line.
fn one_error_line(s: &Scratch, tmpdir: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let out = s
        .blackout()
        .env("TMPDIR", tmpdir)
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    (out.status.code(), errors[0].to_string())
}

#[test]
fn errors_name_the_path_and_the_cause() {
    let s = Scratch::new();
    let trace = s.path("t");
    let t = trace.to_str().unwrap();
    let tmp = s.path("tmp");
    // --keep-log into a missing directory.
    let (code, e) = one_error_line(
        &s,
        &tmp,
        &[
            "record",
            "-o",
            t,
            "--keep-log",
            "/missing/dir/log",
            "--",
            "true",
        ],
    );
    assert_eq!(code, Some(2));
    assert!(
        e.contains("--keep-log /missing/dir/log: cannot write it"),
        "{e}"
    );
    // A missing TMPDIR, recording and checking.
    let missing = s.path("no-such-tmp");
    let (code, e) = one_error_line(&s, &missing, &["record", "-o", t, "--", "true"]);
    assert_eq!(code, Some(2));
    assert!(e.contains("no-such-tmp") && e.contains("TMPDIR"), "{e}");
    let ok = s
        .blackout()
        .args(["record", "-o", t, "--", "sh", "-c", "echo saved"])
        .output()
        .unwrap();
    assert_eq!(ok.status.code(), Some(0));
    let (code, e) = one_error_line(&s, &missing, &["run", "--checker", "true", "--trace", t]);
    assert_eq!(code, Some(2));
    assert!(e.contains("no-such-tmp") && e.contains("TMPDIR"), "{e}");
    // A trace that is a directory: said once.
    let dir = s.path("adir");
    fs::create_dir(&dir).unwrap();
    let (code, e) = one_error_line(&s, &tmp, &["ops", dir.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert_eq!(e.matches("Is a directory").count(), 1, "{e}");
}

#[test]
fn a_full_tmpdir_while_recording_is_named() {
    let s = Scratch::new();
    let t = s.path("t");
    let script = "for i in $(seq 300); do printf %0200d 0 > f$i; done; echo saved";
    let args = [
        "record",
        "-o",
        t.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        script,
    ];
    let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    let Some((out, left)) = on_a_small_tmpfs(&s, &args) else {
        return;
    };
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().last().unwrap_or_default();
    assert!(last.contains("is full") && last.contains("TMPDIR"), "{err}");
    assert!(left.is_empty(), "left behind: {left:?}");
}
