//! Parse + replay throughput on a large generated log shaped like a real
//! write-heavy recording: appends and overwrites with `-xx` data, fsyncs,
//! renames, reads of files outside the directory (data to skip), and two
//! threads whose calls interleave as `<unfinished ...>` / `<... resumed>`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use blackout_oplog::tree::Tree;
use blackout_record::replay::replay;

const DIR: &str = "/tmp/blackout-bench/dir";

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 4);
    for b in bytes {
        s.push_str(&format!("\\x{b:02x}"));
    }
    s
}

/// A log of about `target` bytes.
fn generate(target: usize) -> Vec<u8> {
    let mut log = String::with_capacity(target + 65536);
    let dir_ann = hex(DIR.as_bytes());
    let lib = hex(b"/usr/lib/x86_64-linux-gnu/libc.so.6");
    let chunk: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
    let small: Vec<u8> = (0..100u32).map(|i| b'a' + (i % 26) as u8).collect();
    let data4k = hex(&chunk);
    let data100 = hex(&small);
    log.push_str("100 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD, exit_signal=0} => {parent_tid=[101]}, 88) = 101\n");
    let mut i = 0u64;
    while log.len() < target {
        let name = hex(format!("f{}", i % 16).as_bytes());
        let tmp = hex(format!("f{}.tmp", i % 16).as_bytes());
        log.push_str(&format!(
            "100 openat(AT_FDCWD<{dir_ann}>, \"{lib}\", O_RDONLY|O_CLOEXEC) = 3<{lib}>\n\
             100 read(3<{lib}>, \"{data4k}\", 4096) = 4096\n\
             100 close(3<{lib}>) = 0\n\
             100 openat(AT_FDCWD<{dir_ann}>, \"{tmp}\", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 4\n\
             100 write(4, \"{data4k}\", 4096) = 4096\n\
             100 pwrite64(4, \"{data100}\", 100, 8192) = 100\n\
             100 write(4, \"{data4k}\" <unfinished ...>\n\
             101 openat(AT_FDCWD<{dir_ann}>, \"{name}.log\", O_WRONLY|O_CREAT|O_APPEND, 0644) = 5\n\
             101 write(5, \"{data100}\", 100) = 100\n\
             100 <... write resumed>, 4096) = 4096\n\
             101 fdatasync(5 <unfinished ...>\n\
             100 fsync(4) = 0\n\
             101 <... fdatasync resumed>) = 0\n\
             101 close(5) = 0\n\
             100 close(4) = 0\n\
             100 rename(\"{tmp}\", \"{name}\") = 0\n\
             100 write(1, \"{}\", 6) = 6\n",
            hex(b"saved\n"),
        ));
        i += 1;
    }
    log.into_bytes()
}

fn bench(c: &mut Criterion) {
    let log = generate(32 << 20);
    let tree = Tree::default();
    // Sanity: the generated log replays.
    let ops = replay(&log, &tree, DIR.as_bytes())
        .expect("generated log replays")
        .ops
        .len();
    assert!(ops > 0);
    let mut g = c.benchmark_group("replay");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(log.len() as u64));
    g.bench_function("parse_and_replay_32MiB", |b| {
        b.iter(|| replay(&log, &tree, DIR.as_bytes()).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
