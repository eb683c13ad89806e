//! Nothing outlives a device session: no mount under its scratch
//! directory, no loop device backed by a file in it, no daemon thread, no
//! scratch directory — after success, after a failing workload, and after
//! a start that fails half-way. One test, so no other session of this
//! binary runs meanwhile and "no daemon thread" means none at all.

use std::fs;
use std::path::Path;
use std::process::Command;

use blackout_block::session::{DeviceSession, FsKind, SessionConfig, SessionError};

/// A directory for the test's sessions and images, where the backend puts
/// its scratch by default (memory: reading a sparse image's holes on a
/// disk file system can cost seconds).
fn scratch_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(blackout_sys::scratch::default_scratch_parent()).unwrap()
}

fn config(parent: &Path) -> SessionConfig {
    let mut config = SessionConfig::new(FsKind::Ext4);
    config.size = 32 << 20;
    config.scratch_parent = parent.to_path_buf();
    config
}

/// What is left of sessions made under `parent`, as lines (empty: nothing).
fn leftovers(parent: &Path) -> Vec<String> {
    let parent = parent.to_string_lossy().into_owned();
    let mut left = Vec::new();
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap();
    for line in mountinfo.lines() {
        if line
            .split(' ')
            .nth(4)
            .is_some_and(|m| m.starts_with(&parent))
        {
            left.push(format!("mount: {line}"));
        }
    }
    let losetup = Command::new("losetup").arg("-a").output().unwrap();
    for line in String::from_utf8_lossy(&losetup.stdout).lines() {
        if line.contains(&parent) {
            left.push(format!("loop device: {line}"));
        }
    }
    for task in fs::read_dir("/proc/self/task").unwrap() {
        let comm = fs::read_to_string(task.unwrap().path().join("comm")).unwrap_or_default();
        if comm.starts_with("bofuse-") {
            left.push(format!("daemon thread: {}", comm.trim()));
        }
    }
    for e in fs::read_dir(&parent).unwrap() {
        left.push(format!("file: {}", e.unwrap().path().display()));
    }
    left
}

/// A workload that writes, then fails: the caller gives up on the session
/// by returning early, dropping it.
fn failing_workload(session: &DeviceSession) -> Result<(), String> {
    let status = Command::new("sh")
        .args(["-c", "echo partial > f && sync f && exit 3"])
        .current_dir(session.mount_path())
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("workload failed: {status}"));
    }
    Ok(())
}

#[test]
fn nothing_is_left_after_success_failure_or_a_failed_start() {
    let parent = scratch_dir();
    let parent = parent.path();

    // Success, closed explicitly.
    let session = DeviceSession::start(&config(parent)).unwrap_or_else(|e| panic!("{e}"));
    assert!(session.daemon_thread().is_some());
    assert!(!leftovers(parent).is_empty(), "the probe sees nothing live");
    session.close().unwrap();
    assert_eq!(leftovers(parent), Vec::<String>::new(), "after close");

    // Finished: the device is gone, the recording's directory stays until
    // the recording is dropped.
    let session = DeviceSession::start(&config(parent)).unwrap_or_else(|e| panic!("{e}"));
    fs::write(session.mount_path().join("f"), b"kept").unwrap();
    let recording = session.finish().unwrap();
    let left = leftovers(parent);
    assert_eq!(left.len(), 1, "after finish: {left:?}");
    assert!(left[0].starts_with("file: "), "after finish: {left:?}");
    let mut kept: Vec<String> = fs::read_dir(recording.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    kept.sort();
    // With the owner mark, which lets a later run remove the directory
    // if this process is killed.
    assert_eq!(kept, [".blackout-owner", "base.img", "writes.data"]);
    drop(recording);
    assert_eq!(
        leftovers(parent),
        Vec::<String>::new(),
        "after the recording"
    );

    // The workload fails and the session is dropped on the error path.
    let session = DeviceSession::start(&config(parent)).unwrap_or_else(|e| panic!("{e}"));
    let err = failing_workload(&session).unwrap_err();
    assert!(err.contains("exit status: 3"), "{err}");
    drop(session);
    assert_eq!(
        leftovers(parent),
        Vec::<String>::new(),
        "after a failed workload"
    );

    // mkfs fails after the daemon and loop device are up.
    let mut bad = config(parent);
    bad.mkfs_opts = vec!["-O".into(), "no_such_feature".into()];
    let err = DeviceSession::start(&bad).unwrap_err();
    assert!(
        matches!(&err, SessionError::Step { step, .. } if step.starts_with("mkfs.ext4 /dev/loop")),
        "{err}"
    );
    assert_eq!(
        leftovers(parent),
        Vec::<String>::new(),
        "after a failed mkfs"
    );

    // mount fails (an option ext4 does not know).
    let mut bad = config(parent);
    bad.mount_opts = vec!["no_such_option".into()];
    let err = DeviceSession::start(&bad).unwrap_err();
    assert!(
        matches!(&err, SessionError::Step { step, .. } if step == "mount"),
        "{err}"
    );
    assert_eq!(
        leftovers(parent),
        Vec::<String>::new(),
        "after a failed mount"
    );

    // Too small: refused before anything is made.
    let mut small = config(parent);
    small.size = 1 << 20;
    let err = DeviceSession::start(&small).unwrap_err();
    assert_eq!(
        err.to_string(),
        "ext4 needs a device of at least 8 MiB, not 1 MiB"
    );
    assert_eq!(leftovers(parent), Vec::<String>::new(), "after a refusal");
}
