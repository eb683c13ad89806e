//! The text report, snapshotted: `blackout run --trace` on checked-in
//! recordings of the save example's four variants, so that a change of
//! report wording is reviewed (`cargo insta review`), never accidental.
//!
//! The recordings are fixed (`tests/reports/*.trace`, made by `blackout
//! record`), so the reports do not depend on this machine's shell or loader;
//! the checker's absolute path is shown as `<repo>`.

use crate::common::{repo, text, Scratch};

/// `blackout ARGS` run from the repository root, its stdout with the root
/// shown as `<repo>`, and its exit code.
fn blackout_at_repo(s: &Scratch, args: &[&str]) -> (String, i32) {
    let out = s
        .blackout()
        .current_dir(repo())
        .args(args)
        .output()
        .unwrap();
    s.assert_clean();
    let root = repo().display().to_string();
    (
        text(&out.stdout).replace(&root, "<repo>"),
        out.status.code().unwrap(),
    )
}

/// Compares with the checked-in snapshot, found by an absolute path: no
/// workspace lookup (which can fail while another cargo runs).
fn snapshot(name: &str, text: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/e2e/snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!(name, text));
}

fn report(mode: &str) -> (String, i32) {
    let s = Scratch::new();
    let checker = format!("sh {}/examples/save/check.sh", repo().display());
    let trace = format!("tests/reports/save-{mode}.trace");
    blackout_at_repo(&s, &["run", "--trace", &trace, "--checker", &checker])
}

fn states(mode: &str) -> String {
    let s = Scratch::new();
    let trace = format!("tests/reports/save-{mode}.trace");
    let (out, code) = blackout_at_repo(&s, &["states", &trace]);
    assert_eq!(code, 0);
    out
}

#[test]
fn save_full_report() {
    let (text, code) = report("full");
    assert_eq!(code, 0);
    snapshot("e2e__reports__save_full_report", &text);
}

#[test]
fn save_no_dir_fsync_report() {
    let (text, code) = report("no-dir-fsync");
    assert_eq!(code, 1);
    snapshot("e2e__reports__save_no_dir_fsync_report", &text);
}

#[test]
fn save_no_fsync_report() {
    let (text, code) = report("no-fsync");
    assert_eq!(code, 1);
    snapshot("e2e__reports__save_no_fsync_report", &text);
}

#[test]
fn save_in_place_report() {
    let (text, code) = report("in-place");
    assert_eq!(code, 1);
    snapshot("e2e__reports__save_in_place_report", &text);
}

#[test]
fn save_variant_states() {
    let all: Vec<String> = ["full", "no-dir-fsync", "no-fsync", "in-place"]
        .iter()
        .map(|m| format!("## {m}\n{}", states(m)))
        .collect();
    snapshot("e2e__reports__save_variant_states", &all.join("\n"));
}
