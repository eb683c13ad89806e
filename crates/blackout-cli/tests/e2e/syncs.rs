//! `blackout run --syncs`: every sync the save example makes judged by
//! taking it out and checking the states again, under real strace.

use serde_json::Value;

use crate::common::{examples, run_json, save_checker, sqlite_run_args, Scratch};

/// `run --syncs` of `save.sh MODE` under posix with `checker`, the
/// document at version 1 first when `setup`: (exit code, the report).
fn syncs_of(s: &Scratch, mode: &str, checker: &str, setup: bool) -> (i32, Value) {
    let script = examples().join("save.sh");
    let script = script.to_str().unwrap();
    let mut args = vec!["--model", "posix", "--syncs", "--checker", checker];
    if setup {
        args.extend(["--setup", "echo 'version 1' > doc.txt"]);
    }
    args.extend(["--", "sh", script, mode]);
    let (code, v, _) = run_json(s, &args);
    (code, v)
}

/// The text report of `run --syncs` of `save.sh MODE` under posix with
/// `checker`, the document at version 1 first when `setup`.
fn syncs_text(s: &Scratch, mode: &str, checker: &str, setup: bool) -> String {
    let mut cmd = s.blackout();
    cmd.args(["run", "--model", "posix", "--syncs", "--checker", checker]);
    if setup {
        cmd.args(["--setup", "echo 'version 1' > doc.txt"]);
    }
    let out = cmd
        .args(["--", "sh"])
        .arg(examples().join("save.sh"))
        .arg(mode)
        .output()
        .unwrap();
    crate::common::text(&out.stdout)
}

/// Each site's call and verdict.
fn verdicts(v: &Value) -> Vec<(String, String)> {
    v["result"]["syncs"]["sites"]
        .as_array()
        .unwrap_or_else(|| panic!("no syncs: {v}"))
        .iter()
        .map(|c| {
            let call = c["site"]["call"].as_str().unwrap().to_string();
            (call, c["verdict"].as_str().unwrap().to_string())
        })
        .collect()
}

#[test]
fn a_redundant_fsync_is_not_needed_and_the_recipes_own_are() {
    let s = Scratch::new();
    let (code, v) = syncs_of(&s, "extra-fsync", &save_checker(), true);
    assert_eq!(code, 0, "{v}");
    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    assert_eq!(
        verdicts(&v),
        pairs(&[
            ("fsync(doc.txt.tmp)", "needed"),
            ("fsync(.)", "needed"),
            ("fsync(doc.txt)", "not_needed"),
        ])
    );
    let sites = v["result"]["syncs"]["sites"].as_array().unwrap();
    for c in sites {
        assert_eq!(c["exact"], true, "{c}");
        assert!(c.get("accepted_loss").is_none(), "{c}");
    }
    // Without the file's fsync the renamed document may be empty; without
    // the directory's, the rename may be lost after "saved".
    assert!(
        sites[0]["reason"].as_str().unwrap().contains("empty"),
        "{}",
        sites[0]
    );
    assert!(
        sites[1]["reason"]
            .as_str()
            .unwrap()
            .contains("still version 1"),
        "{}",
        sites[1]
    );
    // The redundant one: nothing it makes durable is missing without it.
    assert_eq!(sites[2]["loses_promised"], false);
    assert_eq!(sites[2]["new_failing"], 0);
    // Without the directory's fsync the model knows "saved" broken, and
    // the repository's checker catches it. Without the file's, the extra
    // fsync of the document still syncs its data before "saved": only
    // the states before it lose it, and the checker catches those too (a
    // document neither version is never right).
    assert_eq!(sites[1]["loses_promised"], true);
    assert_eq!(sites[0]["loses_promised"], false);
    let text = syncs_text(&s, "extra-fsync", &save_checker(), true);
    // Each site's line: its call, how many calls and how long they took
    // while recording, its verdict.
    let line = |start: &str| {
        let at = text
            .find(start)
            .unwrap_or_else(|| panic!("{start}\n{text}"));
        text[at..].lines().next().unwrap().to_string()
    };
    let needed = "needed: without it c4.lost1 fails: doc.txt is empty;";
    assert!(
        line("  fsync(doc.txt.tmp): 1 call, ").contains(needed),
        "{text}"
    );
    let needed = "needed: without it c7.lost3 fails: \"saved\" was printed";
    assert!(line("  fsync(.): 1 call, ").contains(needed), "{text}");
    let not = "not needed: every state without it passes or fails as with it";
    assert!(line("  fsync(doc.txt): 1 call, ").ends_with(not), "{text}");
    assert!(line("  time in syncs while recording (strace -T): ").contains(" in all, "));
    assert!(text.contains(
        "  checker: caught 1 of the 1 call sites whose removal loses data synced before a promise"
    ));
    assert!(sites
        .iter()
        .all(|c| c["seconds"].as_f64().is_some_and(|s| s >= 0.0)));
}

#[test]
fn a_failing_programs_sync_is_needed_when_its_removal_fails_new_states() {
    let s = Scratch::new();
    let (code, v) = syncs_of(&s, "no-dir-fsync", &save_checker(), true);
    assert_eq!(code, 1, "{v}");
    assert_eq!(
        verdicts(&v),
        [("fsync(doc.txt.tmp)".to_string(), "needed".to_string())]
    );
    let site = &v["result"]["syncs"]["sites"][0];
    assert!(site["reason"].as_str().unwrap().contains("empty"), "{site}");
    assert!(site["new_failing"].as_u64().unwrap() >= 1);
}

#[test]
fn a_checker_that_only_asks_the_file_exists_is_named_weak_with_the_state() {
    let s = Scratch::new();
    let weak = r#"[ -z "$BLACKOUT_ACKED" ] || [ -f doc.txt ]"#;
    let (code, v) = syncs_of(&s, "full", weak, false);
    assert_eq!(code, 0, "{v}");
    let sites = v["result"]["syncs"]["sites"].as_array().unwrap();
    // The lost rename leaves no doc.txt: caught. The lost data leaves it
    // empty: accepted, and named.
    assert_eq!(sites[1]["verdict"], "needed", "{}", sites[1]);
    assert_eq!(sites[0]["verdict"], "not_needed", "{}", sites[0]);
    let (state, promise) = (&sites[0]["accepted_loss"][0], &sites[0]["accepted_loss"][1]);
    assert!(state.as_str().unwrap().contains(".lost"), "{}", sites[0]);
    assert_eq!(promise, "saved");
    let text = syncs_text(&s, "full", weak, false);
    let weak_line = format!(
        "  the checker is weak: without fsync(doc.txt.tmp) it accepted {}, which lacks data synced before `saved` was printed",
        state.as_str().unwrap()
    );
    assert!(text.contains(&weak_line), "{text}");
    assert!(
        text.contains("  checker: caught 1 of the 2 call sites whose removal loses data synced before a promise"),
        "{text}"
    );
}

#[test]
fn the_program_without_the_sync_not_needed_still_passes_every_state() {
    // `full` is `extra-fsync` without the fsync of the renamed document,
    // the one site judged not needed: recorded without it, it passes, and
    // every other site stays needed.
    let s = Scratch::new();
    let (code, v) = syncs_of(&s, "full", &save_checker(), true);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["exact"], true);
    let needed: Vec<String> = verdicts(&v)
        .into_iter()
        .filter(|(_, verdict)| verdict == "needed")
        .map(|(call, _)| call)
        .collect();
    assert_eq!(needed, ["fsync(doc.txt.tmp)", "fsync(.)"]);
}

#[test]
fn the_markdown_html_and_junit_reports_have_the_syncs_section() {
    let s = Scratch::new();
    let (md, html, junit) = (s.path("r.md"), s.path("r.html"), s.path("r.xml"));
    let out = s
        .blackout()
        .args([
            "run",
            "--model",
            "posix",
            "--syncs",
            "--checker",
            &save_checker(),
        ])
        .args(["--setup", "echo 'version 1' > doc.txt", "--markdown"])
        .arg(&md)
        .arg("--html")
        .arg(&html)
        .arg("--junit")
        .arg(&junit)
        .args(["--", "sh"])
        .arg(examples().join("save.sh"))
        .arg("extra-fsync")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let md = std::fs::read_to_string(md).unwrap();
    let html = std::fs::read_to_string(html).unwrap();
    assert!(md.contains("### Syncs"), "{md}");
    assert!(md.contains("| fsync(doc.txt) | 1 call, "), "{md}");
    assert!(
        md.contains("not needed: every state without it passes"),
        "{md}"
    );
    assert!(html.contains("<section id=\"syncs\">"), "{html}");
    assert!(
        html.contains("<tr><td><code>fsync(.)</code></td>"),
        "{html}"
    );
    let junit = std::fs::read_to_string(junit).unwrap();
    assert!(junit.contains("<system-out>syncs (posix;"), "{junit}");
}

/// `ARGS --without-sync SYNC -- WORKLOAD...`: the arguments of a run
/// whose workload really makes none of the syncs `sync` names.
fn without(args: &[&str], sync: &str, workload: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    v.extend(["--without-sync", sync, "--"].map(String::from));
    v.extend(workload.iter().map(|a| a.to_string()));
    v
}

/// Runs `blackout run --json ARGS`: (exit code, the report).
fn run_args(s: &Scratch, args: &[String]) -> (i32, Value) {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, v, _) = run_json(s, &args);
    (code, v)
}

#[test]
fn a_sync_made_as_a_raw_system_call_cannot_be_taken_out_and_the_run_says_so() {
    let s = Scratch::new();
    let raw = crate::common::compile(
        &s,
        "raw_fsync",
        "#include <fcntl.h>\n#include <sys/syscall.h>\n#include <unistd.h>\n\
         int main(void) { int fd = open(\"a\", O_CREAT | O_WRONLY, 0644);\n\
         return syscall(SYS_fsync, fd) != 0; }\n",
    );
    let out = s
        .blackout()
        .args([
            "run",
            "--checker",
            "true",
            "--without-sync",
            "fsync(a)",
            "--",
        ])
        .arg(&raw)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = crate::common::text(&out.stderr);
    assert!(
        err.contains("the workload made fsync(a) anyway (log line ")
            && err.contains("it does not ask the C library for it"),
        "{err}"
    );
    s.assert_clean();
}

#[test]
fn a_site_judged_not_needed_passes_a_run_that_really_omits_its_syncs() {
    // The test engine's log, 12 records (no record split over a block:
    // the run passes). Its manifest's creation fsync syncs an empty file:
    // not needed. Recorded again with that fsync really taken out of the
    // program, the run still passes, and the other sites stay needed.
    let s = Scratch::new();
    let engine = crate::common::repo().join("tests/engines/blocklog.py");
    let engine = engine.to_str().unwrap();
    let server = format!("python3 {engine} serve");
    let args = ["--model", "posix", "--syncs", "--checker-server", &server];
    let workload = ["python3", engine, "write", "12"];
    let mut with: Vec<&str> = args.to_vec();
    with.push("--");
    with.extend(workload);
    let (code, v, _) = run_json(&s, &with);
    assert_eq!(code, 0, "{v}");
    let judged = verdicts(&v);
    let needed = |judged: &[(String, String)]| -> Vec<String> {
        judged
            .iter()
            .filter(|(_, verdict)| verdict == "needed")
            .map(|(call, _)| call.clone())
            .collect()
    };
    assert!(
        judged.contains(&("fsync(MANIFEST)".to_string(), "not_needed".to_string())),
        "{judged:?}"
    );
    assert_eq!(needed(&judged).len(), judged.len() - 1, "{judged:?}");
    let (code, v) = run_args(&s, &without(&args, "fsync(MANIFEST)", &workload));
    assert_eq!(code, 0, "{v}");
    let omitted = verdicts(&v);
    assert!(
        !omitted.iter().any(|(call, _)| call == "fsync(MANIFEST)"),
        "the recording still has the fsync: {omitted:?}"
    );
    assert_eq!(needed(&omitted), needed(&judged));
}

#[test]
fn each_site_sqlite_needs_fails_a_run_that_really_omits_its_syncs() {
    // The sqlite3 CLI in WAL mode with synchronous FULL: every call site is
    // needed, and recorded with a site's syncs taken out of the program
    // (`--without-sync`) the run fails.
    if !crate::common::have_tool("sqlite3") {
        return;
    }
    let s = Scratch::new();
    let with = sqlite_run_args("WAL", "FULL", "8", &["--syncs"]);
    let (code, v) = run_args(&s, &with);
    assert_eq!(code, 0, "{v}");
    let judged = verdicts(&v);
    let calls: Vec<&str> = judged.iter().map(|(call, _)| call.as_str()).collect();
    assert_eq!(
        calls,
        ["fdatasync(db-wal)", "fdatasync(.)", "fdatasync(db)"]
    );
    assert!(
        judged.iter().all(|(_, verdict)| verdict == "needed"),
        "{judged:?}"
    );
    for call in calls {
        let args = sqlite_run_args("WAL", "FULL", "8", &["--without-sync", call]);
        let (code, v) = run_args(&s, &args);
        assert_eq!(code, 1, "without {call}: {}", v["result"]["verdict"]);
    }
}
