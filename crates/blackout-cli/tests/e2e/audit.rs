//! The audit (docs/AUDIT.md): every program of `examples/audit/programs`
//! installed at its pinned version, run under posix and on ext4, xfs and
//! btrfs; the table regenerated and compared with the checked-in one, row
//! by row (the run's duration aside), and every control passing in every
//! column.

use std::process::Command;

use crate::common::{text, Scratch};

/// The table's rows, without the line that says how long the run took.
fn rows(table: &str) -> Vec<&str> {
    table
        .lines()
        .filter(|l| !l.starts_with("The last run took"))
        .collect()
}

#[test]
#[ignore = "slower suite: cargo test -p blackout-cli --test e2e -- --ignored (installs from PyPI, npm, crates.io and Debian; minutes)"]
fn the_audit_regenerates_docs_audit_md() {
    if !crate::block::block_backend_available() {
        return;
    }
    let s = Scratch::new();
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = s.path("AUDIT.md");
    let run = Command::new("sh")
        .arg(repo.join("examples/audit/run.sh"))
        .env("BLACKOUT", env!("CARGO_BIN_EXE_blackout"))
        .env("AUDIT_OUT", &out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", text(&run.stderr));
    let table = std::fs::read_to_string(&out).unwrap();
    for row in table.lines().filter(|l| l.starts_with("| control:")) {
        assert!(!row.contains("FAIL") && !row.contains("not run"), "{row}");
    }
    let checked_in = std::fs::read_to_string(repo.join("docs/AUDIT.md")).unwrap();
    assert_eq!(
        rows(&table),
        rows(&checked_in),
        "docs/AUDIT.md is stale: run examples/audit/run.sh"
    );
}
