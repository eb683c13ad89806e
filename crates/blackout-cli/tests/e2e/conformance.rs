//! The live file system against public test suites nobody here wrote, in
//! the slower suite: pjdfstest (POSIX conformance) on a mount and on the
//! plain directory beside it in one run (the mount may fail no test the
//! directory passes), fsx (a data exerciser, mmap included) on a mount, and
//! fsx with its own fsyncs crashed at seeded moments, the recovered file
//! compared with what fsx had synced. Both tools are built from their
//! sources on crates.io (`cargo install`) into the target directory.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::Scratch;
use crate::live::Live;

/// The binary `bin` of crate `krate` at `version`, built from crates.io
/// into the target directory the first time.
fn installed(krate: &str, version: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("conformance");
    let bin = root.join("bin").join(krate);
    if !bin.exists() {
        let out = Command::new(env!("CARGO"))
            .args([
                "install",
                "--locked",
                "--quiet",
                "--version",
                version,
                "--root",
            ])
            .arg(&root)
            .arg(krate)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "cargo install {krate}@{version}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    bin
}

/// pjdfstest's configuration for Linux on ext4 (its users: Debian's).
const PJDFSTEST_CONF: &str = "\
[features]
posix_fallocate = {}
utime_now = {}
utimensat = {}
rename_ctime = {}

[settings]
naptime = 0.01
allow_remount = false

[dummy_auth]
entries = [
  [\"nobody\", \"nogroup\"],
  [\"daemon\", \"daemon\"],
]
";

/// pjdfstest run in `dir`: the names of the tests that failed, and its
/// summary line.
fn pjdfstest(s: &Scratch, dir: &Path) -> (BTreeSet<String>, String) {
    let bin = installed("pjdfstest", "0.2.2");
    let conf = s.path("pjdfstest.toml");
    fs::write(&conf, PJDFSTEST_CONF).unwrap();
    // A second file system, for the tests of a rename across two.
    let other = tempfile::tempdir_in("/dev/shm").unwrap();
    let out = Command::new(bin)
        .arg("-c")
        .arg(&conf)
        .arg("-p")
        .arg(dir)
        .arg("-s")
        .arg(other.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let failed = text
        .lines()
        .filter(|l| l.trim_end().ends_with("FAILED"))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    let summary = text
        .lines()
        .find(|l| l.starts_with("Summary:"))
        .unwrap_or_else(|| panic!("pjdfstest gave no summary: {text}"))
        .to_string();
    (failed, summary)
}

#[test]
#[ignore = "slower suite: cargo test -p blackout-cli --test e2e -- --ignored (builds pjdfstest from crates.io)"]
fn slower_pjdfstest_fails_nothing_on_a_mount_that_passes_on_the_directory_under_it() {
    let live = Live::mount(&[]);
    let plain = live.s.path("plain");
    fs::create_dir(&plain).unwrap();
    let (plain_failed, plain_summary) = pjdfstest(&live.s, &plain);
    let (mount_failed, mount_summary) = pjdfstest(&live.s, &live.m);
    eprintln!("plain directory: {plain_summary}\nlive mount:      {mount_summary}");
    let worse: Vec<&String> = mount_failed.difference(&plain_failed).collect();
    assert!(
        worse.is_empty(),
        "the mount fails what the plain directory passes: {worse:?}\n{mount_summary}"
    );
    live.unmount();
}

/// fsx's configuration: every operation the live file system serves,
/// `weights` added.
fn fsx_conf(weights: &str, extra: &str) -> String {
    format!(
        "flen = 262144\n{extra}\n[weights]\nclose_open = 1\nread = 10\nwrite = 10\n\
         mapread = 10\nmapwrite = 10\ntruncate = 2\nposix_fallocate = 1\n\
         punch_hole = 1\ncopy_file_range = 1\nsendfile = 1\n{weights}"
    )
}

/// Runs fsx on `file` for `ops` operations with `seed`; its output.
fn fsx(conf: &Path, file: &Path, seed: u64, ops: u64) -> std::process::Output {
    Command::new(installed("fsx", "0.3.2"))
        .arg("-f")
        .arg(conf)
        .args(["-S", &seed.to_string(), "-N", &ops.to_string()])
        .arg("-P")
        .arg(file.parent().unwrap())
        .arg(file)
        .output()
        .unwrap()
}

#[test]
#[ignore = "slower suite: cargo test -p blackout-cli --test e2e -- --ignored (builds fsx from crates.io)"]
fn slower_fsx_runs_three_times_50000_operations_with_mmap_on_a_mount() {
    let live = Live::mount(&[]);
    let conf = live.s.path("fsx.toml");
    let weights = "invalidate = 1\nfsync = 1\nfdatasync = 1\n";
    fs::write(&conf, fsx_conf(weights, "")).unwrap();
    for seed in 1..=3 {
        let out = fsx(&conf, &live.m.join("fsx.data"), seed, 50_000);
        assert!(
            out.status.success()
                && String::from_utf8_lossy(&out.stdout).contains("All operations completed A-OK!"),
            "fsx seed {seed}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    live.unmount();
}

/// The steps at which an fsx log (`-v`) says it fsynced or fdatasynced.
fn sync_steps(log: &str) -> Vec<u64> {
    log.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace().rev();
            let what = w.next()?;
            let step = w.next()?.parse().ok()?;
            matches!(what, "fsync" | "fdatasync").then_some(step)
        })
        .collect()
}

#[test]
#[ignore = "slower suite: cargo test -p blackout-cli --test e2e -- --ignored (builds fsx from crates.io)"]
fn slower_fsx_crashed_at_seeded_moments_recovers_exactly_what_it_synced() {
    let live = Live::mount(&[("fsx.data", b"")]);
    let conf = live.s.path("fsx.toml");
    // No msync after a mapped write (it would sync where fsx logs nothing);
    // fsyncs and fdatasyncs often.
    fs::write(
        &conf,
        fsx_conf("fsync = 3\nfdatasync = 3\n", "nomsyncafterwrite = true"),
    )
    .unwrap();
    let replay = live.s.path("replay");
    fs::create_dir(&replay).unwrap();
    let mut before = Vec::new();
    for seed in 1..=3u64 {
        let log = live.s.path(&format!("fsx-{seed}.log"));
        let mut running = Command::new(installed("fsx", "0.3.2"))
            .arg("-f")
            .arg(&conf)
            .args(["-v", "-S", &seed.to_string(), "-N", "100000000"])
            .arg("-P")
            .arg(live.s.path("replay"))
            .arg(live.m.join("fsx.data"))
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).unwrap())
            .process_group(0)
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(400 + 300 * seed));
        let pgid = running.id().to_string();
        let report = live.crash(&["--pgid", &pgid]);
        let _ = running.wait();
        let recovered = fs::read(live.b.join("fsx.data")).unwrap();
        // The last sync fsx logged may not have finished when it was
        // killed: the disk holds what fsx had written before its last sync
        // or the one before; nothing after it.
        let steps = sync_steps(&fs::read_to_string(&log).unwrap());
        assert!(
            steps.len() >= 2,
            "seed {seed}: too few syncs before the crash"
        );
        let candidates: Vec<(u64, Vec<u8>)> = steps[steps.len() - 2..]
            .iter()
            .map(|&k| {
                let file = replay.join(format!("{seed}-{k}"));
                let out = fsx(&conf, &file, seed, k);
                assert!(out.status.success(), "fsx -N {k}");
                (k, fs::read(&file).unwrap())
            })
            .collect();
        let held = candidates.iter().find(|(_, c)| *c == recovered);
        assert!(
            held.is_some(),
            "seed {seed}: the recovered file ({} bytes) is what fsx had at none of its last syncs (steps {:?}); the crash: {report}",
            recovered.len(),
            &steps[steps.len() - 2..]
        );
        eprintln!(
            "seed {seed}: {} syncs logged; the file recovered is fsx's at step {} ({} bytes)",
            steps.len(),
            held.unwrap().0,
            recovered.len()
        );
        assert_ne!(recovered, before, "seed {seed}: nothing was made durable");
        before = recovered;
    }
    live.unmount();
}
