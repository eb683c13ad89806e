//! Keeping a checker inside its own state: a private mount namespace in
//! which the run's scratch directory holds nothing but the checker's own
//! slot.
//!
//! Checkers run in parallel, each in a slot under one scratch directory
//! (`scratch/w0`, `scratch/w1`, ...). Without isolation, `cd ../..` reaches a
//! sibling's state, and a checker that cleans up too eagerly can remove the
//! state another checker is judging. With it, each checking worker's thread
//! moves into a mount namespace of its own where an empty, read-only file
//! system covers the scratch directory and only the worker's slot is bound
//! back in: the same paths, the rest of the system unchanged, the siblings
//! unreachable. The checkers the thread starts begin life there, through the
//! same fast spawn as any other command. The rest of the process never sees
//! these mounts, and the namespace ends with the thread.
//!
//! It needs the right to make a mount namespace (root, or `CAP_SYS_ADMIN`);
//! [`available`] says whether this process has it, and callers run without
//! isolation when it does not.

use std::ffi::{CStr, CString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::OnceLock;

use rustix::fs::CWD;
use rustix::mount::{mount, mount_change, mount_remount, move_mount, open_tree};
use rustix::mount::{MountFlags, MountPropagationFlags, MoveMountFlags, OpenTreeFlags};
use rustix::thread::UnshareFlags;

/// Set (to anything but the empty string) in blackout's environment to run
/// checkers without isolation.
pub const NO_ISOLATION_VAR: &str = "BLACKOUT_NO_ISOLATION";

/// Moves the calling thread into a mount namespace of its own in which
/// `scratch` holds only `slot` (which must be directly under it).
///
/// The thread stays there for the rest of its life: call it only on a
/// thread that works in `slot` alone and leaves the rest of `scratch` (its
/// removal above all) to other threads.
pub fn enter(scratch: &Path, slot: &Path) -> io::Result<()> {
    if slot.parent() != Some(scratch) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not directly under {}",
                slot.display(),
                scratch.display()
            ),
        ));
    }
    cover(&c_path(scratch)?, &c_path(slot)?).map_err(|e| {
        io::Error::new(
            io::Error::from(e).kind(),
            format!(
                "cannot isolate {} in a mount namespace: {e}",
                slot.display()
            ),
        )
    })
}

/// In the thread: its own mount namespace (and so its own working
/// directory), a copy of the slot's mount taken, the cover mounted, the copy
/// attached at the slot's path, the cover made read-only.
fn cover(scratch: &CStr, slot: &CStr) -> rustix::io::Result<()> {
    // SAFETY: a mount namespace (and with it the working directory) is not a
    // file-descriptor table: no other thread loses anything it holds.
    unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWNS | UnshareFlags::FS)? };
    // Nothing mounted here may reach the parent's namespace.
    mount_change(
        c"/",
        MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
    )?;
    let copy = open_tree(
        CWD,
        slot,
        OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC,
    )?;
    let plain = MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
    mount(c"blackout", scratch, c"tmpfs", plain, Some(COVER))?;
    rustix::fs::mkdir(slot, rustix::fs::Mode::from_raw_mode(0o700))?;
    move_mount(
        copy,
        c"",
        CWD,
        slot,
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
    )?;
    mount_remount(scratch, plain | MountFlags::RDONLY, COVER)
}

/// The cover: a tiny tmpfs nobody but root could write, made read-only.
const COVER: &CStr = c"size=4k,nr_inodes=8,mode=0555";

/// Whether this process may isolate checkers (and has not been told not to
/// by [`NO_ISOLATION_VAR`]). Found out once, by a thread that makes a mount
/// namespace of its own.
pub fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        if std::env::var_os(NO_ISOLATION_VAR).is_some_and(|v| !v.is_empty()) {
            return false;
        }
        std::thread::spawn(|| {
            // SAFETY: as in `cover`; the thread ends right after.
            unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWNS | UnshareFlags::FS) }
                .is_ok()
        })
        .join()
        .unwrap_or(false)
    })
}

/// A path as a C string (a path with a NUL byte is refused).
fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} holds a NUL byte", path.display()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `script` in `scratch/w0/fs` from a thread isolated in `w0`, and
    /// returns its stdout.
    fn isolated(scratch: &Path, script: &str) -> String {
        let slot = scratch.join("w0");
        let cwd = slot.join("fs");
        let out = std::thread::scope(|s| {
            s.spawn(|| {
                enter(scratch, &slot).unwrap();
                std::process::Command::new("/bin/sh")
                    .args(["-c", script])
                    .current_dir(&cwd)
                    .output()
                    .unwrap()
            })
            .join()
            .unwrap()
        });
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    fn a_sibling_slot_is_unreachable_and_the_own_slot_is_whole() {
        if !available() {
            eprintln!("skipped: no mount namespaces for this process");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let scratch = dir.path();
        for d in ["w0/fs", "w1/fs"] {
            std::fs::create_dir_all(scratch.join(d)).unwrap();
        }
        std::fs::write(scratch.join("w0/acks"), "saved\n").unwrap();
        std::fs::write(scratch.join("w1/fs/doc.txt"), "v1").unwrap();
        let script = format!(
            "ls ../..; cat {}/w0/acks; rm -rf ../../w1 {0}/w1 2>/dev/null; \
             touch ../../x 2>/dev/null || echo cover read-only; echo new > mine",
            scratch.display()
        );
        let out = isolated(scratch, &script);
        assert_eq!(out, "w0\nsaved\ncover read-only\n");
        // The sibling is untouched; the own slot took the write.
        assert_eq!(std::fs::read(scratch.join("w1/fs/doc.txt")).unwrap(), b"v1");
        assert_eq!(std::fs::read(scratch.join("w0/fs/mine")).unwrap(), b"new\n");
        // The rest of the process never had the cover.
        assert!(!scratch.join("x").exists());
        assert!(scratch.join("w1").exists());
    }

    #[test]
    fn a_slot_not_under_the_scratch_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let e = enter(&dir.path().join("a"), &dir.path().join("b/w0")).unwrap_err();
        assert!(e.to_string().contains("is not directly under"), "{e}");
    }
}
