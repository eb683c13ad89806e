//! The small storage programs of `tests/engines/`, each recorded with both
//! recorders as their README runs it (its setup unrecorded, first; the
//! logs that sync every record at smaller counts).

use blackout_record::RecordConfig;

use super::{command, have, repo, same};

/// Records `python3 tests/engines/NAME ARGS` after `setup` (a shell
/// command, `python3 tests/engines/NAME SETUP` when it starts with `:`)
/// with both recorders; returns the op log.
fn engine(setup: Option<&str>, name: &str, args: &str) -> Option<String> {
    if !have("python3") {
        eprintln!("skipped: no python3");
        return None;
    }
    let prog = repo().join("tests/engines").join(name);
    let prog = prog.to_str().unwrap();
    let mut cmd = vec!["python3", prog];
    cmd.extend(args.split_whitespace());
    let mut cfg = RecordConfig::new(command(&cmd));
    cfg.setup = setup.map(|s| match s.strip_prefix(':') {
        Some(own) => format!("python3 {prog} {own}"),
        None => s.to_string(),
    });
    Some(same(&format!("{name} {args}"), &cfg).op_log_text())
}

#[test]
fn overwrite_in_each_mode() {
    for mode in ["dsync", "append", "page"] {
        let Some(log) = engine(Some(&format!(":setup {mode}")), "overwrite.py", mode) else {
            return;
        };
        assert!(log.contains("saved"), "{mode}: {log}");
    }
}

#[test]
fn metapage_with_and_without_its_bug() {
    for args in ["put 3", "--bug meta-before-sync put 3"] {
        let Some(log) = engine(Some(":setup"), "metapage.py", args) else {
            return;
        };
        assert!(log.contains("\"ack 3\""), "{args}: {log}");
    }
}

#[test]
fn csumlog_writing_two_records() {
    let Some(log) = engine(Some("touch log"), "csumlog.py", "write 2") else {
        return;
    };
    assert!(log.contains("len=1008"), "{log}");
}

#[test]
fn inplace_saves() {
    // At full size (64 blocks), and at the 16 the end-to-end tests check
    // under posix.
    for blocks in [64, 16] {
        let setup = format!(":--blocks {blocks} setup");
        let args = format!("--blocks {blocks} save");
        let Some(log) = engine(Some(&setup), "inplace.py", &args) else {
            return;
        };
        let writes = log.matches("  write  ").count();
        assert_eq!(writes, blocks, "{log}");
    }
}

// records.py and skiplog.py sync every record, each sync a few
// milliseconds on a disk: they run at a tenth of the README's counts, the
// same code at each record.

#[test]
fn records_updated_in_place_straddling_and_aligned() {
    for layout in ["", "--aligned"] {
        let setup = format!(":setup {layout}");
        let args = format!("update {layout} 80");
        let Some(log) = engine(Some(&setup), "records.py", &args) else {
            return;
        };
        assert_eq!(log.matches("fdatasync@").count(), 80, "{layout}");
    }
}

#[test]
fn skiplog_skipping_one_sync() {
    let Some(log) = engine(None, "skiplog.py", "write 150 123") else {
        return;
    };
    assert_eq!(log.matches("fdatasync@").count(), 149);
}

#[test]
fn blocklog_plain_and_with_every_bug() {
    let bugs =
        "--bug ack-early --bug no-log-dir-fsync --bug manifest-unsynced --bug current-unsynced";
    for args in ["write 150", &format!("{bugs} write 110 --rotate 40")] {
        let Some(log) = engine(None, "blocklog.py", args) else {
            return;
        };
        assert!(log.contains("CURRENT"), "{args}: {log}");
    }
}
