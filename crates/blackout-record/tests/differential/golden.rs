//! The golden cases of `tests/golden/`: each case's program recorded with
//! both recorders as `tests/golden/record.sh` runs it (C built with
//! `cc -g -O0 -pthread`, Python with `python3`, shell with `sh`, `--init`
//! from the case's `init/` when it has one).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use blackout_oplog::trace::Trace;
use blackout_record::{NativeRecorder, RecordConfig, RecordError, Recorder, StraceRecorder};

use super::{both, cc, have, repo, same, same_outcome};

/// How a case's two recordings are compared.
#[derive(Debug, Clone, Copy)]
enum How {
    /// The op logs are equal.
    Same,
    /// The op logs are equal once the name `mkstemp` made (this prefix
    /// and six random characters) is masked: each run draws its own.
    Mkstemp(&'static str),
    /// Threads race each other, each on files of its own and by appending
    /// to a shared one: the order of their ops across files, and so the
    /// inode numbers of the files they create, are the scheduler's. Each
    /// file's ops in order (every sync note included) must be equal.
    Racing,
    /// A thread syncs a file while another appends to it: which appends
    /// each sync covers is the scheduler's. Each file's ops in order
    /// without its syncs, its syncs counted, must be equal (the sync
    /// notes, which follow where the syncs fell, are left out).
    SyncsRace,
    /// The recording is refused: both recorders must refuse it for the
    /// same call, with the same kind and message (numbers masked: the log
    /// line, and a process id in a path, differ).
    Refused,
}

/// The case's program as a command, built in `build` when it is C.
fn program(case: &Path, build: &Path) -> Option<Vec<OsString>> {
    let c = case.join("prog.c");
    if c.is_file() {
        if !have("cc") {
            eprintln!("skipped: no C compiler");
            return None;
        }
        let bin = build.join("prog");
        cc(&c, &bin, &["-g", "-O0"]);
        return Some(vec![bin.into_os_string()]);
    }
    let py = case.join("prog.py");
    if py.is_file() {
        if !have("python3") {
            eprintln!("skipped: no python3");
            return None;
        }
        return Some(vec!["python3".into(), py.into_os_string()]);
    }
    Some(vec!["sh".into(), case.join("prog.sh").into_os_string()])
}

fn golden_dir() -> PathBuf {
    repo().join("tests/golden")
}

/// Records golden case `name` with both recorders, compared as `how` says.
fn golden(name: &str, how: How) {
    let case = golden_dir().join(name);
    let build = tempfile::tempdir().unwrap();
    let Some(command) = program(&case, build.path()) else {
        return;
    };
    let mut cfg = RecordConfig::new(command);
    if case.join("init").is_dir() {
        cfg.init = Some(case.join("init"));
    }
    match how {
        How::Same => {
            same(name, &cfg);
        }
        How::Mkstemp(prefix) => {
            let (strace, native) = both(name, &cfg);
            let mask = |t: &Trace| masked(&t.op_log_unnumbered(), prefix);
            let (s, n) = (mask(&strace.trace), mask(&native.trace));
            assert!(s.contains(prefix), "{name}: no {prefix} in\n{s}");
            assert_eq!(s, n, "{name}: the op logs differ");
            same_outcome(name, &strace, &native);
        }
        How::Racing | How::SyncsRace => {
            let (strace, native) = both(name, &cfg);
            let syncs_race = matches!(how, How::SyncsRace);
            let by = |t: &Trace| by_file(t, syncs_race);
            assert_eq!(
                by(&strace.trace),
                by(&native.trace),
                "{name}: the ops file by file differ\n--- strace:\n{}--- native:\n{}",
                strace.trace.op_log_unnumbered(),
                native.trace.op_log_unnumbered()
            );
            same_outcome(name, &strace, &native);
        }
        How::Refused => refused_alike(name, &cfg),
    }
}

/// `text` with every `prefix` and the six characters after it masked.
fn masked(text: &str, prefix: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        out.push_str(&rest[..at + prefix.len()]);
        out.push_str("XXXXXX");
        rest = rest[at + prefix.len()..].get(6..).unwrap_or("");
    }
    out.push_str(rest);
    out
}

/// The ops of `t` file by file: each path's ops in order, without their
/// indexes and inode numbers (which follow the order the threads ran in).
/// With `syncs_race`, a file's syncs are counted apart from its other ops
/// and the sync notes are left out.
fn by_file(t: &Trace, syncs_race: bool) -> BTreeMap<String, (Vec<String>, usize)> {
    let mut files: BTreeMap<String, (Vec<String>, usize)> = BTreeMap::new();
    for line in t.op_log_unnumbered().lines() {
        let mut words: Vec<&str> = line
            .split_whitespace()
            .skip(1)
            .filter(|w| !w.starts_with("ino=") && !w.starts_with("dir="))
            .collect();
        let at = words.iter().position(|w| w.ends_with('@'));
        let path = at.and_then(|a| words.get(a + 1)).copied().unwrap_or("");
        let file = files.entry(path.to_string()).or_default();
        if syncs_race {
            if let Some(note) = words.iter().position(|w| w.starts_with("(never")) {
                words.truncate(note);
            }
            if matches!(words[0], "fsync" | "fdatasync") {
                file.1 += 1;
                continue;
            }
        }
        file.0.push(words.join(" "));
    }
    files
}

/// `text` with every run of digits as `N`.
fn digits_masked(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if !c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('N') {
            out.push('N');
        }
    }
    out
}

/// Both recorders refuse `cfg` for the same call, alike.
fn refused_alike(name: &str, cfg: &RecordConfig) {
    let scratch = tempfile::tempdir().unwrap();
    let mut cfg = cfg.clone();
    cfg.scratch_parent = Some(scratch.path().to_path_buf());
    let refusal = |r: Result<blackout_record::Recording, RecordError>| match r {
        Err(RecordError::Replay { err, .. }) => {
            (err.syscall.clone(), err.kind, digits_masked(&err.message))
        }
        Err(e) => panic!("{name}: not a refusal: {e}"),
        Ok(_) => panic!("{name}: recorded, not refused"),
    };
    let s = refusal(StraceRecorder::default().record(&cfg));
    let n = refusal(NativeRecorder.record(&cfg));
    assert_eq!(s, n, "{name}: refused differently");
    assert!(
        std::fs::read_dir(scratch.path()).unwrap().next().is_none(),
        "{name}: a scratch directory was left behind"
    );
}

/// A test per golden case, each compared as it says, and the list of
/// cases they cover.
macro_rules! cases {
    ($($(#[$attr:meta])* $test:ident: $case:literal => $how:expr;)*) => {
        /// Every golden case a test covers.
        const CASES: &[&str] = &[$($case),*];
        $(
            $(#[$attr])*
            #[test]
            fn $test() {
                golden($case, $how);
            }
        )*
    };
}

cases! {
    golden_append_two_fds: "append-two-fds" => How::Same;
    golden_chdir_fchdir: "chdir-fchdir" => How::Same;
    golden_clone_files: "clone-files" => How::Same;
    golden_copy_splice: "copy-splice" => How::Same;
    golden_cross_dir_rename: "cross-dir-rename" => How::Same;
    golden_exec_cloexec: "exec-cloexec" => How::Same;
    golden_fd_table: "fd-table" => How::Same;
    golden_fork_shared_offset: "fork-shared-offset" => How::Same;
    golden_interleaved_resumed: "interleaved-resumed" => How::SyncsRace;
    golden_links_and_dirs: "links-and-dirs" => How::Same;
    golden_open_flags: "open-flags" => How::Same;
    golden_python_config: "python-config" => How::Same;
    golden_refuse_mmap: "refuse-mmap" => How::Refused;
    golden_refuse_rename_in: "refuse-rename-in" => How::Refused;
    golden_rename_exchange: "rename-exchange" => How::Same;
    golden_rename_in_from_tmp: "rename-in-from-tmp" => How::Mkstemp("golden-rename-in-");
    golden_rename_variants: "rename-variants" => How::Same;
    golden_save_atomic: "save-atomic" => How::Same;
    golden_shell_append: "shell-append" => How::Same;
    golden_sync_family: "sync-family" => How::Same;
    golden_thread_exec: "thread-exec" => How::Same;
    golden_threads_writer: "threads-writer" => How::Racing;
    golden_tmpfile_linkat: "tmpfile-linkat" => How::Same;
    golden_truncate_fallocate: "truncate-fallocate" => How::Same;
    golden_write_variants: "write-variants" => How::Same;
}

#[test]
fn every_golden_case_is_recorded_with_both() {
    let mut found: Vec<String> = std::fs::read_dir(golden_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    found.sort();
    assert_eq!(found, CASES, "a golden case without its test here");
}
