//! Golden cases: a real strace log recorded from a small program in
//! `tests/golden/CASE/` and the op log replay must make of it.
//!
//! Refresh the expected op logs with `UPDATE_GOLDEN=1 cargo test --test golden`
//! (ignored under `CI`); re-record a log with `tests/golden/record.sh CASE`.

use std::fs;
use std::path::{Path, PathBuf};

use blackout_oplog::contents::Data;
use blackout_oplog::ops::{InodeKind, OpKind};
use blackout_oplog::store::{self, InodeState};
use blackout_oplog::trace::{Trace, TraceMeta};
use blackout_oplog::tree::Tree;
use blackout_record::replay::replay;

fn golden_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden")
}

/// The op log the parser and replay make of one case.
fn op_log(case: &Path) -> String {
    let log = fs::read(case.join("strace.log")).expect("strace.log");
    let dir = fs::read_to_string(case.join("dir.txt")).expect("dir.txt");
    let dir = dir.trim().as_bytes().to_vec();
    let tree = if case.join("init").is_dir() {
        blackout_record::snapshot::snapshot(&case.join("init")).expect("init tree")
    } else {
        Tree::default()
    };
    match replay(&log, &tree, &dir) {
        Ok(r) => Trace::new(
            &tree,
            r,
            TraceMeta {
                dir,
                ..TraceMeta::default()
            },
        )
        .op_log_text(),
        // A case may be a refusal: its expected output is the error.
        Err(e) => format!("error: strace.log:{e}\n"),
    }
}

fn cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = fs::read_dir(golden_root())
        .expect("tests/golden")
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("strace.log").is_file())
        .collect();
    cases.sort();
    cases
}

#[test]
fn every_golden_case_matches_its_expected_op_log() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some() && std::env::var_os("CI").is_none();
    let cases = cases();
    let mut failed = Vec::new();
    for case in &cases {
        let got = op_log(case);
        let expected_path = case.join("expected.ops");
        if update {
            fs::write(&expected_path, &got).unwrap();
            continue;
        }
        let expected = fs::read_to_string(&expected_path).unwrap_or_default();
        if got != expected {
            let name = case.file_name().unwrap().to_string_lossy().into_owned();
            eprintln!("--- {name}: expected\n{expected}+++ {name}: got\n{got}");
            failed.push(name);
        }
    }
    assert!(failed.is_empty(), "golden cases differ: {failed:?}");
    assert!(cases.len() >= 15, "only {} golden cases", cases.len());
}

/// A file-system state for comparison: kinds, sizes, the bytes a reader
/// sees, entries.
type Visible = (InodeKind, u64, Vec<u8>, Vec<(Vec<u8>, u32)>);

fn visible(inodes: &[InodeState]) -> Vec<Visible> {
    inodes
        .iter()
        .map(|i| {
            let mut bytes = i.data.to_vec();
            if i.kind == InodeKind::File {
                bytes.resize(i.size as usize, 0);
            }
            let entries = i.entries.iter().map(|(n, x)| (n.clone(), *x)).collect();
            (i.kind, i.size, bytes, entries)
        })
        .collect()
}

/// Paired: the state replay's file-system model ends with equals the state
/// that applying every op of the trace to the initial tree gives (the path
/// every crash state is built by).
#[test]
fn replay_ends_where_applying_every_op_ends() {
    let mut failed = Vec::new();
    for case in cases() {
        let log = fs::read(case.join("strace.log")).unwrap();
        let dir = fs::read_to_string(case.join("dir.txt")).unwrap();
        let tree = if case.join("init").is_dir() {
            blackout_record::snapshot::snapshot(&case.join("init")).unwrap()
        } else {
            Tree::default()
        };
        let Ok(r) = replay(&log, &tree, dir.trim().as_bytes()) else {
            continue; // a refusal case
        };
        let model = visible(&r.final_inodes);
        let trace = Trace::new(&tree, r, TraceMeta::default());
        let mut inodes = trace.initial_inodes();
        for op in &trace.ops {
            let data = match op.kind {
                OpKind::Write { data, .. } => Data::Blob(&trace.data, data),
                _ => Data::Bytes(&[]),
            };
            store::apply(&mut inodes, &op.kind, data, store::Halves::BOTH);
        }
        if visible(&inodes) != model {
            for (i, (a, b)) in visible(&inodes).iter().zip(&model).enumerate() {
                if a != b {
                    eprintln!("inode {i}: ops give {a:?}, the model {b:?}");
                }
            }
            failed.push(case.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    assert!(
        failed.is_empty(),
        "replay and the op log disagree: {failed:?}"
    );
}
