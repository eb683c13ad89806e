//! `blackout clean`, and the same at the start of every run: scratch
//! directories left by runs killed outright (SIGKILL) are removed, with
//! what is still mounted under them.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;

use blackout::sys::scratch::{clean_stale, default_scratch_parent};

use clap::Args;

pub(crate) const CLEAN_EXAMPLES: &str = "\
Examples:
  Remove what runs killed with SIGKILL left in the scratch directory
  ($TMPDIR, else /dev/shm); every run also does this when it starts:
    blackout clean

  Look in another directory:
    blackout clean --dir /var/tmp
";

/// `blackout clean`.
#[derive(Args)]
pub(crate) struct CleanArgs {
    /// Where to look (default: $TMPDIR, else /dev/shm, else the system's
    /// temp directory).
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
}

/// Removes stale scratch under `parent`: the directories removed, and a
/// line for each that could not be.
fn clean(parent: &Path) -> (Vec<String>, Vec<String>) {
    let mut removed = Vec::new();
    let mut failed = Vec::new();
    for (dir, result) in clean_stale(parent) {
        match result {
            Ok(()) => removed.push(dir.display().to_string()),
            Err(e) => failed.push(format!("cannot remove {}: {e}", dir.display())),
        }
    }
    (removed, failed)
}

/// Before a run: says in one line what it removed, if anything.
pub(crate) fn before_run() {
    let (removed, failed) = clean(&default_scratch_parent());
    if !removed.is_empty() {
        eprintln!(
            "removed {} scratch director{} left by killed runs: {}",
            removed.len(),
            if removed.len() == 1 { "y" } else { "ies" },
            removed.join(", ")
        );
    }
    for f in failed {
        eprintln!("warning: {f}");
    }
}

pub(crate) fn cmd_clean(a: CleanArgs) -> Result<u8> {
    let parent = a.dir.unwrap_or_else(default_scratch_parent);
    let (removed, failed) = clean(&parent);
    let mut out = std::io::stdout().lock();
    for r in &removed {
        writeln!(out, "removed {r}")?;
    }
    if removed.is_empty() && failed.is_empty() {
        writeln!(out, "nothing to clean in {}", parent.display())?;
    }
    for f in &failed {
        eprintln!("{f}");
    }
    Ok(if failed.is_empty() { 0 } else { 2 })
}
