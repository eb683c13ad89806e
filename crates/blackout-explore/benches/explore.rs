//! Engine speed without a checker: enumerate the crash states of a trace,
//! build each one and hash it for deduplication (`dedup::distinct_states`), under each
//! model. The trace comes from a generated log shaped like a small store: a
//! log file appended to and fdatasynced every few records, and a snapshot
//! saved by temp file + fsync + rename + directory fsync, with an ack line
//! after each record.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use blackout_explore::dedup::distinct_states;
use blackout_explore::enumerate::ExploreConfig;
use blackout_explore::model::Model;
use blackout_explore::state::SECTOR_BYTES_DEFAULT;
use blackout_oplog::promises::Outputs;
use blackout_oplog::trace::{Trace, TraceMeta};
use blackout_oplog::tree::Tree;
use blackout_record::replay::replay;

const DIR: &str = "/tmp/blackout-bench/dir";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("\\x{b:02x}")).collect()
}

/// A log with `records` appended records.
fn generate(records: usize) -> Vec<u8> {
    let dir = hex(DIR.as_bytes());
    let mut log = format!(
        "1 openat(AT_FDCWD<{dir}>, \"{}\", O_WRONLY|O_CREAT|O_APPEND, 0644) = 3\n",
        hex(b"log")
    );
    let rec: Vec<u8> = (0..200u32).map(|i| b'a' + (i % 26) as u8).collect();
    for i in 0..records {
        log.push_str(&format!("1 write(3, \"{}\", 200) = 200\n", hex(&rec)));
        if i % 4 == 3 {
            log.push_str("1 fdatasync(3) = 0\n");
        }
        log.push_str(&format!(
            "1 write(1, \"{}\", 4) = 4\n",
            hex(format!("{:03}\n", i % 1000).as_bytes())
        ));
        if i % 16 == 15 {
            log.push_str(&format!(
                "1 openat(AT_FDCWD<{dir}>, \"{}\", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 4\n\
                 1 write(4, \"{}\", 200) = 200\n\
                 1 fsync(4) = 0\n\
                 1 close(4) = 0\n\
                 1 rename(\"{}\", \"{}\") = 0\n\
                 1 openat(AT_FDCWD<{dir}>, \"{}\", O_RDONLY|O_DIRECTORY) = 4\n\
                 1 fsync(4) = 0\n\
                 1 close(4) = 0\n",
                hex(b"snap.tmp"),
                hex(&rec),
                hex(b"snap.tmp"),
                hex(b"snap"),
                hex(b"."),
            ));
        }
    }
    log.into_bytes()
}

fn bench(c: &mut Criterion) {
    let tree = Tree::default();
    let replayed = replay(&generate(256), &tree, DIR.as_bytes()).expect("generated log replays");
    let trace = Trace::new(
        &tree,
        replayed,
        TraceMeta {
            dir: DIR.as_bytes().to_vec(),
            ..TraceMeta::default()
        },
    );
    let outputs = Outputs::new(&trace, None);
    let cfg = ExploreConfig::default();
    let mut g = c.benchmark_group("explore");
    g.sample_size(10);
    for model in [Model::Process, Model::Ordered, Model::Posix] {
        let e = distinct_states(&trace, &outputs, &[model], &cfg, SECTOR_BYTES_DEFAULT).unwrap();
        let states = e.models[0].states;
        println!(
            "{}: {} ops, {} states, {} distinct",
            model.name(),
            trace.ops.len(),
            states,
            e.distinct.len()
        );
        g.throughput(Throughput::Elements(states as u64));
        g.bench_function(format!("build_and_hash_{}", model.name()), |b| {
            b.iter(|| distinct_states(&trace, &outputs, &[model], &cfg, SECTOR_BYTES_DEFAULT))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
