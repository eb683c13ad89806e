//! Device sessions on a real ext4 over a real loop device. These need
//! root, /dev/fuse and a free loop device; where one is missing they fail
//! with the one line saying which (CI has them all).

use std::fs;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Command;

use blackout_block::image::Replay;
use blackout_block::log::RecordKind;
use blackout_block::session::{DeviceSession, FsKind, SessionConfig};

/// A directory for the test's sessions and images, where the backend puts
/// its scratch by default (memory: reading a sparse image's holes on a
/// disk file system can cost seconds).
fn scratch_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(blackout_sys::scratch::default_scratch_parent()).unwrap()
}

fn ext4(scratch: &Path) -> SessionConfig {
    let mut config = SessionConfig::new(FsKind::Ext4);
    config.size = 64 << 20;
    config.scratch_parent = scratch.to_path_buf();
    config
}

fn start(config: &SessionConfig) -> DeviceSession {
    DeviceSession::start(config).unwrap_or_else(|e| panic!("{e}"))
}

/// Writes `name` on the session's file system and fsyncs it.
fn write_and_fsync(session: &DeviceSession, name: &str, data: &[u8]) {
    let mut f = fs::File::create(session.mount_path().join(name)).unwrap();
    f.write_all(data).unwrap();
    f.sync_all().unwrap();
}

fn labels(session: &DeviceSession, from: usize) -> Vec<&'static str> {
    let log = session.log();
    log.records[from..].iter().map(|r| r.kind.label()).collect()
}

#[test]
fn an_fsynced_file_shows_writes_then_a_flush_after_the_base() {
    let scratch = scratch_dir();
    let session = start(&ext4(scratch.path()));
    let base = session.base();
    assert!(base > 0, "mkfs and mount wrote nothing?");
    // mkfs.ext4 discards the device first: zeroed ranges.
    assert!(
        labels(&session, 0)[..base].contains(&"zero"),
        "no discard from mkfs"
    );
    let log = session.log();
    assert!(
        log.records[..base]
            .iter()
            .any(|r| r.kind == RecordKind::Flush),
        "no flush before the base"
    );
    write_and_fsync(&session, "doc.txt", &[b'x'; 10_000]);
    let after = labels(&session, base);
    let first_write = after.iter().position(|l| *l == "write").expect("no write");
    let flush = after.iter().rposition(|l| *l == "flush").expect("no flush");
    assert!(first_write < flush, "{after:?}");
    // The file's data (10,000 x) reached the device before the last flush.
    let log = session.log();
    let data_flushed = log.records[base..base + flush]
        .iter()
        .any(|r| matches!(r.kind, RecordKind::Write { len, .. } if len >= 10_000));
    assert!(data_flushed, "{after:?}");
    assert!(log.records.windows(2).all(|w| w[0].nanos <= w[1].nanos));
    session.close().unwrap();
}

#[test]
fn a_mark_lands_between_the_records_it_was_placed_between() {
    let scratch = scratch_dir();
    let session = start(&ext4(scratch.path()));
    let start_a = session.position();
    write_and_fsync(&session, "a", b"first");
    let before = session.position();
    let after_mark = session.mark("promise: a saved");
    assert_eq!(after_mark, before + 1);
    write_and_fsync(&session, "b", b"second");
    let log = session.log();
    assert_eq!(
        log.records[before].kind,
        RecordKind::Mark {
            name: "promise: a saved".into()
        }
    );
    // Before the mark: a's writes and the flush its fsync waited for.
    let earlier = labels(&session, start_a)[..before - start_a].to_vec();
    let flush = earlier.iter().rposition(|l| *l == "flush");
    assert!(
        flush.is_some_and(|f| earlier[..f].contains(&"write")),
        "{earlier:?}"
    );
    let later = labels(&session, after_mark);
    assert!(
        later.contains(&"write") && later.contains(&"flush"),
        "{later:?}"
    );
    session.close().unwrap();
}

#[test]
fn replaying_the_whole_log_gives_the_image_byte_for_byte() {
    let scratch = scratch_dir();
    let mut session = start(&ext4(scratch.path()));
    for i in 0..20 {
        write_and_fsync(&session, &format!("f{i}"), &vec![i as u8; 5000 * i]);
    }
    fs::remove_file(session.mount_path().join("f3")).unwrap();
    // Discards arrive as zeroed ranges (FALLOCATE punch-hole).
    session.sync().unwrap();
    let before_trim = session.position();
    let trim = Command::new("fstrim")
        .arg(session.mount_path())
        .output()
        .unwrap();
    assert!(
        trim.status.success(),
        "{}",
        String::from_utf8_lossy(&trim.stderr)
    );
    assert!(
        labels(&session, before_trim).contains(&"zero"),
        "fstrim logged no zeroed range"
    );
    session.unmount().unwrap();
    let out = scratch.path().join("replayed.img");
    let started = std::time::Instant::now();
    session.replay_to(session.position(), &out).unwrap();
    let took = started.elapsed();
    assert!(
        same_contents(&out, &session.image_path()),
        "the replayed image differs from the live one"
    );
    eprintln!(
        "{} records replayed from the base in {took:?}",
        session.position() - session.base()
    );
    session.close().unwrap();
}

#[test]
fn the_base_mounted_from_a_copy_does_not_have_the_file() {
    let scratch = scratch_dir();
    let session = start(&ext4(scratch.path()));
    write_and_fsync(&session, "doc.txt", b"saved\n");
    let end = session.position();
    for (position, present) in [(session.base(), false), (end, true)] {
        let image = scratch.path().join(format!("at{position}.img"));
        session.replay_to(position, &image).unwrap();
        let mnt = scratch.path().join(format!("mnt{position}"));
        fs::create_dir(&mnt).unwrap();
        mount_loop(&image, &mnt);
        let found = mnt.join("doc.txt").exists();
        let contents = fs::read(mnt.join("doc.txt")).ok();
        umount(&mnt);
        assert_eq!(found, present, "at position {position}");
        if present {
            assert_eq!(contents.as_deref(), Some(&b"saved\n"[..]));
        }
    }
    session.close().unwrap();
}

/// Whether two files hold the same bytes (compared a chunk at a time).
fn same_contents(a: &Path, b: &Path) -> bool {
    let (a, b) = (fs::File::open(a).unwrap(), fs::File::open(b).unwrap());
    let len = a.metadata().unwrap().len();
    if len != b.metadata().unwrap().len() {
        return false;
    }
    let (mut x, mut y) = (vec![0; 1 << 20], vec![0; 1 << 20]);
    let mut at = 0;
    while at < len {
        let n = (len - at).min(1 << 20) as usize;
        a.read_exact_at(&mut x[..n], at).unwrap();
        b.read_exact_at(&mut y[..n], at).unwrap();
        if x[..n] != y[..n] {
            return false;
        }
        at += n as u64;
    }
    true
}

fn mount_loop(image: &Path, mnt: &Path) {
    mount_copy(FsKind::Ext4, image, mnt);
}

/// Mounts a copy of an image (xfs refuses a second copy of a mounted file
/// system's UUID without `nouuid`).
fn mount_copy(fs: FsKind, image: &Path, mnt: &Path) {
    let opts = if fs == FsKind::Xfs {
        "loop,nouuid"
    } else {
        "loop"
    };
    let out = Command::new("mount")
        .args(["-t", fs.name(), "-o", opts])
        .arg(image)
        .arg(mnt)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Unmounts, retrying a while when busy: something outside the test (a
/// device probe) can hold a fresh mount for a moment, as the session's
/// own unmount allows for.
fn umount(mnt: &Path) {
    let mut tries = 0;
    let out = loop {
        let out = Command::new("umount").arg(mnt).output().unwrap();
        tries += 1;
        let busy = String::from_utf8_lossy(&out.stderr).contains("busy");
        if out.status.success() || !busy || tries == 50 {
            break out;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// xfs and btrfs: their mkfs must be installed (scripts/test installs them);
/// a missing one fails with the line naming its package.
#[test]
fn xfs_and_btrfs_replay_to_their_image_and_mount_from_a_copy() {
    for fs in [FsKind::Xfs, FsKind::Btrfs] {
        let scratch = scratch_dir();
        let mut config = SessionConfig::new(fs);
        config.size = fs.min_size();
        config.scratch_parent = scratch.path().to_path_buf();
        let mut session = start(&config);
        write_and_fsync(&session, "doc.txt", b"saved\n");
        let end = session.position();
        session.unmount().unwrap();
        let whole = scratch.path().join("whole.img");
        session.replay_to(session.position(), &whole).unwrap();
        assert!(
            same_contents(&whole, &session.image_path()),
            "{fs}: the replayed image differs from the live one"
        );
        for (position, present) in [(session.base(), false), (end, true)] {
            let image = scratch.path().join(format!("at{position}.img"));
            session.replay_to(position, &image).unwrap();
            let mnt = scratch.path().join(format!("mnt{position}"));
            fs::create_dir(&mnt).unwrap();
            mount_copy(fs, &image, &mnt);
            let contents = fs::read(mnt.join("doc.txt")).ok();
            umount(&mnt);
            let expected = present.then_some(&b"saved\n"[..]);
            assert_eq!(contents.as_deref(), expected, "{fs} at position {position}");
        }
        session.close().unwrap();
    }
}

/// Every crash point of a real ext4 workload mounts (the journal recovers)
/// and holds every file whose mark came before it, whole.
#[test]
fn every_crash_point_mounts_and_keeps_what_was_promised() {
    let scratch = scratch_dir();
    let session = start(&ext4(scratch.path()));
    let names: Vec<String> = (0..4).map(|i| format!("f{i}")).collect();
    for (i, name) in names.iter().enumerate() {
        write_and_fsync(&session, name, &vec![b'a' + i as u8; 3000 * (i + 1)]);
        let dir = fs::File::open(session.mount_path()).unwrap();
        dir.sync_all().unwrap();
        session.mark(name);
    }
    let points = session.crash_points();
    assert!(
        points.iter().filter(|p| p.marks > 0).count() >= 4,
        "{points:?}"
    );
    let mut mounted = 0;
    for p in points.iter().filter(|p| !p.same_image_as_previous) {
        let image = scratch.path().join("state.img");
        session.replay_to(p.position, &image).unwrap();
        let mnt = scratch.path().join("state");
        fs::create_dir(&mnt).unwrap();
        mount_loop(&image, &mnt);
        let seen: Vec<Option<Vec<u8>>> = names.iter().map(|n| fs::read(mnt.join(n)).ok()).collect();
        umount(&mnt);
        fs::remove_dir(&mnt).unwrap();
        fs::remove_file(&image).unwrap();
        for (i, got) in seen.iter().enumerate().take(p.marks) {
            let want = vec![b'a' + i as u8; 3000 * (i + 1)];
            assert_eq!(
                got.as_ref(),
                Some(&want),
                "f{i} at {} ({})",
                p.position,
                p.barrier
            );
        }
        mounted += 1;
    }
    eprintln!("{mounted} crash points mounted of {}", points.len());
    session.close().unwrap();
}

/// A finished recording replays the same images the live session did,
/// with no device left.
#[test]
fn a_finished_recording_replays_what_the_session_did() {
    let scratch = scratch_dir();
    let mut session = start(&ext4(scratch.path()));
    write_and_fsync(&session, "doc.txt", b"saved\n");
    session.mark("saved");
    session.unmount().unwrap();
    let points = session.crash_points();
    let end = session.position();
    let live = scratch.path().join("live.img");
    session.replay_to(end, &live).unwrap();
    let recording = session.finish().unwrap();
    assert_eq!(recording.crash_points(), points);
    assert_eq!(recording.log().records.len(), end);
    let replayed = scratch.path().join("replayed.img");
    recording.replay_to(end, &replayed).unwrap();
    assert!(same_contents(&live, &replayed));
    let mnt = scratch.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    mount_loop(&replayed, &mnt);
    let contents = fs::read(mnt.join("doc.txt")).ok();
    umount(&mnt);
    assert_eq!(contents.as_deref(), Some(&b"saved\n"[..]));
}

/// The two replay paths — the cursor carried forward from the base, and
/// every state rebuilt from the first write — give byte-identical images
/// at every crash point.
#[test]
fn the_fast_and_the_paranoid_replay_agree_at_every_crash_point() {
    let scratch = scratch_dir();
    let session = start(&ext4(scratch.path()));
    for i in 0..6 {
        write_and_fsync(&session, &format!("f{i}"), &vec![b'k'; 70_000 * i]);
        session.mark(&format!("f{i}"));
    }
    fs::remove_file(session.mount_path().join("f2")).unwrap();
    session.sync().unwrap();
    let recording = session.finish().unwrap();
    let points = recording.crash_points();
    let mut cursor = recording.cursor(&scratch.path().join("work.img")).unwrap();
    let paranoid = Replay {
        base: None,
        ..recording.replay()
    };
    for p in &points {
        cursor.advance(p.position).unwrap();
        let (fast, slow) = (scratch.path().join("fast"), scratch.path().join("slow"));
        cursor.write_image(&fast).unwrap();
        paranoid.write_image(p.position, &slow).unwrap();
        assert!(
            same_contents(&fast, &slow),
            "the paths differ at {} ({})",
            p.position,
            p.barrier
        );
        fs::remove_file(fast).unwrap();
        fs::remove_file(slow).unwrap();
    }
    assert!(points.len() > 12, "{}", points.len());
}

/// A workload's standard output on the daemon's `stdout` file: each line is
/// a mark exactly where it was printed — after the flush an fsync before it
/// waited for, before the writes after it.
#[test]
fn printed_lines_are_marks_where_they_were_printed() {
    let scratch = scratch_dir();
    let session = start(&ext4(scratch.path()));
    let stdout = fs::OpenOptions::new()
        .write(true)
        .open(session.output_path())
        .unwrap();
    let from = session.position();
    let status = Command::new("sh")
        .args(["-c", "echo one; echo data > f; sync f; echo two; echo more > g; sync g; printf 'three\\npart'; sync f"])
        .current_dir(session.mount_path())
        .stdout(stdout)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(session.output(), b"one\ntwo\nthree\npart");
    let log = session.log();
    let mark = |name: &str| {
        log.records
            .iter()
            .position(|r| r.kind == RecordKind::Mark { name: name.into() })
            .unwrap_or_else(|| panic!("no mark {name:?}"))
    };
    let (one, two, three) = (mark("one"), mark("two"), mark("three"));
    assert!(from <= one && one < two && two < three);
    let between = |a: usize, b: usize| -> Vec<&str> {
        log.records[a + 1..b]
            .iter()
            .map(|r| r.kind.label())
            .collect()
    };
    // f's data and the flush `sync f` waited for come between one and two,
    // g's between two and three; "part" has no newline: no mark.
    for (a, b) in [(one, two), (two, three)] {
        let kinds = between(a, b);
        let flush = kinds.iter().rposition(|k| *k == "flush");
        assert!(
            flush.is_some_and(|f| kinds[..f].contains(&"write")),
            "{kinds:?}"
        );
    }
    assert!(!log.records.iter().any(|r| r.kind
        == RecordKind::Mark {
            name: "part".into()
        }));
    session.close().unwrap();
}
