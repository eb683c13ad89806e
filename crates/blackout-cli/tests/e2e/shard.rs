//! Sharded runs end to end: `run --trace T --shard K/N --part FILE` for
//! every shard, then `merge`, against one `run --trace T` of the same
//! recording: the same JSON report (timings aside) and exit code; parts
//! that do not make one run, and part files that are not parts, refused in
//! one line.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{examples, save_checker, text, Scratch};

/// Records the save example in `mode` once.
fn record_save(s: &Scratch, mode: &str) -> PathBuf {
    let trace = s.path(&format!("{mode}.trace"));
    let out = s
        .blackout()
        .arg("record")
        .arg("-o")
        .arg(&trace)
        .args(["--setup", "echo 'version 1' > doc.txt", "--"])
        .arg(examples().join("save.sh"))
        .arg(mode)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    s.assert_clean();
    trace
}

/// A JSON report without its timings and what showing states cost (each
/// process showed its own states).
fn without_timings(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.ends_with("_seconds") && *k != "shown")
                .map(|(k, v)| (k.clone(), without_timings(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_timings).collect()),
        other => other.clone(),
    }
}

/// `blackout run --trace TRACE ARGS --json`: (exit code, report).
fn single(s: &Scratch, trace: &Path, args: &[&str]) -> (i32, Value) {
    let out = s
        .blackout()
        .args(["run", "--json", "--trace"])
        .arg(trace)
        .args(args)
        .output()
        .unwrap();
    s.assert_clean();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&out.stderr)));
    (out.status.code().unwrap(), v)
}

/// Shard `k` of `n` of a run of `trace` with `args`; its part file.
fn shard(s: &Scratch, trace: &Path, args: &[&str], k: usize, n: usize) -> PathBuf {
    let part = s.path(&format!(
        "{}-{k}of{n}.json",
        trace.file_stem().unwrap().to_string_lossy()
    ));
    let out = s
        .blackout()
        .args(["run", "--trace"])
        .arg(trace)
        .args(args)
        .args(["--shard", &format!("{k}/{n}"), "--part"])
        .arg(&part)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.starts_with(&format!("shard {k}/{n}: ")), "{said}");
    assert!(said.contains("blackout merge"), "{said}");
    s.assert_clean();
    part
}

/// `blackout merge --json PARTS`: (exit code, report or error, stderr).
fn merge(s: &Scratch, parts: &[PathBuf]) -> (i32, Value, String) {
    let out = s
        .blackout()
        .args(["merge", "--json"])
        .args(parts)
        .output()
        .unwrap();
    s.assert_clean();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&out.stderr)));
    (out.status.code().unwrap(), v, text(&out.stderr))
}

/// Three shards and a merge of `trace` equal one run: the same report
/// (verdict, causes, coverage, fixes) and exit code.
fn shards_equal_one_run(s: &Scratch, trace: &Path, args: &[&str]) -> (i32, Value) {
    let (code, one) = single(s, trace, args);
    let parts: Vec<PathBuf> = (1..=3).map(|k| shard(s, trace, args, k, 3)).collect();
    let (merged_code, merged, stderr) = merge(s, &parts);
    assert_eq!(
        without_timings(&merged),
        without_timings(&one),
        "merged report differs from one run's; stderr: {stderr}"
    );
    assert_eq!(merged_code, code);
    (code, one)
}

#[test]
fn shards_merged_equal_one_run_of_each_save_variant() {
    let s = Scratch::new();
    let checker = save_checker();
    let args = ["--checker", &checker];
    for (mode, want) in [
        ("full", 0),
        ("no-dir-fsync", 1),
        ("no-fsync", 1),
        ("in-place", 1),
    ] {
        let trace = record_save(&s, mode);
        let (code, v) = shards_equal_one_run(&s, &trace, &args);
        assert_eq!(code, want, "{mode}: {}", v["result"]["reason"]);
    }
}

#[test]
fn shards_checked_by_a_checker_server_merge_to_its_one_run() {
    let s = Scratch::new();
    let server = format!("python3 {}", examples().join("check-server.py").display());
    let args = ["--checker-server", &server];
    let trace = record_save(&s, "no-dir-fsync");
    // The merge verifies the fix with the server too (the same report).
    let (code, v) = shards_equal_one_run(&s, &trace, &args);
    assert_eq!(code, 1, "{}", v["result"]["reason"]);
    // The same command as a spawned checker is other settings.
    let part = shard(&s, &trace, &args, 1, 2);
    let other = shard(&s, &trace, &["--checker", &server], 2, 2);
    let out = s
        .blackout()
        .arg("merge")
        .arg(&part)
        .arg(&other)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("checker_kind"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn shards_of_a_run_that_stops_before_checking_merge_to_its_verdict() {
    let s = Scratch::new();
    let trace = record_save(&s, "full");
    // A checker that accepts everything cannot fail: INCONCLUSIVE.
    let (code, v) = shards_equal_one_run(&s, &trace, &["--checker", "true"]);
    assert_eq!((code, v["verdict"].as_str()), (2, Some("INCONCLUSIVE")));
    // One that rejects everything: HARNESS BROKEN.
    let (code, v) = shards_equal_one_run(&s, &trace, &["--checker", "exit 1"]);
    assert_eq!((code, v["verdict"].as_str()), (2, Some("HARNESS BROKEN")));
}

/// Runs `blackout ARGS` and asserts it is refused with exit code 2 and one
/// `error:` line containing each of `says`.
fn refused(s: &Scratch, args: &[&std::ffi::OsStr], says: &[&str]) {
    let out = s.blackout().args(args).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(
        stderr.starts_with("error: ") && stderr.lines().count() == 1,
        "{args:?}: not one error line: {stderr}"
    );
    for say in says {
        assert!(
            stderr.contains(say),
            "{args:?}: {stderr} does not say {say}"
        );
    }
    s.assert_clean();
}

fn os(args: &[&str]) -> Vec<std::ffi::OsString> {
    args.iter().map(Into::into).collect()
}

fn merge_args(parts: &[&Path]) -> Vec<std::ffi::OsString> {
    let mut a = os(&["merge"]);
    a.extend(parts.iter().map(|p| p.as_os_str().to_owned()));
    a
}

fn refused_merge(s: &Scratch, parts: &[&Path], says: &[&str]) {
    let args = merge_args(parts);
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    refused(s, &args, says);
}

#[test]
fn shard_parts_that_do_not_make_one_run_are_refused() {
    let s = Scratch::new();
    let checker = save_checker();
    let args = ["--checker", checker.as_str()];
    let trace = record_save(&s, "no-dir-fsync");
    let parts: Vec<PathBuf> = (1..=3).map(|k| shard(&s, &trace, &args, k, 3)).collect();
    let [p1, p2, p3] = [&parts[0], &parts[1], &parts[2]].map(PathBuf::as_path);
    refused_merge(&s, &[p1, p3], &["missing shard 2/3", "every part"]);
    refused_merge(&s, &[p1, p2, p2, p3], &["shard 2/3 is given twice"]);
    // A shard of another recording.
    let other = record_save(&s, "no-fsync");
    let foreign = shard(&s, &other, &args, 2, 3);
    refused_merge(
        &s,
        &[p1, &foreign, p3],
        &[&foreign.display().to_string(), "another recording"],
    );
    // A shard run with other settings.
    let posix = s.path("posix-2of3.json");
    let out = s
        .blackout()
        .args(["run", "--model", "posix", "--trace"])
        .arg(&trace)
        .args(args)
        .args(["--shard", "2/3", "--part"])
        .arg(&posix)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    refused_merge(
        &s,
        &[p1, &posix, p3],
        &[
            "posix-2of3.json (shard 2/3) was made with other settings",
            "models",
        ],
    );
    // Another split.
    let half = shard(&s, &trace, &args, 2, 2);
    refused_merge(&s, &[p1, &half], &["split the run differently"]);
    // The whole set still merges.
    let (code, v, _) = merge(&s, &parts);
    assert_eq!((code, v["verdict"].as_str()), (1, Some("FAIL")));
}

#[test]
fn a_part_file_that_is_not_a_part_is_refused_naming_it() {
    let s = Scratch::new();
    let checker = save_checker();
    let trace = record_save(&s, "no-fsync");
    let good = shard(&s, &trace, &["--checker", &checker], 1, 1);
    let json = fs::read_to_string(&good).unwrap();
    let part: Value = serde_json::from_str(&json).unwrap();
    let edited = |f: &dyn Fn(&mut Value)| {
        let mut v = part.clone();
        f(&mut v);
        serde_json::to_string(&v).unwrap()
    };
    let cut = "the part file is cut short";
    let cases: Vec<(&str, String, &str)> = vec![
        ("empty", String::new(), cut),
        ("truncated", json[..json.len() / 2].to_string(), cut),
        (
            "a report",
            "{\"schema\": 1, \"verdict\": \"PASS\"}".into(),
            "not a blackout part",
        ),
        (
            "newer",
            edited(&|v| v["schema"] = 99.into()),
            "part layout 99 is not the one",
        ),
        (
            "wrong type",
            edited(&|v| v["distinct"] = "many".into()),
            "malformed part",
        ),
        (
            "unknown model",
            edited(&|v| v["settings"]["models"] = serde_json::json!(["disk"])),
            "`disk` is not a model",
        ),
        (
            "edited settings",
            edited(&|v| v["settings"]["budget"] = 1.into()),
            "do not match their fingerprint",
        ),
        (
            "closure checker",
            edited(&|v| v["settings"]["checker_kind"] = "closure".into()),
            "checker_kind `closure` cannot be merged",
        ),
        (
            "unknown checker kind",
            edited(&|v| v["settings"]["checker_kind"] = "daemon".into()),
            "unknown variant `daemon`",
        ),
        (
            "no representatives",
            edited(&|v| v["settings"]["representatives"] = "0".into()),
            "representatives `0` is neither",
        ),
        (
            "bad key",
            edited(&|v| v["states"][0]["hash"] = "zz".into()),
            "is not a content hash",
        ),
        (
            "shard 0",
            edited(&|v| v["shard"]["index"] = 0.into()),
            "K must be between 1 and N",
        ),
        (
            "huge split",
            edited(&|v| v["shard"]["count"] = u64::MAX.into()),
            "N must be between 1 and",
        ),
    ];
    for (name, content, says) in &cases {
        let path = s.path(&format!("{}.json", name.replace(' ', "-")));
        fs::write(&path, content).unwrap();
        let shown = path.display().to_string();
        refused_merge(&s, &[&path], &[&shown, says]);
    }
    refused_merge(&s, &[&s.path("absent.json")], &["absent.json"]);
    // The good part merges (one shard of one).
    let (code, _, _) = merge(&s, &[good]);
    assert_eq!(code, 1);
}

#[test]
fn shard_flags_are_checked_before_anything_runs() {
    let s = Scratch::new();
    let trace = record_save(&s, "full");
    let t = trace.to_str().unwrap();
    let part = s.path("p.json");
    let p = part.to_str().unwrap();
    for (args, says) in [
        (
            vec!["--shard", "4/3", "--part", p],
            "--shard: shard 4/3: K must be between 1 and N (3)",
        ),
        (vec!["--shard", "three", "--part", p], "is not a shard"),
        (vec!["--shard", "1/3"], "--shard needs --part"),
        (vec!["--part", p], "--part needs --shard"),
    ] {
        let mut all = os(&["run", "--checker", "true", "--trace", t]);
        all.extend(os(&args));
        let all: Vec<&std::ffi::OsStr> = all.iter().map(|a| a.as_os_str()).collect();
        refused(&s, &all, &[says]);
    }
    // A live run cannot be sharded: each shard would record its own trace.
    let live = os(&[
        "run",
        "--checker",
        "true",
        "--shard",
        "1/2",
        "--part",
        p,
        "--",
        "true",
    ]);
    let live: Vec<&std::ffi::OsStr> = live.iter().map(|a| a.as_os_str()).collect();
    refused(&s, &live, &["--shard needs --trace"]);
    assert!(!part.exists());
}
