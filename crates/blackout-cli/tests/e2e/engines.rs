//! The small storage programs of `tests/engines/` (their README says the
//! truth of each and why): tears as storage makes them, torn-write causes
//! told from what the state holds, and the set of syncs that fixes every
//! cause.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::{ops_json, run_json, Scratch};

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
    // No sync prevents it; appending through a new file renamed over the
    // old one does.
    let fix = &cs[0]["fix"];
    assert_eq!(fix["syncs"], serde_json::json!([]), "{fix:#}");
    assert_eq!(fix["replaced"].as_array().map(Vec::len), Some(1), "{fix:#}");
    assert_eq!(fix["passes"], true, "{fix:#}");
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
    // A state no crash leaves is refused, not written: the write does not
    // grow the file (no tear to its new size), and its fsync (op 1) makes
    // it durable before crash point c2.
    for (id, says) in [
        ("c1.torn0z", "state c1.torn0z: op 0 cannot be torn `z`: the tears storage can make of it are torn0h, torn0s"),
        ("c2.lost0", "state c2.lost0: op 0 was made durable by a sync before crash point c2: no crash there loses it"),
    ] {
        let at = s.path(id);
        let st = s.blackout().arg("state").arg(&trace).arg(id).arg(&at).output().unwrap();
        assert_eq!(st.status.code(), Some(2));
        assert_eq!(String::from_utf8_lossy(&st.stderr), format!("error: {says}\n"));
        assert!(!at.exists());
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
    // Each fix fixes its own cause; the other's states still fail with it.
    for c in causes(&m) {
        assert_eq!(c["fix"]["passes"], true, "{c:#}");
        assert_eq!(c["fix"]["own"]["still_failing"], 0, "{c:#}");
        assert!(c["fix"]["still_failing"].as_u64().unwrap() > 0, "{c:#}");
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
        // No sync fixes it; the file written whole to a new one renamed
        // over it does.
        assert_eq!(c["fix"]["syncs"], serde_json::json!([]), "{c:#}");
        assert_eq!(c["fix"]["passes"], true, "{c:#}");
        assert!(m["fix_set"].is_null(), "{c:#}");
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

/// Records `python3 tests/engines/NAME ARGS` (with `setup` run first,
/// unrecorded) into `s`'s `run.trace`.
fn record_py(s: &Scratch, setup: Option<&str>, name: &str, args: &str) -> std::path::PathBuf {
    let trace = s.path("run.trace");
    let dir = s.path("w");
    std::fs::create_dir_all(&dir).unwrap();
    let mut cmd = s.blackout();
    cmd.current_dir(&dir).args(["record", "-o"]).arg(&trace);
    if let Some(setup) = setup {
        cmd.args(["--setup", setup]);
    }
    let out = cmd
        .args(["--", "sh", "-c", &py(name, args)])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    trace
}

/// `blackout run --trace TRACE --model posix --json` with `extra` flags:
/// the exit code and the JSON report.
fn run_trace(s: &Scratch, trace: &std::path::Path, extra: &[&str]) -> (i32, Value) {
    let trace = trace.to_str().unwrap();
    let mut args = vec!["--trace", trace, "--model", "posix"];
    args.extend_from_slice(extra);
    let (code, v, _) = run_json(s, &args);
    (code, v)
}

/// The tear letters of a model's failing states (`h`, `s`, `z`), and
/// whether any lost an op.
fn failing_kinds(v: &Value) -> (Vec<String>, bool) {
    let failing = v["result"]["models"][0]["failing"].as_array().unwrap();
    let mut tears: Vec<String> = failing
        .iter()
        .filter_map(|c| c["id"].as_str()?.split(".torn").nth(1))
        .map(|t| t[t.len() - 1..].to_string())
        .collect();
    tears.sort();
    tears.dedup();
    let lost = failing
        .iter()
        .any(|c| c["id"].as_str().unwrap().contains(".lost"));
    (tears, lost)
}

#[test]
fn records_straddling_a_sector_fail_by_default_as_exhaustively_and_aligned_ones_pass() {
    // 800 in-place updates of 40-byte checksummed records, each
    // fdatasynced before its promise: 3,201 crash points, explored by
    // representatives first. Some records cross a 512-byte boundary and
    // tear there.
    for (layout, want) in [("", "FAIL"), ("--aligned", "PASS")] {
        let s = Scratch::new();
        let setup = py("records.py", &format!("setup {layout}"));
        let trace = record_py(
            &s,
            Some(&setup),
            "records.py",
            &format!("update {layout} 800"),
        );
        let server = py("records.py", &format!("serve {layout}"));
        let runs: Vec<(i32, Value)> = [
            vec!["--checker-server", &server],
            vec!["--checker-server", &server, "--check-budget", "0"],
            vec!["--checker-server", &server, "--exhaustive"],
        ]
        .iter()
        .map(|extra| run_trace(&s, &trace, extra))
        .collect();
        let (default, reps, all) = (&runs[0], &runs[1], &runs[2]);
        for (name, (code, v)) in [("default", default), ("exhaustive", all)] {
            assert_eq!(v["verdict"], want, "{layout} {name}: {v:#}");
            assert_eq!(*code, if want == "PASS" { 0 } else { 1 });
            assert_eq!(
                v["result"]["exact"], true,
                "{layout} {name}: {}",
                v["result"]["reason"]
            );
        }
        assert!(default.1["result"]["models"][0]["coverage"]["classes"].is_array());
        assert_eq!(
            default.1["result"]["states_distinct"], all.1["result"]["states_distinct"],
            "{layout}"
        );
        assert_eq!(failing_kinds(&default.1), failing_kinds(&all.1), "{layout}");
        if want == "FAIL" {
            // A torn straddling record, found by the representatives alone
            // too: the class of a straddling update is its own.
            assert_eq!(failing_kinds(&all.1), (vec!["h".to_string()], false));
            assert_eq!(
                reps.1["verdict"], "FAIL",
                "{:#}",
                reps.1["result"]["reason"]
            );
            assert_eq!(failing_kinds(&reps.1), failing_kinds(&all.1));
            let fails = |v: &Value| {
                v["result"]["models"][0]["failing"]
                    .as_array()
                    .unwrap()
                    .len()
            };
            assert_eq!(fails(&default.1), fails(&all.1));
        } else {
            // Representatives alone pass, and say they checked a sample.
            assert_eq!(reps.1["verdict"], "PASS");
            assert_eq!(reps.1["result"]["exact"], false);
            let reason = reps.1["result"]["reason"].as_str().unwrap();
            assert!(
                reason.contains("a sample, not every crash state"),
                "{reason}"
            );
            assert!(
                reason.contains("--check-budget 0 checked no more"),
                "{reason}"
            );
        }
    }
}

/// The fix set of a run's posix model: its description and whether each
/// sync was found needed.
fn fix_set(v: &Value) -> (String, bool) {
    let set = &v["result"]["models"][0]["fix_set"];
    assert_eq!(set["result"], "found", "{set:#}");
    (
        set["check"]["description"].as_str().unwrap().to_string(),
        set["minimal"].as_bool().unwrap(),
    )
}

#[test]
fn one_skipped_sync_among_1500_is_fixed_by_that_sync_and_the_directory_s() {
    // An append log: each of 1,500 records fdatasynced before its "ack",
    // but record 1234's; the log's directory never synced.
    let s = Scratch::new();
    let trace = record_py(&s, None, "skiplog.py", "write 1500 1234");
    let server = py("skiplog.py", "serve");
    let (code, all) = run_trace(&s, &trace, &["--checker-server", &server, "--exhaustive"]);
    assert_eq!(code, 1, "{all:#}");
    let want = fix_set(&all);
    assert!(want.1, "each sync needed: {want:?}");
    let ops = &ops_json(&s, &trace)["ops"];
    let write = ops
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == "write" && o["path"] == "log")
        .nth(1234)
        .unwrap()["index"]
        .as_u64()
        .unwrap();
    assert!(
        want.0.starts_with("fsync(.) after op 0 (call ")
            && want
                .0
                .contains(&format!(" and fsync(log) after op {write} (call ")),
        "{want:?}"
    );
    // The default, and representatives alone (where the fix found at a
    // few crash points goes after every like write no sync covers before
    // its promise: that one).
    for extra in [vec![], vec!["--check-budget", "0"]] {
        let mut args = vec!["--checker-server", server.as_str()];
        args.extend(extra.iter().copied());
        let (code, v) = run_trace(&s, &trace, &args);
        assert_eq!(code, 1, "{extra:?}");
        assert_eq!(
            fix_set(&v),
            want,
            "{extra:?}: {:#}",
            v["result"]["models"][0]["fix_set"]
        );
    }
}

#[test]
fn a_record_split_at_block_boundaries_is_one_cause_and_the_info_log_is_blamed_for_nothing() {
    // An append log cut into 4 KiB blocks, a record split over a boundary
    // written in two writes (the early reader rejects a first fragment
    // without its last), and an info log written before every record
    // that recovery never reads and nothing syncs.
    let s = Scratch::new();
    let trace = record_py(&s, None, "blocklog.py", "write 150");
    let server = py("blocklog.py", "serve");
    // A short budget: the info log's pending writes make the rest large,
    // and its most novel states (each split's crash point among them) come
    // first.
    let (code, v) = run_trace(
        &s,
        &trace,
        &["--checker-server", &server, "--check-budget", "5"],
    );
    assert_eq!(code, 1, "{:#}", v["result"]["reason"]);
    let m = &v["result"]["models"][0];
    let causes = causes(m);
    assert_eq!(causes.len(), 1, "{m:#}");
    let c = &causes[0];
    assert_eq!(c["cause"]["kind"], "not_atomic");
    // Every split record is a window of its own.
    let splits: usize = std::process::Command::new("python3")
        .arg(engines().join("blocklog.py"))
        .args(["splits", "150"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().parse().unwrap())
        .unwrap();
    assert_eq!(
        c["windows"].as_array().unwrap().len(),
        splits,
        "{:#}",
        c["windows"]
    );
    for w in c["windows"].as_array().unwrap() {
        assert!(w["path"].as_str().unwrap().starts_with("data-"), "{w:#}");
    }
    // Advice for a log, not for a file rewritten whole.
    let sentence = c["cause"]["sentence"].as_str().unwrap();
    assert!(
        sentence.contains(
            "is only ever appended to, so its recovery should drop a partial record at its end"
        ) && sentence.contains("or the program should write each record with one write"),
        "{sentence}"
    );
    assert!(
        !sentence.contains("rename it over the old one"),
        "{sentence}"
    );
    // Nothing blames the info log.
    assert!(!m["causes"].to_string().contains("INFO"), "{m:#}");
}

#[test]
fn each_planted_bug_of_a_rotating_log_is_one_cause_whose_fix_makes_its_states_pass() {
    // The block log with every planted bug, rotating over three logs:
    // a new log's directory entry never synced, its manifest line never
    // synced, CURRENT renamed before its data is synced, every 50th record
    // acknowledged before its sync; and, inherent to the format, a record
    // split over a block boundary that its early reader rejects.
    let bugs =
        "--bug ack-early --bug no-log-dir-fsync --bug manifest-unsynced --bug current-unsynced";
    let s = Scratch::new();
    let trace = record_py(
        &s,
        None,
        "blocklog.py",
        &format!("{bugs} write 110 --rotate 40"),
    );
    let server = py("blocklog.py", &format!("{bugs} serve"));
    let md = s.path("report.md");
    let (code, v) = run_trace(
        &s,
        &trace,
        &[
            "--checker-server",
            &server,
            "--check-budget",
            "5",
            "--fix-time",
            "10m",
            "--markdown",
            md.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{:#}", v["result"]["reason"]);
    let m = &v["result"]["models"][0];
    let causes = causes(m);
    // One cause per planted bug, and the split record's.
    assert_eq!(
        kinds_and_roles(causes),
        [
            "data_not_synced MANIFEST",
            "data_not_synced_before_rename CURRENT.tmp",
            "entry_not_synced .",
            "not_atomic data-N.log",
            "promise_before_sync data-N.log",
        ],
    );
    for c in causes {
        fix_judged_on_its_own_states(c);
    }
    // The set of every cause's syncs, verified over every state of the
    // run with them: what still fails is the split record's alone.
    let set = &m["fix_set"];
    assert_eq!(set["result"], "found", "{set:#}");
    let split = causes
        .iter()
        .position(|c| c["cause"]["kind"] == "not_atomic")
        .unwrap();
    assert_eq!(set["unfixable"], serde_json::json!([split]), "{set:#}");
    assert!(set["check"]["replaced"]
        .as_array()
        .is_none_or(Vec::is_empty));
    // As people read it.
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(
        text.contains("fix for every cause a sync can fix: adding ")
            && text.contains(&format!(
                "of cause {}'s states, which no sync fixes",
                split + 1
            )),
        "{text}"
    );
    assert_eq!(
        text.matches("fixes this cause: makes all ").count(),
        4,
        "{text}"
    );
    assert!(!text.contains("is not enough"), "{text}");
    assert!(!text.contains(".blackout-new"), "{text}");
}

/// Each cause's kind and the file of its window, sorted; a log of the
/// block log (`data-2.log`) as `data-N.log`.
fn kinds_and_roles(causes: &[Value]) -> Vec<String> {
    let mut kinds: Vec<String> = causes
        .iter()
        .map(|c| {
            // `data-1.log and 2 more like it`: the first, then its role.
            let path = c["window"]["path"].as_str().unwrap();
            let path = path.split(' ').next().unwrap();
            let role = if path.starts_with("data-") && path.ends_with(".log") {
                "data-N.log"
            } else {
                path
            };
            format!("{} {role}", c["cause"]["kind"].as_str().unwrap())
        })
        .collect();
    kinds.sort_unstable();
    kinds
}

/// A cause's fix, judged on its own states: all of them pass with it,
/// while the other causes' states still fail; a log's split record has
/// none (its recovery is the fix).
fn fix_judged_on_its_own_states(c: &Value) {
    let kind = c["cause"]["kind"].as_str().unwrap();
    let fix = &c["fix"];
    if kind == "not_atomic" {
        // The log's recovery is the fix: no sync, no replacement.
        assert_eq!(c["log"], true, "{c:#}");
        assert!(fix.is_null(), "{fix:#}");
        assert!(c["replace"].is_null(), "{c:#}");
        return;
    }
    // Each fix judged on its own cause's states: all of them pass,
    // while the other causes' states still fail.
    assert_eq!(fix["cut_short"], false, "{kind}: {fix:#}");
    assert_eq!(fix["passes"], true, "{kind}: {fix:#}");
    assert_eq!(fix["own"]["still_failing"], 0, "{kind}: {fix:#}");
    assert_eq!(fix["own"]["states"], c["states"], "{kind}");
    assert!(
        fix["still_failing"].as_u64().unwrap() > 0,
        "{kind}: {fix:#}"
    );
    assert!(
        fix["replaced"].as_array().is_none_or(Vec::is_empty),
        "{fix:#}"
    );
}
