//! The example workloads of `examples/`, each recorded with both recorders
//! as the scripts beside it run it, at small sizes.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use blackout_record::RecordConfig;

use super::{command, have, repo, same};

fn examples() -> PathBuf {
    repo().join("examples")
}

/// `python3 examples/PATH ARGS...` as a command.
fn python(path: &str, args: &[&str]) -> Vec<OsString> {
    let mut cmd = vec!["python3".into(), examples().join(path).into_os_string()];
    cmd.extend(args.iter().map(OsString::from));
    cmd
}

#[test]
fn bigwrite_writing_4_mib() {
    if !have("python3") {
        eprintln!("skipped: no python3");
        return;
    }
    let t = same(
        "bigwrite.py 4",
        &RecordConfig::new(python("bigwrite/bigwrite.py", &["4"])),
    );
    assert_eq!(t.data.len(), (4 << 20) + "saved\n".len() as u64);
    // And one byte a gibibyte into a file (its default).
    let t = same(
        "farbyte.py",
        &RecordConfig::new(python("bigwrite/farbyte.py", &[])),
    );
    assert!(t.op_log_text().contains("off=1073741824 len=1"));
}

#[test]
fn failsync_save_in_both_modes() {
    if !have("python3") {
        eprintln!("skipped: no python3");
        return;
    }
    // No sync fails here: the two modes make the same calls, each recorded.
    for mode in ["retry", "fatal"] {
        let t = same(
            &format!("save.py {mode}"),
            &RecordConfig::new(python("failsync/save.py", &[mode])),
        );
        assert!(t.op_log_text().contains("data.txt"));
    }
}

#[test]
fn bench_appender_and_acklog() {
    if !have("python3") {
        eprintln!("skipped: no python3");
        return;
    }
    let t = same(
        "appender.py 2000",
        &RecordConfig::new(python("bench/appender.py", &["2000"])),
    );
    assert!(t.ops.len() > 2000, "{}", t.ops.len());
    let t = same(
        "acklog.py 300",
        &RecordConfig::new(python("bench/acklog.py", &["300"])),
    );
    assert!(t.ops.len() > 300, "{}", t.ops.len());
}

/// examples/sqlite/workload.sh in journal mode `mode` at every synchronous
/// level the SQLite matrix runs (`off`, `normal`, `full`, `extra`), its
/// database and table made by the setup as the matrix makes them, the
/// shared memory file volatile.
fn sqlite_workload(mode: &str) {
    if !have("sqlite3") || !have("stdbuf") {
        eprintln!("skipped: no sqlite3 or stdbuf");
        return;
    }
    let workload = examples().join("sqlite/workload.sh");
    for level in ["off", "normal", "full", "extra"] {
        let mut cfg = RecordConfig::new(command(&["sh", workload.to_str().unwrap(), mode, level]));
        cfg.setup = Some(format!(
            "sqlite3 db 'PRAGMA journal_mode={mode}; CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);' >/dev/null"
        ));
        cfg.volatile = vec!["*-shm".into()];
        let t = same(&format!("workload.sh {mode} {level}"), &cfg);
        assert!(t.op_log_text().contains("\"ack 4\\n\""));
    }
}

#[test]
fn sqlite_workload_delete() {
    sqlite_workload("delete");
}

#[test]
fn sqlite_workload_truncate() {
    sqlite_workload("truncate");
}

#[test]
fn sqlite_workload_persist() {
    sqlite_workload("persist");
}

#[test]
fn sqlite_workload_wal() {
    sqlite_workload("wal");
}

#[test]
fn sqlite_workload_on_a_table_of_a_megabyte() {
    // examples/sqlite/size.sh at its smallest table: ten rollback-journal
    // transactions on a database of 1 MB.
    if !have("sqlite3") || !have("stdbuf") {
        eprintln!("skipped: no sqlite3 or stdbuf");
        return;
    }
    let workload = examples().join("sqlite/workload.sh");
    let mut cfg = RecordConfig::new(command(&[
        "sh",
        workload.to_str().unwrap(),
        "DELETE",
        "FULL",
        "10",
    ]));
    let rows = (1 << 20) / 1100;
    cfg.setup = Some(format!(
        "sqlite3 db 'PRAGMA journal_mode=DELETE; CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB); WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT {rows}) INSERT INTO t SELECT x+1000000, randomblob(1000) FROM c;' >/dev/null"
    ));
    let t = same("workload.sh DELETE FULL 10 (1 MB)", &cfg);
    assert!(t.op_log_text().contains("\"ack 10\\n\""));
}

/// The kvstore example built (as the workspace builds it) into this test's
/// own target directory: a few seconds the first time (its one dependency,
/// crc32fast, is this crate's too), nothing after.
fn kvstore() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        // This test is TARGET/PROFILE/deps/differential-HASH.
        let exe = std::env::current_exe().unwrap();
        let target = exe.ancestors().nth(3).unwrap().to_path_buf();
        let out = Command::new(env!("CARGO"))
            .args(["build", "--locked", "-q", "-p", "kvstore", "--target-dir"])
            .arg(&target)
            .current_dir(repo())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "building kvstore: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        target.join("debug/kvstore")
    })
}

#[test]
fn kvstore_with_each_bug() {
    let kv = kvstore().to_str().unwrap();
    let out = Command::new(kv).arg("bugs").output().unwrap();
    let list = String::from_utf8(out.stdout).unwrap();
    let bugs: Vec<&str> = list.lines().filter_map(|l| l.split(' ').next()).collect();
    assert!(bugs.len() >= 6, "{list}");
    // `load 8` (compacting every 4) as its own tests record it, with no
    // bug and with each, then a single put.
    for bug in std::iter::once("none").chain(bugs) {
        let mut args = vec![kv];
        if bug != "none" {
            args.extend(["--bug", bug]);
        }
        args.extend(["load", "8"]);
        let t = same(
            &format!("kvstore {bug}"),
            &RecordConfig::new(command(&args)),
        );
        assert!(t.op_log_text().contains("kv.snap"), "{bug}");
    }
    same(
        "kvstore put",
        &RecordConfig::new(command(&[kv, "put", "k", "v"])),
    );
}

/// A client of kvlog.py's server: `n` puts, one at a time, each printed
/// once acknowledged (`kvlog.py load` puts until the server stops, so how
/// many it makes is the scheduler's).
const KVLOG_CLIENT: &str = r#"
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(os.path.join(os.environ["BLACKOUT_SOAK_DIR"], "kv.sock"))
f = s.makefile("rwb")
for i in range(int(sys.argv[1])):
    f.write(b"put k%d v%d\n" % (i, i))
    f.flush()
    assert f.readline() == b"ok\n"
    print("ok k%d v%d" % (i, i), flush=True)
"#;

#[test]
fn live_kvlog_server() {
    if !have("python3") {
        eprintln!("skipped: no python3");
        return;
    }
    // The server kvlog.py serves under `blackout soak`, started, probed
    // until ready (its socket made, then `kvlog.py ready`), sent 20 puts
    // and stopped; its socket outside the directory under test.
    let kvlog = examples().join("live/kvlog.py");
    let sock = tempfile::tempdir().unwrap();
    // (`--retry` differs only once a sync fails, and none does here.)
    for flags in ["", "--fsync"] {
        let script = format!(
            "python3 {kvlog} serve {flags} & srv=$!
             until [ -S \"$BLACKOUT_SOAK_DIR/kv.sock\" ] && python3 {kvlog} ready; do sleep 0.05; done
             python3 -c '{KVLOG_CLIENT}' 20
             kill $srv; wait $srv || true",
            kvlog = kvlog.display()
        );
        let mut cfg = RecordConfig::new(command(&["sh", "-c", &script]));
        cfg.env = vec![("BLACKOUT_SOAK_DIR".into(), sock.path().into())];
        let t = same(&format!("kvlog.py serve {flags}"), &cfg);
        let log = t.op_log_text();
        assert!(log.contains("\"ok k19 v19\""), "{log}");
        let syncs = log
            .lines()
            .filter(|l| l.split_whitespace().nth(1) == Some("fdatasync"))
            .count();
        assert_eq!(syncs, if flags.is_empty() { 0 } else { 20 }, "{log}");
    }
}
