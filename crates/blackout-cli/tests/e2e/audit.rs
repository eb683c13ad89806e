//! The audit (docs/AUDIT.md): every program of `examples/audit/programs`
//! installed at its pinned version, run under posix and on ext4, xfs and
//! btrfs; the table regenerated and compared with the checked-in one, row
//! by row (the run's duration aside), and every control passing in every
//! column; and, in the default suite, the README's headline sentence is the
//! one the checked-in table gives.

use std::process::Command;

use crate::common::{text, Scratch};

/// The table's rows, without the line that says how long the run took.
fn rows(table: &str) -> Vec<&str> {
    table
        .lines()
        .filter(|l| !l.starts_with("The last run took"))
        .collect()
}

/// The README's audit headline (between its `audit headline` markers) is
/// what `render.py --headline` computes from docs/AUDIT.md's rows: the
/// sentence counts only what the table shows.
#[test]
fn the_readme_headline_is_the_audit_tables() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new("python3")
        .arg(repo.join("examples/audit/render.py"))
        .arg("--headline")
        .arg(repo.join("docs/AUDIT.md"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let headline = text(&out.stdout);
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    let between = readme
        .split("<!-- audit headline -->\n")
        .nth(1)
        .and_then(|rest| rest.split("\n<!-- /audit headline -->").next())
        .expect("README.md has its audit headline markers");
    assert_eq!(
        between,
        headline.trim_end(),
        "README.md's audit headline is stale: run examples/audit/run.sh"
    );
    let table = std::fs::read_to_string(repo.join("docs/AUDIT.md")).unwrap();
    assert!(
        table.contains(&format!("**Headline.** {}", headline.trim_end())),
        "docs/AUDIT.md's headline is not its table's"
    );
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
    let names = |dir: &std::path::Path| {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        names(&s.path("audit")),
        names(&repo.join("docs/audit")),
        "docs/audit/ is stale: run examples/audit/run.sh"
    );
    assert_eq!(
        rows(&table),
        rows(&checked_in),
        "docs/AUDIT.md is stale: run examples/audit/run.sh"
    );
}
