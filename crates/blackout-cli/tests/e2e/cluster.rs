//! `blackout soak --node`: a cluster of services, each on a live mount of
//! its own, crashed together or a node at a time, through the command a
//! user types; slower: a real Redis primary and replica.

use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{mounts_under, processes_with, unique_sleep, Scratch};

/// `blackout soak` with `args` and nodes sleeping with a marker; standard
/// error.
fn soak_sleepers(s: &Scratch, nodes: &[&str], marker: &str, args: &[&str]) -> Output {
    let mut cmd = s.blackout();
    cmd.arg("soak");
    for n in nodes {
        cmd.arg("--node").arg(format!("{n}=sleep {marker}"));
    }
    cmd.args(args).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bad_cluster_flags_are_one_line_and_exit_2() {
    let s = Scratch::new();
    let base = ["soak", "--client", "true", "--checker", "true"];
    for (args, says) in [
        (
            &["--node", "a-b=sleep 1"][..],
            "error: --node `a-b=sleep 1`: NAME must be letters, digits and _, starting with a letter\n",
        ),
        (
            &["--node", "sleep 1"][..],
            "error: --node `sleep 1`: expected NAME=SERVICE\n",
        ),
        (
            &["--node", "a=sleep 1", "--node", "A=sleep 2"][..],
            "error: --node `A=sleep 2`: a node is named a already (names are told apart upper-cased)\n",
        ),
        (
            &["--node", "a=sleep 1", "--faults", "all,al"][..],
            "error: --faults `all,al`: unknown fault `al` (one of all, one, minority, majority, each, kill)\n",
        ),
        (
            &["--faults", "all", "--", "sleep", "1"][..],
            "error: --faults strikes the nodes of a cluster: give them with --node NAME=SERVICE\n",
        ),
    ] {
        let out = s.blackout().args(base).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), says, "{args:?}");
    }
    s.assert_clean();
}

#[test]
fn a_node_that_never_becomes_ready_again_is_the_verdict_not_a_hang() {
    let s = Scratch::new();
    let marker = unique_sleep();
    let start = Instant::now();
    // Ready at the first start only: after the first fault, the node it
    // struck never is.
    let out = soak_sleepers(
        &s,
        &["a", "b"],
        &marker,
        &[
            "--crashes",
            "3",
            "--faults",
            "one",
            "--timeout",
            "1s",
            "--run-min",
            "50ms",
            "--run-max",
            "50ms",
            "--ready",
            "[ \"$BLACKOUT_CRASH\" = 0 ]",
            "--client",
            "sleep 100",
            "--checker",
            "true",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", stderr(&out));
    let first = stdout.lines().next().unwrap();
    assert!(
        first.starts_with("FAIL: after crash 1 of 3 (2 nodes, seed 0, keep none, faults one): the cluster did not recover: node ")
            && first.ends_with(" not ready after 1 s"),
        "{stdout}"
    );
    assert!(stdout.contains("\ncrash 1 after 50 ms: one: "), "{stdout}");
    assert!(start.elapsed() < Duration::from_secs(30));
    assert_eq!(processes_with(&marker), Vec::<String>::new());
    assert_eq!(mounts_under(&s.path("")), Vec::<String>::new());
    s.assert_clean();
}

/// A soak of three sleeping nodes under every fault, the checker noting
/// what each command was told: its progress lines and the notes.
fn seeded_run(s: &Scratch, seed: &str) -> (String, String) {
    let notes = s.path(&format!("notes.{seed}"));
    let _ = fs::remove_file(&notes);
    let marker = unique_sleep();
    let out = soak_sleepers(
        s,
        &["a", "b", "c"],
        &marker,
        &[
            "--crashes", "6", "--seed", seed, "--run-min", "100ms", "--run-max", "300ms",
            "--faults", "all,one,minority,majority,each,kill", "--keep", "random",
            "--ready", "test -d \"$BLACKOUT_MOUNT\" && test \"$BLACKOUT_MOUNT\" = \"$(eval echo \\$BLACKOUT_MOUNT_$(echo $BLACKOUT_NODE | tr a-z A-Z))\"",
            "--client", "echo \"$BLACKOUT_NODES\"; sleep 100",
            "--checker",
            &format!(
                "echo \"$BLACKOUT_CRASH [$BLACKOUT_LOST_POWER] [$BLACKOUT_KILLED] $(cat \"$BLACKOUT_ACKS_FILE\" | tail -1)\" >> {}",
                notes.display()
            ),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", stderr(&out));
    assert_eq!(processes_with(&marker), Vec::<String>::new());
    (stderr(&out), fs::read_to_string(notes).unwrap())
}

#[test]
fn a_seed_repeats_the_moments_faults_and_nodes_of_a_cluster_soak() {
    let s = Scratch::new();
    let (progress, notes) = seeded_run(&s, "7");
    assert_eq!(seeded_run(&s, "7"), (progress.clone(), notes.clone()));
    assert_ne!(seeded_run(&s, "8").0, progress);
    let lines: Vec<&str> = progress.lines().collect();
    assert_eq!(lines.len(), 6, "{progress}");
    for (i, l) in lines.iter().enumerate() {
        assert!(l.starts_with(&format!("crash {}/6 after ", i + 1)), "{l}");
    }
    // Every promise the client made was its line naming the nodes; the
    // checker heard which nodes the last fault struck.
    for (i, note) in notes.lines().enumerate() {
        assert!(note.starts_with(&format!("{} [", i + 1)), "{note}");
        assert!(note.ends_with("] a b c"), "{note}");
    }
    let all = lines
        .iter()
        .position(|l| l.contains("(all: a, b, c lost power)"));
    if let Some(i) = all {
        let note = notes.lines().nth(i).unwrap();
        assert!(
            note.starts_with(&format!("{} [a b c] [] ", i + 1)),
            "{note}"
        );
    }
    s.assert_clean();
}

#[test]
fn each_fails_the_power_on_every_node_in_turn_each_back_before_the_next() {
    let s = Scratch::new();
    let marker = unique_sleep();
    let starts = s.path("starts");
    let out = soak_sleepers(
        &s,
        &["a", "b", "c"],
        &marker,
        &[
            "--crashes",
            "2",
            "--faults",
            "each",
            "--run-min",
            "50ms",
            "--run-max",
            "100ms",
            "--ready",
            &format!(
                "echo \"$BLACKOUT_CRASH $BLACKOUT_NODE [$BLACKOUT_LOST_POWER]\" >> {}",
                starts.display()
            ),
            "--client",
            "true",
            "--checker",
            "true",
        ],
    );
    let progress = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{progress}");
    for crash in 1..=2 {
        assert!(
            progress.contains(&format!("crash {crash}/2 after ")),
            "{progress}"
        );
    }
    assert_eq!(
        progress
            .matches("(each: a, b, c lost power in turn)")
            .count(),
        2,
        "{progress}"
    );
    // Each node started again (and was ready) before the next lost power.
    assert_eq!(
        fs::read_to_string(&starts).unwrap(),
        "0 a []\n0 b []\n0 c []\n\
         1 a [a]\n1 b [a b]\n1 c [a b c]\n\
         2 a [a]\n2 b [a b]\n2 c [a b c]\n"
    );
    assert_eq!(processes_with(&marker), Vec::<String>::new());
    s.assert_clean();
}

#[test]
fn a_cluster_soak_stopped_by_ctrl_c_or_sigterm_leaves_no_mount_process_or_scratch() {
    use nix::sys::signal::Signal;
    for sig in [Signal::SIGINT, Signal::SIGTERM] {
        let s = Scratch::new();
        let marker = unique_sleep();
        let log = s.path("soak.err");
        let mut soak = s
            .blackout()
            .args(["soak", "--crashes", "1000", "--faults", "all,one,each,kill"])
            .args(["--run-min", "10ms", "--run-max", "100ms"])
            .args(["--node", &format!("a=sleep {marker}")])
            .args(["--node", &format!("b=sleep {marker}")])
            .args(["--ready", "true", "--checker", "true"])
            .args(["--client", &format!("sleep {marker}")])
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        crate::common::signal_when(&s, &mut soak, sig, || {
            fs::read_to_string(&log).is_ok_and(|t| t.contains("crash 2/1000"))
        });
        assert_eq!(processes_with(&marker), Vec::<String>::new(), "{sig}");
    }
}

/// A cluster example of examples/live/cluster/ (`script`, run with
/// python3) under `blackout soak --node` with `nodes`, the environment
/// `env`, struck by `faults`; it needs `program` installed.
fn soak_example(
    s: &Scratch,
    (script, program, package): (&str, &str, &str),
    nodes: &[&str],
    env: &[(&str, &str)],
    faults: &str,
    crashes: &str,
) -> Output {
    assert!(
        Command::new(program).arg("--version").output().is_ok(),
        "this soak needs {program}: apt-get install -y {package}"
    );
    let r = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/live/cluster")
        .join(script);
    let r = r.to_str().unwrap();
    let mut cmd = s.blackout();
    cmd.envs(env.iter().copied())
        .args(["soak", "--seed", "1", "--ack-prefix", "ok"])
        .args(["--crashes", crashes, "--faults", faults])
        .args(["--run-min", "300ms", "--run-max", "1s"]);
    for n in nodes {
        cmd.args(["--node", &format!("{n}=python3 {r} serve")]);
    }
    cmd.args(["--setup", &format!("python3 {r} setup")])
        .args(["--ready", &format!("python3 {r} ready")])
        .args(["--client", &format!("python3 {r} load")])
        .args(["--checker", &format!("python3 {r} check")])
        .output()
        .unwrap()
}

const REDIS: (&str, &str, &str) = ("redis.py", "redis-server", "redis-server");
const POSTGRES: (&str, &str, &str) = (
    "postgres.py",
    "/usr/lib/postgresql/15/bin/postgres",
    "postgresql",
);
const ETCD: (&str, &str, &str) = ("etcd.py", "etcd", "etcd-server");

/// The example's Redis primary and replica, `appendfsync` as `fsync` says.
fn soak_redis(s: &Scratch, fsync: &str, faults: &str, crashes: &str) -> Output {
    let env = [("APPENDFSYNC", fsync)];
    soak_example(s, REDIS, &["a", "b"], &env, faults, crashes)
}

/// The standard output of a soak that must have exited with `code`, with
/// nothing left behind.
fn verdict(s: &Scratch, out: &Output, code: i32) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(code), "{stdout}{}", stderr(out));
    assert_eq!(mounts_under(&s.path("")), Vec::<String>::new());
    s.assert_clean();
    stdout
}

#[test]
#[ignore = "slower suite: cargo test -p blackout-cli --test e2e -- --ignored (a real Redis primary and replica crashed; minutes)"]
fn slower_redis_acknowledging_on_receipt_survives_one_node_crashes_and_loses_writes_under_all() {
    let s = Scratch::new();
    let out = soak_redis(&s, "no", "one", "6");
    let stdout = verdict(&s, &out, 0);
    assert!(
        stdout.starts_with("PASS: 6 crashes (2 nodes, seed 1, keep none, faults one): all "),
        "{stdout}"
    );
    let out = soak_redis(&s, "no", "all", "6");
    let stdout = verdict(&s, &out, 1);
    assert!(
        stdout.starts_with(
            "FAIL: after crash 1 of 6 (2 nodes, seed 1, keep none, faults all), a promise broke: "
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(" acknowledged keys are gone from the primary a "),
        "{stdout}"
    );
    assert!(
        stdout.contains("\ncrash 1 after 847 ms: all: a, b lost power\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("    dropped write appendonlydir/appendonly.aof.1.incr.aof [0, "),
        "{stdout}"
    );
}

#[test]
#[ignore = "slower suite: cargo test -p blackout-cli --test e2e -- --ignored (a real Redis primary and replica crashed; minutes)"]
fn slower_redis_with_appendfsync_always_keeps_every_acknowledged_write_under_one_and_all() {
    let s = Scratch::new();
    let out = soak_redis(&s, "always", "all,one", "10");
    let stdout = verdict(&s, &out, 0);
    assert!(
        stdout.starts_with("PASS: 10 crashes (2 nodes, seed 1, keep none, faults all,one): all "),
        "{stdout}"
    );
}

/// The example's PostgreSQL primary and two synchronous standbys,
/// `synchronous_commit` and `fsync` as given.
fn soak_postgres(s: &Scratch, sync: &str, fsync: &str, faults: &str, crashes: &str) -> Output {
    let env = [("SYNC", sync), ("FSYNC", fsync)];
    soak_example(s, POSTGRES, &["a", "b", "c"], &env, faults, crashes)
}

#[test]
#[ignore = "slower suite: cargo test -p blackout-cli --test e2e -- --ignored (PostgreSQL with two synchronous standbys, 50 correlated crashes; about 8 minutes)"]
fn slower_postgres_with_synchronous_standbys_keeps_every_commit_through_50_correlated_crashes() {
    let s = Scratch::new();
    let out = soak_postgres(&s, "on", "on", "all", "50");
    let stdout = verdict(&s, &out, 0);
    assert!(
        stdout.starts_with("PASS: 50 crashes (3 nodes, seed 1, keep none, faults all): all "),
        "{stdout}"
    );
}

#[test]
#[ignore = "slower suite: cargo test -p blackout-cli --test e2e -- --ignored (PostgreSQL with two synchronous standbys crashed; minutes)"]
fn slower_postgres_acknowledging_on_receipt_survives_one_node_crashes_and_loses_commits_under_all()
{
    let s = Scratch::new();
    let out = soak_postgres(&s, "remote_write", "off", "one", "6");
    let stdout = verdict(&s, &out, 0);
    assert!(
        stdout.starts_with("PASS: 6 crashes (3 nodes, seed 1, keep none, faults one): all "),
        "{stdout}"
    );
    let out = soak_postgres(&s, "remote_write", "off", "all", "6");
    let stdout = verdict(&s, &out, 1);
    assert!(
        stdout.starts_with(
            "FAIL: after crash 1 of 6 (3 nodes, seed 1, keep none, faults all), a promise broke: "
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(" acknowledged commits are gone from the primary a "),
        "{stdout}"
    );
    assert!(
        stdout.contains("\ncrash 1 after 847 ms: all: a, b, c lost power\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("    dropped write pg/pg_wal/0000000"),
        "{stdout}"
    );
}

#[test]
#[ignore = "slower suite: cargo test -p blackout-cli --test e2e -- --ignored (an etcd cluster of three members, 50 correlated crashes; about 6 minutes)"]
fn slower_etcd_keeps_every_acknowledged_put_through_50_correlated_crashes() {
    let s = Scratch::new();
    let out = soak_example(&s, ETCD, &["a", "b", "c"], &[], "all", "50");
    let stdout = verdict(&s, &out, 0);
    assert!(
        stdout.starts_with("PASS: 50 crashes (3 nodes, seed 1, keep none, faults all): all "),
        "{stdout}"
    );
}
