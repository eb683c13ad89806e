//! `blackout fs` as a disk: the backing file system's limits are the
//! mount's, and what the backing directory refuses to make durable is
//! kept pending, reported on the sync that needed it and by the unmount,
//! and takes nothing else with it.

use std::fs;
use std::process::Command;

use crate::live::Live;

#[test]
fn a_size_the_backing_file_system_refuses_is_refused_at_the_call_and_the_unmount_keeps_the_rest() {
    let live = Live::mount(&[]);
    // More than ext4 (or xfs, btrfs) holds in one file: refused at once,
    // as the disk under the mount refuses it.
    let out = Command::new("truncate")
        .args(["-s", "999999999999999", "big"])
        .current_dir(&live.m)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("File too large"), "{err}");
    let out = Command::new("sh")
        .args(["-c", "echo keep > after.txt"])
        .current_dir(&live.m)
        .output()
        .unwrap();
    assert!(out.status.success());
    live.unmount_saying(0, "");
    assert_eq!(live.backing("after.txt").unwrap(), b"keep\n");
    assert_eq!(live.backing("big").unwrap(), b"");
}

#[test]
fn a_full_backing_disk_fails_the_fsync_that_needed_it_and_loses_nothing_else() {
    // 512 KiB of room, and a 2 MiB write to a file already there.
    let live = Live::mount_small(&[("big.bin", b"")], 512);
    let says = live.python_says(
        "import os, errno\n\
         fd = os.open('big.bin', os.O_WRONLY)\n\
         os.write(fd, b'x' * (2 << 20))\n\
         try:\n\
         \x20   os.fsync(fd)\n\
         \x20   print('fsync ok')\n\
         except OSError as e:\n\
         \x20   print('fsync', errno.errorcode[e.errno])\n\
         os.close(fd)\n\
         fd = os.open('small.txt', os.O_WRONLY | os.O_CREAT, 0o644)\n\
         os.write(fd, b'kept\\n'); os.fsync(fd); os.close(fd)\n\
         d = os.open('.', os.O_RDONLY); os.fsync(d); os.close(d)\n",
    );
    assert_eq!(says, "fsync ENOSPC\n");
    // Everything else reached the disk: the new file and its name.
    assert_eq!(live.backing("small.txt").unwrap(), b"kept\n");
    // The unmount syncs what it can and says, in one line, what it could
    // not (still the writes of big.bin, for want of room).
    let out = live
        .s
        .blackout()
        .args(["fs", "unmount"])
        .arg(&live.m)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("could not be made durable in the backing directory (everything else is): write big.bin [0, ")
            && err.contains("No space left on device"),
        "{err}"
    );
    assert!(!err.contains("small.txt"), "{err}");
    assert_eq!(live.backing("small.txt").unwrap(), b"kept\n");
}

#[test]
fn a_backing_file_removed_behind_the_mount_fails_its_fsync_and_loses_nothing_else() {
    let live = Live::mount(&[("f.txt", b"old\n")]);
    let gone = live.b.join("f.txt");
    let says = live.python_says(&format!(
        "import os, errno\n\
         fd = os.open('f.txt', os.O_WRONLY)\n\
         os.pwrite(fd, b'new', 0)\n\
         os.unlink({gone:?})\n\
         try:\n\
         \x20   os.fsync(fd)\n\
         \x20   print('fsync ok')\n\
         except OSError as e:\n\
         \x20   print('fsync', errno.errorcode[e.errno])\n\
         os.close(fd)\n\
         fd = os.open('g.txt', os.O_WRONLY | os.O_CREAT, 0o644)\n\
         os.write(fd, b'kept\\n'); os.fsync(fd); os.close(fd)\n\
         d = os.open('.', os.O_RDONLY); os.fsync(d); os.close(d)\n",
    ));
    assert_eq!(says, "fsync EIO\n");
    assert_eq!(live.backing("g.txt").unwrap(), b"kept\n");
    // The kernel writes back the page it held: the file's 4 bytes.
    live.unmount_saying(
        2,
        "error: 1 op could not be made durable in the backing directory (everything else is): write f.txt [0, 4): No such file or directory (os error 2)\n",
    );
    assert!(!gone.exists());
    assert_eq!(live.backing("g.txt").unwrap(), b"kept\n");
    assert!(fs::read_dir(&live.b).unwrap().count() == 1);
}
