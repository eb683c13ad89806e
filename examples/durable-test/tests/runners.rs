//! The same scenarios under the three ways Rust tests are run: `cargo test`
//! with its parallel test threads, `cargo test -- --test-threads=1`, and
//! `cargo nextest run` (a process per test). A scenario re-executes its own
//! test binary to record the workload, which each runner starts in its own
//! way; every runner must run the same tests with the same results: the
//! correct stores pass, the broken ones fail as their tests say.
//!
//! The three runs use the build this test was built in (its target
//! directory and profile), so nothing is compiled again.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// The test files whose scenarios are compared.
const FILES: [&str; 2] = ["scenarios", "sqlite"];

/// The cargo that runs this test (else the one on `PATH`).
fn cargo_bin() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// `cargo ARGS` for this package's scenario files, in this build's target
/// directory and profile.
fn cargo(args: &[&str]) -> Command {
    let exe = std::env::current_exe().expect("the test binary's path");
    // TARGET/PROFILE/deps/runners-HASH
    let profile_dir = exe.parent().and_then(|d| d.parent()).expect("a target dir");
    let target: PathBuf = profile_dir.parent().expect("a target dir").into();
    let mut cmd = Command::new(cargo_bin());
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .args(["-p", "durable-test", "--target-dir"])
        .arg(&target);
    match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => {}
        Some("release") => {
            cmd.arg("--release");
        }
        Some(other) => {
            cmd.args(["--profile", other]);
        }
    }
    for file in FILES {
        cmd.args(["--test", file]);
    }
    cmd
}

/// Runs `cmd` and returns its standard output and error, one after the
/// other.
fn output(what: &str, mut cmd: Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{text}",
        out.status
    );
    text
}

/// Each test's result in libtest's output (`test NAME ... ok`).
fn libtest_results(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("test "))
        .filter_map(|l| l.split_once(" ... "))
        .map(|(name, result)| {
            let name = name.trim_end_matches(" - should panic").trim();
            (name.to_string(), result.trim().to_string())
        })
        .collect()
}

/// Each test's result in nextest's output
/// (`PASS [ 0.4s] (1/12) durable-test::scenarios NAME`), as libtest says it.
fn nextest_results(text: &str) -> BTreeMap<String, String> {
    let mut results = BTreeMap::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (Some(status), Some(name)) = (words.first(), words.last()) else {
            continue;
        };
        let binary = words.iter().rev().nth(1).unwrap_or(&"");
        if !binary.starts_with("durable-test::") {
            continue;
        }
        let result = match *status {
            "PASS" => "ok",
            "SKIP" => "ignored",
            _ => "FAILED",
        };
        results.insert((*name).to_string(), result.to_string());
    }
    results
}

#[test]
fn parallel_threads_one_thread_and_nextest_agree() {
    let parallel = libtest_results(&output("cargo test", cargo(&["test"])));
    let mut one = cargo(&["test"]);
    one.args(["--", "--test-threads=1"]);
    let one = libtest_results(&output("cargo test -- --test-threads=1", one));
    let has_nextest = Command::new(cargo_bin())
        .args(["nextest", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        has_nextest,
        "cargo-nextest is not installed (cargo install cargo-nextest --locked): \
         it is the third runner this test compares"
    );
    let mut nextest = cargo(&["nextest", "run"]);
    nextest.args([
        "--no-fail-fast",
        "--status-level",
        "all",
        "--final-status-level",
        "none",
        "--color",
        "never",
    ]);
    let nextest = nextest_results(&output("cargo nextest run", nextest));

    // The scenarios of both files ran, and every test passed: the correct
    // stores' scenarios PASS, the broken ones' FAIL as their tests assert.
    assert!(parallel.len() >= 10, "too few tests ran: {parallel:?}");
    for name in [
        "atomic_replace_passes",
        "a_create_without_a_directory_fsync_fails",
        "folding_the_log_into_an_unsynced_base_fails",
        "rollback_journal_full_loses_the_last_commit",
        "wal_full_passes",
    ] {
        assert_eq!(
            parallel.get(name).map(String::as_str),
            Some("ok"),
            "{parallel:?}"
        );
    }
    assert!(parallel.values().all(|r| r == "ok"), "{parallel:?}");
    assert_eq!(one, parallel, "--test-threads=1 differs from parallel");
    assert_eq!(nextest, parallel, "cargo nextest differs from cargo test");
}
