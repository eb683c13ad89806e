//! Helpers shared by the end-to-end test files.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::process::Output;

use assert_cmd::cargo::CommandCargoExt;
use serde_json::Value;

/// A test's own scratch: a TMPDIR for blackout (must be empty at the end) and
/// a place for traces.
pub struct Scratch {
    pub root: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Scratch {
        let root = tempfile::tempdir().unwrap();
        fs::create_dir(root.path().join("tmp")).unwrap();
        Scratch { root }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    pub fn blackout(&self) -> Command {
        let mut c = Command::cargo_bin("blackout").unwrap();
        c.env("TMPDIR", self.path("tmp"));
        c
    }

    /// Asserts blackout left nothing in its temp dir.
    pub fn assert_clean(&self) {
        let left: Vec<_> = fs::read_dir(self.path("tmp")).unwrap().collect();
        assert!(left.is_empty(), "temp dirs left behind: {left:?}");
    }

    /// Records a workload and returns the op log as JSON.
    pub fn record(&self, extra: &[&str], workload: &[&str]) -> Value {
        let trace = self.path("run.trace");
        let out = self
            .blackout()
            .arg("record")
            .arg("-o")
            .arg(&trace)
            .args(extra)
            .arg("--")
            .args(workload)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "record failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.assert_clean();
        let out = self
            .blackout()
            .arg("ops")
            .arg("--json")
            .arg(&trace)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// Waits (up to 30 s) until `ready` holds, then sends `sig` to `child`, and
/// asserts blackout exits 128 + the signal's number, leaving no temp dir.
pub fn signal_when(
    s: &Scratch,
    child: &mut std::process::Child,
    sig: nix::sys::signal::Signal,
    mut ready: impl FnMut() -> bool,
) {
    use std::time::{Duration, Instant};
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < Duration::from_secs(30), "never got ready");
        std::thread::sleep(Duration::from_millis(20));
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + sig as i32), "after {sig}");
    assert!(start.elapsed() < Duration::from_secs(30), "slow to stop");
    assert_eq!(mounts_under(&s.path("")), Vec::<String>::new());
    s.assert_clean();
}

/// The mounts this process can see at or under `dir` (a run's FUSE
/// views and state images must all be gone when it ends).
pub fn mounts_under(dir: &Path) -> Vec<String> {
    let mounts = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let dir = dir.to_string_lossy().trim_end_matches('/').to_string();
    mounts
        .lines()
        .filter_map(|l| l.split(' ').nth(1))
        .filter(|m| *m == dir || m.starts_with(&format!("{dir}/")))
        .map(str::to_string)
        .collect()
}

/// The processes whose command line contains `marker` (a process-tree scan
/// of /proc: whatever a run left behind, reparented or not).
pub fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) || name == std::process::id().to_string() {
            continue;
        }
        let Ok(cmdline) = fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(marker) {
            found.push(format!("{name}: {cmdline}"));
        }
    }
    found
}

/// A marker no other process has: a sleep duration unique to this test
/// process and call.
pub fn unique_sleep() -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "1000.{}{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// Compiles a C program with debug info into the scratch.
pub fn compile(s: &Scratch, name: &str, src: &str) -> PathBuf {
    let c = s.path(&format!("{name}.c"));
    fs::write(&c, src).unwrap();
    let bin = s.path(name);
    let st = Command::new("cc")
        .args(["-O0", "-g", "-pthread", "-o"])
        .arg(&bin)
        .arg(&c)
        .status()
        .expect("a C compiler (cc)");
    assert!(st.success());
    bin
}

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Whether `tool` is installed. Under CI (`CI` set) a missing tool fails
/// the test, since scripts/test installs it; elsewhere the test says what it
/// did not check, and the caller skips that part.
pub fn have_tool(tool: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "{tool} is not installed, and CI must run this test (scripts/test installs it)"
        );
        eprintln!("note: {tool} is not installed; this part of the test is skipped (CI runs it)");
    }
    found
}

/// The bundled save example's directory.
pub fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/save")
        .canonicalize()
        .unwrap()
}

pub fn save_checker() -> String {
    format!("sh {}", examples().join("check.sh").display())
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A trace's op log as `blackout ops --json` prints it.
pub fn ops_json(s: &Scratch, trace: &Path) -> Value {
    let out = s
        .blackout()
        .args(["ops", "--json"])
        .arg(trace)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Runs `blackout run ARGS --json` and returns (exit code, result, output).
pub fn run_json(s: &Scratch, args: &[&str]) -> (i32, Value, Output) {
    let out = s
        .blackout()
        .arg("run")
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            text(&out.stdout),
            text(&out.stderr)
        )
    });
    s.assert_clean();
    counts_hold(&v);
    (out.status.code().unwrap(), v, out)
}

/// Every count of a JSON report against its whole: a model's crash points
/// left partly unenumerated or explored in full, states checked, failing
/// states, a fix's states checked and still failing, never more than what
/// they are part of; each window's crash points in order.
pub fn counts_hold(v: &Value) {
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let len = |v: &Value| v.as_array().map_or(0, Vec::len) as u64;
    for m in v["result"]["models"].as_array().into_iter().flatten() {
        let cov = &m["coverage"];
        // The crash points explored: those the rest explored in full among
        // them, and every one partly covered.
        for part in [
            len(&cov["partial_crash_points"]),
            n(&cov["full_crash_points"]),
        ] {
            assert!(
                part <= n(&cov["crash_points"]),
                "a part of the crash points explored larger than all of them: {cov:#}"
            );
        }
        assert!(n(&m["states_checked"]) <= n(&m["distinct"]), "{m:#}");
        assert!(
            n(&m["distinct"]) <= n(&m["states"]).max(n(&m["distinct"])),
            "{m:#}"
        );
        let failing: u64 = m["causes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|g| n(&g["states"]))
            .sum();
        assert!(
            failing <= n(&m["distinct"]),
            "{failing} failing states of {}",
            n(&m["distinct"])
        );
        for g in m["causes"].as_array().into_iter().flatten() {
            for w in g["windows"]
                .as_array()
                .into_iter()
                .flatten()
                .chain([&g["window"]])
            {
                assert!(n(&w["crash_first"]) <= n(&w["crash_last"]), "{w:#}");
            }
            // A fix's check: what it checked and what still fails, within
            // its states; a cause's own still failing within them.
            let f = &g["fix"];
            assert!(n(&f["states_checked"]) <= n(&f["states"]), "{f:#}");
            assert!(n(&f["still_failing"]) <= n(&f["states_checked"]), "{f:#}");
            assert!(
                n(&f["own"]["still_failing"]) <= n(&f["still_failing"]),
                "{f:#}"
            );
        }
        // The causes a fix set leaves out are causes of the model.
        for c in m["fix_set"]["unfixable"].as_array().into_iter().flatten() {
            assert!(n(c) < len(&m["causes"]), "{:#}", m["fix_set"]);
        }
    }
}

/// Runs blackout with `args` and `TMPDIR` on a 256 KiB tmpfs of its own,
/// mounted for the call; returns its output and what it left in that
/// `TMPDIR`. `None` where a tmpfs cannot be mounted (not root): there is
/// nothing to check there.
pub fn on_a_small_tmpfs(s: &Scratch, args: &[&std::ffi::OsStr]) -> Option<(Output, Vec<PathBuf>)> {
    let small = s.path("small");
    fs::create_dir(&small).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(&small)
        .status()
        .is_ok_and(|st| st.success());
    if !mounted {
        eprintln!("cannot mount a tmpfs here; not checked");
        return None;
    }
    let out = s
        .blackout()
        .env("TMPDIR", &small)
        .args(args)
        .output()
        .unwrap();
    let left = fs::read_dir(&small)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let _ = Command::new("umount").arg(&small).status();
    Some((out, left))
}

/// The SQLite example's `--setup`: a table `t` in `db`, in journal mode
/// `mode` (as `examples/sqlite/workload.sh` expects it).
pub fn sqlite_setup(mode: &str) -> String {
    format!(
        "sqlite3 db 'PRAGMA journal_mode={mode}; CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);' >/dev/null"
    )
}

/// `blackout run` arguments for the SQLite example under posix: its
/// acknowledgements, its `*-shm`, its table made in journal mode
/// `journal`, its checker, then `extra`, and `workload.sh JOURNAL SYNC
/// COUNT` after `--`.
pub fn sqlite_run_args(journal: &str, sync: &str, count: &str, extra: &[&str]) -> Vec<String> {
    let sqlite = repo().join("examples/sqlite");
    let mut args: Vec<String> = [
        "--model",
        "posix",
        "--ack-prefix",
        "ack ",
        "--volatile",
        "*-shm",
    ]
    .map(String::from)
    .to_vec();
    args.extend(["--setup".into(), sqlite_setup(journal)]);
    args.extend([
        "--checker".into(),
        format!("sh {}", sqlite.join("check.sh").display()),
    ]);
    args.extend(extra.iter().map(|a| a.to_string()));
    args.extend(["--".into(), "sh".into()]);
    args.push(sqlite.join("workload.sh").to_string_lossy().into_owned());
    args.extend([journal, sync, count].map(String::from));
    args
}

/// Whether the FUSE view can be mounted here (root and /dev/fuse): where it
/// cannot, runs write directories, which other tests cover.
pub fn fuse_here() -> bool {
    use std::os::unix::fs::MetadataExt;
    // /proc/self belongs to the process's effective user.
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    let here = root && std::path::Path::new("/dev/fuse").exists();
    if !here {
        eprintln!("note: the FUSE view needs root and /dev/fuse; its part of this test is skipped");
    }
    here
}

/// The materializer other than `dir` to compare with it: `fuse` where the
/// view can be mounted (forced: the run would write small states out).
pub fn view_or_dir() -> &'static str {
    if fuse_here() {
        "fuse"
    } else {
        "dir"
    }
}
