//! The parser, replay and trace reader never panic: arbitrary bytes,
//! strace-shaped garbage, and real logs mutated at random all give either an
//! op log or an error naming a line.

use std::fs;
use std::path::Path;

use blackout_oplog::trace::{Trace, TraceMeta};
use blackout_oplog::tree::Tree;
use blackout_record::replay::replay;
use proptest::prelude::*;

const DIR: &[u8] = b"/tmp/blackout-test/dir";

fn golden_logs() -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden");
    let mut logs: Vec<(String, Vec<u8>)> = fs::read_dir(root)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path().join("strace.log");
            let name = p.display().to_string();
            fs::read(&p).ok().map(|b| (name, b))
        })
        .collect();
    logs.sort();
    assert!(!logs.is_empty());
    logs.into_iter().map(|(_, b)| b).collect()
}

/// Replays and checks the outcome is well-formed.
fn replay_checked(log: &[u8]) {
    let lines = log.split(|&b| b == b'\n').count() as u32;
    match replay(log, &Tree::default(), DIR) {
        Ok(r) => {
            // Whatever replay accepted must make a valid trace.
            let t = Trace::new(&Tree::default(), r, TraceMeta::default());
            let mut buf = Vec::new();
            t.write_to(&mut buf).unwrap();
            Trace::read(&buf).expect("a trace replay made must validate");
            let _ = t.op_log_text();
        }
        Err(e) => {
            assert!(
                e.line >= 1 && e.line <= lines + 1,
                "line {} of {lines}",
                e.line
            );
            assert!(!e.message.is_empty());
            assert!(!e.to_string().contains('\n'), "one-line error: {e}");
        }
    }
}

fn interesting_name() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "open",
        "openat",
        "creat",
        "write",
        "pwrite64",
        "writev",
        "pwritev2",
        "rename",
        "renameat2",
        "unlink",
        "unlinkat",
        "link",
        "linkat",
        "symlink",
        "mkdir",
        "fsync",
        "fdatasync",
        "sync",
        "close",
        "dup2",
        "fcntl",
        "lseek",
        "clone",
        "clone3",
        "execve",
        "chdir",
        "fchdir",
        "mmap",
        "copy_file_range",
        "sendfile",
        "splice",
        "pipe2",
        "truncate",
        "ftruncate",
        "fallocate",
        "close_range",
        "read",
        "tee",
        "vmsplice",
    ])
}

fn arg() -> impl Strategy<Value = String> {
    prop_oneof![
        (0i64..8).prop_map(|n| n.to_string()),
        Just("AT_FDCWD".to_string()),
        Just("NULL".to_string()),
        Just("-1".to_string()),
        Just("[0]".to_string()),
        Just("[3, 4]".to_string()),
        Just("O_WRONLY|O_CREAT|O_TRUNC|O_APPEND".to_string()),
        Just("O_RDWR|O_TMPFILE".to_string()),
        Just("PROT_READ|PROT_WRITE".to_string()),
        Just("MAP_SHARED".to_string()),
        Just("RENAME_EXCHANGE".to_string()),
        Just("AT_EMPTY_PATH".to_string()),
        Just("FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE".to_string()),
        prop::sample::select(vec!["a", "b", "a/b", "..", "/", "/tmp/blackout-test/dir/a", "../dir/b", "", "/proc/self/fd/3"])
            .prop_map(|p| format!("\"{}\"", p.bytes().map(|b| format!("\\x{b:02x}")).collect::<String>())),
        "[a-z\\\\\"x0-9]{0,12}".prop_map(|s| format!("\"{s}\"")),
        Just("[{iov_base=\"\\x61\", iov_len=1}]".to_string()),
        Just("{flags=CLONE_VM|CLONE_FILES}".to_string()),
        (0i64..3).prop_map(|n| format!("{n}<\\x2f\\x74\\x6d\\x70\\x2f\\x62\\x6c\\x61\\x63\\x6b\\x6f\\x75\\x74\\x2d\\x74\\x65\\x73\\x74\\x2f\\x64\\x69\\x72\\x2f\\x61>")),
    ]
}

fn call_line() -> impl Strategy<Value = String> {
    (
        1u32..4,
        interesting_name(),
        prop::collection::vec(arg(), 0..6),
        prop_oneof![
            (0i64..10).prop_map(|n| n.to_string()),
            Just("-1 ENOENT (No such file or directory)".to_string()),
            Just("?".to_string()),
            Just("1000000000000".to_string()),
        ],
        0u8..6,
    )
        .prop_map(|(pid, name, args, ret, shape)| match shape {
            0 => format!("{pid} {name}({} <unfinished ...>", args.join(", ")),
            1 => format!("{pid} <... {name} resumed>) = {ret}"),
            2 => format!("{pid} +++ exited with 0 +++"),
            _ => format!("{pid} {name}({}) = {ret}", args.join(", ")),
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(log in prop::collection::vec(any::<u8>(), 0..2048)) {
        replay_checked(&log);
    }

    #[test]
    fn strace_shaped_garbage_never_panics(lines in prop::collection::vec(call_line(), 0..40)) {
        let log = lines.join("\n") + "\n";
        replay_checked(log.as_bytes());
    }

    #[test]
    fn mutated_real_logs_never_panic(
        which in any::<prop::sample::Index>(),
        muts in prop::collection::vec((any::<prop::sample::Index>(), 0u8..5, any::<u8>(), 0usize..64), 1..6),
    ) {
        let logs = golden_logs();
        let mut log = logs[which.index(logs.len())].clone();
        for (at, kind, byte, len) in muts {
            if log.is_empty() { break; }
            let i = at.index(log.len());
            match kind {
                0 => { log.truncate(i); }
                1 => { let end = (i + len).min(log.len()); log.drain(i..end); }
                2 => { log.insert(i, byte); }
                3 => { log[i] = byte; }
                _ => {
                    // Duplicate a stretch (repeats lines, or parts of them).
                    let end = (i + len * 8).min(log.len());
                    let dup = log[i..end].to_vec();
                    log.splice(i..i, dup);
                }
            }
        }
        replay_checked(&log);
    }

    #[test]
    fn mutated_traces_never_panic(at in any::<prop::sample::Index>(), byte in any::<u8>(), cut in any::<bool>()) {
        let log = golden_logs().remove(0);
        let dir = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/save-atomic/dir.txt")).unwrap();
        let tree = Tree::default();
        let mut buf = Vec::new();
        if let Ok(r) = replay(&log, &tree, dir.trim().as_bytes()) {
            Trace::new(&tree, r, TraceMeta::default()).write_to(&mut buf).unwrap();
        }
        if buf.is_empty() { return Ok(()); }
        let i = at.index(buf.len());
        if cut { buf.truncate(i); } else { buf[i] = byte; }
        if let Ok(t) = Trace::read(&buf) {
            let _ = t.op_log_text();
            let _ = t.initial_tree();
        }
    }
}

/// Found by the replay fuzz target: a path with a NUL byte (a damaged log)
/// made a trace that could not be read back. It is refused, naming the line.
#[test]
fn a_path_with_a_nul_byte_is_refused() {
    let log = b"1 openat(AT_FDCWD, \"\\x61\\x00\\x62\", O_WRONLY|O_CREAT, 0644) = 3\n";
    let e = replay(log, &Tree::default(), b"/d")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("1: openat: "), "{e}");
    assert!(e.contains("NUL"), "{e}");
}

/// Found by the replay fuzz target: a log claiming that fallocate succeeded
/// on a directory made an op no trace may hold. It is a divergence.
#[test]
fn fallocate_on_a_directory_is_a_divergence() {
    let log = b"1 openat(AT_FDCWD, \"\\x2e\", O_RDONLY|O_DIRECTORY) = 3\n\
                1 fallocate(3, FALLOC_FL_ZERO_RANGE, 16, 8) = 0\n";
    let e = replay(log, &Tree::default(), b"/d")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("2: fallocate: "), "{e}");
    assert!(e.contains("not a regular file"), "{e}");
}
