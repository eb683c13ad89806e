//! The native recorder against strace: the same workloads recorded with
//! both must give the same op log (each op, its inodes, offsets, bytes,
//! syscall and path, and what syncs it), the same output and the same
//! exit. Call numbers (`@line`) are not compared: strace numbers log lines,
//! the native recorder calls.
//!
//! The workloads: examples/save/save.sh in each mode, a C program that
//! forks, runs a thread, execs, is interrupted by signals (one restarting
//! a blocked read, one stopping and continuing a child) and leaves a child
//! running when it exits, a Python program, and sqlite3 running
//! transactions (rollback journal, and WAL with its shared memory file
//! volatile).
//!
//! Every golden case of tests/golden/ (`golden`), its program run as
//! tests/golden/record.sh runs it. Most must give equal op logs; where the
//! program makes that impossible the comparison keeps what is
//! deterministic, and says so at the case: threads racing each other
//! (threads-writer: each file's ops in order; interleaved-resumed, a thread
//! syncing while another appends: each file's ops in order apart from its
//! syncs, which are counted), a name `mkstemp` draws at random
//! (rename-in-from-tmp: masked), and the two recordings that must be
//! refused (refuse-mmap, refuse-rename-in: the same call, kind and message
//! from both, numbers masked).
//!
//! The example workloads of examples/ (`examples`), at small sizes:
//! bigwrite.py (4 MiB) and farbyte.py, failsync/save.py in both modes,
//! bench/appender.py and acklog.py, sqlite/workload.sh in every journal
//! mode and synchronous level of the SQLite matrix (setup as the matrix
//! and scale.sh make it, the `-shm` file volatile) and on size.sh's
//! smallest table, kvstore `load 8` with no bug and with each (the store
//! built into this test's target directory with cargo, a few seconds once),
//! and live/kvlog.py's server, with and without `--fsync`, sent a fixed
//! number of puts by a client here (`kvlog.py load` puts until its server
//! is stopped: how many is the scheduler's).
//!
//! The programs of tests/engines/ (`engines`), each as its README runs it
//! (its setup first, unrecorded): overwrite.py in each mode, metapage.py
//! with and without its bug, csumlog.py, inplace.py at full size and at
//! 16 blocks, records.py straddling and aligned and skiplog.py (at a tenth
//! of the README's counts: each record is synced, a few milliseconds on a
//! disk), and blocklog.py plain and with every bug.
//!
//! Not recorded: the programs of examples/audit/ (they install Debian
//! packages and run them; the audit records them itself), live/postgres
//! (a PostgreSQL server and client for `blackout soak` on a live mount,
//! not a recorded program), live/overhead.py (it times fio, sqlite3 and
//! file systems, it is not a workload), durable-test's scenarios (closures
//! run inside its own test binaries through `blackout::Scenario`, which
//! records with strace, with call stacks by default, which the native
//! recorder refuses; their calls are those of the generated programs),
//! the checkers (check*.sh, check-server.*, inplace-check.sh and the
//! engines' `check` and `serve`: run in crash states, never recorded) and the scripts that only drive `blackout` over the workloads
//! above (scale.sh, size.sh, syncs*.sh, fail-syncs.sh, block-size.sh,
//! settle/table.sh, kvstore/table.sh, bench/check-rate.sh and
//! checker-server.sh).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use blackout_oplog::trace::Trace;
use blackout_record::{NativeRecorder, RecordConfig, Recorder, Recording, StraceRecorder};

#[path = "differential/engines.rs"]
mod engines;
#[path = "differential/examples.rs"]
mod examples;
#[path = "differential/golden.rs"]
mod golden;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Both recorders' recordings of `cfg`, strace's first; each must leave
/// its scratch directory empty.
fn both(name: &str, cfg: &RecordConfig) -> (Recording, Recording) {
    let scratch = tempfile::tempdir().unwrap();
    let mut cfg = cfg.clone();
    cfg.scratch_parent = Some(scratch.path().to_path_buf());
    let strace = StraceRecorder::default()
        .record(&cfg)
        .unwrap_or_else(|e| panic!("{name}: strace: {e}"));
    let native = NativeRecorder
        .record(&cfg)
        .unwrap_or_else(|e| panic!("{name}: native: {e}"));
    assert!(
        std::fs::read_dir(scratch.path()).unwrap().next().is_none(),
        "{name}: a scratch directory was left behind"
    );
    (strace, native)
}

/// The same output, exit and bytes of data in both recordings.
fn same_outcome(name: &str, strace: &Recording, native: &Recording) {
    assert_eq!(strace.stdout, native.stdout, "{name}: stdout");
    assert_eq!(strace.trace.exit, native.trace.exit, "{name}: exit");
    assert_eq!(
        strace.trace.data.len(),
        native.trace.data.len(),
        "{name}: data"
    );
}

/// Records `cfg` with both recorders and requires the same ops.
fn same(name: &str, cfg: &RecordConfig) -> Trace {
    let (strace, native) = both(name, cfg);
    let (s, n) = (
        strace.trace.op_log_unnumbered(),
        native.trace.op_log_unnumbered(),
    );
    assert_eq!(
        s, n,
        "{name}: the op logs differ\n--- strace:\n{s}--- native:\n{n}"
    );
    same_outcome(name, &strace, &native);
    native.trace
}

fn command(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

#[test]
fn save_sh_in_every_mode() {
    let save = repo().join("examples/save/save.sh");
    for mode in [
        "full",
        "no-dir-fsync",
        "no-fsync",
        "in-place",
        "extra-fsync",
    ] {
        let mut cfg = RecordConfig::new(command(&["sh", save.to_str().unwrap(), mode]));
        cfg.setup = Some("printf 'version 1\\n' > doc.txt".into());
        let t = same(mode, &cfg);
        assert!(t.ops.len() >= 3, "{mode}: {}", t.op_log_text());
    }
}

#[test]
fn a_c_program_that_forks_threads_execs_and_is_signalled() {
    let build = tempfile::tempdir().unwrap();
    let src = std::fs::read_to_string(repo().join("tests/programs/processes.c")).unwrap();
    let Some(bin) = compiled(build.path(), "processes", &src) else {
        return;
    };
    let cfg = RecordConfig::new(command(&[bin.to_str().unwrap()]));
    let t = same("processes", &cfg);
    let log = t.op_log_text();
    for want in ["late.txt", "sub/f", "-> dir=3 name=child.txt", "fdatasync"] {
        assert!(log.contains(want), "{want} missing from\n{log}");
    }
}

const PYTHON: &str = r#"
import os, threading
def save(name, text):
    tmp = name + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, name)
    d = os.open(".", os.O_RDONLY)
    os.fsync(d)
    os.close(d)
with open("journal", "ab") as j:
    for i in range(50):
        j.write(b"entry %d\n" % i)
        j.flush()
t = threading.Thread(target=save, args=("settings.json", '{"v": 2}\n'))
t.start(); t.join()
os.makedirs("a/b", exist_ok=True)
with open("a/b/c", "w") as f:
    f.write("x" * 10000)
os.truncate("a/b/c", 100)
os.unlink("journal")
print("saved")
"#;

#[test]
fn a_python_program() {
    if !have("python3") {
        eprintln!("skipped: no python3");
        return;
    }
    let cfg = RecordConfig::new(command(&["python3", "-c", PYTHON]));
    let t = same("python", &cfg);
    assert!(t.op_log_text().contains("settings.json"));
}

const SQL: &str = "create table t(k integer primary key, v text);
begin; insert into t values (1, 'one'); insert into t values (2, 'two'); commit;
begin; update t set v = 'uno' where k = 1; commit;
begin; delete from t where k = 2; insert into t values (3, 'three'); commit;
select count(*) from t;";

#[test]
fn sqlite3_running_transactions() {
    if !have("sqlite3") {
        eprintln!("skipped: no sqlite3");
        return;
    }
    let cfg = RecordConfig::new(command(&["sqlite3", "db.sqlite", SQL]));
    let t = same("sqlite (rollback journal)", &cfg);
    assert!(t.op_log_text().contains("db.sqlite-journal"));
    let wal = format!("pragma journal_mode=wal; {SQL}");
    let mut cfg = RecordConfig::new(command(&["sqlite3", "db.sqlite", &wal]));
    cfg.volatile = vec!["*-shm".into()];
    let t = same("sqlite (WAL)", &cfg);
    assert!(t.op_log_text().contains("db.sqlite-wal"));
}

#[test]
fn what_only_strace_records_is_refused() {
    let mut cfg = RecordConfig::new(command(&["true"]));
    cfg.stacks = true;
    let e = NativeRecorder.record(&cfg).unwrap_err();
    assert!(e.to_string().contains("--recorder strace"), "{e}");
}

#[test]
fn a_program_that_cannot_start_is_named_with_its_error() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("noexec");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    let mut cfg = RecordConfig::new(vec![script.clone().into_os_string()]);
    cfg.scratch_parent = Some(dir.path().to_path_buf());
    let e = NativeRecorder.record(&cfg).unwrap_err();
    assert!(e.to_string().contains("EACCES"), "{e}");
}

const THREAD_EXEC_C: &str = r#"
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

static int p[2];
static void *run(void *arg) {
    (void)arg;
    int fd = open("thread.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    write(fd, "thread\n", 7);
    close(fd);
    usleep(100000);
    execl("/bin/sh", "sh", "-c", "echo after > after.txt", (char *)0);
    return 0;
}

int main(void) {
    pipe(p);
    pthread_t t;
    pthread_create(&t, 0, run, 0);
    char c;
    read(p[0], &c, 1); /* never returns: the thread's exec ends it */
    return 1;
}
"#;

/// Compiles `src` with the C compiler (`None` without one).
fn compiled(dir: &Path, name: &str, src: &str) -> Option<PathBuf> {
    if !have("cc") {
        eprintln!("skipped: no C compiler");
        return None;
    }
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).unwrap();
    let bin = dir.join(name);
    cc(&c, &bin, &["-O1"]);
    Some(bin)
}

/// Compiles the C file `c` into `bin` with `flags` (and threads).
fn cc(c: &Path, bin: &Path, flags: &[&str]) {
    let out = Command::new("cc")
        .args(flags)
        .args(["-pthread", "-o"])
        .arg(bin)
        .arg(c)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_thread_that_execs_takes_over_its_process() {
    let build = tempfile::tempdir().unwrap();
    let Some(bin) = compiled(build.path(), "thread_exec", THREAD_EXEC_C) else {
        return;
    };
    let cfg = RecordConfig::new(vec![bin.into_os_string()]);
    let t = same("thread exec", &cfg);
    let log = t.op_log_text();
    assert!(
        log.contains("after.txt") && log.contains("thread.txt"),
        "{log}"
    );
}

#[test]
fn the_output_fd_and_the_environment_are_handed_down() {
    if !have("python3") {
        eprintln!("skipped: no python3");
        return;
    }
    let script = "import os\nprint('not a promise')\nopen('f', 'w').write(os.environ['GREETING'] + '\\n')\nos.write(63, b'saved\\n')\n";
    let mut cfg = RecordConfig::new(command(&["python3", "-c", script]));
    cfg.output_fd = Some(63);
    cfg.env = vec![("GREETING".into(), "hello".into())];
    let t = same("output fd", &cfg);
    assert!(
        t.op_log_text().contains("\"saved\\n\""),
        "{}",
        t.op_log_text()
    );
    assert_eq!(t.data.len(), "hello\nsaved\n".len() as u64);
}

#[test]
fn a_workload_killed_by_a_signal_fails_both_recordings_alike() {
    let scratch = tempfile::tempdir().unwrap();
    let mut cfg = RecordConfig::new(command(&["sh", "-c", "echo x > f; kill -TERM $$"]));
    cfg.scratch_parent = Some(scratch.path().to_path_buf());
    let s = StraceRecorder::default().record(&cfg).unwrap_err();
    let n = NativeRecorder.record(&cfg).unwrap_err();
    assert_eq!(s.to_string(), n.to_string());
    assert!(n.to_string().contains("SIGTERM"), "{n}");
}

#[test]
fn a_workload_past_its_timeout_is_killed_with_everything_it_started() {
    let scratch = tempfile::tempdir().unwrap();
    let marker = format!("1000.{}77", std::process::id());
    let script = format!("sleep {marker} & sleep {marker}");
    let mut cfg = RecordConfig::new(command(&["sh", "-c", &script]));
    cfg.scratch_parent = Some(scratch.path().to_path_buf());
    cfg.timeout = std::time::Duration::from_millis(500);
    let started = std::time::Instant::now();
    let e = NativeRecorder.record(&cfg).unwrap_err();
    assert!(
        matches!(e, blackout_record::RecordError::TimedOut(_)),
        "{e}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let ps = Command::new("pgrep")
        .args(["-f", &marker])
        .output()
        .unwrap();
    assert!(
        ps.stdout.is_empty(),
        "left: {}",
        String::from_utf8_lossy(&ps.stdout)
    );
    assert!(std::fs::read_dir(scratch.path()).unwrap().next().is_none());
}

/// Writes the native recorder makes itself at the seccomp stop (to a
/// regular file it keeps bytes of) and the ones it leaves to the kernel
/// (a file opened read-only, `O_DIRECT`, a buffer it cannot read, a
/// write past the file-size limit once the workload has set one): each
/// returns what it returns under strace, and the file gets the same
/// bytes.
const WRITES_C: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void said(const char *what, long r) {
    printf("%s: %ld %s\n", what, r, r < 0 ? strerror(errno) : "");
    fflush(stdout);
}

int main(void) {
    int fd = open("f", O_RDWR | O_CREAT | O_TRUNC, 0644);
    said("write", write(fd, "0123456789", 10));
    said("pwrite", pwrite(fd, "abc", 3, 100));
    said("write after pwrite", write(fd, "xyz", 3));
    close(open("ro", O_WRONLY | O_CREAT, 0644));
    int ro = open("ro", O_RDONLY);
    said("read-only", write(ro, "no", 2));
    said("bad buffer", write(fd, (const void *)8, 10));
    int d = open("direct", O_WRONLY | O_CREAT | O_DIRECT, 0644);
    void *block;
    if (posix_memalign(&block, 4096, 4096) == 0) {
        memset(block, 'd', 4096);
        said("O_DIRECT", d < 0 ? -1 : write(d, block, 4096));
    }
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {50, 50};
    setrlimit(RLIMIT_FSIZE, &lim);
    int big = open("big", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    char buf[100];
    memset(buf, 'b', sizeof buf);
    said("past the limit", write(big, buf, sizeof buf));
    said("at the limit", write(big, buf, sizeof buf));
    fsync(fd);
    fsync(big);
    return 0;
}
"#;

#[test]
fn writes_the_tracer_makes_or_leaves_to_the_kernel_return_what_the_kernel_returns() {
    let build = tempfile::tempdir().unwrap();
    let Some(bin) = compiled(build.path(), "writes", WRITES_C) else {
        return;
    };
    let cfg = RecordConfig::new(vec![bin.into_os_string()]);
    let t = same("writes", &cfg);
    let log = t.op_log_text();
    // pwrite leaves the offset where it was; the file-size limit cuts the
    // write at 50 bytes and refuses the next (EFBIG), and the writes to
    // standard output (a file of 50 bytes and more by then) too.
    for want in ["off=100 len=3", "off=10 len=3", "off=0 len=50"] {
        assert!(log.contains(want), "{want}: {log}");
    }
    assert!(!log.contains("off=50"), "{log}");
}

/// Native recordings made at once by several threads of one process: a
/// workload's child forked while another thread was starting its own must
/// not keep that one's go-ahead pipe open (each would wait for the other).
#[test]
fn native_recordings_made_at_once_in_one_process_do_not_hold_each_other_up() {
    let (done, finished) = std::sync::mpsc::channel();
    for t in 0..4 {
        let done = done.clone();
        std::thread::spawn(move || {
            for i in 0..8 {
                let cfg = RecordConfig::new(command(&["sh", "-c", "echo hi > f"]));
                let ok = NativeRecorder.record(&cfg).map(|r| r.trace.ops.len());
                done.send((t, i, ok.map_err(|e| e.to_string()))).unwrap();
            }
        });
    }
    drop(done);
    for _ in 0..32 {
        let (t, i, ops) = finished
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("a recording never finished: the recordings hold each other up");
        assert_eq!(ops, Ok(2), "thread {t}, recording {i}");
    }
}
