//! `blackout fs`: the live file system, one test per fault, through the
//! commands a user types, with real programs writing on the mount.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::Scratch;

/// A live mount of `b` at `m`, in a test's scratch; unmounted at the end
/// (and on a failed assertion), and so is a small file system made for `b`.
pub(crate) struct Live {
    pub(crate) s: Scratch,
    pub(crate) m: PathBuf,
    pub(crate) b: PathBuf,
    /// `b` is a tmpfs of its own (`Live::mount_small`).
    small: bool,
}

impl Live {
    /// Mounts in the background a backing directory holding `files`.
    pub(crate) fn mount(files: &[(&str, &[u8])]) -> Live {
        Live::mount_on(files, None)
    }

    /// Mounts in the background a backing directory holding `files` on a
    /// tmpfs of its own of `kib` KiB (root only), so it fills up.
    pub(crate) fn mount_small(files: &[(&str, &[u8])], kib: u64) -> Live {
        Live::mount_on(files, Some(kib))
    }

    fn mount_on(files: &[(&str, &[u8])], small_kib: Option<u64>) -> Live {
        let s = Scratch::new();
        let (m, b) = (s.path("m"), s.path("b"));
        fs::create_dir(&m).unwrap();
        fs::create_dir(&b).unwrap();
        if let Some(kib) = small_kib {
            let out = Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
                .arg(&b)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        for (name, bytes) in files {
            fs::write(b.join(name), bytes).unwrap();
        }
        let out = s
            .blackout()
            .args(["fs", "mount"])
            .arg(&m)
            .arg("--backing")
            .arg(&b)
            .arg("--background")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(mounted(&m), "not mounted after --background returned");
        Live {
            s,
            m,
            b,
            small: small_kib.is_some(),
        }
    }

    /// Runs a Python program with the mount as its working directory.
    pub(crate) fn python(&self, program: &str) {
        self.python_says(program);
    }

    /// Runs a Python program with the mount as its working directory; what
    /// it printed.
    pub(crate) fn python_says(&self, program: &str) -> String {
        let out = Command::new("python3")
            .arg("-c")
            .arg(program)
            .current_dir(&self.m)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `blackout fs SUB MOUNT ARGS... --json`, its JSON.
    fn json(&self, sub: &str, args: &[&str]) -> Value {
        let out = self
            .s
            .blackout()
            .args(["fs", sub])
            .arg(&self.m)
            .args(args)
            .arg("--json")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    pub(crate) fn crash(&self, args: &[&str]) -> Value {
        self.json("crash", args)
    }

    pub(crate) fn backing(&self, name: &str) -> Option<Vec<u8>> {
        fs::read(self.b.join(name)).ok()
    }

    /// Unmounts and asserts nothing is left: no mount, no scratch.
    pub(crate) fn unmount(self) {
        self.unmount_saying(0, "");
    }

    /// Unmounts, asserts the exit code and that standard error is `says`,
    /// and that nothing is left: no mount, no scratch. The backing
    /// directory stays until the test ends.
    pub(crate) fn unmount_saying(&self, code: i32, says: &str) {
        let err = self.unmount_with(code);
        assert_eq!(err, says);
    }

    /// Unmounts, asserts the exit code and that nothing is left (no mount,
    /// no scratch), and returns what it said on standard error.
    pub(crate) fn unmount_with(&self, code: i32) -> String {
        let out = self
            .s
            .blackout()
            .args(["fs", "unmount"])
            .arg(&self.m)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(code), "{err}");
        assert!(!mounted(&self.m));
        self.s.assert_clean();
        err
    }
}

/// Detaches whatever is mounted at `path`.
fn detach(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
}

impl Drop for Live {
    fn drop(&mut self) {
        if mounted(&self.m) {
            let _ = self
                .s
                .blackout()
                .args(["fs", "unmount"])
                .arg(&self.m)
                .output();
            detach(&self.m);
        }
        if self.small {
            detach(&self.b);
        }
    }
}

/// Whether a file system is mounted at `m`.
fn mounted(m: &Path) -> bool {
    let m = fs::canonicalize(m).unwrap_or_else(|_| m.to_path_buf());
    fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(m.to_str().unwrap()))
}

/// The descriptions of a crash report's list (`dropped`, `kept`, `torn`).
pub(crate) fn calls(report: &Value, list: &str) -> Vec<String> {
    report[list]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            let v = if list == "torn" { &v["op"] } else { v };
            let to = v["to"]
                .as_str()
                .map(|t| format!(" -> {t}"))
                .unwrap_or_default();
            format!(
                "{} {}{to}",
                v["call"].as_str().unwrap(),
                v["path"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn a_crash_loses_unsynced_data_and_keeps_fsynced_data() {
    let live = Live::mount(&[("a.txt", b"old a\n"), ("b.txt", b"old b\n")]);
    live.python(
        "import os\n\
         open('a.txt', 'w').write('new a\\n')\n\
         fd = os.open('b.txt', os.O_WRONLY | os.O_TRUNC)\n\
         os.write(fd, b'new b\\n'); os.fsync(fd); os.close(fd)\n",
    );
    // The view shows both at once, as a page cache does.
    assert_eq!(fs::read(live.m.join("a.txt")).unwrap(), b"new a\n");
    let r = live.crash(&[]);
    assert_eq!(calls(&r, "dropped"), ["truncate a.txt", "write a.txt"]);
    assert_eq!(
        r["dropped"][1]["durable_by"],
        "fsync(a.txt) or fdatasync(a.txt)"
    );
    assert_eq!(live.backing("a.txt").unwrap(), b"old a\n");
    assert_eq!(live.backing("b.txt").unwrap(), b"new b\n");
    // After the crash the mount shows the durable state, as a reboot would.
    assert_eq!(fs::read(live.m.join("a.txt")).unwrap(), b"old a\n");
    // A program still running, its write still in the kernel's page cache
    // (never closed, never synced): killed first, its write listed as lost.
    let mut program = spawn_in_group(
        &live.m,
        "import os, time\n\
         fd = os.open('b.txt', os.O_WRONLY)\n\
         os.pwrite(fd, b'held', 0)\n\
         open('written', 'w').close()\n\
         time.sleep(30)\n",
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !live.m.join("written").exists() {
        assert!(Instant::now() < deadline, "the program never wrote");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The report has the kernel pass on what it holds first.
    let p = live.json("pending", &[]);
    assert_eq!(p["files"][1]["path"], "b.txt", "{p}");
    // Its page, written back up to the end of the file.
    assert_eq!(p["files"][1]["ops"][0]["length"], 6);
    let pgid = program.id().to_string();
    let r = live.crash(&["--pgid", &pgid]);
    assert!(!program.wait().unwrap().success());
    assert_eq!(r["killed"], 1);
    assert_eq!(calls(&r, "dropped"), ["create written", "write b.txt"]);
    assert_eq!(live.backing("b.txt").unwrap(), b"new b\n");
    live.unmount();
}

#[test]
fn a_rename_never_dir_synced_comes_back_as_the_old_name() {
    let live = Live::mount(&[("doc.txt", b"version 1\n")]);
    let save = "import os\n\
         fd = os.open('doc.tmp', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)\n\
         os.write(fd, b'version 2\\n'); os.fsync(fd); os.close(fd)\n\
         os.rename('doc.tmp', 'doc.txt')\n";
    live.python(save);
    let r = live.crash(&[]);
    assert_eq!(
        calls(&r, "dropped"),
        ["create doc.tmp", "rename doc.tmp -> doc.txt"]
    );
    assert_eq!(r["dropped"][1]["durable_by"], "fsync(.)");
    assert_eq!(live.backing("doc.txt").unwrap(), b"version 1\n");
    assert!(
        live.backing("doc.tmp").is_none(),
        "its entry was never durable"
    );
    assert_eq!(fs::read(live.m.join("doc.txt")).unwrap(), b"version 1\n");
    // With the directory fsynced, the new name holds.
    live.python(&format!(
        "{save}dfd = os.open('.', os.O_RDONLY); os.fsync(dfd); os.close(dfd)\n"
    ));
    assert!(calls(&live.crash(&[]), "dropped").is_empty());
    assert_eq!(live.backing("doc.txt").unwrap(), b"version 2\n");
    live.unmount();
}

#[test]
fn a_random_crash_keeps_a_seeded_subset_of_what_is_pending() {
    let live = Live::mount(&[]);
    let make = "import os\n\
         for i in range(24):\n    \
             fd = os.open('f%02d' % i, os.O_WRONLY | os.O_CREAT, 0o644)\n    \
             os.write(fd, b'x'); os.fsync(fd); os.close(fd)\n";
    live.python(make);
    let pending = live.json("pending", &[]);
    assert_eq!(pending["units"], 24, "24 creates, their data fsynced");
    let r = live.crash(&["--keep", "random", "--seed", "7"]);
    let kept = calls(&r, "kept");
    assert!(!kept.is_empty() && kept.len() < 24, "{kept:?}");
    assert_eq!(kept.len() + calls(&r, "dropped").len(), 24);
    let mut present: Vec<String> = fs::read_dir(&live.b)
        .unwrap()
        .map(|e| format!("create {}", e.unwrap().file_name().to_str().unwrap()))
        .collect();
    present.sort();
    assert_eq!(present, kept, "exactly the kept entries reached the disk");
    for name in fs::read_dir(&live.b).unwrap() {
        assert_eq!(
            fs::read(name.unwrap().path()).unwrap(),
            b"x",
            "with their synced data"
        );
    }
    live.unmount();
    // The same pending ops and seed keep the same subset; another seed another.
    let again = Live::mount(&[]);
    again.python(make);
    assert_eq!(
        calls(&again.crash(&["--keep", "random", "--seed", "7"]), "kept"),
        kept
    );
    again.unmount();
    let other = Live::mount(&[]);
    other.python(make);
    assert_ne!(
        calls(&other.crash(&["--keep", "random", "--seed", "8"]), "kept"),
        kept
    );
    other.unmount();
}

#[test]
fn a_torn_write_keeps_whole_sectors_of_old_and_new() {
    let live = Live::mount(&[("data", &[b'A'; 8192])]);
    live.python(
        "import os\n\
         fd = os.open('data', os.O_WRONLY)\n\
         os.pwrite(fd, b'B' * 8192, 0); os.close(fd)\n",
    );
    let r = live.crash(&["--keep", "none", "--tear", "--seed", "1"]);
    assert_eq!(calls(&r, "torn"), ["write data"]);
    let data = live.backing("data").unwrap();
    assert_eq!(data.len(), 8192);
    let cut = data.iter().position(|&b| b == b'A').unwrap();
    assert!(
        cut > 0 && cut % 512 == 0,
        "torn at a sector boundary: {cut}"
    );
    assert!(data[..cut].iter().all(|&b| b == b'B') && data[cut..].iter().all(|&b| b == b'A'));
    // A write inside one sector cannot tear: it reaches the disk whole or
    // not at all (the kernel writes its page back whole: that may tear
    // between sectors, never inside this one).
    for seed in ["1", "2", "3"] {
        live.python("import os\nfd = os.open('data', os.O_WRONLY)\nos.pwrite(fd, b'C' * 100, 0)\n");
        let r = live.crash(&["--keep", "none", "--tear", "--seed", seed]);
        assert_eq!(calls(&r, "torn").len() + calls(&r, "dropped").len(), 1);
        let data = live.backing("data").unwrap();
        let c = data[..100].iter().filter(|&&b| b == b'C').count();
        assert!(c == 0 || c == 100, "{c} of the 100 bytes reached the disk");
    }
    live.unmount();
}

/// A program in a process group of its own, on the mount.
fn spawn_in_group(dir: &Path, program: &str) -> Child {
    Command::new("python3")
        .arg("-c")
        .arg(program)
        .current_dir(dir)
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// The log writer of the `--at` tests: appends records to seg.tmp, syncs
/// it and the directory, renames it to seg.wal, syncs the directory.
const SEGMENT: &str = "import os, time\n\
     time.sleep(1.0)\n\
     fd = os.open('seg.tmp', os.O_WRONLY | os.O_CREAT, 0o644)\n\
     os.write(fd, b'record\\n' * 100); os.fsync(fd); os.close(fd)\n\
     dfd = os.open('.', os.O_RDONLY); os.fsync(dfd)\n\
     os.rename('seg.tmp', 'seg.wal')\n\
     os.fsync(dfd)\n\
     open('after', 'w').write('written after the rename')\n\
     time.sleep(30)\n";

fn crash_at(live: &Live, before: bool) -> (Value, std::process::ExitStatus) {
    let mut program = spawn_in_group(&live.m, SEGMENT);
    let pgid = program.id().to_string();
    let mut args = vec!["--at", "rename:*.wal", "--pgid", &pgid];
    if before {
        args.push("--before");
    }
    let started = Instant::now();
    let r = live.crash(&args);
    let status = program.wait().unwrap();
    assert!(started.elapsed() < Duration::from_secs(20));
    (r, status)
}

#[test]
fn a_crash_armed_at_a_rename_goes_off_right_after_it() {
    let live = Live::mount(&[]);
    let (r, status) = crash_at(&live, false);
    assert!(!status.success(), "the program was killed");
    assert_eq!(r["killed"], 1);
    // The rename happened and was lost: its directory was never synced after.
    assert_eq!(calls(&r, "dropped"), ["rename seg.tmp -> seg.wal"]);
    assert_eq!(live.backing("seg.tmp").unwrap(), b"record\n".repeat(100));
    assert!(live.backing("seg.wal").is_none() && live.backing("after").is_none());
    live.unmount();
}

#[test]
fn a_crash_armed_before_a_rename_refuses_it() {
    let live = Live::mount(&[]);
    let (r, _) = crash_at(&live, true);
    // The rename never happened: nothing was pending.
    assert!(calls(&r, "dropped").is_empty(), "{r}");
    assert!(live.backing("seg.tmp").is_some() && live.backing("seg.wal").is_none());
    live.unmount();
}

#[test]
fn the_pending_report_names_each_op_and_the_sync_that_saves_it() {
    let live = Live::mount(&[("log", b"")]);
    live.python(
        "import os\n\
         os.mkdir('d')\n\
         fd = os.open('log', os.O_WRONLY | os.O_APPEND)\n\
         os.write(fd, b'one\\n'); os.write(fd, b'two\\n')\n\
         open('d/x', 'w').write('x')\n",
    );
    let p = live.json("pending", &[]);
    let files: Vec<&str> = p["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    // The kernel's page cache passes on log's two appends as one write
    // when the file is closed (at exit, after d/x was written and closed).
    assert_eq!(files, ["d", "d/x", "log"]);
    let log = &p["files"][2]["ops"];
    assert_eq!(log[0]["call"], "write");
    assert_eq!(log[0]["offset"], 0);
    assert_eq!(log[0]["length"], 8);
    assert_eq!(log[0]["durable_by"], "fsync(log) or fdatasync(log)");
    assert_eq!(p["files"][1]["ops"][0]["durable_by"], "fsync(d)");
    assert_eq!(p["bytes"], 9);
    let text = live
        .s
        .blackout()
        .args(["fs", "pending"])
        .arg(&live.m)
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("  write log [0, 8): durable after fsync(log) or fdatasync(log)\n"),
        "{text}"
    );
    live.unmount();
}

/// A foreground daemon stopped by `sig`: it syncs, unmounts, removes its
/// scratch, and exits 128 + the signal.
fn stopped_by(sig: nix::sys::signal::Signal) {
    let s = Scratch::new();
    let (m, b) = (s.path("m"), s.path("b"));
    fs::create_dir(&m).unwrap();
    fs::create_dir(&b).unwrap();
    let mut daemon = s
        .blackout()
        .args(["fs", "mount"])
        .arg(&m)
        .arg("--backing")
        .arg(&b)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = s
        .blackout()
        .args(["fs", "pending"])
        .arg(&m)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    fs::write(m.join("f"), b"unsynced").unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(daemon.id() as i32), sig).unwrap();
    let status = daemon.wait().unwrap();
    assert_eq!(status.code(), Some(128 + sig as i32));
    assert!(!mounted(&m));
    s.assert_clean();
    // A clean shutdown syncs, as an unmount does.
    assert_eq!(fs::read(b.join("f")).unwrap(), b"unsynced");
}

#[test]
fn sigterm_and_ctrl_c_leave_nothing_behind() {
    stopped_by(nix::sys::signal::Signal::SIGTERM);
    stopped_by(nix::sys::signal::Signal::SIGINT);
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let s = Scratch::new();
    fs::create_dir(s.path("m")).unwrap();
    let out = s
        .blackout()
        .args(["fs", "mount"])
        .arg(s.path("m"))
        .arg("--backing")
        .arg(s.path("nowhere"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with("error: --backing ") && err.ends_with("not a directory\n"),
        "{err}"
    );
    let out = s
        .blackout()
        .args(["fs", "crash"])
        .arg(s.path("m"))
        .args(["--at", "renme:*.wal"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("unknown call `renme`"));
    s.assert_clean();
}

/// The standard output of a command that must have exited with `code`.
fn stdout_with(out: &std::process::Output, code: i32) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(code),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `blackout soak` of the example log server, with `--fsync` or without.
fn soak_kvlog(s: &Scratch, fsync: bool, extra: &[&str]) -> std::process::Output {
    let kv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/live/kvlog.py");
    let kv = kv.to_str().unwrap();
    let mut service = vec!["python3", kv, "serve"];
    if fsync {
        service.push("--fsync");
    }
    s.blackout()
        .args([
            "soak",
            "--crashes",
            "6",
            "--seed",
            "5",
            "--ack-prefix",
            "ok",
        ])
        .args(["--run-min", "100ms", "--run-max", "300ms"])
        .args(["--ready", &format!("python3 {kv} ready")])
        .args(["--client", &format!("python3 {kv} load")])
        .args(["--checker", &format!("python3 {kv} check")])
        .args(extra)
        .arg("--")
        .args(service)
        .output()
        .unwrap()
}

#[test]
fn a_soak_client_killed_in_the_middle_of_a_line_has_not_promised_it() {
    let s = Scratch::new();
    let acked = s.path("acked");
    // `ok 3` is being printed (no newline yet) when the client is killed:
    // cut from `ok 30`, it would name a key never acknowledged.
    let out = s
        .blackout()
        .args([
            "soak",
            "--crashes",
            "1",
            "--run-min",
            "700ms",
            "--run-max",
            "700ms",
        ])
        .args(["--client", "printf 'ok 1\\nok 2\\nok 3'; sleep 30"])
        .arg("--checker")
        .arg(format!(
            "printf '%s' \"$BLACKOUT_ACKED\" > {}",
            acked.display()
        ))
        .args(["--", "sleep", "1000"])
        .output()
        .unwrap();
    stdout_with(&out, 0);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("crash 1/1 after 700 ms: 2 promises so far"),
        "{err}"
    );
    assert_eq!(fs::read_to_string(&acked).unwrap(), "ok 1\nok 2");
    s.assert_clean();
}

#[test]
fn soak_passes_a_server_that_syncs_and_names_what_one_that_does_not_lost() {
    let s = Scratch::new();
    let out = soak_kvlog(&s, true, &["--keep", "random", "--tear"]);
    let stdout = stdout_with(&out, 0);
    assert!(
        stdout.starts_with("PASS: 6 crashes (seed 5, keep random, torn writes): all "),
        "{stdout}"
    );
    s.assert_clean();
    let out = soak_kvlog(&s, false, &[]);
    let stdout = stdout_with(&out, 1);
    // Which crash finds a put acknowledged first depends on how fast the
    // client starts.
    assert!(stdout.starts_with("FAIL: after crash "), "{stdout}");
    assert!(
        stdout.contains(" of 6 (seed 5, keep none), a promise broke: acknowledged put k"),
        "{stdout}"
    );
    assert!(
        stdout.contains("\n  dropped create data.log: durable only after fsync(.)\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("dropped write data.log [0, ")
            || stdout.contains(" writes data.log in [0, "),
        "{stdout}"
    );
    s.assert_clean();
}

/// `blackout soak` of PostgreSQL with `synchronous_commit` set to `sync`.
fn soak_postgres(sync: &str) -> (std::process::Output, Scratch) {
    soak_postgres_with(&[("SYNC", sync)], &["--crashes", "100"])
}

/// PostgreSQL under `soak --seed 1 --ack-prefix ok` with `env` set and
/// `extra` flags (the example's setup, readiness, client and checker).
fn soak_postgres_with(env: &[(&str, &str)], extra: &[&str]) -> (std::process::Output, Scratch) {
    assert!(
        Path::new("/usr/lib/postgresql").is_dir(),
        "the PostgreSQL soak needs the server: apt-get install -y postgresql"
    );
    let s = Scratch::new();
    // The server runs as the postgres user: it must reach its scratch.
    use std::os::unix::fs::PermissionsExt;
    for d in [s.root.path().to_path_buf(), s.path("tmp")] {
        fs::set_permissions(d, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let pg = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/live/postgres/pg.sh");
    let pg = pg.to_str().unwrap();
    let out = s
        .blackout()
        .envs(env.iter().copied())
        .args(["soak", "--seed", "1", "--ack-prefix", "ok"])
        .args(extra)
        .args(["--setup", &format!("{pg} setup")])
        .args(["--ready", &format!("{pg} ready")])
        .args(["--client", &format!("{pg} load")])
        .args(["--checker", &format!("{pg} check")])
        .args(["--", pg, "serve"])
        .output()
        .unwrap();
    (out, s)
}

#[test]
#[ignore = "slower suite: cargo test -p blackout-cli --test e2e -- --ignored (100 crashes of a real PostgreSQL; minutes)"]
fn slower_postgres_with_synchronous_commit_on_keeps_every_commit_through_100_crashes() {
    let (out, s) = soak_postgres("on");
    let stdout = stdout_with(&out, 0);
    assert!(
        stdout.starts_with("PASS: 100 crashes (seed 1, keep none): all "),
        "{stdout}"
    );
    s.assert_clean();
}

#[test]
#[ignore = "slower suite: cargo test -p blackout-cli --test e2e -- --ignored (a real PostgreSQL crashed under load)"]
fn slower_postgres_with_synchronous_commit_off_loses_an_acknowledged_commit() {
    let (out, s) = soak_postgres("off");
    let stdout = stdout_with(&out, 1);
    assert!(
        stdout.contains("acknowledged commits are gone after the crash"),
        "{stdout}"
    );
    // The lost commits' WAL: written, never flushed before the crash.
    assert!(
        stdout.contains(" pg/pg_wal/0000000100000000000000"),
        "{stdout}"
    );
    assert!(
        stdout.contains("durable only after fsync(pg/pg_wal/"),
        "{stdout}"
    );
    s.assert_clean();
}

/// `blackout soak --fail-syncs` of PostgreSQL (`synchronous_commit=on`)
/// with `data_sync_retry` set to `retry`: the client asks for a CHECKPOINT
/// every 200 rows, so data files are fsynced in every run, and the fsync
/// of the table's file (base/5/16384 in a fresh cluster) is the one made
/// to fail; the checker also checks the primary key's index (amcheck).
fn soak_postgres_failing_syncs(retry: &str) -> (std::process::Output, Scratch) {
    let env = [
        ("SYNC", "on"),
        ("DATA_SYNC_RETRY", retry),
        ("CHECKPOINT_EVERY", "200"),
        ("CHECK_INDEX", "1"),
    ];
    soak_postgres_with(
        &env,
        &[
            "--crashes",
            "30",
            "--run-min",
            "1s",
            "--run-max",
            "3s",
            "--fail-syncs",
            "--fail-at",
            "fsync:pg/base/5/16384",
        ],
    )
}

#[test]
#[ignore = "slower suite: cargo test -p blackout-cli --test e2e -- --ignored (30 crashes of a real PostgreSQL, its table's fsync failing before some; minutes)"]
fn slower_postgres_with_data_sync_retry_off_keeps_every_commit_when_a_data_file_fsync_fails() {
    let (out, s) = soak_postgres_failing_syncs("off");
    let stdout = stdout_with(&out, 0);
    assert!(
        stdout.starts_with(
            "PASS: 30 crashes (seed 1, keep none, syncs failing at `fsync:pg/base/5/16384`): all "
        ),
        "{stdout}"
    );
    // A PANIC and recovery from the WAL after each failure: the dropped
    // writes of the table are written again.
    assert!(
        stdout.contains("fsync(pg/base/5/16384) failed with EIO (armed ")
            && stdout.contains("then every promise held\n    dropped "),
        "{stdout}"
    );
    s.assert_clean();
}

#[test]
#[ignore = "slower suite: cargo test -p blackout-cli --test e2e -- --ignored (a real PostgreSQL trusting a retried fsync of its table's file)"]
fn slower_postgres_with_data_sync_retry_on_loses_acknowledged_commits_after_a_failed_fsync() {
    let (out, s) = soak_postgres_failing_syncs("on");
    let stdout = stdout_with(&out, 1);
    assert!(
        stdout.contains("acknowledged commits are gone after the crash"),
        "{stdout}"
    );
    // The loss is the failed fsync's: its writes to the table's file,
    // which a later checkpoint's fsync (0) did not write.
    assert!(
        stdout.contains("then the checker found a promise broken\n    dropped ")
            && stdout.contains(" pg/base/5/16384 "),
        "{stdout}"
    );
    s.assert_clean();
}

/// A cgroup of the v2 hierarchy, mounted for a test: its processes killed,
/// the cgroup removed and the hierarchy unmounted when dropped (the
/// hierarchy is the machine's: a cgroup left behind would outlive the test).
struct Cgroup2 {
    root: PathBuf,
    group: PathBuf,
}

impl Drop for Cgroup2 {
    fn drop(&mut self) {
        let _ = fs::write(self.group.join("cgroup.kill"), "1");
        for _ in 0..100 {
            if fs::remove_dir(&self.group).is_ok() || !self.group.exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = Command::new("umount").arg("-l").arg(&self.root).status();
    }
}

#[test]
fn a_crash_kills_every_process_of_the_cgroup_it_is_given() {
    let live = Live::mount(&[]);
    let root = live.s.path("cgroup");
    fs::create_dir(&root).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "cgroup2", "none"])
        .arg(&root)
        .status()
        .unwrap();
    assert!(
        mounted.success(),
        "mounting cgroup2 needs root and a kernel with it"
    );
    let group = root.join(format!("blackout-test-{}", std::process::id()));
    let cg = Cgroup2 {
        root,
        group: group.clone(),
    };
    fs::create_dir(&group).unwrap();
    // A program that starts a second process once it is in the cgroup; both
    // write on the mount, neither syncs.
    let mut program = spawn_in_group(
        &live.m,
        "import os, subprocess, time\n\
         time.sleep(0.5)\n\
         subprocess.Popen(['sh', '-c', 'echo child > child; sleep 30'])\n\
         open('parent', 'w').write('parent')\n\
         time.sleep(30)\n",
    );
    fs::write(group.join("cgroup.procs"), program.id().to_string()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !(live.m.join("child").exists() && live.m.join("parent").exists()) {
        assert!(Instant::now() < deadline, "the program never wrote");
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = live.crash(&["--cgroup", group.to_str().unwrap()]);
    // python, the sh it started, and that sh's sleep.
    assert_eq!(r["killed"], 3, "{r}");
    assert!(!program.wait().unwrap().success());
    assert!(fs::read_to_string(group.join("cgroup.procs"))
        .unwrap()
        .is_empty());
    let mut dropped = calls(&r, "dropped");
    dropped.sort();
    assert_eq!(
        dropped,
        [
            "create child",
            "create parent",
            "write child",
            "write parent"
        ]
    );
    drop(cg);
    assert!(!group.exists());
    live.unmount();
}

#[test]
fn a_soak_stopped_by_sigterm_leaves_no_mount_process_or_scratch() {
    let s = Scratch::new();
    let kv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/live/kvlog.py");
    let kv = kv.to_str().unwrap();
    let log = s.path("soak.err");
    let mut soak = s
        .blackout()
        .args(["soak", "--crashes", "1000", "--ack-prefix", "ok"])
        .args(["--ready", &format!("python3 {kv} ready")])
        .args(["--client", &format!("python3 {kv} load")])
        .args(["--checker", &format!("python3 {kv} check")])
        .args([
            "--",
            "python3",
            kv,
            "serve",
            "--fsync",
            "--marker-soak-sigterm",
        ])
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    crate::common::signal_when(&s, &mut soak, nix::sys::signal::Signal::SIGTERM, || {
        fs::read_to_string(&log).is_ok_and(|t| t.contains("crash 2/1000"))
    });
    assert_eq!(
        crate::common::processes_with("--marker-soak-sigterm"),
        Vec::<String>::new()
    );
}

#[test]
fn a_second_daemon_for_a_served_mount_point_refuses_before_it_mounts() {
    let live = Live::mount(&[("f", b"durable")]);
    let out = live
        .s
        .blackout()
        .args(["fs", "mount"])
        .arg(&live.m)
        .arg("--backing")
        .arg(&live.b)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("a live file system is already served there"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    // The first one still serves, alone.
    let mounts = fs::read_to_string("/proc/self/mountinfo").unwrap();
    let m = fs::canonicalize(&live.m).unwrap();
    let here = mounts
        .lines()
        .filter(|l| l.split(' ').nth(4) == m.to_str())
        .count();
    assert_eq!(here, 1);
    assert_eq!(fs::read(live.m.join("f")).unwrap(), b"durable");
    live.unmount();
}

#[test]
fn mmap_o_sync_and_o_direct_writes_are_durable_as_the_model_says() {
    let live = Live::mount(&[("mapped", &[b'A'; 8192]), ("synced", b"AAAA")]);
    live.python(
        "import os, mmap\n\
         fd = os.open('mapped', os.O_RDWR)\n\
         m = mmap.mmap(fd, 8192)\n\
         m[0:4] = b'MMAP'\n\
         m.flush()\n\
         m[4096:4100] = b'LOST'\n\
         m.close(); os.close(fd)\n\
         fd = os.open('synced', os.O_WRONLY | os.O_SYNC)\n\
         os.pwrite(fd, b'SYNC', 0); os.close(fd)\n\
         fd = os.open('direct', os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o644)\n\
         buf = mmap.mmap(-1, 4096); buf[:6] = b'DIRECT'\n\
         os.pwritev(fd, [buf], 0); os.close(fd)\n",
    );
    let r = live.crash(&[]);
    // msync made the first page durable, the second was never synced; an
    // O_SYNC write is synced; an O_DIRECT write is a write like any other.
    assert_eq!(
        calls(&r, "dropped"),
        ["write mapped", "create direct", "write direct"]
    );
    let mapped = live.backing("mapped").unwrap();
    assert_eq!(&mapped[..8], b"MMAPAAAA");
    assert_eq!(&mapped[4096..4100], b"AAAA");
    assert_eq!(live.backing("synced").unwrap(), b"SYNC");
    assert!(live.backing("direct").is_none());
    live.unmount();
}

#[test]
fn an_armed_crash_whose_command_is_stopped_never_goes_off() {
    let live = Live::mount(&[]);
    let mut armed = live
        .s
        .blackout()
        .args(["fs", "crash"])
        .arg(&live.m)
        .args(["--at", "rename:*.wal"])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(armed.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    assert_eq!(armed.wait().unwrap().code(), Some(130));
    std::thread::sleep(Duration::from_millis(300));
    // The rename goes through, and nothing crashed: it is still pending.
    live.python("open('seg.tmp', 'w').write('x')\nimport os\nos.rename('seg.tmp', 'seg.wal')\n");
    assert_eq!(fs::read(live.m.join("seg.wal")).unwrap(), b"x");
    let p = live.json("pending", &[]);
    assert_eq!(p["units"], 3, "{p}");
    live.unmount();
}

#[test]
fn a_crash_kills_the_children_that_left_the_group_too() {
    let live = Live::mount(&[]);
    // As PostgreSQL's postmaster does: each child makes a session of its
    // own, its working directory on the mount.
    let mut program = spawn_in_group(
        &live.m,
        "import os, time\n\
         if os.fork() == 0:\n    \
             os.setsid()\n    \
             open('child.tmp', 'w').write(str(os.getpid()))\n    \
             os.rename('child.tmp', 'child')\n    \
             time.sleep(30)\n\
         else:\n    \
             time.sleep(30)\n",
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !live.m.join("child").exists() {
        assert!(Instant::now() < deadline, "the child never wrote");
        std::thread::sleep(Duration::from_millis(20));
    }
    let child = fs::read_to_string(live.m.join("child")).unwrap();
    let pgid = program.id().to_string();
    let r = live.crash(&["--pgid", &pgid]);
    assert_eq!(r["killed"], 2, "{r}");
    assert!(!program.wait().unwrap().success());
    let gone = fs::read_to_string(format!("/proc/{child}/stat"))
        .map_or(true, |st| st.rsplit(") ").next().unwrap().starts_with('Z'));
    assert!(gone, "the child outlived the crash");
    // The mount came back, and stays.
    std::thread::sleep(Duration::from_millis(1500));
    fs::write(live.m.join("after"), b"x").unwrap();
    assert_eq!(fs::read(live.m.join("after")).unwrap(), b"x");
    live.unmount();
}

/// A program whose fsync of a.txt is made to fail: it writes, its fsync
/// fails, it retries (0, as Linux answers), reads its data back, then
/// writes into another page of a.txt and into b.txt and syncs them.
const FSYNC_RETRIED: &str = r#"import os, time
fd = os.open('a.txt', os.O_WRONLY)
os.pwrite(fd, b'new data\n', 0)
time.sleep(1.0)
try:
    os.fsync(fd)
    print('fsync: 0')
except OSError as e:
    print('fsync: ' + os.strerror(e.errno))
os.fsync(fd)
print('retry: 0')
print('reads: ' + open('a.txt').read().strip())
os.pwrite(fd, b'after\n', 8192)
os.fsync(fd)
b = os.open('b.txt', os.O_WRONLY | os.O_CREAT, 0o644)
os.write(b, b'after\n')
os.fsync(b)
d = os.open('.', os.O_RDONLY)
os.fsync(d)
print('synced')
"#;

/// A program on the mount with its standard output piped.
fn spawn_piped(dir: &Path, program: &str) -> Child {
    Command::new("python3")
        .arg("-c")
        .arg(program)
        .current_dir(dir)
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_failed_fsync_drops_what_it_covered_for_good_and_the_retry_returns_0() {
    let live = Live::mount(&[("a.txt", b"old\n")]);
    let program = spawn_piped(&live.m, FSYNC_RETRIED);
    let started = Instant::now();
    let failure = live.json("fail-sync", &["--at", "fsync:a.txt"]);
    let out = program.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "fsync: Input/output error\nretry: 0\nreads: new data\nsynced\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(failure["call"], "fsync", "{failure}");
    assert_eq!(failure["path"], "a.txt");
    assert_eq!(failure["errno"], "EIO");
    assert_eq!(calls(&failure, "dropped"), ["write a.txt"]);
    assert_eq!(failure["dropped"][0]["offset"], 0);
    assert_eq!(failure["dropped"][0]["length"], 9);
    // The retry made nothing durable; what came after the failure is.
    let expect_a = |a: Vec<u8>| {
        assert_eq!(&a[..4], b"old\n", "the failed write never reached the disk");
        assert!(a[4..8192].iter().all(|&b| b == 0));
        assert_eq!(&a[8192..], b"after\n");
    };
    expect_a(live.backing("a.txt").unwrap());
    assert_eq!(live.backing("b.txt").unwrap(), b"after\n");
    // The view keeps it until the mount goes; the clean unmount, which
    // syncs everything, does not write it either.
    assert_eq!(&fs::read(live.m.join("a.txt")).unwrap()[..9], b"new data\n");
    live.unmount_saying(0, "");
    expect_a(live.backing("a.txt").unwrap());
}

#[test]
fn a_failed_directory_fsync_loses_the_new_name_for_good() {
    let live = Live::mount(&[]);
    let program = spawn_piped(
        &live.m,
        "import os, time\n\
         fd = os.open('c.txt', os.O_WRONLY | os.O_CREAT, 0o644)\n\
         os.write(fd, b'c'); os.fsync(fd)\n\
         time.sleep(1.0)\n\
         d = os.open('.', os.O_RDONLY)\n\
         try:\n    os.fsync(d)\n\
         except OSError as e:\n    print(e.strerror)\n\
         os.fsync(d)\n\
         print('retried')\n",
    );
    let text = {
        let out = live
            .s
            .blackout()
            .args(["fs", "fail-sync"])
            .arg(&live.m)
            .args(["--at", "fsyncdir:."])
            .output()
            .unwrap();
        stdout_with(&out, 0)
    };
    let out = program.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Input/output error\nretried\n"
    );
    assert_eq!(
        text,
        "sync failed: fsyncdir(.) returned EIO; 1 op it covered dropped, never durable (programs read it until the mount is unmounted or crashes)\n  dropped create c.txt: never durable\n"
    );
    assert!(live.m.join("c.txt").exists(), "the view keeps the name");
    live.unmount_saying(0, "");
    assert!(live.backing("c.txt").is_none());
}

#[test]
fn fail_sync_refuses_a_call_that_is_not_a_sync_in_one_line() {
    let s = Scratch::new();
    fs::create_dir(s.path("m")).unwrap();
    let out = s
        .blackout()
        .args(["fs", "fail-sync"])
        .arg(s.path("m"))
        .args(["--at", "write:*"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: --at `write:*`: only a sync can be made to fail (fsync, fdatasync, fsyncdir, or *), not write\n"
    );
    let out = s
        .blackout()
        .args(["soak", "--fail-syncs", "--fail-at", "rename:x"])
        .args(["--client", "true", "--checker", "true", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: --fail-at `rename:x`: only a sync can be made to fail (fsync, fdatasync, fsyncdir, or *), not rename\n"
    );
    s.assert_clean();
}

/// `blackout soak --fail-syncs` of the example log server with `--fsync`
/// (a failed fdatasync stops it) or `--fsync --retry` (retried until it
/// returns 0), its records 4 KB long so most cross a page boundary.
fn soak_kvlog_failing_syncs(s: &Scratch, retry: bool) -> std::process::Output {
    let kv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/live/kvlog.py");
    let kv = kv.to_str().unwrap();
    let mut service = vec!["python3", kv, "serve", "--fsync"];
    if retry {
        service.push("--retry");
    }
    s.blackout()
        .env("KV_VALUE_BYTES", "4000")
        .args(["soak", "--crashes", "6", "--seed", "5"])
        .args(["--ack-prefix", "ok", "--fail-syncs"])
        // Runs long enough for the client to put and the server to sync
        // after the failure is armed, however loaded the machine.
        .args(["--run-min", "1s", "--run-max", "2s"])
        .args(["--ready", &format!("python3 {kv} ready")])
        .args(["--client", &format!("python3 {kv} load")])
        .args(["--checker", &format!("python3 {kv} check")])
        .arg("--")
        .args(service)
        .output()
        .unwrap()
}

#[test]
fn soak_with_failing_syncs_passes_a_server_that_stops_and_fails_one_that_retries() {
    let s = Scratch::new();
    let out = soak_kvlog_failing_syncs(&s, false);
    let stdout = stdout_with(&out, 0);
    assert!(
        stdout.starts_with("PASS: 6 crashes (seed 5, keep none, syncs failing at `*`): all "),
        "{stdout}"
    );
    // The seed arms a failure before crashes 1, 3, 4 and 6; when the
    // server syncs after it (timing) it fails, drops the record, and the
    // server stops: every promise made holds.
    assert!(
        stdout.contains("\nsync failures: armed before 4 of 6 crashes, "),
        "{stdout}"
    );
    assert!(
        stdout.contains(": fdatasync(data.log) failed with EIO (armed ")
            && stdout.contains(
                "), dropping 1 op; then every promise held\n    dropped write data.log ["
            ),
        "{stdout}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("; fdatasync(data.log) failed with EIO"),
        "{err}"
    );
    s.assert_clean();
    let out = soak_kvlog_failing_syncs(&s, true);
    let stdout = stdout_with(&out, 1);
    assert!(stdout.starts_with("FAIL: after crash "), "{stdout}");
    assert!(
        stdout.contains(
            "(seed 5, keep none, syncs failing at `*`), a promise broke: acknowledged put k"
        ),
        "{stdout}"
    );
    // The record whose fdatasync failed was acknowledged after the retry
    // returned 0; it crossed into a page written again later, not the page
    // it started in.
    assert!(
        stdout.contains("), dropping 1 op; then the checker found a promise broken\n    dropped write data.log ["),
        "{stdout}"
    );
    s.assert_clean();
}
