//! The planted-bug table: every bug of `kvstore` under every model, recorded
//! and checked for real, rendered into `docs/kvstore.md`. The test fails
//! when a verdict or a simplest cause differs from the checked-in table, and
//! when a bug is not caught by the model that should catch it, or is caught
//! by a weaker one.
//!
//! Regenerate: `BLACKOUT_UPDATE_DOCS=1 cargo test -p kvstore --test bug_table`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use blackout::analysis::report::{RunReport, Verdict};
use blackout::check::shell::ShellChecker;
use blackout::explore::model::Model;
use blackout::record::{RecordConfig, Recorder, StraceRecorder};
use blackout::run::{check_trace, RunConfig};

const MODELS: [Model; 3] = [Model::Process, Model::Ordered, Model::Posix];

fn kvstore() -> &'static str {
    env!("CARGO_BIN_EXE_kvstore")
}

fn doc_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/kvstore.md")
}

/// (name, description) of every bug, from `kvstore bugs`.
fn bugs() -> Vec<(String, String)> {
    let out = Command::new(kvstore()).arg("bugs").output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (n, d) = l.split_once(' ').unwrap();
            (n.to_string(), d.trim().to_string())
        })
        .collect()
}

/// The weakest model that must catch each bug.
fn expected(bug: &str) -> Option<Model> {
    match bug {
        "none" => None,
        "snapshot-in-place" => Some(Model::Process),
        "no-checksum" => Some(Model::Ordered),
        _ => Some(Model::Posix),
    }
}

fn run(bug: &str) -> RunReport {
    let flags: Vec<String> = if bug == "none" {
        Vec::new()
    } else {
        vec!["--bug".into(), bug.into()]
    };
    let mut command: Vec<std::ffi::OsString> = vec![kvstore().into()];
    command.extend(flags.iter().map(Into::into));
    command.extend(["load".into(), "8".into()]);
    let rec = StraceRecorder
        .record(&RecordConfig::new(command))
        .expect("recording kvstore");
    let mut checker = kvstore().to_string();
    for f in &flags {
        checker.push(' ');
        checker.push_str(f);
    }
    checker.push_str(" check");
    let mut cfg = RunConfig::with_checker(Box::new(ShellChecker {
        command: checker,
        timeout: Duration::from_secs(60),
    }));
    cfg.models = MODELS.to_vec();
    check_trace(&rec.trace, &cfg).expect("checking kvstore")
}

/// A cause sentence without log line numbers (they depend on how the
/// program was built and started, not on what it does).
fn stable(sentence: &str) -> String {
    blackout::export::text::without_log_lines(sentence).replace('|', "\\|")
}

#[test]
fn planted_bugs_are_caught_by_the_right_models() {
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    let mut all = vec![("none".to_string(), "no planted bug".to_string())];
    all.extend(bugs());
    assert!(all.len() > 6, "at least six bugs");
    let start = std::time::Instant::now();
    let mut checked = 0;
    for (bug, what) in &all {
        let report = run(bug);
        checked += report.checked;
        let verdicts: Vec<Verdict> = MODELS
            .iter()
            .map(|m| {
                report
                    .models
                    .iter()
                    .find(|r| r.model == *m)
                    .map_or(report.verdict, |r| r.verdict)
            })
            .collect();
        let first = MODELS
            .iter()
            .zip(&verdicts)
            .find(|(_, v)| **v != Verdict::Pass)
            .map(|(m, _)| *m);
        if first != expected(bug)
            || verdicts
                .iter()
                .any(|v| !matches!(v, Verdict::Pass | Verdict::Fail))
        {
            problems.push(format!(
                "{bug}: verdicts {verdicts:?} ({}), expected first caught by {:?}",
                report.reason,
                expected(bug)
            ));
        }
        // Once caught, every stronger model catches it too.
        if let Some(f) = first {
            for (m, v) in MODELS.iter().zip(&verdicts) {
                if *m > f && *v != Verdict::Fail {
                    problems.push(format!(
                        "{bug}: caught by {} but not by {}",
                        f.name(),
                        m.name()
                    ));
                }
            }
        }
        let failing = first.and_then(|f| report.models.iter().find(|r| r.model == f));
        let cause = failing
            .and_then(|r| r.causes.first().map(|g| (g, r.causes.len())))
            .map(|(g, n)| {
                let fix = match &g.fix {
                    Some(f) if f.passes => {
                        format!("adding {} makes every state pass", stable(&f.description))
                    }
                    Some(f) => format!("adding {} is not enough alone", stable(&f.description)),
                    None => "no single sync fixes it".into(),
                };
                format!(
                    "`{}`: {}. Fix: {fix}. ({n} distinct cause{})",
                    serde_json::to_value(g.cause.kind)
                        .unwrap()
                        .as_str()
                        .unwrap_or("?"),
                    stable(&g.cause.sentence),
                    if n == 1 { "" } else { "s" }
                )
            })
            .unwrap_or_else(|| "—".into());
        rows.push(format!(
            "| `{bug}` | {what} | {} | {} | {} | {} | {cause} |",
            verdicts[0].name(),
            verdicts[1].name(),
            verdicts[2].name(),
            first.map_or("—", Model::name),
        ));
    }
    eprintln!(
        "kvstore table: {} configurations, {checked} distinct states checked, {:.1} s",
        all.len(),
        start.elapsed().as_secs_f64()
    );
    let doc = format!(
        "# kvstore: planted bugs × persistence models\n\n\
         Generated by `BLACKOUT_UPDATE_DOCS=1 cargo test -p kvstore --test bug_table`; \
         `cargo test` (and so CI) regenerates it and fails on any difference.\n\n\
         `examples/kvstore` is a small log-structured store (an append-only log of \
         checksummed records, fdatasynced before each acknowledgement; a snapshot \
         written to a temporary file, fsynced, renamed into place, the directory \
         fsynced, then the log truncated). Each bug removes one of those steps. \
         Workload: `kvstore [--bug B] load 8` (8 puts, each acknowledged with \
         `ack kN=vN`, a compaction after every 4). Checker: `kvstore [--bug B] check` \
         (recovery as after a restart; every acknowledged pair present, nothing \
         recovered that was never written).\n\n\
         A bug must be caught by the model named in \"caught by\" and by every \
         stronger one (process < ordered < posix), and by no weaker one; the store \
         without bugs must pass all three. The cause is the simplest one under the \
         weakest model that fails, with its fix as verified by re-exploring \
         (log line numbers left out).\n\n\
         | bug | what it does | process | ordered | posix | caught by | simplest cause |\n\
         |---|---|---|---|---|---|---|\n{}\n",
        rows.join("\n")
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let path = doc_path();
    if std::env::var_os("BLACKOUT_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &doc).unwrap();
        return;
    }
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    if old != doc {
        panic!(
            "docs/kvstore.md differs from what the bugs do now (regenerate with BLACKOUT_UPDATE_DOCS=1 cargo test -p kvstore --test bug_table):\n--- checked in\n{old}\n--- now\n{doc}"
        );
    }
}
