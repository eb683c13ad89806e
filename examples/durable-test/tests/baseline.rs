//! A ratchet on two scenarios: their verdicts recorded into a baseline,
//! then the same reports checked against it as it is, against a stricter
//! one (a violation) and a looser one (a note), and without one of them (a
//! vanished case). The comparisons use the non-panicking API with explicit
//! modes; the environment is read only by `assert_no_worse_than`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use blackout::analysis::report::Verdict;
use blackout::baseline::{check_reports, Comparison, Mode, Ratchet, Rule};
use blackout::{assert_no_worse_than, Report};

mod common;

/// A fresh directory for this test's baseline files.
fn scratch() -> PathBuf {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("baseline-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const COMPARE: Mode = Mode {
    update: false,
    ci: false,
};

/// The violations of `reports` against the baseline at `path`.
fn violations(reports: &[&Report], path: &Path) -> Vec<String> {
    match check_reports(reports.iter().copied(), path, COMPARE).unwrap() {
        Ratchet::Compared(c) => c.violations.iter().map(ToString::to_string).collect(),
        Ratchet::Updated { .. } => panic!("a comparison wrote the baseline"),
    }
}

/// Whether this process's environment asks to rewrite baselines (then
/// `assert_no_worse_than` writes instead of comparing, and its panics are
/// not checked).
fn env_rewrites() -> bool {
    Mode::from_env().rewrites()
}

/// The reports compared with the baseline `text` with one row replaced
/// (`edit`: the row and its replacement), written at `path`.
fn edited(reports: &[&Report], text: &str, edit: (&str, &str), path: &Path) -> Comparison {
    std::fs::write(path, text.replace(edit.0, edit.1)).unwrap();
    let Ratchet::Compared(c) = check_reports(reports.iter().copied(), path, COMPARE).unwrap()
    else {
        panic!("compared");
    };
    c
}

fn panic_of(f: impl FnOnce()) -> String {
    let e = catch_unwind(AssertUnwindSafe(f)).expect_err("no panic");
    e.downcast_ref::<String>().cloned().unwrap_or_default()
}

#[test]
fn a_baseline_of_two_scenarios_ratchets() {
    let replace = common::replace_scenario();
    let create = common::create_scenario();
    assert_eq!(replace.label(), "atomic replace");
    assert_eq!(create.verdict(), Verdict::Fail, "{}", create.text());
    let dir = scratch();
    let path = dir.join("durability.tsv");

    // Without a file: the panic says how to record one.
    if !env_rewrites() {
        let msg = panic_of(|| assert_no_worse_than([&replace, &create], &path));
        assert!(
            msg.contains("BLACKOUT_UPDATE_BASELINE=1 cargo test"),
            "{msg}"
        );
    }

    // Recorded: one row per scenario and model, the FAIL with its kind.
    let update = Mode {
        update: true,
        ci: false,
    };
    let done = check_reports([&replace, &create], &path, update).unwrap();
    assert_eq!(done, Ratchet::Updated { rows: 6 });
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("atomic replace\tposix\tPASS\t-\n"), "{text}");
    assert!(
        text.contains("create\tposix\tFAIL\tentry_not_synced\n"),
        "{text}"
    );
    assert!(text.contains("create\tprocess\tPASS\t-\n"), "{text}");

    // The same reports pass, the known FAIL included.
    assert_eq!(
        violations(&[&replace, &create], &path),
        Vec::<String>::new()
    );
    assert_no_worse_than([&replace, &create], &path);

    // A scenario left out has vanished.
    let v = violations(&[&replace], &path);
    assert_eq!(v.len(), 3, "{v:?}");
    assert!(
        v[2].starts_with("case `create`, model posix: vanished"),
        "{v:?}"
    );

    // A stricter baseline (create recorded as passing): a worse verdict.
    let strict = dir.join("strict.tsv");
    let c = edited(
        &[&replace, &create],
        &text,
        (
            "create\tposix\tFAIL\tentry_not_synced",
            "create\tposix\tPASS\t-",
        ),
        &strict,
    );
    assert_eq!(c.violations.len(), 1, "{:?}", c.violations);
    assert_eq!(c.violations[0].rule, Rule::WorseVerdict);
    assert_eq!(
        c.violations[0].to_string(),
        "case `create`, model posix: worse verdict: baseline PASS, now FAIL (entry_not_synced)"
    );
    if !env_rewrites() {
        let msg = panic_of(|| assert_no_worse_than([&replace, &create], &strict));
        assert!(
            msg.contains("1 violation(s) of the baseline")
                && msg.contains(&c.violations[0].to_string()),
            "{msg}"
        );
    }

    // A looser one (the replace recorded as failing): better, a note only.
    let c = edited(
        &[&replace, &create],
        &text,
        (
            "atomic replace\tposix\tPASS\t-",
            "atomic replace\tposix\tFAIL\tentry_not_synced",
        ),
        &dir.join("loose.tsv"),
    );
    assert!(c.passed(), "{:?}", c.violations);
    assert_eq!(
        c.better,
        ["case `atomic replace`, model posix: better verdict: baseline FAIL (entry_not_synced), now PASS"]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
