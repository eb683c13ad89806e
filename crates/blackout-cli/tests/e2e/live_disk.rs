//! `blackout fs` as a disk: the backing file system's limits are the
//! mount's, and what the backing directory refuses to make durable is
//! kept pending, reported on the sync that needed it and by the unmount,
//! and takes nothing else with it.

use std::fs;
use std::process::Command;

use crate::live::{calls, Live};

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

/// The end of a Python program that wrote to `fd`: fsync it and print
/// `fsync ok` or `fsync ERRNO`, then write `kept` to a new file `name` and
/// fsync it and its directory.
fn fsync_then_another_file(name: &str) -> String {
    format!(
        "try:\n\
         \x20   os.fsync(fd)\n\
         \x20   print('fsync ok')\n\
         except OSError as e:\n\
         \x20   print('fsync', errno.errorcode[e.errno])\n\
         os.close(fd)\n\
         fd = os.open('{name}', os.O_WRONLY | os.O_CREAT, 0o644)\n\
         os.write(fd, b'kept\\n'); os.fsync(fd); os.close(fd)\n\
         d = os.open('.', os.O_RDONLY); os.fsync(d); os.close(d)\n"
    )
}

#[test]
fn a_full_backing_disk_fails_the_fsync_that_needed_it_and_loses_nothing_else() {
    // 512 KiB of room, and a 2 MiB write to a file already there.
    let live = Live::mount_small(&[("big.bin", b"")], 512);
    let says = live.python_says(&format!(
        "import os, errno\n\
         fd = os.open('big.bin', os.O_WRONLY)\n\
         os.write(fd, b'x' * (2 << 20))\n\
         {}",
        fsync_then_another_file("small.txt")
    ));
    assert_eq!(says, "fsync ENOSPC\n");
    // Everything else reached the disk: the new file and its name.
    assert_eq!(live.backing("small.txt").unwrap(), b"kept\n");
    // The unmount syncs what it can and says, in one line, what it could
    // not (still the writes of big.bin, for want of room).
    let err = live.unmount_with(2);
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
         {}",
        fsync_then_another_file("g.txt")
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

#[test]
fn a_fifo_and_a_bound_unix_socket_vanish_or_survive_a_crash_as_their_directory_s_fsync_says() {
    use std::os::unix::fs::FileTypeExt;
    let live = Live::mount(&[]);
    let make = "import os, socket\n\
                os.mkfifo('fifo')\n\
                s = socket.socket(socket.AF_UNIX); s.bind('sock'); s.listen(1)\n\
                c = socket.socket(socket.AF_UNIX); c.connect('sock')\n\
                a, _ = s.accept(); c.send(b'hi'); assert a.recv(2) == b'hi'\n";
    live.python(make);
    let r = live.crash(&[]);
    assert_eq!(calls(&r, "dropped"), ["mknod fifo", "mknod sock"], "{r}");
    assert!(live.backing("fifo").is_none() && !live.b.join("sock").exists());
    live.python(&format!(
        "{make}d = os.open('.', os.O_RDONLY); os.fsync(d); os.close(d)\n"
    ));
    live.crash(&[]);
    let t = |name: &str| fs::symlink_metadata(live.b.join(name)).unwrap().file_type();
    assert!(t("fifo").is_fifo() && t("sock").is_socket());
    // And the mount shows them again, as after a reboot.
    let t = |name: &str| fs::symlink_metadata(live.m.join(name)).unwrap().file_type();
    assert!(t("fifo").is_fifo() && t("sock").is_socket());
    live.unmount();
}

#[test]
fn chmod_chown_utimensat_and_setxattr_are_lost_by_a_crash_before_the_file_s_fsync_and_kept_after() {
    use std::os::unix::fs::MetadataExt;
    let live = Live::mount(&[("f", b"x")]);
    // Each kind of change, with what the backing file shows once it is
    // durable.
    type Holds = dyn Fn(&fs::Metadata, &std::path::Path) -> bool;
    let kinds: [(&str, &Holds); 4] = [
        ("os.chmod('f', 0o600)", &|m, _| m.mode() & 0o7777 == 0o600),
        ("os.chown('f', 1234, 5678)", &|m, _| {
            (m.uid(), m.gid()) == (1234, 5678)
        }),
        ("os.utime('f', (1000000000, 1000000000))", &|m, _| {
            m.mtime() == 1_000_000_000
        }),
        ("os.setxattr('f', 'user.k', b'v')", &|_, p| {
            Command::new("python3")
                .args(["-c", &format!("import os; os.getxattr({:?}, 'user.k')", p)])
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap()
                .success()
        }),
    ];
    for (change, holds) in kinds {
        let backing = live.b.join("f");
        let durable = || holds(&fs::symlink_metadata(&backing).unwrap(), &backing);
        // Not synced, or only fdatasynced: lost.
        live.python(&format!(
            "import os\n{change}\nfd = os.open('f', os.O_RDONLY); os.fdatasync(fd)\n"
        ));
        let r = live.crash(&[]);
        assert!(!durable(), "{change}: durable before its fsync: {r}");
        live.python(&format!(
            "import os\n{change}\nfd = os.open('f', os.O_RDONLY); os.fsync(fd)\n"
        ));
        live.crash(&[]);
        assert!(durable(), "{change}: lost after its fsync");
        // Back as it was, for the next kind.
        live.python(
            "import os\n\
             os.chmod('f', 0o644); os.chown('f', 0, 0); os.utime('f')\n\
             try: os.removexattr('f', 'user.k')\nexcept OSError: pass\n\
             fd = os.open('f', os.O_RDONLY); os.fsync(fd)\n",
        );
    }
    live.unmount();
}

#[test]
fn a_path_as_long_as_path_max_from_the_mount_point_works_and_is_made_durable() {
    let live = Live::mount(&[]);
    // 16 directories of 250 bytes and a file: 4,094 bytes from the mount
    // point (PATH_MAX is 4,096 with the NUL), more inside the view's and
    // the backing directory's own paths.
    let deep = "import os\n\
                parts = []\n\
                for i in range(16):\n\
                \x20   parts.append('%03d' % i + 'x' * 246)\n\
                \x20   os.makedirs('/'.join(parts), exist_ok=True)\n\
                d = '/'.join(parts)\n\
                f = d + '/' + 'y' * (4094 - len(d) - 1)\n\
                assert len(f) == 4094\n";
    let says = live.python_says(&format!(
        "{deep}open(f, 'w').write('deep')\n\
         os.rename(f, d + '/short'); os.link(d + '/short', f)\n\
         print(open(f).read(), sorted(n[:1] for n in os.listdir(d)))\n\
         fd = os.open(f, os.O_RDONLY); os.fsync(fd)\n\
         for i in range(16, -1, -1):\n\
         \x20   dfd = os.open('/'.join(parts[:i]) or '.', os.O_RDONLY); os.fsync(dfd)\n"
    ));
    assert_eq!(says, "deep ['s', 'y']\n");
    // Durable: a crash keeps it, and the mount shows it again from the
    // backing directory.
    let r = live.crash(&[]);
    assert_eq!(r["dropped"].as_array().unwrap().len(), 0, "{r}");
    assert_eq!(
        live.python_says(&format!(
            "{deep}print(open(f).read(), os.stat(f).st_nlink)\n"
        )),
        "deep 2\n"
    );
    live.unmount_saying(0, "");
}

#[test]
fn a_write_or_truncate_by_another_user_clears_set_id_bits_as_on_the_disk_under_it() {
    // The kernel leaves clearing them to the daemon (so it does not ask
    // for `security.capability` before every write): the mount must do
    // what the plain directory does.
    let live = Live::mount(&[]);
    let program = "import os, sys\n\
        d = sys.argv[1]\n\
        def fresh(name):\n\
        \x20   p = os.path.join(d, name)\n\
        \x20   open(p, 'w').write('x' * 10)\n\
        \x20   os.chown(p, 65534, 65534); os.chmod(p, 0o6775); return p\n\
        def as_nobody(f):\n\
        \x20   pid = os.fork()\n\
        \x20   if pid == 0:\n\
        \x20       os.setgid(65534); os.setuid(65534); f(); os._exit(0)\n\
        \x20   os.waitpid(pid, 0)\n\
        def write(p):\n\
        \x20   fd = os.open(p, os.O_WRONLY); os.write(fd, b'y'); os.close(fd)\n\
        w = fresh('w'); as_nobody(lambda: write(w))\n\
        t = fresh('t'); as_nobody(lambda: os.truncate(t, 3))\n\
        c = fresh('c'); os.chown(c, 65534, 65534)\n\
        r = fresh('r'); fd = os.open(r, os.O_WRONLY); os.write(fd, b'z'); os.fsync(fd)\n\
        print(' '.join(oct(os.stat(p).st_mode & 0o7777) for p in (w, t, c, r)))\n";
    let run = |dir: &std::path::Path| {
        let out = Command::new("python3")
            .args(["-c", program])
            .arg(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let plain = live.s.path("plain");
    fs::create_dir(&plain).unwrap();
    for d in [&plain, &live.m] {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(d, fs::Permissions::from_mode(0o777)).unwrap();
    }
    let on_disk = run(&plain);
    assert_eq!(on_disk, "0o775 0o775 0o775 0o6775\n");
    assert_eq!(run(&live.m), on_disk);
    live.unmount();
}
