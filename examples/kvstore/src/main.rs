//! kvstore: a small log-structured key-value store, and its own recovery
//! checker, with durability bugs that can be switched on one by one.
//!
//! ```text
//! kvstore [--bug NAME]... put KEY VALUE   store one pair, print `ack KEY=VALUE`
//! kvstore [--bug NAME]... load N          put k0=v0 .. k{N-1}=v{N-1}, compacting every 4
//! kvstore [--bug NAME]... get KEY         recover, print the value
//! kvstore [--bug NAME]... check           recover and check against the acks
//! kvstore bugs                            list the bugs
//! ```
//!
//! Files in the working directory: `kv.log` (appended records) and `kv.snap`
//! (a compacted snapshot, the same format). A record is `len` (u32 LE),
//! `crc` (u32 LE, CRC-32 of `len` and the payload) and the payload
//! `KEY=VALUE`. Recovery reads the snapshot, then the log up to its first
//! record that is short or fails its checksum (a torn append).
//!
//! `check` is a blackout checker: it recovers as a restart would, requires
//! every acknowledged pair (`BLACKOUT_ACKED`, lines `ack KEY=VALUE`) to be
//! there, and every recovered pair to be one the program wrote.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

const LOG: &str = "kv.log";
const SNAP: &str = "kv.snap";
const SNAP_TMP: &str = "kv.snap.tmp";
/// Compact after this many puts in `load`.
const COMPACT_EVERY: usize = 4;

/// The planted bugs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bug {
    /// Print the ack before the log append is fsynced.
    AckBeforeFsync,
    /// Create the log file without fsyncing the directory.
    NoLogDirFsync,
    /// Rename the snapshot into place without fsyncing the directory, then
    /// truncate the log.
    SnapshotNoDirFsync,
    /// Rename the snapshot into place before its data is fsynced.
    SnapshotUnsyncedData,
    /// Rewrite the snapshot in place (truncate, then write) instead of
    /// writing a new file and renaming it.
    SnapshotInPlace,
    /// Recovery does not verify record checksums.
    NoChecksum,
}

const BUGS: [(Bug, &str, &str); 6] = [
    (
        Bug::AckBeforeFsync,
        "ack-before-fsync",
        "acknowledges a put before the log append is fsynced",
    ),
    (
        Bug::NoLogDirFsync,
        "no-log-dir-fsync",
        "creates the log file without fsyncing the directory",
    ),
    (
        Bug::SnapshotNoDirFsync,
        "snapshot-no-dir-fsync",
        "renames the snapshot into place without fsyncing the directory, then truncates the log",
    ),
    (
        Bug::SnapshotUnsyncedData,
        "snapshot-unsynced-data",
        "renames the snapshot into place before fsyncing its data",
    ),
    (
        Bug::SnapshotInPlace,
        "snapshot-in-place",
        "rewrites the snapshot in place (truncate, then write)",
    ),
    (
        Bug::NoChecksum,
        "no-checksum",
        "recovery does not verify record checksums",
    ),
];

struct Store {
    bugs: Vec<Bug>,
}

impl Store {
    fn has(&self, b: Bug) -> bool {
        self.bugs.contains(&b)
    }

    fn record(key: &str, value: &str) -> Vec<u8> {
        let payload = format!("{key}={value}");
        let len = (payload.len() as u32).to_le_bytes();
        let mut h = crc32fast::Hasher::new();
        h.update(&len);
        h.update(payload.as_bytes());
        let mut r = Vec::with_capacity(8 + payload.len());
        r.extend_from_slice(&len);
        r.extend_from_slice(&h.finalize().to_le_bytes());
        r.extend_from_slice(payload.as_bytes());
        r
    }

    fn open_log(&self) -> io::Result<File> {
        let created = !Path::new(LOG).exists();
        let f = OpenOptions::new().append(true).create(true).open(LOG)?;
        if created && !self.has(Bug::NoLogDirFsync) {
            sync_dir()?;
        }
        Ok(f)
    }

    fn put(&self, log: &mut File, key: &str, value: &str) -> io::Result<()> {
        log.write_all(&Self::record(key, value))?;
        if self.has(Bug::AckBeforeFsync) {
            ack(key, value)?;
            log.sync_data()?;
        } else {
            log.sync_data()?;
            ack(key, value)?;
        }
        Ok(())
    }

    fn compact(&self, log: &File, map: &BTreeMap<String, String>) -> io::Result<()> {
        let mut data = Vec::new();
        for (k, v) in map {
            data.extend_from_slice(&Self::record(k, v));
        }
        if self.has(Bug::SnapshotInPlace) {
            let mut f = File::create(SNAP)?;
            f.write_all(&data)?;
            f.sync_all()?;
            sync_dir()?;
        } else {
            let mut f = File::create(SNAP_TMP)?;
            f.write_all(&data)?;
            if !self.has(Bug::SnapshotUnsyncedData) {
                f.sync_all()?;
            }
            drop(f);
            fs::rename(SNAP_TMP, SNAP)?;
            if !self.has(Bug::SnapshotNoDirFsync) {
                sync_dir()?;
            }
        }
        // Everything in the log is now in the snapshot.
        log.set_len(0)?;
        log.sync_all()
    }

    /// Reads records until the first short or (unless the bug) corrupt one.
    fn read_records(&self, bytes: &[u8], map: &mut BTreeMap<String, String>) {
        let mut at = 0;
        while bytes.len() - at >= 8 {
            let len_bytes: [u8; 4] = bytes[at..at + 4].try_into().unwrap_or_default();
            let len = u32::from_le_bytes(len_bytes) as usize;
            let crc = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap_or_default());
            let Some(payload) = bytes.get(at + 8..at + 8 + len) else {
                return; // short: a torn append
            };
            if !self.has(Bug::NoChecksum) {
                let mut h = crc32fast::Hasher::new();
                h.update(&len_bytes);
                h.update(payload);
                if h.finalize() != crc {
                    return;
                }
            }
            let text = String::from_utf8_lossy(payload);
            let (k, v) = text.split_once('=').unwrap_or((&text, ""));
            map.insert(k.to_string(), v.to_string());
            at += 8 + len;
        }
    }

    fn recover(&self) -> io::Result<BTreeMap<String, String>> {
        let mut map = BTreeMap::new();
        for file in [SNAP, LOG] {
            match fs::read(file) {
                Ok(bytes) => self.read_records(&bytes, &mut map),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(map)
    }
}

fn sync_dir() -> io::Result<()> {
    File::open(".")?.sync_all()
}

fn ack(key: &str, value: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "ack {key}={value}")?;
    out.flush()
}

/// Whether a pair is one `load` writes: `kN=vN`.
fn intended(k: &str, v: &str) -> bool {
    k.strip_prefix('k').is_some_and(|n| {
        !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && v == format!("v{n}")
    })
}

fn check(store: &Store) -> Result<(), String> {
    let map = store
        .recover()
        .map_err(|e| format!("recovery failed: {e}"))?;
    let acked = std::env::var("BLACKOUT_ACKED").unwrap_or_default();
    for line in acked.lines() {
        let Some((k, v)) = line.strip_prefix("ack ").and_then(|p| p.split_once('=')) else {
            continue;
        };
        match map.get(k) {
            Some(got) if got == v => {}
            Some(got) => return Err(format!("acknowledged {k}={v}, recovered {k}={got}")),
            None => return Err(format!("acknowledged {k}={v} is lost")),
        }
    }
    if let Some((k, v)) = map.iter().find(|(k, v)| !intended(k, v)) {
        return Err(format!("recovered a pair never written: {:?}={:?}", k, v));
    }
    Ok(())
}

fn run(args: &[String]) -> Result<(), String> {
    let mut bugs = Vec::new();
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--bug" {
            let name = it.next().ok_or("--bug needs a name (see `kvstore bugs`)")?;
            let bug = BUGS
                .iter()
                .find(|(_, n, _)| n == name)
                .ok_or_else(|| format!("no bug named `{name}` (see `kvstore bugs`)"))?;
            bugs.push(bug.0);
        } else {
            rest.push(a.as_str());
        }
    }
    let store = Store { bugs };
    let io = |e: io::Error| e.to_string();
    match rest.as_slice() {
        ["put", k, v] => {
            let mut log = store.open_log().map_err(io)?;
            store.put(&mut log, k, v).map_err(io)
        }
        ["load", n] => {
            let n: usize = n.parse().map_err(|_| format!("not a count: {n}"))?;
            let mut map = store.recover().map_err(io)?;
            let mut log = store.open_log().map_err(io)?;
            for i in 0..n {
                let (k, v) = (format!("k{i}"), format!("v{i}"));
                store.put(&mut log, &k, &v).map_err(io)?;
                map.insert(k, v);
                if (i + 1) % COMPACT_EVERY == 0 {
                    store.compact(&log, &map).map_err(io)?;
                }
            }
            Ok(())
        }
        ["get", k] => {
            let map = store.recover().map_err(io)?;
            let v = map.get(*k).ok_or_else(|| format!("{k}: not found"))?;
            println!("{v}");
            Ok(())
        }
        ["check"] => check(&store),
        ["bugs"] => {
            for (_, name, what) in BUGS {
                println!("{name:<24} {what}");
            }
            Ok(())
        }
        _ => Err(
            "usage: kvstore [--bug NAME]... put KEY VALUE | load N | get KEY | check | bugs".into(),
        ),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kvstore: {e}");
            ExitCode::FAILURE
        }
    }
}
