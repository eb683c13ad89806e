//! Three small ways of saving data, in plain `std::fs`, whose durability
//! `tests/scenarios.rs` checks with `blackout::Scenario`: one correct, two
//! with a missing sync.
#![deny(missing_docs)]

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// Syncs the directory `dir` itself (its entries).
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Replaces `dir/name` atomically and durably: write a temporary file,
/// fsync it, rename it over the old one, fsync the directory.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("durable-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// durable_test::atomic_replace(&dir, "doc", b"v2").unwrap();
/// assert_eq!(std::fs::read(dir.join("doc")).unwrap(), b"v2");
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn atomic_replace(dir: &Path, name: &str, data: &[u8]) -> io::Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let mut f = File::create(&tmp)?;
    f.write_all(data)?;
    f.sync_all()?;
    fs::rename(&tmp, dir.join(name))?;
    sync_dir(dir)
}

/// Creates `dir/name` holding `data` and fsyncs the file, but never its
/// directory: the new name may be lost in a crash.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("durable-create-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// durable_test::create_without_dir_sync(&dir, "data", b"x").unwrap();
/// assert_eq!(std::fs::read(dir.join("data")).unwrap(), b"x");
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn create_without_dir_sync(dir: &Path, name: &str, data: &[u8]) -> io::Result<()> {
    let mut f = File::create(dir.join(name))?;
    f.write_all(data)?;
    f.sync_all()
}

/// A check for a crash state: once `promise` was made, `dir/name` must
/// hold `want` (before it, anything goes).
///
/// ```
/// let dir = std::env::temp_dir().join(format!("durable-holds-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("doc"), "v1").unwrap();
/// let promised = ["saved v2".to_string()];
/// assert!(durable_test::holds(&dir, &[], "saved v2", "doc", "v2").is_ok());
/// assert_eq!(
///     durable_test::holds(&dir, &promised, "saved v2", "doc", "v2"),
///     Err("saved v2, but doc holds \"v1\"".to_string())
/// );
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn holds(
    dir: &Path,
    promised: &[String],
    promise: &str,
    name: &str,
    want: &str,
) -> Result<(), String> {
    if !promised.iter().any(|p| p == promise) {
        return Ok(());
    }
    match fs::read_to_string(dir.join(name)) {
        Ok(text) if text == want => Ok(()),
        Ok(text) => Err(format!("{promise}, but {name} holds {text:?}")),
        Err(e) => Err(format!("{promise}, but {name}: {e}")),
    }
}

/// A key-value store: a base file of `key=value` lines, and a log of the
/// same lines appended (and fsynced) on every set. Reading applies the log
/// over the base.
#[derive(Debug)]
pub struct LogStore<'a> {
    dir: &'a Path,
}

impl<'a> LogStore<'a> {
    /// The store in `dir`: its base file made (empty) and made durable
    /// when there is none.
    pub fn open(dir: &'a Path) -> io::Result<LogStore<'a>> {
        let base = dir.join("base");
        if !base.exists() {
            File::create(&base)?.sync_all()?;
            sync_dir(dir)?;
        }
        Ok(LogStore { dir })
    }

    /// The store in `dir` as it is, for reading only.
    pub fn at(dir: &'a Path) -> LogStore<'a> {
        LogStore { dir }
    }

    /// Sets `key` to `value`: appended to the log, which is fsynced.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("durable-kv-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// let store = durable_test::LogStore::open(&dir).unwrap();
    /// store.set("k", "v1").unwrap();
    /// store.close().unwrap();
    /// assert_eq!(durable_test::LogStore::at(&dir).get("k").unwrap().as_deref(), Some("v1"));
    /// std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn set(&self, key: &str, value: &str) -> io::Result<()> {
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("log"))?;
        writeln!(log, "{key}={value}")?;
        log.sync_all()?;
        // The log's name must survive too.
        sync_dir(self.dir)
    }

    /// Every key's value: the base, then the log over it.
    pub fn read_all(&self) -> io::Result<BTreeMap<String, String>> {
        let mut map = BTreeMap::new();
        for name in ["base", "log"] {
            let text = match fs::read_to_string(self.dir.join(name)) {
                Ok(t) => t,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            for line in text.lines() {
                if let Some((k, v)) = line.split_once('=') {
                    map.insert(k.to_string(), v.to_string());
                }
            }
        }
        Ok(map)
    }

    /// `key`'s value, if it has one.
    pub fn get(&self, key: &str) -> io::Result<Option<String>> {
        Ok(self.read_all()?.remove(key))
    }

    /// Closes the store: folds the log into the base file (rewritten in
    /// place), removes the log and fsyncs the directory. The bug: the base file's new contents are
    /// never fsynced, so the directory sync can make the log's removal
    /// durable before the data it was folded into.
    pub fn close(&self) -> io::Result<()> {
        let all = self.read_all()?;
        let mut base = OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(self.dir.join("base"))?;
        let text: String = all.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        base.write_all(text.as_bytes())?;
        drop(base);
        fs::remove_file(self.dir.join("log"))?;
        sync_dir(self.dir)
    }
}
