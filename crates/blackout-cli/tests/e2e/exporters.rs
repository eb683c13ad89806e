//! The report files (`--junit`, `--markdown`, `--html`), the JSON schema,
//! colour, completions, the manual page and the long help, through the real
//! binary.
//!
//! The JUnit file is validated with xmllint against `junit.xsd` (the
//! Ant/Jenkins format); the Markdown summary is compared with
//! `docs/examples/report.md`; the HTML page is opened in headless Chromium,
//! which must render it without a console error. Those tools are installed
//! by scripts/test: under CI a missing one fails the test, elsewhere that part is
//! skipped with a note. Regenerate the checked-in example and the
//! screenshot with `BLACKOUT_UPDATE_DOCS=1 cargo test -p blackout-cli --test
//! e2e exporters`.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::{have_tool, repo, save_checker, text, Scratch};

/// The JUnit schema the reports must satisfy.
fn junit_xsd() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/junit.xsd")
}

/// `blackout run --trace` on a checked-in recording of a save variant, from
/// the repository root, with `extra` flags.
fn run_on_trace(s: &Scratch, mode: &str, extra: &[&std::ffi::OsStr]) -> Output {
    let checker = format!("sh {}/examples/save/check.sh", repo().display());
    let trace = format!("tests/reports/save-{mode}.trace");
    let out = s
        .blackout()
        .current_dir(repo())
        .args(["run", "--trace", &trace, "--checker", &checker])
        .args(extra)
        .output()
        .unwrap();
    s.assert_clean();
    out
}

/// How many elements an XPath expression counts in an XML file.
pub(crate) fn xpath_count(file: &Path, expr: &str) -> usize {
    let out = Command::new("xmllint")
        .args(["--xpath", &format!("count({expr})")])
        .arg(file)
        .output()
        .unwrap();
    text(&out.stdout).trim().parse().unwrap()
}

/// Asserts the JUnit file validates against the schema.
pub(crate) fn assert_valid_junit(file: &Path) {
    let out = Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(junit_xsd())
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the JUnit report does not validate:\n{}\n{}",
        text(&out.stderr),
        fs::read_to_string(file).unwrap()
    );
}

/// Asserts the JUnit report has one test case per model and, in each, one
/// `<failure>` per cause of that model in the JSON report.
fn assert_one_failure_per_cause(junit: &Path, json: &Value) {
    let models = json["result"]["models"].as_array().unwrap();
    assert_eq!(xpath_count(junit, "//testsuite"), 1);
    assert_eq!(xpath_count(junit, "//testcase"), models.len());
    let mut all = 0;
    for m in models {
        let name = m["model"].as_str().unwrap();
        let causes = m["causes"].as_array().unwrap();
        let path = format!("//testcase[@name='{name}']/failure");
        assert_eq!(xpath_count(junit, &path), causes.len(), "{name}");
        for (n, c) in causes.iter().enumerate() {
            // Each failure's message is its cause's sentence.
            let sentence = c["cause"]["sentence"].as_str().unwrap();
            let out = Command::new("xmllint")
                .args(["--xpath", &format!("string({path}[{}]/@message)", n + 1)])
                .arg(junit)
                .output()
                .unwrap();
            assert_eq!(text(&out.stdout).trim_end(), sentence);
        }
        all += causes.len();
    }
    assert_eq!(xpath_count(junit, "//failure"), all);
    assert!(all > 0, "a failing variant has causes");
}

#[test]
fn junit_of_a_failing_save_validates_and_has_one_failure_per_cause() {
    let s = Scratch::new();
    let junit = s.path("blackout.xml");
    // Live, as the README runs it, with the JSON report on stdout.
    let workload = crate::common::examples().join("save.sh");
    let out = s
        .blackout()
        .args(["run", "--json", "--setup", "echo 'version 1' > doc.txt"])
        .args(["--checker", &save_checker(), "--junit"])
        .arg(&junit)
        .arg("--")
        .arg(&workload)
        .arg("no-dir-fsync")
        .output()
        .unwrap();
    s.assert_clean();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    if !have_tool("xmllint") {
        return;
    }
    assert_valid_junit(&junit);
    assert_one_failure_per_cause(&junit, &json);
    assert_eq!(
        xpath_count(
            &junit,
            "//testcase[@name='posix']/failure[@type='entry_not_synced']"
        ),
        1
    );
    // The other variants, from their recordings: several causes per model.
    for mode in ["no-fsync", "in-place", "full"] {
        let junit = s.path(&format!("{mode}.xml"));
        let out = run_on_trace(
            &s,
            mode,
            &["--json".as_ref(), "--junit".as_ref(), junit.as_ref()],
        );
        let json: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_valid_junit(&junit);
        if mode == "full" {
            assert_eq!(xpath_count(&junit, "//failure"), 0);
            assert_eq!(xpath_count(&junit, "//testcase"), 3);
        } else {
            assert_one_failure_per_cause(&junit, &json);
        }
    }
}

/// The Markdown summary of the no-dir-fsync recording, with the
/// repository's root shown as `<repo>`.
fn markdown_summary(s: &Scratch) -> String {
    let md = s.path("summary.md");
    let out = run_on_trace(s, "no-dir-fsync", &["--markdown".as_ref(), md.as_ref()]);
    assert_eq!(out.status.code(), Some(1));
    fs::read_to_string(&md)
        .unwrap()
        .replace(&repo().display().to_string(), "<repo>")
}

#[test]
fn markdown_summary_matches_the_checked_in_example() {
    let s = Scratch::new();
    let summary = markdown_summary(&s);
    let doc = repo().join("docs/examples/report.md");
    let head = "<!-- Generated by `BLACKOUT_UPDATE_DOCS=1 cargo test -p blackout-cli --test e2e exporters` from tests/reports/save-no-dir-fsync.trace: what `blackout run --markdown FILE` writes. -->\n\n";
    let now = format!("{head}{summary}");
    if std::env::var_os("BLACKOUT_UPDATE_DOCS").is_some() {
        fs::create_dir_all(doc.parent().unwrap()).unwrap();
        fs::write(&doc, &now).unwrap();
        return;
    }
    let old = fs::read_to_string(&doc).unwrap_or_default();
    assert!(
        old == now,
        "docs/examples/report.md differs from what --markdown writes now (regenerate with BLACKOUT_UPDATE_DOCS=1 cargo test -p blackout-cli --test e2e exporters):\n--- checked in\n{old}\n--- now\n{now}"
    );
    // The table and the parts of a cause are there.
    assert!(summary.contains("| model | verdict | states checked | causes |"));
    assert!(summary.contains("| posix | **FAIL** | 8 of 8 distinct, exact | 1 |"));
    assert!(
        summary.contains("```sh\nblackout state tests/reports/save-no-dir-fsync.trace c5.lost3 ")
    );
    assert!(summary.contains("- **fix**: adding fsync(.) after op 3"));
}

/// Headless Chromium on a file: the dumped DOM and what it logged.
pub(crate) fn chromium(s: &Scratch, page: &Path, extra: &[&str]) -> (String, String) {
    let profile = s.path("chromium-profile");
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium: {}", text(&out.stderr));
    (text(&out.stdout), text(&out.stderr))
}

/// The page's own errors in what Chromium logged: console messages and
/// uncaught exceptions, blocked content.
pub(crate) fn page_errors(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| {
            l.contains("CONSOLE")
                || l.contains("Uncaught")
                || l.contains("Content Security Policy")
                || l.contains("Refused to")
        })
        .collect()
}

#[test]
fn html_report_renders_in_chromium_with_the_rename_lost_after_the_promise() {
    let s = Scratch::new();
    let html = s.path("report.html");
    let out = run_on_trace(&s, "no-dir-fsync", &["--html".as_ref(), html.as_ref()]);
    assert_eq!(out.status.code(), Some(1));
    let page = fs::read_to_string(&html).unwrap();
    // Self-contained: nothing that would load from anywhere (links within
    // the page, `href="#..."`, go nowhere else).
    for needle in ["http://", "https://", "src=", "href=", "@import", "url("] {
        let hits: Vec<&str> = page
            .lines()
            .filter(|l| l.contains(needle) && !l.contains("xmlns=\"http://www.w3.org/2000/svg\""))
            .filter(|l| needle != "href=" || l.replace("href=\"#", "").find("href=").is_some())
            .collect();
        assert!(hits.is_empty(), "{needle} in the page: {hits:?}");
    }
    if !have_tool("chromium") {
        return;
    }
    let (dom, log) = chromium(&s, &html, &["--dump-dom"]);
    assert!(page_errors(&log).is_empty(), "{:?}", page_errors(&log));
    assert!(
        dom.contains("data-rendered=\"yes\""),
        "the script did not run:\n{dom}"
    );
    // The cause's state: the rename lost, then "saved" printed, then the
    // crash.
    let cause = &dom[dom.find("<section class=\"cause\"").unwrap()..];
    let lost = cause
        .find("<tr class=\"lost\" data-op=\"3\">")
        .expect("op 3 marked lost");
    let rename = cause[lost..]
        .find("rename doc.txt.tmp -&gt; doc.txt")
        .unwrap()
        + lost;
    let promise = cause
        .find("<tr class=\"promise\" data-op=\"4\">")
        .expect("op 4 marked as the promise");
    let crash = cause.find("<tr class=\"crash\">").unwrap();
    assert!(lost < rename && rename < promise && promise < crash);
    assert!(cause[promise..crash].contains("promised \"saved\""));
    // On the timeline: the posix crash point after op 4 is red, the
    // others green.
    assert!(dom.contains("class=\"crash fail\" data-model=\"posix\" data-crash=\"5\""));
    assert!(!dom.contains("class=\"crash fail\" data-model=\"process\""));
    // The screenshot shows the checker's path as `<repo>`, as the other
    // checked-in examples do.
    let shown = s.path("shown.html");
    let page = page.replace(&repo().display().to_string(), "&lt;repo&gt;");
    fs::write(&shown, page).unwrap();
    let shot = s.path("shot.png");
    let arg = format!("--screenshot={}", shot.display());
    chromium(
        &s,
        &shown,
        &[&arg, "--window-size=1100,900", "--hide-scrollbars"],
    );
    let png = fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000);
    if std::env::var_os("BLACKOUT_UPDATE_DOCS").is_some() {
        fs::write(repo().join("docs/report-timeline.png"), &png).unwrap();
    }
}

/// A workload whose file name and promise, and a checker whose reason,
/// are markup: every report must show them as text.
const HOSTILE: &str = r#"printf x > '<img src=x onerror=alert(1)>'
echo '<script>alert(2)</script> & $x$ | *b* `c`'
"#;
const HOSTILE_CHECKER: &str = r#"if [ -z "$BLACKOUT_ACKED" ] || [ -s '<img src=x onerror=alert(1)>' ]; then exit 0; fi; echo '</td></tr><script>alert(3)</script>]]>' >&2; exit 1"#;

#[test]
fn hostile_names_promises_and_reasons_stay_text_in_every_report() {
    let s = Scratch::new();
    let script = s.path("hostile.sh");
    fs::write(&script, HOSTILE).unwrap();
    let files = [s.path("r.xml"), s.path("r.md"), s.path("r.html")];
    let out = s
        .blackout()
        .args(["run", "--checker", HOSTILE_CHECKER, "--model", "posix"])
        .arg("--junit")
        .arg(&files[0])
        .arg("--markdown")
        .arg(&files[1])
        .arg("--html")
        .arg(&files[2])
        .arg("--")
        .arg("sh")
        .arg(&script)
        .output()
        .unwrap();
    s.assert_clean();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let html = fs::read_to_string(&files[2]).unwrap();
    assert_eq!(
        html.matches("<script").count(),
        1,
        "only the page's own script"
    );
    assert!(!html.contains("<img") && !html.contains("</td></tr><script"));
    assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"));
    let md = fs::read_to_string(&files[1]).unwrap();
    // Outside code blocks (where text is literal), no markup character is
    // left bare.
    let mut inside = false;
    let prose: String = md
        .lines()
        .filter(|l| {
            if l.starts_with("```") {
                inside = !inside;
                return false;
            }
            !inside
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let bare = |c: char| {
        prose
            .match_indices(c)
            .filter(|(i, _)| !prose[..*i].ends_with('\\'))
            .count()
    };
    assert_eq!((bare('<'), bare('$'), bare('`') % 2), (0, 0, 0), "{prose}");
    assert!(md.contains(r"\<img src=x onerror=alert(1)>"));
    if have_tool("xmllint") {
        assert_valid_junit(&files[0]);
        let out = Command::new("xmllint")
            .args(["--xpath", "string(//failure[1])"])
            .arg(&files[0])
            .output()
            .unwrap();
        assert!(text(&out.stdout).contains("</td></tr><script>alert(3)</script>]]>"));
    }
    if have_tool("chromium") {
        let (dom, log) = chromium(&s, &files[2], &["--dump-dom"]);
        assert!(page_errors(&log).is_empty(), "{:?}", page_errors(&log));
        assert!(dom.contains("data-rendered=\"yes\""));
        assert_eq!(dom.matches("<script").count(), 1);
        assert!(!dom.contains("<img"));
    }
}

#[test]
fn several_reports_at_once_beside_the_text_report_and_none_coloured() {
    let s = Scratch::new();
    let files = [s.path("a.xml"), s.path("a.md"), s.path("a.html")];
    let mut args: Vec<&std::ffi::OsStr> = vec!["--color".as_ref(), "always".as_ref()];
    for (flag, f) in ["--junit", "--markdown", "--html"].iter().zip(&files) {
        args.push(flag.as_ref());
        args.push(f.as_ref());
    }
    let out = run_on_trace(&s, "no-fsync", &args);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("\x1b["),
        "--color always colours stdout"
    );
    for f in &files {
        let body = fs::read_to_string(f).unwrap();
        assert!(!body.contains('\x1b'), "{} is coloured", f.display());
        assert!(body.contains("doc.txt"));
    }
    // JSON stays plain even when colour is asked for.
    args.push("--json".as_ref());
    let out = run_on_trace(&s, "no-fsync", &args);
    assert!(!text(&out.stdout).contains('\x1b'));
    serde_json::from_slice::<Value>(&out.stdout).unwrap();
}

#[test]
fn a_report_file_that_cannot_be_written_fails_first_with_one_line() {
    let s = Scratch::new();
    for flag in ["--junit", "--markdown", "--html"] {
        let bad = s.path("no-such-dir").join("r.out");
        let started = std::time::Instant::now();
        let out = s
            .blackout()
            .args(["run", "--checker", "true", flag])
            .arg(&bad)
            .args(["--", "sh", "-c", "sleep 5"])
            .output()
            .unwrap();
        s.assert_clean();
        assert_eq!(out.status.code(), Some(2));
        // Refused before the workload ran.
        assert!(started.elapsed() < std::time::Duration::from_secs(4));
        let err = text(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!("error: cannot write {flag} {}", bad.display())),
            "{err}"
        );
        assert!(!bad.exists());
    }
    // A directory where the file should go: refused too, and a run asked
    // for JSON gets the error as JSON.
    let dir = s.path("a-dir");
    fs::create_dir(&dir).unwrap();
    let out = run_on_trace(
        &s,
        "full",
        &["--json".as_ref(), "--html".as_ref(), dir.as_ref()],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr).lines().count(), 1);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema"], 2);
    assert_eq!(v["exit_code"], 2);
}

#[test]
fn color_follows_the_flag_and_no_color() {
    let s = Scratch::new();
    let color = |when: &str| {
        text(&run_on_trace(&s, "no-dir-fsync", &["--color".as_ref(), when.as_ref()]).stdout)
    };
    let always = color("always");
    assert!(always.contains("\x1b[1m\x1b[31mFAIL\x1b[0m"), "{always}");
    assert!(always.contains("\x1b[1m\x1b[32mPASS\x1b[0m"));
    assert!(always.contains("cause 1 of 1:\x1b[0m"));
    let never = color("never");
    assert!(!never.contains('\x1b'));
    // Without the escapes the report is the plain one.
    let stripped = always
        .split('\x1b')
        .enumerate()
        .map(|(i, part)| {
            if i == 0 {
                part
            } else {
                &part[part.find('m').unwrap() + 1..]
            }
        })
        .collect::<String>();
    assert_eq!(stripped, never);
    // auto: not a terminal here, so no colour.
    assert!(!color("auto").contains('\x1b'));
    // auto on a terminal (through script(1)'s pseudo-terminal): colour,
    // unless NO_COLOR is set.
    if !have_tool("script") {
        return;
    }
    let on_tty = |no_color: bool| {
        let cmd = format!(
            "{} run --trace tests/reports/save-no-dir-fsync.trace --checker 'sh {}/examples/save/check.sh'",
            env!("CARGO_BIN_EXE_blackout"),
            repo().display()
        );
        let mut c = Command::new("script");
        c.args(["-qec", &cmd, "/dev/null"])
            .current_dir(repo())
            .env("TMPDIR", s.path("tmp"))
            .env("TERM", "xterm-256color")
            .env_remove("NO_COLOR")
            .env_remove("CLICOLOR")
            .env_remove("CLICOLOR_FORCE");
        if no_color {
            c.env("NO_COLOR", "1");
        }
        text(&c.output().unwrap().stdout)
    };
    assert!(on_tty(false).contains("\x1b[31m"));
    assert!(!on_tty(true).contains("\x1b[31m"));
    s.assert_clean();
}

/// Every key of a JSON value, recursively.
/// The field names in `seen` that `doc` never mentions as `` `name` ``.
pub(crate) fn undocumented<'a>(doc: &str, seen: &'a BTreeSet<String>) -> Vec<&'a String> {
    seen.iter()
        .filter(|k| !doc.contains(&format!("`{k}`")))
        .collect()
}

pub(crate) fn keys(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                out.insert(k.clone());
                keys(v, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|v| keys(v, out)),
        _ => {}
    }
}

#[test]
fn json_report_has_a_schema_version_and_every_field_is_documented() {
    let s = Scratch::new();
    let doc = fs::read_to_string(repo().join("docs/JSON.md")).unwrap();
    let mut seen = BTreeSet::new();
    for mode in ["full", "no-dir-fsync", "no-fsync", "in-place"] {
        let out = run_on_trace(&s, mode, &["--json".as_ref()]);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["schema"], 2);
        // Counts are exact numbers; the one count that can exceed what a
        // JSON number holds exactly is a decimal string.
        for m in v["result"]["models"].as_array().unwrap() {
            assert!(m["states"].is_u64() && m["distinct"].is_u64());
            assert!(m["coverage"]["crash_points"].is_u64());
            assert!(m["coverage"]["subsets_not_covered"].is_string());
        }
        keys(&v, &mut seen);
    }
    let undocumented = undocumented(&doc, &seen);
    assert!(
        undocumented.is_empty(),
        "fields of the JSON report missing from docs/JSON.md: {undocumented:?}"
    );
}

#[test]
fn completions_for_bash_zsh_and_fish_parse() {
    let s = Scratch::new();
    for (shell, check) in [
        ("bash", &["-n"][..]),
        ("zsh", &["-n"][..]),
        ("fish", &["--no-execute"][..]),
    ] {
        let out = s.blackout().args(["completions", shell]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = s.path(&format!("blackout.{shell}"));
        fs::write(&script, &out.stdout).unwrap();
        let body = text(&out.stdout);
        for name in ["run", "record", "states", "junit", "markdown", "color"] {
            assert!(body.contains(name), "{shell} completion lacks {name}");
        }
        if !have_tool(shell) {
            continue;
        }
        let parsed = Command::new(shell)
            .args(check)
            .arg(&script)
            .output()
            .unwrap();
        assert!(
            parsed.status.success(),
            "{shell} {check:?}: {}",
            text(&parsed.stderr)
        );
    }
    let out = s.blackout().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_manual_page_renders_with_man() {
    let s = Scratch::new();
    let page = s.path("blackout.1");
    let out = s.blackout().arg("man").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    fs::write(&page, &out.stdout).unwrap();
    let run = s.blackout().args(["man", "run"]).output().unwrap();
    assert_eq!(run.status.code(), Some(0));
    let run_page = s.path("blackout-run.1");
    fs::write(&run_page, &run.stdout).unwrap();
    let bad = s.blackout().args(["man", "nope"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).starts_with("error: `nope` is not a command"));
    if !have_tool("man") {
        return;
    }
    let render = |file: &Path| {
        let out = Command::new("man")
            .args(["-P", "cat", "-l"])
            .arg(file)
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "100")
            .output()
            .unwrap();
        assert!(out.status.success(), "man: {}", text(&out.stderr));
        text(&out.stdout)
    };
    let top = render(&page);
    assert!(top.contains("NAME") && top.contains("SUBCOMMANDS"), "{top}");
    for name in [
        "blackout-run",
        "blackout-merge",
        "blackout-record",
        "blackout-ops",
        "blackout-states",
        "blackout-state",
        "blackout-completions",
        "blackout-man",
    ] {
        assert!(top.contains(name), "{name} missing from:\n{top}");
    }
    let run = render(&run_page);
    for needle in ["--junit", "--markdown", "--html", "--color", "Examples:"] {
        assert!(run.contains(needle), "{needle} missing from:\n{run}");
    }
}

#[test]
fn long_help_gives_two_examples_per_command() {
    let s = Scratch::new();
    for cmd in [
        "run",
        "merge",
        "record",
        "ops",
        "states",
        "state",
        "completions",
        "man",
    ] {
        let out = s.blackout().args([cmd, "--help"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let help = text(&out.stdout);
        let examples = &help[help
            .find("\nExamples:\n")
            .unwrap_or_else(|| panic!("{cmd}: {help}"))..];
        let lines = examples
            .lines()
            .filter(|l| l.trim_start().starts_with(&format!("blackout {cmd} ")))
            .count();
        assert_eq!(lines, 2, "{cmd} --help examples:\n{examples}");
        // The short help stays short.
        let short = s.blackout().args([cmd, "-h"]).output().unwrap();
        assert!(!text(&short.stdout).contains("Examples:"));
    }
}

#[test]
fn every_report_format_says_whether_the_verdict_is_exact_with_the_counts() {
    let s = Scratch::new();
    // The correct save, checked whole (short: explored in full), then by
    // one representative per class alone: a sample.
    for (extra, exact) in [
        (vec![], true),
        (vec!["--representatives", "1", "--check-budget", "0"], false),
    ] {
        let files = [s.path("r.xml"), s.path("r.md"), s.path("r.html")];
        let mut args: Vec<&std::ffi::OsStr> = extra.iter().map(|a| a.as_ref()).collect();
        for (flag, f) in ["--junit", "--markdown", "--html"].iter().zip(&files) {
            args.push(flag.as_ref());
            args.push(f.as_ref());
        }
        let out = run_on_trace(&s, "full", &args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        args.push("--json".as_ref());
        let v: Value = serde_json::from_slice(&run_on_trace(&s, "full", &args).stdout).unwrap();
        let r = &v["result"];
        let (checked, distinct) = (&r["states_checked"], &r["states_distinct"]);
        assert_eq!(r["exact"], exact, "{r:#}");
        assert_eq!(r["models"][0]["exact"], exact);
        assert!(
            checked.as_u64().unwrap() > 0 && checked == distinct,
            "{r:#}"
        );
        let reason = r["reason"].as_str().unwrap();
        let counts = if exact {
            format!(
                "every crash state was accepted ({checked} of {distinct} distinct states checked)"
            )
        } else {
            format!("{checked} distinct states checked, all accepted (representatives of all")
        };
        assert!(reason.starts_with(&counts), "{reason}");
        assert_eq!(
            reason.contains("a sample, not every crash state"),
            !exact,
            "{reason}"
        );
        // Text: the verdict line.
        let stdout = text(&out.stdout);
        assert!(
            stdout.contains(&format!("verdict: PASS — {reason}")),
            "{stdout}"
        );
        // JUnit: the counts and exactness as properties of the suite.
        assert_valid_junit(&files[0]);
        for (name, value) in [
            ("exact", exact.to_string()),
            ("states_checked", checked.to_string()),
            ("states_distinct", distinct.to_string()),
        ] {
            let expr =
                format!("//testsuite/properties/property[@name='{name}' and @value='{value}']");
            assert_eq!(xpath_count(&files[0], &expr), 1, "{name}={value}");
        }
        // Markdown and HTML: the reason, and each model's row.
        let row = |m: &Value| {
            format!(
                "{} of {} distinct, {}",
                m["states_checked"],
                m["distinct"],
                if exact { "exact" } else { "a sample" }
            )
        };
        let md = fs::read_to_string(&files[1]).unwrap();
        assert!(md.contains(reason), "{md}");
        let html = fs::read_to_string(&files[2]).unwrap();
        for m in r["models"].as_array().unwrap() {
            assert!(md.contains(&row(m)), "{md}");
            assert!(html.contains(&row(m)), "{html}");
        }
        if have_tool("chromium") {
            let (dom, _) = chromium(&s, &files[2], &["--dump-dom"]);
            assert!(dom.contains(&row(&r["models"][0])), "{dom}");
            assert!(dom.contains(reason.split(" (").next().unwrap()), "{dom}");
        }
    }
}

#[test]
fn a_long_runs_html_timeline_shows_the_failing_window_past_its_first_ops() {
    // An append log of 1,500 records (6,000 ops) whose one unsynced write
    // comes after op 4,900: past the ops a timeline draws from the start.
    let s = Scratch::new();
    let prog = repo().join("tests/engines/skiplog.py");
    let prog = prog.to_str().unwrap();
    let trace = s.path("skip.trace");
    let dir = s.path("w");
    fs::create_dir(&dir).unwrap();
    let rec = s
        .blackout()
        .current_dir(&dir)
        .args(["record", "-o"])
        .arg(&trace)
        .args(["--", "python3", prog, "write", "1500", "1234"])
        .output()
        .unwrap();
    assert!(rec.status.success(), "{}", text(&rec.stderr));
    let page = s.path("skip.html");
    let server = format!("python3 {prog} serve");
    let out = s
        .blackout()
        .arg("run")
        .arg("--trace")
        .arg(&trace)
        .args([
            "--model",
            "posix",
            "--check-budget",
            "0",
            "--checker-server",
            &server,
        ])
        .arg("--html")
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let html = fs::read_to_string(&page).unwrap();
    // The skipped record's write: the op the promise-before-sync cause
    // blames, and its window's band, which the cause links to.
    let ops = crate::common::ops_json(&s, &trace);
    let write = ops["ops"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == "write" && o["path"] == "log")
        .nth(1234)
        .unwrap()["index"]
        .as_u64()
        .unwrap();
    assert!(write > 4000, "{write}");
    let glyph = format!("data-op=\"{write}\"");
    assert!(html.contains(&glyph), "op {write} is not drawn");
    assert!(html.contains("class=\"fold\""), "no folded run");
    assert!(html.contains("class=\"window\" id=\"w-posix-"));
    assert!(html.contains("<a href=\"#w-posix-"));
    if have_tool("chromium") {
        let (dom, log) = chromium(&s, &page, &["--dump-dom"]);
        assert!(page_errors(&log).is_empty(), "{log}");
        assert!(
            dom.contains("data-rendered=\"yes\""),
            "the page did not render"
        );
        assert!(
            dom.contains(&glyph),
            "op {write} is not in the rendered page"
        );
        let band = dom
            .split("class=\"window\" id=\"")
            .skip(1)
            .map(|r| r.split('"').next().unwrap())
            .find(|id| dom.contains(&format!("href=\"#{id}\"")));
        assert!(band.is_some(), "no window band a cause links to");
    }
}
