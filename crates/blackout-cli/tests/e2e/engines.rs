//! The small storage programs of `tests/engines/` (their README says the
//! truth of each and why): tears as storage makes them, torn-write causes
//! told from what the state holds, and the set of syncs that fixes every
//! cause.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::{run_json, Scratch};

fn engines() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/engines")
        .canonicalize()
        .unwrap()
}

/// `python3 tests/engines/NAME ARGS` as one shell word list.
fn py(name: &str, args: &str) -> String {
    format!("python3 {} {args}", engines().join(name).display())
}

/// Runs a workload under posix (`--json`); returns the exit code and the
/// posix model's report.
fn posix(setup: &str, checker: &str, workload: &str) -> (i32, Value) {
    let s = Scratch::new();
    let (code, v, _) = run_json(
        &s,
        &[
            "--model",
            "posix",
            "--setup",
            setup,
            "--checker",
            checker,
            "--",
            "sh",
            "-c",
            workload,
        ],
    );
    (code, v["result"]["models"][0].clone())
}

fn causes(m: &Value) -> &Vec<Value> {
    m["causes"].as_array().unwrap()
}

#[test]
fn a_small_o_dsync_overwrite_of_durable_bytes_passes_posix() {
    // 8 bytes inside one sector: storage writes them whole or not at all.
    let (code, m) = posix(
        &py("overwrite.py", "setup dsync"),
        &py("overwrite.py", "check dsync"),
        &py("overwrite.py", "dsync"),
    );
    assert_eq!((code, m["verdict"].as_str()), (0, Some("PASS")), "{m:#}");
    assert!(!m.to_string().contains("torn"), "no torn state: {m:#}");
}

#[test]
fn an_appending_write_still_tears_to_zeros() {
    // The file grows: its size can reach the disk before its data, which
    // this checker cannot tolerate (no sync can prevent it before the fsync
    // returns).
    let (code, m) = posix(
        &py("overwrite.py", "setup append"),
        &py("overwrite.py", "check append"),
        &py("overwrite.py", "append"),
    );
    assert_eq!(code, 1, "{m:#}");
    let cs = causes(&m);
    assert_eq!(cs.len(), 1, "{m:#}");
    assert_eq!(cs[0]["simplest"]["id"], "c1.torn0z", "{m:#}");
    assert_eq!(cs[0]["cause"]["kind"], "torn_tail");
    assert!(cs[0]["fix"].is_null());
}

#[test]
fn a_4k_overwrite_tears_only_at_sector_boundaries() {
    // The checker accepts old and new sector by sector, and rejects
    // anything else: every torn state it is shown must be such a mix.
    let (code, m) = posix(
        &py("overwrite.py", "setup page"),
        &py("overwrite.py", "check page"),
        &py("overwrite.py", "page"),
    );
    assert_eq!((code, m["verdict"].as_str()), (0, Some("PASS")), "{m:#}");
    // And the states listed hold the two cuts (at 2048 and 4096).
    let s = Scratch::new();
    let dir = s.path("w");
    std::fs::create_dir(&dir).unwrap();
    let trace = s.path("page.trace");
    let rec = s
        .blackout()
        .current_dir(&dir)
        .args(["record", "-o"])
        .arg(&trace)
        .args(["--setup", &py("overwrite.py", "setup page"), "--"])
        .args(["sh", "-c", &py("overwrite.py", "page")])
        .output()
        .unwrap();
    assert!(
        rec.status.success(),
        "{}",
        String::from_utf8_lossy(&rec.stderr)
    );
    let out = s
        .blackout()
        .arg("states")
        .arg(&trace)
        .args(["--model", "posix"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    let torn: Vec<&str> = listed
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains(".torn"))
        .collect();
    assert_eq!(torn, ["c1.torn0h", "c1.torn0s"], "{listed}");
    for (id, new_until) in [("c1.torn0h", 2048), ("c1.torn0s", 4096)] {
        let at = s.path(id);
        let st = s
            .blackout()
            .arg("state")
            .arg(&trace)
            .arg(id)
            .arg(&at)
            .output()
            .unwrap();
        assert!(
            st.status.success(),
            "{}",
            String::from_utf8_lossy(&st.stderr)
        );
        let got = std::fs::read(at.join("f")).unwrap();
        let mut want = vec![b'a'; 8192];
        want[100..new_until].fill(b'b');
        assert!(got == want, "{id} is cut at {new_until}");
    }
    s.assert_clean();
}

#[test]
fn a_double_meta_page_store_passes_and_its_meta_before_sync_bug_is_caught() {
    let check = py("metapage.py", "check");
    let setup = py("metapage.py", "setup");
    let (code, m) = posix(&setup, &check, &py("metapage.py", "put 3"));
    assert_eq!((code, m["verdict"].as_str()), (0, Some("PASS")), "{m:#}");
    let (code, m) = posix(
        &setup,
        &check,
        &py("metapage.py", "--bug meta-before-sync put 3"),
    );
    assert_eq!(code, 1, "{m:#}");
    // One cause, over the three commits: a data page lost or torn while
    // the meta write after it (through the O_DSYNC descriptor) reached the
    // disk.
    let cs = causes(&m);
    assert_eq!(cs.len(), 1, "one cause: {m:#}");
    let c = &cs[0];
    assert_eq!(c["cause"]["kind"], "unordered_writes", "{c:#}");
    let sentence = c["cause"]["sentence"].as_str().unwrap();
    assert!(
        sentence.contains("while the later write to db"),
        "{sentence}"
    );
    let w = &c["window"];
    assert_eq!(
        (&w["op_first"], &w["op_last"], &w["path"]),
        (&0.into(), &12.into(), &"db".into()),
        "{w:#}"
    );
    // Its fix, the three syncs before the meta writes, fixes every state.
    assert_eq!(c["fix"]["passes"], true, "{c:#}");
    assert_eq!(c["fix"]["syncs"].as_array().unwrap().len(), 3);
    assert!(m["fix_set"].is_null(), "one cause's fix is enough: {m:#}");
}

#[test]
fn a_torn_record_in_the_middle_of_a_log_is_blamed_on_the_missing_sync_before_the_next() {
    // Two 1,008-byte records appended without a sync between them: the
    // first torn (or lost) while the second reached the disk is a checksum
    // mismatch in the middle, which recovery refuses.
    let (code, m) = posix(
        "touch log",
        &py("csumlog.py", "check 2"),
        &py("csumlog.py", "write 2"),
    );
    assert_eq!(code, 1, "{m:#}");
    let cs = causes(&m);
    assert_eq!(cs.len(), 1, "one cause: {m:#}");
    let c = &cs[0];
    let sentence = c["cause"]["sentence"].as_str().unwrap();
    assert!(
        sentence.contains("while the later write to log (op 1")
            && sentence.contains("torn instead of lost (c2.torn0h), it is rejected too"),
        "{sentence}"
    );
    assert!(
        c["simplest"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("checksum mismatch")),
        "{c:#}"
    );
    assert_eq!(c["fix"]["passes"], true, "{c:#}");
    assert!(c["fix"]["description"]
        .as_str()
        .unwrap()
        .starts_with("fsync(log) before op 1"));
}

#[test]
fn a_program_that_needs_two_syncs_gets_the_pair_verified() {
    // examples/save in its no-fsync mode: the data must be synced before
    // the rename and the directory after it; neither alone is enough.
    let save = crate::common::examples();
    let (code, m) = posix(
        "echo 'version 1' > doc.txt",
        &crate::common::save_checker(),
        &format!("sh {} no-fsync", save.join("save.sh").display()),
    );
    assert_eq!(code, 1, "{m:#}");
    for c in causes(&m) {
        assert_eq!(c["fix"]["passes"], false, "{c:#}");
    }
    let set = &m["fix_set"];
    assert_eq!(set["result"], "found", "{set:#}");
    assert_eq!(set["check"]["passes"], true);
    assert_eq!(set["minimal"], true);
    let d = set["check"]["description"].as_str().unwrap();
    assert!(
        d.starts_with("fsync(doc.txt.tmp) before op") && d.contains(" and fsync(.) after op"),
        "{d}"
    );
}

#[test]
fn an_update_in_place_is_one_cause_over_its_window_of_crash_points() {
    // Truncate, 64 writes of 4 KiB, fsync, "saved": every crash between the
    // truncate and the last write leaves neither version, with every op
    // kept. One bug, one cause, whatever the model.
    // Under process the document has 64 blocks; under posix 16 (each crash
    // point has a state per lost write: 64 blocks make ~11,000 states, whose
    // run docs/PERFORMANCE.md reports). The checker is in shell (no
    // interpreter to start per state), against both versions written once.
    for (model, blocks) in [("process", 64), ("posix", 16)] {
        let refs = Scratch::new();
        let inplace = |args: &str| py("inplace.py", &format!("--blocks {blocks} {args}"));
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(inplace(&format!("refs {}", refs.path("").display())))
            .status()
            .unwrap();
        assert!(status.success());
        let check = format!(
            "sh {} {}",
            engines().join("inplace-check.sh").display(),
            refs.path("").display()
        );
        let (crash_last, op_last) = match model {
            "process" => (blocks, blocks - 1),
            _ => (blocks + 1, blocks),
        };
        let s = Scratch::new();
        let (code, v, _) = run_json(
            &s,
            &[
                "--model",
                model,
                "--setup",
                &inplace("setup"),
                "--checker",
                &check,
                "--",
                "sh",
                "-c",
                &inplace("save"),
            ],
        );
        assert_eq!(code, 1, "{v:#}");
        let m = &v["result"]["models"][0];
        let cs = causes(m);
        assert_eq!(cs.len(), 1, "{model}: one cause: {m:#}");
        let c = &cs[0];
        assert_eq!(c["cause"]["kind"], "not_atomic", "{c:#}");
        assert!(c["fix"].is_null() && m["fix_set"].is_null(), "{c:#}");
        let w = &c["window"];
        let bounds = |k: &str| w[k].as_u64().unwrap();
        // Under process the window ends at the last write; under posix a
        // crash after it that loses or tears a write is in it too.
        assert_eq!(
            [
                bounds("crash_first"),
                bounds("crash_last"),
                bounds("op_first"),
                bounds("op_last")
            ],
            [1, crash_last, 0, op_last],
            "{model}: {w:#}"
        );
        assert_eq!(w["path"], "doc.txt");
        let sentence = c["cause"]["sentence"].as_str().unwrap();
        assert!(
            sentence.contains(&format!("a crash anywhere from right after op 0 (truncate of doc.txt) to right after op {} (write of doc.txt) fails with every op kept", blocks - 1)),
            "{sentence}"
        );
        // Every failing state is reachable from the one cause.
        assert_eq!(
            c["ids"].as_array().unwrap().len(),
            m["failing"].as_array().unwrap().len()
        );
        assert_eq!(c["states"], m["failing"].as_array().unwrap().len());
    }
}

/// The slower suite (`cargo test -p blackout-cli --test e2e -- --ignored`):
/// the in-place save at full size under posix, with the program's own
/// Python checker: ~11,000 distinct states, one interpreter start each.
#[test]
#[ignore = "slower suite: minutes of Python starts (see README, What the tests run)"]
fn slower_an_in_place_save_at_full_size_under_posix_is_one_cause() {
    let (code, m) = posix(
        &py("inplace.py", "setup"),
        &py("inplace.py", "check"),
        &py("inplace.py", "save"),
    );
    assert_eq!(code, 1, "{m:#}");
    let m = &m;
    let cs = causes(m);
    assert_eq!(cs.len(), 1, "one cause: {m:#}");
    assert_eq!(cs[0]["cause"]["kind"], "not_atomic");
    let w = &cs[0]["window"];
    assert_eq!(
        (&w["crash_first"], &w["op_last"]),
        (&1.into(), &64.into()),
        "{w:#}"
    );
    assert_eq!(cs[0]["states"], m["failing"].as_array().unwrap().len());
}
