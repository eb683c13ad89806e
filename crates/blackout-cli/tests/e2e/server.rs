//! The checker server (`--checker-server`): the same verdicts and causes as
//! a checker spawned per state, and every way a server can go wrong
//! reported on the state it went wrong on.

use serde_json::{json, Value};

use crate::common::{
    examples, processes_with, run_json, save_checker, signal_when, unique_sleep, Scratch,
};

/// What must not depend on how the checker was run: per model the verdict,
/// the failing and error states, and each cause (kind, sentence, window,
/// member states, fix and whether it passes). Checker reasons are left out:
/// the two checkers word them differently.
pub fn verdicts_and_causes(v: &Value) -> Value {
    let models: Vec<Value> = v["result"]["models"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|m| {
            let ids = |list: &Value| -> Vec<Value> {
                list.as_array()
                    .unwrap_or(&Vec::new())
                    .iter()
                    .map(|f| f["id"].clone())
                    .collect()
            };
            let causes: Vec<Value> = m["causes"]
                .as_array()
                .unwrap_or(&Vec::new())
                .iter()
                .map(|g| {
                    json!({
                        "kind": g["cause"]["kind"],
                        "sentence": g["cause"]["sentence"],
                        "window": g["window"],
                        "ids": g["ids"],
                        "fix": g["fix"]["description"],
                        "fix_passes": g["fix"]["passes"],
                    })
                })
                .collect();
            json!({
                "model": m["model"],
                "verdict": m["verdict"],
                "failing": ids(&m["failing"]),
                "errors": ids(&m["errors"]),
                "causes": causes,
                "coverage": m["coverage"],
            })
        })
        .collect();
    json!({ "verdict": v["verdict"], "models": models })
}

/// The save example's checker servers: Python, shell, and Rust (the
/// blackout-check crate's example, built by `cargo test --workspace`; when
/// only this test binary was built it is left out, except under CI).
fn save_servers() -> Vec<String> {
    let mut servers = vec![
        format!("python3 {}", examples().join("check-server.py").display()),
        format!("sh {}", examples().join("check-server.sh").display()),
    ];
    let rust = std::env::current_exe()
        .ok()
        .and_then(|e| Some(e.parent()?.parent()?.join("examples/save_check_server")));
    match rust {
        Some(bin) if bin.exists() => servers.push(bin.display().to_string()),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "the save_check_server example was not built"
            );
            eprintln!("note: the Rust example server is not built; checked Python and shell only");
        }
    }
    servers
}

/// Records a save variant once, into the scratch.
fn record_save(s: &Scratch, variant: &str) -> String {
    let trace = s.path(&format!("{variant}.trace"));
    let out = s
        .blackout()
        .args(["record", "--setup", "echo 'version 1' > doc.txt", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(examples().join("save.sh"))
        .arg(variant)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "recording {variant}");
    trace.display().to_string()
}

#[test]
fn the_save_variants_give_the_same_verdicts_and_causes_with_checker_servers() {
    let s = Scratch::new();
    for variant in ["full", "no-dir-fsync", "no-fsync", "in-place"] {
        let trace = record_save(&s, variant);
        let base = ["--trace", &trace, "--model", "all"];
        let (code1, spawned, _) =
            run_json(&s, &[&base[..], &["--checker", &save_checker()]].concat());
        for server in save_servers() {
            let (code2, served, out) =
                run_json(&s, &[&base[..], &["--checker-server", &server]].concat());
            assert_eq!(code1, code2, "{variant}, {server}: exit codes");
            assert_eq!(
                verdicts_and_causes(&spawned),
                verdicts_and_causes(&served),
                "{variant}, {server}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let want = if variant == "full" { "PASS" } else { "FAIL" };
            assert_eq!(served["verdict"], want, "{variant}, {server}");
        }
    }
    // (That no server outlives its run is asserted where the server's path
    // is the test's own: other tests run these example servers at the
    // same time.)
}

/// A server that crashes on one state, hangs on another and answers
/// garbage on a third; the states are chosen by id from the environment,
/// which the server inherits.
const FAULTY: &str = r#"
import json, os, sys, time
crash, hang, garbage = (os.environ["FAULTY_" + k] for k in ("CRASH", "HANG", "GARBAGE"))
for line in sys.stdin:
    state = json.loads(line)["state"]
    if state == crash:
        print("server bug: cannot parse doc.txt", file=sys.stderr, flush=True)
        os._exit(3)
    if state == hang:
        time.sleep(3600)
    if state == garbage:
        print("maybe?", flush=True)
        continue
    print("ok", flush=True)
"#;

#[test]
fn a_server_that_crashes_hangs_and_answers_garbage_is_reported_state_by_state() {
    let s = Scratch::new();
    let trace = record_save(&s, "full");
    // Three distinct states of the process model, by id.
    let out = s
        .blackout()
        .args(["states", &trace, "--model", "process", "--json"])
        .output()
        .unwrap();
    let states: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<String> = states["models"][0]["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap().to_string())
        .collect();
    // c0 is the state before the workload, the last one the state where
    // nothing was lost (checked before the others): three in between.
    assert!(ids.len() >= 5, "{ids:?}");
    let (crash, hang, garbage) = (&ids[1], &ids[2], &ids[3]);
    let server = s.path("faulty.py");
    std::fs::write(&server, FAULTY).unwrap();
    let out = s
        .blackout()
        .args(["run", "--json", "--trace", &trace, "--model", "process"])
        .args(["--consistency-only", "--timeout", "2", "--checker-server"])
        .arg(format!("python3 {}", server.display()))
        .env("FAULTY_CRASH", crash)
        .env("FAULTY_HANG", hang)
        .env("FAULTY_GARBAGE", garbage)
        .output()
        .unwrap();
    s.assert_clean();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &v["result"]["models"][0];
    let find = |list: &str, id: &str| -> Value {
        m[list]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("{id} not in {list}: {m}"))
    };
    // The crash, confirmed on a fresh server: rejected, with what it said.
    let c = find("failing", crash);
    assert_eq!(c["status"], "server exited with code 3", "{c}");
    assert_eq!(c["reason"], "server bug: cannot parse doc.txt", "{c}");
    let h = find("errors", hang);
    assert_eq!(h["outcome"], "timed_out", "{h}");
    let g = find("errors", garbage);
    assert_eq!(g["outcome"], "bad_answer", "{g}");
    assert!(g["answer"].as_str().unwrap().contains("`maybe?`"), "{g}");
    // Every other state was checked and accepted; the run finished.
    assert_eq!(m["failing"].as_array().unwrap().len(), 1, "{m}");
    assert_eq!(m["errors"].as_array().unwrap().len(), 2, "{m}");
    assert_eq!(v["verdict"], "FAIL");
    assert_eq!(out.status.code(), Some(1));
    assert!(processes_with(&server.display().to_string()).is_empty());
}

#[test]
fn a_server_sees_each_state_only_while_its_request_is_open_and_is_ended_after_the_run() {
    let s = Scratch::new();
    let trace = record_save(&s, "no-dir-fsync");
    // Leaves a mark in each state's directory and answers only once the
    // mark of the previous request is gone (the directory made afresh).
    let server = s.path("strict.py");
    std::fs::write(
        &server,
        r#"
import json, os, sys
previous = None
for line in sys.stdin:
    r = json.loads(line)
    if previous is not None and os.path.exists(previous):
        print("fail the previous state's files are still there", flush=True)
        continue
    previous = os.path.join(r["dir"], ".mark")
    open(previous, "w").close()
    acks = open(r["acks_file"], "rb").read().decode().split("\n")
    ok = acks[:len(r["acked"])] == r["acked"] and os.path.isdir(r["dir"])
    print("ok" if ok else "fail the request does not match the files", flush=True)
"#,
    )
    .unwrap();
    let (code, v, _) = run_json(
        &s,
        &[
            "--trace",
            &trace,
            "--consistency-only",
            "--checker-server",
            &format!("python3 {}", server.display()),
        ],
    );
    assert_eq!(code, 0, "{v}");
    assert!(processes_with(&server.display().to_string()).is_empty());
}

#[test]
fn sigterm_while_a_server_checks_leaves_nothing() {
    let s = Scratch::new();
    let trace = record_save(&s, "full");
    // Answers the nothing-lost state, then hangs on every other one.
    let marker = unique_sleep();
    let server = s.path("slow.py");
    std::fs::write(
        &server,
        format!(
            "import subprocess, sys\nfor line in sys.stdin:\n    if '\"c6\"' not in line:\n        subprocess.run(['sleep', '{marker}'])\n    print('ok', flush=True)\n"
        ),
    )
    .unwrap();
    let mut child = s
        .blackout()
        .args([
            "run",
            "--trace",
            &trace,
            "--consistency-only",
            "--checker-server",
        ])
        .arg(format!("python3 {}", server.display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    signal_when(&s, &mut child, nix::sys::signal::Signal::SIGTERM, || {
        !processes_with(&marker).is_empty()
    });
    assert!(
        processes_with(&marker).is_empty(),
        "a server's child survived"
    );
    assert!(processes_with(&server.display().to_string()).is_empty());
}
