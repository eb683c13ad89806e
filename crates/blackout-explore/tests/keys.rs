//! The keys and states kept along the crash points are those of the states
//! built from the first op: for every state every model enumerates, the
//! same inodes and content hash, and none rebuilt the slow way. On the golden logs, the recorded save traces, and
//! random writes, truncates and fallocates across hash-block boundaries.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use blackout_explore::enumerate::{enumerate, ExploreConfig};
use blackout_explore::keys::Keyer;
use blackout_explore::model::Model;
use blackout_explore::state::{FsState, HASH_BLOCK_BYTES};
use blackout_oplog::trace::{Trace, TraceMeta};
use blackout_oplog::tree::{Entry, Node, Tree};
use blackout_record::replay::{replay, trace_of_log};
use proptest::prelude::*;

/// Builds every state of every model both ways; the number compared.
fn agree(trace: &Trace, what: &str) -> usize {
    let mut compared = 0;
    for model in Model::ALL {
        let mut keys = Keyer::new(trace, 512);
        let cfg = ExploreConfig::default();
        enumerate(&trace.ops, model.crash_model(), &cfg, |desc| {
            let whole = FsState::build(trace, &desc, 512);
            assert_eq!(
                keys.hash(&desc),
                whole.content_hash(),
                "{what}, {}",
                desc.id()
            );
            let (fs, hash) = keys.state(&desc);
            assert!(fs == whole, "{what}, {}: the state differs", desc.id());
            assert_eq!(hash, whole.content_hash(), "{what}, {}", desc.id());
            compared += 1;
        })
        .unwrap();
        assert_eq!(keys.rebuilt(), 0, "{what}: keys rebuilt from the first op");
    }
    compared
}

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

#[test]
fn on_the_golden_logs_and_the_recorded_traces() {
    let (mut compared, mut logs) = (0, 0);
    for entry in fs::read_dir(repo().join("tests/golden")).unwrap() {
        let case = entry.unwrap().path();
        let (Ok(log), Ok(dir)) = (
            fs::read(case.join("strace.log")),
            fs::read_to_string(case.join("dir.txt")),
        ) else {
            continue;
        };
        // Cases with an initial tree, or refused, are left out.
        let Ok(trace) = trace_of_log(&log, dir.trim().as_bytes()) else {
            continue;
        };
        logs += 1;
        compared += agree(&trace, &case.display().to_string());
    }
    assert!(logs >= 10, "only {logs} golden logs replayed");
    for entry in fs::read_dir(repo().join("tests/reports")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "trace") {
            let trace = Trace::load(&path).unwrap();
            compared += agree(&trace, &path.display().to_string());
        }
    }
    assert!(compared > 1000, "only {compared} states compared");
}

/// One change to one of two files, or a sync.
#[derive(Debug, Clone)]
enum Change {
    Write {
        file: u8,
        off: u32,
        len: u32,
        byte: u8,
    },
    Truncate {
        file: u8,
        size: u32,
    },
    ZeroRange {
        file: u8,
        off: u32,
        len: u32,
    },
    Fsync {
        file: u8,
    },
}

/// Changes that leave many ops pending: small writes, mostly within a few
/// blocks, seldom synced (crash points past the exhaustive limit, whose
/// states lose and keep long lists of writes).
fn pending_change() -> impl Strategy<Value = Change> {
    let off = 0u32..(3 * HASH_BLOCK_BYTES as u32);
    prop_oneof![
        8 => (0u8..2, off.clone(), 1u32..600, any::<u8>())
            .prop_map(|(file, off, len, byte)| Change::Write { file, off, len, byte }),
        1 => (0u8..2, off.clone()).prop_map(|(file, size)| Change::Truncate { file, size }),
        1 => (0u8..2, off, 1u32..(HASH_BLOCK_BYTES as u32))
            .prop_map(|(file, off, len)| Change::ZeroRange { file, off, len }),
        1 => (0u8..2).prop_map(|file| Change::Fsync { file }),
    ]
}

fn change() -> impl Strategy<Value = Change> {
    let off = 0u32..(4 * HASH_BLOCK_BYTES as u32);
    prop_oneof![
        4 => (0u8..2, off.clone(), 1u32..(HASH_BLOCK_BYTES as u32 + 100), any::<u8>())
            .prop_map(|(file, off, len, byte)| Change::Write { file, off, len, byte }),
        1 => (0u8..2, off.clone()).prop_map(|(file, size)| Change::Truncate { file, size }),
        1 => (0u8..2, off, 1u32..(2 * HASH_BLOCK_BYTES as u32))
            .prop_map(|(file, off, len)| Change::ZeroRange { file, off, len }),
        3 => (0u8..2).prop_map(|file| Change::Fsync { file }),
    ]
}

/// The strace log of the changes (fds 3 and 4 for files `a` and `b`,
/// created and their directory fsynced first).
fn log(changes: &[Change]) -> String {
    let mut log = String::new();
    for (fd, name) in [(3, "\\x61"), (4, "\\x62")] {
        writeln!(
            log,
            "1 openat(AT_FDCWD, \"{name}\", O_RDWR|O_CREAT, 0644) = {fd}"
        )
        .unwrap();
    }
    // The names made durable: the builder's base can then move past them.
    log.push_str("1 openat(AT_FDCWD, \"\\x2e\", O_RDONLY|O_DIRECTORY) = 5\n1 fsync(5) = 0\n");
    for c in changes {
        match *c {
            Change::Write {
                file,
                off,
                len,
                byte,
            } => {
                let data = format!("\\x{byte:02x}").repeat(len as usize);
                let fd = 3 + file;
                writeln!(log, "1 pwrite64({fd}, \"{data}\", {len}, {off}) = {len}").unwrap();
            }
            Change::Truncate { file, size } => {
                writeln!(log, "1 ftruncate({}, {size}) = 0", 3 + file).unwrap();
            }
            Change::ZeroRange { file, off, len } => {
                let fd = 3 + file;
                writeln!(
                    log,
                    "1 fallocate({fd}, FALLOC_FL_ZERO_RANGE, {off}, {len}) = 0"
                )
                .unwrap();
            }
            Change::Fsync { file } => writeln!(log, "1 fsync({}) = 0", 3 + file).unwrap(),
        }
    }
    log
}

/// The trace of the changes over files `a` and `b` that held `sizes`
/// bytes before the workload (an initial tree: durable, and no op on them
/// yet).
fn trace_of(changes: &[Change], sizes: [u32; 2]) -> Trace {
    let mut tree = Tree::default();
    for (i, (name, size)) in ["a", "b"].into_iter().zip(sizes).enumerate() {
        let bytes = (0..size).map(|j| (j % 251) as u8 + 1).collect();
        tree.nodes.push(Node::File(bytes));
        tree.entries.push(Entry {
            dir: 0,
            name: name.into(),
            ino: i as u32 + 1,
        });
    }
    let replayed = replay(log(changes).as_bytes(), &tree, b"/d").unwrap();
    Trace::new(&tree, replayed, TraceMeta::default())
}

fn initial_size() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0u32), 1u32..(3 * HASH_BLOCK_BYTES as u32)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn on_random_changes_across_hash_blocks(
        changes in prop::collection::vec(change(), 4..16),
        sizes in [initial_size(), initial_size()],
    ) {
        agree(&trace_of(&changes, sizes), &format!("{changes:?} over {sizes:?}"));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn on_many_pending_changes(
        changes in prop::collection::vec(pending_change(), 12..28),
        sizes in [initial_size(), initial_size()],
    ) {
        agree(&trace_of(&changes, sizes), &format!("{changes:?} over {sizes:?}"));
    }
}

/// Changes to files of many blocks, each touching a few of them: a built
/// state's damaged files are hashed by the blocks their pending ops touch,
/// the others taken from the whole state's shares.
fn sparse_change() -> impl Strategy<Value = Change> {
    let off = 0u32..(40 * HASH_BLOCK_BYTES as u32);
    prop_oneof![
        6 => (0u8..2, off.clone(), 1u32..(HASH_BLOCK_BYTES as u32 + 100), any::<u8>())
            .prop_map(|(file, off, len, byte)| Change::Write { file, off, len, byte }),
        1 => (0u8..2, off.clone()).prop_map(|(file, size)| Change::Truncate { file, size }),
        1 => (0u8..2, off, 1u32..(2 * HASH_BLOCK_BYTES as u32))
            .prop_map(|(file, off, len)| Change::ZeroRange { file, off, len }),
        2 => (0u8..2).prop_map(|file| Change::Fsync { file }),
    ]
}

fn big_size() -> impl Strategy<Value = u32> {
    (20 * HASH_BLOCK_BYTES as u32)..(48 * HASH_BLOCK_BYTES as u32)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn on_few_changes_to_files_of_many_blocks(
        changes in prop::collection::vec(sparse_change(), 4..14),
        sizes in [big_size(), big_size()],
    ) {
        agree(&trace_of(&changes, sizes), &format!("{changes:?} over {sizes:?}"));
    }
}

#[test]
fn on_more_pending_writes_over_one_block_than_a_word_has_bits() {
    // 70 writes into the first block of `a`, none synced, then one into
    // its second block: the crash points past 64 pending writes tell
    // their states apart by two words of kept writes.
    let changes: Vec<Change> = (0..70u32)
        .map(|i| Change::Write {
            file: 0,
            off: i * 97 % 8000,
            len: 300,
            byte: i as u8,
        })
        .chain([Change::Write {
            file: 0,
            off: HASH_BLOCK_BYTES as u32 + 5,
            len: 10,
            byte: 0xee,
        }])
        .collect();
    let trace = trace_of_log(log(&changes).as_bytes(), b"/d").unwrap();
    assert!(agree(&trace, "70 writes over one block") > 10_000);
}

#[test]
fn on_a_byte_written_synced_and_written_again() {
    // The case that once found a base keeping a stale block hash: a
    // one-byte write to `b`, its fsync, the same byte written anew and
    // synced again, over files empty and not.
    let changes = [
        Change::Write {
            file: 1,
            off: 0,
            len: 1,
            byte: 0,
        },
        Change::Fsync { file: 1 },
        Change::Write {
            file: 1,
            off: 0,
            len: 1,
            byte: 1,
        },
        Change::Fsync { file: 1 },
    ];
    for sizes in [[0, 0], [0, 1], [HASH_BLOCK_BYTES as u32 + 1; 2]] {
        agree(&trace_of(&changes, sizes), &format!("over {sizes:?}"));
    }
}
