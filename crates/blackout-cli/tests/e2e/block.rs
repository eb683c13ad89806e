//! `run --backend block`: real ext4, xfs and btrfs on a recorded device.
//! A saved recording (`-o`) checked again with `--trace`, a checker server
//! and three shards merged.
//! The document-save variants and SQLite's rollback journal at FULL and
//! EXTRA, each on every file system next to the posix model (the tables in
//! docs/BLOCK.md are regenerated and compared); and nothing — no mount,
//! loop device, FUSE daemon, image or process — left after a pass, a
//! failure, a checker timeout, a missing workload, Ctrl-C or SIGTERM.
//!
//! Regenerate the tables: `BLACKOUT_UPDATE_DOCS=1 cargo test -p blackout-cli --test e2e block`.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{examples, processes_with, run_json, save_checker, signal_when, text, Scratch};

const FILE_SYSTEMS: [&str; 3] = ["ext4", "xfs", "btrfs"];

/// A checker prefix that is true only in a mounted state (the block
/// backend's), not in the posix model's states (written out as
/// directories, or shown through the FUSE view: a `fuseblk` mount).
const ON_A_MOUNT: &str =
    r#"[ "$(stat -c %d .)" != "$(stat -c %d ..)" ] && [ "$(stat -f -c %T .)" != fuseblk ]"#;

/// Whether this machine can run the block backend (root, /dev/fuse, the
/// mkfs tools). Under CI a missing one fails the test (scripts/test installs
/// the tools and CI runs as root); elsewhere the test says so and skips.
pub fn block_backend_available() -> bool {
    use blackout::block_device::session::{can_start, FsKind};
    let Err(e) = [FsKind::Ext4, FsKind::Xfs, FsKind::Btrfs]
        .into_iter()
        .try_for_each(can_start)
    else {
        return true;
    };
    assert!(
        std::env::var_os("CI").is_none(),
        "{e}; CI must run these tests"
    );
    eprintln!("note: the block backend cannot run here ({e}); skipped");
    false
}

/// Mounts and loop devices that involve `dir` (a test's scratch).
fn devices_under(dir: &Path) -> Vec<String> {
    let dir = dir.to_string_lossy().into_owned();
    let mut found: Vec<String> = fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&dir))
        .map(|l| format!("mount: {l}"))
        .collect();
    for e in fs::read_dir("/sys/block").unwrap().flatten() {
        let backing = e.path().join("loop/backing_file");
        if let Ok(file) = fs::read_to_string(&backing) {
            if file.contains(&dir) {
                found.push(format!("loop device {:?}: {}", e.file_name(), file.trim()));
            }
        }
    }
    found
}

/// Asserts nothing of the block backend is left: no mount or loop device
/// on the scratch (a loop device clears itself from a kernel work queue
/// once its last user leaves, so it is given time), and the scratch itself
/// empty.
fn assert_nothing_left(s: &Scratch) {
    let start = Instant::now();
    loop {
        let left = devices_under(s.root.path());
        if left.is_empty() {
            break;
        }
        // A loaded machine's work queue can take a while.
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "left behind: {left:#?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    s.assert_clean();
}

/// The document save on the block backend: `--backend block`, then
/// `extra`, no fix verification, the old document set up, `checker`, and
/// `save.sh VARIANT`.
fn save_args(extra: &[&str], checker: &str, variant: &str) -> Vec<String> {
    let save = examples().join("save.sh");
    let mut args: Vec<String> = ["--backend", "block"].map(String::from).to_vec();
    args.extend(extra.iter().map(|a| a.to_string()));
    args.extend(
        [
            "--verify-fixes",
            "0",
            "--setup",
            "echo 'version 1' > doc.txt",
            "--checker",
            checker,
            "--",
        ]
        .map(String::from),
    );
    args.push(save.to_string_lossy().into_owned());
    args.push(variant.into());
    args
}

/// `blackout run --backend block --fs FS ARGS --json`: (exit code, posix
/// result, block report).
fn run_block(s: &Scratch, fs_name: &str, args: &[&str]) -> (i32, Value, Value) {
    let (code, v, out) = run_json(
        s,
        &[&["--backend", "block", "--fs", fs_name][..], args].concat(),
    );
    assert_nothing_left(s);
    assert!(
        code == 0 || code == 1,
        "{fs_name} {args:?}: exit {code}: {}\n{v}",
        text(&out.stderr)
    );
    (code, v["posix"]["result"].clone(), v["block"].clone())
}

/// A verdict cell: the verdict, and for a failure what the posix model's
/// matching state lost (log lines dropped: they vary with the build).
fn cell(block: &Value) -> String {
    let verdict = block["verdict"].as_str().unwrap_or("?").to_string();
    let Some(first) = block["failing"].as_array().and_then(|f| f.first()) else {
        return verdict;
    };
    let lost: Vec<String> = first["blame"]["posix_lost"]
        .as_array()
        .map(|l| {
            l.iter()
                .map(|x| blackout::export::text::without_log_lines(x.as_str().unwrap_or("?")))
                .collect()
        })
        .unwrap_or_default();
    if lost.is_empty() {
        format!("{verdict}: no posix state matches")
    } else {
        format!("{verdict}: lost {}", lost.join("; "))
    }
}

fn doc_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(name)
}

/// Puts `table` between the `<!-- NAME -->` and `<!-- end NAME -->` lines
/// of docs/BLOCK.md, or with BLACKOUT_UPDATE_DOCS set writes it there.
fn compare_table(name: &str, table: &str) {
    compare_table_in("BLOCK.md", name, table);
}

/// [`compare_table`] in `docs/DOC`.
fn compare_table_in(doc_name: &str, name: &str, table: &str) {
    let doc_path = || doc_path(doc_name);
    let doc = fs::read_to_string(doc_path()).unwrap();
    let (open, close) = (format!("<!-- {name} -->\n"), format!("<!-- end {name} -->"));
    let a = doc.find(&open).expect("the table's opening marker") + open.len();
    let b = doc.find(&close).expect("the table's closing marker");
    let new = format!("{}{table}\n{}", &doc[..a], &doc[b..]);
    if std::env::var_os("BLACKOUT_UPDATE_DOCS").is_some() {
        fs::write(doc_path(), new).unwrap();
        return;
    }
    assert!(
        doc == new,
        "docs/{doc_name}'s {name} table differs from what the file systems do now (regenerate with BLACKOUT_UPDATE_DOCS=1 cargo test -p blackout-cli --test e2e block):\n{table}"
    );
}

/// Must-show: the four document-save variants on ext4, xfs and btrfs,
/// next to the posix model. `full` passes everywhere; each variant that
/// drops a step fails on every file system and under posix, and every
/// real failure is a state the posix model finds failing too.
#[test]
fn document_save_variants_on_real_file_systems() {
    if !block_backend_available() {
        return;
    }
    let s = Scratch::new();
    let mut rows = vec![
        "| variant | posix model | ext4 | xfs | btrfs |".to_string(),
        "|---|---|---|---|---|".to_string(),
    ];
    for variant in ["full", "no-dir-fsync", "no-fsync", "in-place"] {
        let mut row = format!("| `{variant}` |");
        let mut posix_verdict = String::new();
        for fs_name in FILE_SYSTEMS {
            let args = save_args(&["--fs", fs_name], &save_checker(), variant);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (code, v, _) = run_json(&s, &args);
            assert_nothing_left(&s);
            let (posix, block) = (&v["posix"]["result"], &v["block"]);
            let want = if variant == "full" { "PASS" } else { "FAIL" };
            assert_eq!(block["verdict"], want, "{variant} on {fs_name}: {block}");
            assert_eq!(posix["verdict"], want, "{variant} under posix: {posix}");
            assert_eq!(code, i32::from(want == "FAIL"));
            assert_eq!(block["posix_misses"], serde_json::json!([]), "{block}");
            posix_verdict = posix["verdict"].as_str().unwrap().to_string();
            if fs_name == "ext4" {
                row.push_str(&format!(" {posix_verdict} |"));
            }
            row.push_str(&format!(" {} |", cell(block)));
        }
        assert!(!posix_verdict.is_empty());
        rows.push(row);
    }
    compare_table("document-save", &rows.join("\n"));
}

/// `--syncs` on the block backend: each sync of the careful save (and of
/// its variant with a redundant fsync of the renamed document) judged under
/// posix and measured on each file system by running the program without
/// it (three times: `--repeat 3`). The directory's fsync is needed
/// everywhere in `full`; the redundant fsync nowhere. What each file
/// system does with the rest can vary with when it writes back (ext4's
/// temporary-file fsync was not needed in a quiet run and needed under the
/// suite's load), so the table in docs/SYNCS.md is written with
/// BLACKOUT_UPDATE_DOCS and not compared.
#[test]
fn each_sync_of_the_save_measured_on_each_file_system() {
    if !block_backend_available() {
        return;
    }
    let s = Scratch::new();
    let mut rows = vec![
        "| save.sh | call site | posix model | ext4 | xfs | btrfs |".to_string(),
        "|---|---|---|---|---|---|".to_string(),
    ];
    for variant in ["full", "extra-fsync"] {
        let mut cells: Vec<(String, String, Vec<String>)> = Vec::new();
        for fs_name in FILE_SYSTEMS {
            let args = save_args(
                &["--fs", fs_name, "--syncs", "--repeat", "3"],
                &save_checker(),
                variant,
            );
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (code, v, _) = run_json(&s, &args);
            assert_nothing_left(&s);
            assert_eq!(code, 0, "{variant} on {fs_name}: {v}");
            let sites = v["posix"]["result"]["syncs"]["sites"].as_array().unwrap();
            for (i, site) in sites.iter().enumerate() {
                let call = site["site"]["call"].as_str().unwrap().to_string();
                let on = &site["on_fs"];
                assert_eq!(on["fs"], fs_name, "{site}");
                let verdict = on["verdict"].as_str().unwrap().replace('_', " ");
                let cell = match on["state"].as_str() {
                    Some(state) => format!("{verdict} (`{state}` fails in run {})", on["run"]),
                    None => format!("{verdict} in {} runs", on["runs"]),
                };
                if cells.len() <= i {
                    let posix = site["verdict"].as_str().unwrap().replace('_', " ");
                    cells.push((call.clone(), posix, Vec::new()));
                }
                assert_eq!(cells[i].0, call);
                cells[i].2.push(cell);
            }
        }
        for (call, posix, on) in cells {
            if call == "fsync(.)" && variant == "full" {
                assert!(on.iter().all(|c| c.starts_with("needed")), "{on:?}");
            }
            if call == "fsync(doc.txt)" {
                assert!(on.iter().all(|c| c == "not needed in 3 runs"), "{on:?}");
            }
            rows.push(format!(
                "| `{variant}` | `{call}` | {posix} | {} |",
                on.join(" | ")
            ));
        }
    }
    if std::env::var_os("BLACKOUT_UPDATE_DOCS").is_some() {
        compare_table_in("SYNCS.md", "syncs-on-file-systems", &rows.join("\n"));
    }
}

/// Must-show: SQLite's rollback journal at `synchronous=FULL` loses the
/// last acknowledged commit on every file system (the journal's unlink is
/// not yet durable when "ack N" is printed, and recovery rolls the commit
/// back); at EXTRA, which syncs the directory, it holds everywhere.
#[test]
fn sqlite_rollback_journal_full_loses_the_last_commit_and_extra_holds() {
    if !block_backend_available() || !crate::common::have_tool("sqlite3") {
        return;
    }
    let s = Scratch::new();
    let dir = examples().join("../sqlite").canonicalize().unwrap();
    let setup = &crate::common::sqlite_setup("DELETE");
    let checker = format!("sh {}", dir.join("check.sh").display());
    let workload = dir.join("workload.sh");
    let mut rows = vec![
        "| `synchronous` | posix model | ext4 | xfs | btrfs |".to_string(),
        "|---|---|---|---|---|".to_string(),
    ];
    for level in ["FULL", "EXTRA"] {
        let mut row = format!("| `{level}` |");
        for fs_name in FILE_SYSTEMS {
            let args = [
                "--verify-fixes",
                "0",
                "--volatile",
                "*-shm",
                "--ack-prefix",
                "ack ",
                "--setup",
                setup,
                "--checker",
                &checker,
                "--",
                workload.to_str().unwrap(),
                "DELETE",
                level,
            ];
            let (_, posix, block) = run_block(&s, fs_name, &args);
            let want = if level == "FULL" { "FAIL" } else { "PASS" };
            assert_eq!(block["verdict"], want, "{level} on {fs_name}: {block}");
            assert_eq!(posix["verdict"], want, "{level} under posix");
            assert_eq!(block["posix_misses"], serde_json::json!([]), "{block}");
            if level == "FULL" {
                // The last commit is the one lost: the last failing state
                // was promised "ack 4" and misses row 4.
                let last = block["failing"].as_array().unwrap().last().unwrap().clone();
                assert_eq!(
                    last["promises"].as_array().unwrap().last().unwrap(),
                    "ack 4"
                );
                assert!(
                    last["reason"]
                        .as_str()
                        .unwrap()
                        .contains("row 4 is missing"),
                    "{last}"
                );
            }
            if fs_name == "ext4" {
                row.push_str(&format!(" {} |", posix["verdict"].as_str().unwrap()));
            }
            row.push_str(&format!(" {} |", cell(&block)));
        }
        rows.push(row);
    }
    compare_table("sqlite-rollback", &rows.join("\n"));
}

/// A deterministic workload run three times (`--repeat 3`, a fresh file
/// system each time) gives the same verdict and failing states each time;
/// `--fsck` runs e2fsck on every state and finds nothing wrong.
#[test]
fn repeated_runs_agree_and_fsck_finds_every_state_sound() {
    if !block_backend_available() {
        return;
    }
    let s = Scratch::new();
    let args = save_args(
        &["--repeat", "3", "--fsck"],
        &save_checker(),
        "no-dir-fsync",
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, v, _) = run_json(&s, &args);
    assert_eq!(code, 1);
    assert_eq!(v["block"]["fsck"], serde_json::json!([]), "{}", v["block"]);
    // Every field of the block report (with --repeat and --fsck, and a
    // failing state's blame) is documented.
    let doc = fs::read_to_string(crate::common::repo().join("docs/JSON.md")).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    crate::exporters::keys(&v["block"], &mut seen);
    crate::exporters::keys(&v["repeat"], &mut seen);
    seen.extend(["posix", "block", "repeat"].map(String::from));
    let undocumented = crate::exporters::undocumented(&doc, &seen);
    assert!(
        undocumented.is_empty(),
        "block report fields missing from docs/JSON.md: {undocumented:?}"
    );
    assert_nothing_left(&s);
    let r = &v["repeat"];
    assert_eq!(
        r["verdicts"],
        serde_json::json!(["FAIL", "FAIL", "FAIL"]),
        "{r}"
    );
    assert_eq!(r["varied"], false);
    let failing = r["failing"].as_array().unwrap();
    assert!(
        failing
            .iter()
            .all(|f| f == &failing[0] && f.as_u64() > Some(0)),
        "{r}"
    );
}

/// The JUnit file of a failing block run on ext4: valid, with ext4's
/// suite after the run's, at least one failing state blamed on posix's
/// `entry_not_synced` (background writeback can change how many), and
/// the counts on `<testsuites>` the sums of the suites'.
fn assert_block_junit(junit: &Path) {
    if !crate::common::have_tool("xmllint") {
        return;
    }
    crate::exporters::assert_valid_junit(junit);
    let count = |expr: &str| crate::exporters::xpath_count(junit, expr);
    assert_eq!(count("//testsuite"), 2);
    let suite = "//testsuite[@name='block ext4']";
    assert_eq!(count(&format!("{suite}[@failures > 0]")), 1);
    let blamed = format!("{suite}/testcase/failure[@type='entry_not_synced']");
    assert!(count(&blamed) >= 1);
    let sums =
        "/testsuites[@tests = sum(//testsuite/@tests) and @failures = sum(//testsuite/@failures)]";
    assert_eq!(count(sums), 1);
}

/// The Markdown summary and the HTML page of a failing block run on ext4:
/// ext4's section after the posix report, its failing state lost just
/// after "saved" and held by posix's `c5.lost3`; the page rendered by
/// headless Chromium without an error.
fn assert_block_sections(s: &Scratch, md: &Path, html: &Path) {
    let md = fs::read_to_string(md).unwrap();
    let section = &md[md.find("### ext4 (real file system): **FAIL**").expect(&md)..];
    assert!(md.find("### Coverage").unwrap() < md.find("### ext4").unwrap());
    let failing = section
        .lines()
        .find(|l| l.starts_with("| `b"))
        .expect(section);
    assert!(
        failing.contains("just after the mark \"saved\""),
        "{failing}"
    );
    assert!(failing.contains("c5.lost3"), "{failing}");
    assert!(section.contains("- **coverage**: "), "{section}");
    let page = fs::read_to_string(html).unwrap();
    assert!(page.contains("<section id=\"block\" class=\"block\" data-fs=\"ext4\">"));
    if !crate::common::have_tool("chromium") {
        return;
    }
    let (dom, log) = crate::exporters::chromium(s, html, &["--dump-dom"]);
    let errors = crate::exporters::page_errors(&log);
    assert!(errors.is_empty(), "{errors:?}");
    assert!(dom.contains("data-rendered=\"yes\""));
    let section = &dom[dom.find("<section id=\"block\"").expect(&dom)..];
    assert!(section.contains("ext4 (real file system)"), "{section}");
    assert!(section.contains("<code>c5.lost3</code>"), "{section}");
}

/// Every report file of a block run, written by one run of the
/// no-dir-fsync save on ext4: the JUnit file validates and holds ext4's
/// suite with the failing state, blamed on posix's `entry_not_synced`; the
/// Markdown summary and the HTML page (rendered by headless Chromium) show
/// ext4's section after the posix report; the baseline records ext4's row
/// beside posix's, and a second run compares clean against it.
#[test]
fn every_report_file_shows_the_file_system_and_the_baseline_ratchets_it() {
    if !block_backend_available() {
        return;
    }
    let s = Scratch::new();
    let [junit, md, html, tsv] = ["r.xml", "r.md", "r.html", "durability.tsv"].map(|f| s.path(f));
    let mut extra = vec!["--fs", "ext4", "--case", "save"];
    for (flag, path) in [
        ("--junit", &junit),
        ("--markdown", &md),
        ("--html", &html),
        ("--baseline", &tsv),
    ] {
        extra.extend([flag, path.to_str().unwrap()]);
    }
    let args = save_args(&extra, &save_checker(), "no-dir-fsync");
    let run = |update: bool| {
        let mut c = s.blackout();
        c.env_remove("CI").env_remove("BLACKOUT_UPDATE_BASELINE");
        if update {
            c.env("BLACKOUT_UPDATE_BASELINE", "1");
        }
        let out = c.arg("run").args(&args).output().unwrap();
        assert_nothing_left(&s);
        out
    };
    // One run writes every file and records the baseline.
    let out = run(true);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("case `save` recorded (2 rows in the file)"));
    let tsv_text = fs::read_to_string(&tsv).unwrap();
    let rows: Vec<&str> = tsv_text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        rows,
        [
            "save\tposix\tFAIL\tentry_not_synced",
            "save\tblock:ext4\tFAIL\tentry_not_synced"
        ]
    );
    assert_block_junit(&junit);
    assert_block_sections(&s, &md, &html);
    // A second run compares with it: no worse.
    let out = run(false);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("case `save` is no worse than recorded"),
        "{}",
        text(&out.stdout)
    );
}

/// With `--stacks`, a real failure is blamed in source terms: the last
/// calls before the crash and what the matching posix state lost name the
/// C program's lines (the rename at line 9 that no directory fsync
/// follows).
#[test]
fn a_real_failure_names_the_source_line_with_stacks() {
    if !block_backend_available() {
        return;
    }
    let s = Scratch::new();
    let prog = crate::common::compile(
        &s,
        "save",
        "#include <fcntl.h>\n#include <stdio.h>\n#include <unistd.h>\nint main(void) {\n\
         int fd = open(\"doc.txt.tmp\", O_WRONLY | O_CREAT | O_TRUNC, 0644);\n\
         write(fd, \"version 2\\n\", 10);\n    fsync(fd);\n    close(fd);\n\
         rename(\"doc.txt.tmp\", \"doc.txt\");\n    printf(\"saved\\n\");\n    return 0;\n}\n",
    );
    let (code, _, block) = run_block(
        &s,
        "ext4",
        &[
            "--stacks",
            "--verify-fixes",
            "0",
            "--setup",
            "echo 'version 1' > doc.txt",
            "--checker",
            &save_checker(),
            "--",
            prog.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{block}");
    let blame = &block["failing"][0]["blame"];
    let lost = blame["posix_lost"].to_string();
    assert!(
        lost.contains("rename doc.txt.tmp -> doc.txt") && lost.contains("save.c:9"),
        "{blame}"
    );
    assert!(
        blame["last_calls"].to_string().contains("save.c:9"),
        "{blame}"
    );
}

/// A block run beside the process model alone (the audit's block columns:
/// the posix model has its own) gives the file system's verdict, and claims
/// no failure the posix model misses: it was not asked.
#[test]
fn a_block_run_beside_another_model_claims_no_posix_misses() {
    if !block_backend_available() {
        return;
    }
    let s = Scratch::new();
    let args = save_args(&["--model", "process"], &save_checker(), "no-fsync");
    let args: Vec<&str> = args.iter().skip(2).map(String::as_str).collect();
    let (code, posix, block) = run_block(&s, "ext4", &args);
    assert_eq!(
        (code, block["verdict"].as_str()),
        (1, Some("FAIL")),
        "{block}"
    );
    assert_eq!(posix["models"][0]["model"], "process", "{posix}");
    assert_eq!(block["posix_misses"], serde_json::json!([]), "{block}");
    let blame = &block["failing"][0]["blame"];
    assert!(blame["posix_state"].is_null(), "{block}");
    assert_eq!(blame["posix_lost"], serde_json::json!([]), "{block}");
}

/// A checker that outlives its timeout on the mounted states: each is
/// killed, the state unmounted, and the verdict INCONCLUSIVE; nothing left
/// (no mount, loop device, image or sleeping checker).
#[test]
fn a_checker_timeout_leaves_nothing_behind() {
    if !block_backend_available() {
        return;
    }
    let s = Scratch::new();
    let marker = crate::common::unique_sleep();
    let checker = format!(
        "if {ON_A_MOUNT}; then sleep {marker}; fi; {}",
        save_checker()
    );
    let args = save_args(&["--timeout", "0.5"], &checker, "full");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, v, out) = run_json(&s, &args);
    assert_eq!(code, 2, "{v}\n{}", text(&out.stderr));
    assert_eq!(v["posix"]["result"]["verdict"], "PASS");
    assert_eq!(v["block"]["verdict"], "INCONCLUSIVE", "{}", v["block"]);
    let errors = v["block"]["errors"].as_array().unwrap();
    assert!(!errors.is_empty());
    assert!(
        errors.iter().all(|e| e["outcome"] == "timed_out"),
        "{errors:?}"
    );
    assert_nothing_left(&s);
    assert_eq!(processes_with(&marker), Vec::<String>::new());
}

/// Without root the block backend says so on one line (exit 2) before
/// making anything.
#[test]
fn without_root_it_says_so_on_one_line() {
    if !block_backend_available() || !crate::common::have_tool("setpriv") {
        return;
    }
    let s = Scratch::new();
    let bin = assert_cmd::cargo::cargo_bin("blackout");
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(bin)
        .args([
            "run",
            "--backend",
            "block",
            "--checker",
            "true",
            "--",
            "true",
        ])
        .current_dir("/")
        .env("TMPDIR", s.path("tmp"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "error: the block backend needs root (running as uid 65534)\n"
    );
    assert_nothing_left(&s);
}

/// A workload that cannot start: one line, exit 2, the device taken down.
#[test]
fn a_missing_workload_is_one_line_and_leaves_nothing() {
    if !block_backend_available() {
        return;
    }
    let s = Scratch::new();
    let out = s
        .blackout()
        .args([
            "run",
            "--backend",
            "block",
            "--checker",
            "true",
            "--",
            "./no-such-workload",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no-such-workload"), "{err}");
    assert_nothing_left(&s);
}

/// Whether `sleep MARKER` runs (blackout's own command line holds the
/// marker too, from its first moment).
fn sleeping(marker: &str) -> bool {
    processes_with(marker).iter().any(|p| {
        p.split_once(": ")
            .is_some_and(|(_, cmd)| cmd.starts_with("sleep "))
    })
}

/// Ctrl-C while a mounted state is being checked, and SIGTERM while the
/// workload runs on the recorded file system: blackout exits 128 + the
/// signal, with no mount, loop device, FUSE daemon, image or process left.
#[test]
fn interrupting_leaves_no_mount_loop_device_or_process() {
    use nix::sys::signal::Signal;
    if !block_backend_available() {
        return;
    }
    let save = examples().join("save.sh");
    // While checking: the checker sleeps in a mounted state.
    let s = Scratch::new();
    let marker = crate::common::unique_sleep();
    let checker = format!(
        "if {ON_A_MOUNT}; then sleep {marker}; fi; {}",
        save_checker()
    );
    let mut child = s
        .blackout()
        .args(["run", "--backend", "block", "--verify-fixes", "0"])
        .args([
            "--setup",
            "echo 'version 1' > doc.txt",
            "--checker",
            &checker,
            "--",
        ])
        .arg(&save)
        .arg("full")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    signal_when(&s, &mut child, Signal::SIGINT, || sleeping(&marker));
    assert_nothing_left(&s);
    assert_eq!(processes_with(&marker), Vec::<String>::new());
    // While recording: the workload sleeps on the file system.
    let s = Scratch::new();
    let marker = crate::common::unique_sleep();
    let workload = format!("echo started > started; sleep {marker}");
    let mut child = s
        .blackout()
        .args([
            "run",
            "--backend",
            "block",
            "--checker",
            "true",
            "--",
            "sh",
            "-c",
            &workload,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    signal_when(&s, &mut child, Signal::SIGTERM, || sleeping(&marker));
    assert_nothing_left(&s);
    assert_eq!(processes_with(&marker), Vec::<String>::new());
}

/// One example program for the differential check: its name in the table,
/// its setup, checker and workload (a shell command), and extra flags.
pub struct Example {
    pub name: String,
    pub setup: String,
    pub checker: String,
    pub workload: String,
    pub flags: Vec<String>,
}

/// What [`every_example`] needs: the in-place engine's reference files (in
/// the scratch directory returned) and the kvstore binary, built.
pub fn example_inputs() -> (Scratch, PathBuf) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let built = std::process::Command::new(cargo)
        .args(["build", "-q", "-p", "kvstore", "--message-format", "short"])
        .status()
        .unwrap();
    assert!(built.success());
    // Where cargo put it: CARGO_TARGET_DIR (absolute, or from the
    // workspace) when set, else the workspace's target.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(|t| crate::common::repo().join(t))
        .unwrap_or_else(|| crate::common::repo().join("target"));
    let kvstore = target.join("debug/kvstore");
    let refs = Scratch::new();
    let engines = crate::common::repo().join("tests/engines");
    let status = std::process::Command::new("python3")
        .arg(engines.join("inplace.py"))
        .args(["--blocks", "16", "refs"])
        .arg(refs.path(""))
        .status()
        .unwrap();
    assert!(status.success());
    (refs, kvstore)
}

/// Every example program of the repository that runs from the command
/// line with a checker: the document save, the SQLite workload in every
/// journal mode and synchronous level, the small engines of
/// `tests/engines/`, and the kvstore with each planted bug.
pub fn every_example(refs: &Path, kvstore: &Path) -> Vec<Example> {
    let repo = crate::common::repo();
    let sh = |s: &str| s.to_string();
    let mut out = Vec::new();
    let save = examples();
    for variant in ["full", "no-dir-fsync", "no-fsync", "in-place"] {
        out.push(Example {
            name: format!("save.sh {variant}"),
            setup: sh("echo 'version 1' > doc.txt"),
            checker: save_checker(),
            workload: format!("{} {variant}", save.join("save.sh").display()),
            flags: vec![],
        });
    }
    let sqlite = repo.join("examples/sqlite");
    for mode in ["DELETE", "TRUNCATE", "PERSIST", "WAL"] {
        for level in ["OFF", "NORMAL", "FULL", "EXTRA"] {
            out.push(Example {
                name: format!("sqlite {mode} {level}"),
                setup: crate::common::sqlite_setup(mode),
                checker: format!("sh {}", sqlite.join("check.sh").display()),
                workload: format!("{} {mode} {level}", sqlite.join("workload.sh").display()),
                flags: ["--volatile", "*-shm", "--ack-prefix", "ack "]
                    .map(String::from)
                    .to_vec(),
            });
        }
    }
    out.extend(engine_examples(refs));
    for bug in [
        "none",
        "ack-before-fsync",
        "no-log-dir-fsync",
        "snapshot-no-dir-fsync",
        "snapshot-unsynced-data",
        "snapshot-in-place",
        "no-checksum",
    ] {
        let kv = kvstore.display();
        let flag = if bug == "none" {
            String::new()
        } else {
            format!(" --bug {bug}")
        };
        out.push(Example {
            name: format!("kvstore{flag} load 8"),
            setup: String::new(),
            checker: format!("{kv}{flag} check"),
            workload: format!("{kv}{flag} load 8"),
            flags: vec![],
        });
    }
    out
}

/// The small engines of `tests/engines/` as examples (the in-place save's
/// checker compares with the versions in `refs`).
fn engine_examples(refs: &Path) -> Vec<Example> {
    let repo = crate::common::repo();
    let mut out = Vec::new();
    let engines = repo.join("tests/engines");
    let py = |name: &str, args: &str| format!("python3 {} {args}", engines.join(name).display());
    for mode in ["dsync", "append", "page"] {
        out.push(Example {
            name: format!("overwrite.py {mode}"),
            setup: py("overwrite.py", &format!("setup {mode}")),
            checker: py("overwrite.py", &format!("check {mode}")),
            workload: py("overwrite.py", mode),
            flags: vec![],
        });
    }
    for args in ["put 3", "--bug meta-before-sync put 3"] {
        out.push(Example {
            name: format!("metapage.py {args}"),
            setup: py("metapage.py", "setup"),
            checker: py("metapage.py", "check"),
            workload: py("metapage.py", args),
            flags: vec![],
        });
    }
    out.push(Example {
        name: "csumlog.py write 2".into(),
        setup: "touch log".into(),
        checker: py("csumlog.py", "check 2"),
        workload: py("csumlog.py", "write 2"),
        flags: vec![],
    });
    let inplace = |args: &str| py("inplace.py", &format!("--blocks 16 {args}"));
    out.push(Example {
        name: "inplace.py save".into(),
        setup: inplace("setup"),
        checker: format!(
            "sh {} {}",
            engines.join("inplace-check.sh").display(),
            refs.display()
        ),
        workload: inplace("save"),
        flags: vec![],
    });
    out
}

/// Must-show: the differential check over every example program on ext4,
/// xfs and btrfs: every state that fails on a real file system is a state
/// the posix model finds failing too (the same files), so the posix model
/// misses nothing these programs do. Writes the table of docs/BLOCK.md
/// with BLACKOUT_UPDATE_DOCS set, else compares it.
#[test]
#[ignore = "slower suite: cargo test -p blackout-cli --test e2e -- --ignored"]
fn differential_check_over_every_example() {
    if !block_backend_available() || !crate::common::have_tool("sqlite3") {
        return;
    }
    let (refs, kvstore) = example_inputs();
    let mut rows = vec![
        "| example | posix model | ext4 | xfs | btrfs | real failures posix misses |".to_string(),
        "|---|---|---|---|---|---|".to_string(),
    ];
    let mut misses = Vec::new();
    for ex in every_example(&refs.path(""), &kvstore) {
        let mut row = format!("| `{}` |", ex.name);
        let mut missed = 0;
        for fs_name in FILE_SYSTEMS {
            let s = Scratch::new();
            // The posix side as the SQLite matrix runs it (16 sampled
            // subsets beyond the exhaustive limit): the block side is the
            // subject here.
            let mut args: Vec<&str> = vec!["--verify-fixes", "0", "--budget", "16"];
            if !ex.setup.is_empty() {
                args.extend(["--setup", &ex.setup]);
            }
            args.extend(ex.flags.iter().map(String::as_str));
            args.extend(["--checker", &ex.checker, "--", "sh", "-c", &ex.workload]);
            let (_, posix, block) = run_block(&s, fs_name, &args);
            if fs_name == "ext4" {
                row.push_str(&format!(" {} |", posix["verdict"].as_str().unwrap()));
            }
            // The counts go to the log only: background flushes can move
            // them between runs; the verdicts and misses are the table.
            let failing = block["failing"].as_array().map_or(0, Vec::len);
            eprintln!(
                "{} on {fs_name}: {failing} failing of {} distinct",
                ex.name, block["distinct"]
            );
            row.push_str(&format!(" {} |", block["verdict"].as_str().unwrap()));
            let m = block["posix_misses"].as_array().unwrap();
            missed += m.len();
            if !m.is_empty() {
                misses.push(format!("{} on {fs_name}: {m:?}", ex.name));
            }
        }
        row.push_str(&format!(" {missed} |"));
        eprintln!("{row}");
        rows.push(row);
    }
    compare_table("differential", &rows.join("\n"));
    assert!(misses.is_empty(), "the posix model misses: {misses:#?}");
}

/// A JSON report without what varies from run to run (times and rates).
fn without_times(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| {
                    !(k.contains("seconds")
                        || *k == "time"
                        || *k == "states_per_second"
                        || *k == "shown")
                })
                .map(|(k, v)| (k.clone(), without_times(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_times).collect()),
        other => other.clone(),
    }
}

/// `-o` saves the block recording (syscall trace, block log, data, base
/// image) in one file; `--trace` checks it again without the workload and
/// finds the same; a checker server finds the same failing states; three
/// shards merged give the one run's report; a recording made on another
/// file system, or cut short, is one line and exit 2.
#[test]
fn a_saved_recording_is_checked_again_in_one_run_or_three_shards() {
    if !block_backend_available() || !crate::common::have_tool("sqlite3") {
        return;
    }
    let s = Scratch::new();
    let dir = examples().join("../sqlite").canonicalize().unwrap();
    let setup = &crate::common::sqlite_setup("DELETE");
    let checker = format!("sh {}", dir.join("check.sh").display());
    let server = format!("python3 {}", dir.join("check-server.py").display());
    let saved = s.path("run.rec");
    let saved = saved.to_str().unwrap();
    let common = ["--verify-fixes", "0", "--ack-prefix", "ack ", "-j", "2"];
    let workload = dir.join("workload.sh");
    let mut first = common.to_vec();
    first.extend([
        "--volatile",
        "*-shm",
        "--setup",
        setup,
        "--checker",
        &checker,
    ]);
    first.extend([
        "-o",
        saved,
        "--",
        workload.to_str().unwrap(),
        "DELETE",
        "FULL",
    ]);
    let (code, _, recorded) = run_block(&s, "ext4", &first);
    assert_eq!(code, 1, "{recorded}");
    assert_eq!(recorded["verdict"], "FAIL");
    // Checked again from the file: the same report, no workload run.
    let again = |checker_flag: &str, checker: &str, extra: &[&str]| {
        let mut args = vec!["--backend", "block", "--trace", saved];
        args.extend(common);
        args.extend([checker_flag, checker]);
        args.extend(extra);
        let (code, v, out) = run_json(&s, &args);
        assert_nothing_left(&s);
        (code, v, out)
    };
    let (code, one, out) = again("--checker", &checker, &[]);
    assert_eq!(code, 1, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("loaded "),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(without_times(&one["block"]), without_times(&recorded));
    let ids = |b: &Value| -> Vec<Value> {
        b["failing"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].clone())
            .collect()
    };
    let (code, served, _) = again("--checker-server", &server, &[]);
    assert_eq!(code, 1);
    assert_eq!(served["block"]["verdict"], "FAIL");
    assert_eq!(ids(&served["block"]), ids(&recorded));
    // Three shards, merged.
    let merged = three_shards_merged(&s, saved, &common, &checker);
    assert_eq!(
        without_times(&merged["block"]),
        without_times(&one["block"])
    );
    assert_eq!(
        without_times(&merged["posix"]),
        without_times(&one["posix"])
    );
    refusals(&s, saved);
}

/// `run --trace SAVED --shard K/3` for each K, then `merge` (JSON).
fn three_shards_merged(s: &Scratch, saved: &str, common: &[&str], checker: &str) -> Value {
    let mut parts = Vec::new();
    for k in 1..=3 {
        let part = s.path(&format!("p{k}.json")).to_string_lossy().into_owned();
        let shard = format!("{k}/3");
        let out = s
            .blackout()
            .args(["run", "--backend", "block", "--trace", saved])
            .args(common)
            .args(["--checker", checker, "--shard", &shard, "--part", &part])
            .output()
            .unwrap();
        assert_nothing_left(s);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(text(&out.stdout).contains(&format!("shard {shard}: ext4: ")));
        parts.push(part);
    }
    let out = s
        .blackout()
        .arg("merge")
        .args(&parts)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    // A shard made with other block settings is refused by name: the
    // parts carry one settings value, compared whole.
    let other = s.path("p2-other.json").to_string_lossy().into_owned();
    let made = s
        .blackout()
        .args(["run", "--backend", "block", "--trace", saved])
        .args(common)
        .args(["--checker", checker, "--max-subsets", "7"])
        .args(["--shard", "2/3", "--part", &other])
        .output()
        .unwrap();
    assert_eq!(made.status.code(), Some(0), "{}", text(&made.stderr));
    let mixed = s
        .blackout()
        .args(["merge", &parts[0], &other, &parts[2]])
        .output()
        .unwrap();
    let err = text(&mixed.stderr);
    assert_eq!(mixed.status.code(), Some(2), "{err}");
    assert!(
        err.contains("other settings") && err.contains("block.max_subsets 7, not"),
        "{err}"
    );
    assert_nothing_left(s);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A saved ext4 recording checked as xfs, or cut short: one line, exit 2.
fn refusals(s: &Scratch, saved: &str) {
    let refused = |args: &[&str], says: &str| {
        let out = s.blackout().arg("run").args(args).output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert_nothing_left(s);
    };
    let xfs = [
        "--backend",
        "block",
        "--fs",
        "xfs",
        "--trace",
        saved,
        "--checker",
        "true",
    ];
    refused(&xfs, "was recorded on ext4");
    let bytes = fs::read(saved).unwrap();
    let cut = s.path("cut.rec");
    fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let cut = cut.to_str().unwrap();
    let args = ["--backend", "block", "--trace", cut, "--checker", "true"];
    refused(&args, "cut.rec: not a valid block recording");
}
