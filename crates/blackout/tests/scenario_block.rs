//! A `Scenario` on a real ext4 through the block backend: the document
//! save of `examples/save/save.sh` written in Rust, careful (the temporary
//! file fsynced, renamed over the document, the directory fsynced) and
//! without the directory's fsync. Their verdicts on ext4 are the ones
//! docs/BLOCK.md's document-save table holds: the careful save passes, and
//! without the directory's fsync the rename is lost after the promise.
//!
//! Needs root, `/dev/fuse`, a loop device, mkfs.ext4 and strace; elsewhere
//! the test says so and passes (under CI a missing one fails it).

use std::fs::{self, File};
use std::io;
use std::path::Path;

use blackout::analysis::report::Verdict;
use blackout::block_device::session::{can_start, tool_installed, FsKind};
use blackout::Scenario;

/// Whether this machine can run the block backend on ext4 (and strace,
/// which records the scenario).
fn ext4_available() -> bool {
    let why = match can_start(FsKind::Ext4) {
        Err(e) => e.to_string(),
        Ok(()) if !tool_installed("strace") => "strace is not installed".into(),
        Ok(()) => return true,
    };
    assert!(
        std::env::var_os("CI").is_none(),
        "{why}; CI must run this test"
    );
    eprintln!("note: the block backend cannot run here ({why}); skipped");
    false
}

/// Saves "version 2" as doc.txt: a temporary file fsynced and renamed over
/// it, then the directory fsynced when `dir_fsync`.
fn save(dir: &Path, dir_fsync: bool) -> io::Result<()> {
    let tmp = dir.join("doc.txt.tmp");
    fs::write(&tmp, "version 2\n")?;
    File::open(&tmp)?.sync_all()?;
    fs::rename(&tmp, dir.join("doc.txt"))?;
    if dir_fsync {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// A save of doc.txt on ext4, promised once it returned.
fn saving(label: &str, dir_fsync: bool) -> Scenario {
    Scenario::new(label)
        .block(FsKind::Ext4)
        .stacks(false)
        .setup(|dir| {
            fs::write(dir.join("doc.txt"), "version 1\n")?;
            Ok(())
        })
        .workload(move |dir, p| {
            save(dir, dir_fsync)?;
            p.promise("saved");
            Ok(())
        })
        .check(|state, promised| {
            let doc = fs::read_to_string(state.join("doc.txt")).unwrap_or_default();
            match doc.as_str() {
                "version 2\n" => Ok(()),
                "version 1\n" if promised.is_empty() => Ok(()),
                _ if promised.is_empty() => Err(format!("the old document is gone: {doc:?}")),
                _ => Err(format!("promised version 2, found {doc:?}")),
            }
        })
}

#[test]
fn a_save_on_ext4_holds_with_the_directory_fsynced_and_loses_the_rename_without() {
    if !ext4_available() {
        return;
    }
    let careful = saving("careful", true).run();
    let careless = saving("careless", false).run();

    careful.assert_pass();
    let ext4 = careful.block().expect("the careful save's ext4 report");
    assert_eq!(ext4.fs, "ext4");
    assert_eq!(ext4.verdict, Verdict::Pass, "{}", careful.text());
    assert!(ext4.distinct > 0, "{}", careful.text());

    assert_eq!(careless.verdict(), Verdict::Fail, "{}", careless.text());
    let posix = &careless.models()[0];
    assert_eq!(posix.verdict, Verdict::Fail, "{}", careless.text());
    let ext4 = careless.block().expect("the careless save's ext4 report");
    assert_eq!(ext4.verdict, Verdict::Fail, "{}", careless.text());
    assert!(ext4.posix_misses.is_empty(), "{}", careless.text());
    let blame = ext4.failing[0]
        .blame
        .as_ref()
        .expect("a failing state's blame");
    assert!(
        blame
            .posix_lost
            .iter()
            .any(|l| l.contains("rename doc.txt.tmp -> doc.txt")),
        "{:?}\n{}",
        blame.posix_lost,
        careless.text()
    );
    assert!(careless.text().contains("ext4"), "{}", careless.text());
}
