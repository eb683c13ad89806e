//! The words of faults: what a crash is asked (what it keeps, when it goes
//! off) and what it and the pending report say, in blackout's terms.

use serde::Serialize;

use crate::pending::{summarize, summarize_noted, Keep, OpView};

/// When a crash is set off by a matching op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum When {
    /// The op is refused (it never happened).
    Before,
    /// The op is made, then the power fails.
    After,
}

/// A crash armed to go off at the next op matching a call and a path glob.
#[derive(Debug, Clone)]
pub struct Trigger {
    /// The call (`rename`, `write`, `fsync`, ...), or `*` for any.
    pub call: String,
    /// Matched against the path relative to the mount (and a rename's
    /// destination).
    pub glob: globset::GlobMatcher,
    /// Before or after the op.
    pub when: When,
}

impl Trigger {
    /// Parses `CALL:GLOB` (`rename:*.wal`; a bare `GLOB` matches any call).
    ///
    /// # Errors
    ///
    /// A glob that does not parse, or an unknown call.
    ///
    /// ```
    /// use blackout_live::faults::{Trigger, When};
    /// let t = Trigger::parse("rename:*.wal", When::After).unwrap();
    /// assert!(t.matches("rename", "pg/000001.wal", None));
    /// assert!(!t.matches("write", "pg/000001.wal", None));
    /// assert!(Trigger::parse("renam:*.wal", When::After).is_err());
    /// ```
    pub fn parse(spec: &str, when: When) -> Result<Trigger, String> {
        let (call, glob) = match spec.split_once(':') {
            Some((c, g)) if CALLS.contains(&c) || c == "*" => (c, g),
            Some((c, _)) if c.chars().all(|ch| ch.is_ascii_lowercase()) => {
                return Err(format!(
                    "--at `{spec}`: unknown call `{c}` (one of {}, or *)",
                    CALLS.join(", ")
                ))
            }
            _ => ("*", spec),
        };
        let glob = globset::Glob::new(glob)
            .map_err(|e| format!("--at `{spec}`: {e}"))?
            .compile_matcher();
        Ok(Trigger {
            call: call.to_string(),
            glob,
            when,
        })
    }

    /// Whether an op by `call` on `path` (a rename also to `to`) sets it
    /// off.
    pub fn matches(&self, call: &str, path: &str, to: Option<&str>) -> bool {
        (self.call == "*" || self.call == call)
            && (self.glob.is_match(path) || to.is_some_and(|t| self.glob.is_match(t)))
    }
}

/// The calls a sync failure can be armed at (`*`: any of them).
pub const SYNC_CALLS: [&str; 3] = ["fsync", "fdatasync", "fsyncdir"];

impl Trigger {
    /// Parses the `CALL:GLOB` of a sync failure (`fsync:*.wal`; a bare
    /// `GLOB` matches any sync): the call must be a sync.
    ///
    /// # Errors
    ///
    /// A glob that does not parse, or a call that is not a sync.
    ///
    /// ```
    /// use blackout_live::faults::Trigger;
    /// let t = Trigger::parse_sync("fdatasync:pg/pg_wal/*").unwrap();
    /// assert!(t.matches("fdatasync", "pg/pg_wal/000000010000000000000001", None));
    /// assert!(!t.matches("fsync", "pg/pg_wal/000000010000000000000001", None));
    /// assert!(Trigger::parse_sync("data.log").unwrap().matches("fsync", "data.log", None));
    /// assert!(Trigger::parse_sync("write:data.log").is_err());
    /// ```
    pub fn parse_sync(spec: &str) -> Result<Trigger, String> {
        let t = Trigger::parse(spec, When::After)?;
        if t.call != "*" && !SYNC_CALLS.contains(&t.call.as_str()) {
            return Err(format!(
                "--at `{spec}`: only a sync can be made to fail ({}, or *), not {}",
                SYNC_CALLS.join(", "),
                t.call
            ));
        }
        Ok(t)
    }
}

/// The calls a trigger can name: the ops the live file system records and
/// the syncs.
pub const CALLS: [&str; 19] = [
    "write",
    "truncate",
    "fallocate",
    "create",
    "mknod",
    "mkdir",
    "symlink",
    "link",
    "unlink",
    "rmdir",
    "rename",
    "exchange",
    "chmod",
    "chown",
    "setxattr",
    "removexattr",
    "fsync",
    "fdatasync",
    "fsyncdir",
];

/// What a crash keeps of what is pending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CrashSpec {
    /// Which pending units reach the disk.
    pub keep: Keep,
    /// The seed of the random choices.
    pub seed: u64,
    /// Whether the writes that reach the disk may be torn at sector
    /// boundaries (with `Keep::None`: each pending write reaches it torn,
    /// nothing else).
    pub tear: bool,
}

/// A torn write: the op and what reached the disk of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Torn {
    /// The write.
    pub op: OpView,
    /// What reached the disk, for people.
    pub tear: String,
}

/// An op the backing directory refused to make durable, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Refused {
    /// The op.
    pub op: OpView,
    /// The backing file system's error (`No space left on device (os
    /// error 28)`).
    pub error: String,
}

/// What a crash did: each pending unit dropped, kept or torn, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CrashReport {
    /// Lost.
    pub dropped: Vec<OpView>,
    /// Reached the disk whole.
    pub kept: Vec<OpView>,
    /// Reached the disk torn.
    pub torn: Vec<Torn>,
    /// Kept by the crash, but refused by the backing directory: lost.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<Refused>,
    /// Processes killed first.
    pub killed: usize,
}

impl CrashReport {
    /// The torn writes, one line each (runs folded), with what reached the
    /// disk.
    pub fn torn_lines(&self) -> Vec<String> {
        let noted: Vec<(&OpView, String)> =
            self.torn.iter().map(|t| (&t.op, t.tear.clone())).collect();
        summarize_noted(&noted)
    }

    /// The report for people, one line per op (runs of one call on one
    /// file folded).
    pub fn text(&self) -> String {
        let mut s = format!(
            "crash: {} dropped, {} kept, {} torn",
            self.dropped.len(),
            self.kept.len(),
            self.torn.len()
        );
        if self.killed > 0 {
            s.push_str(&format!(" ({} processes killed first)", self.killed));
        }
        s.push('\n');
        for line in summarize(&self.dropped) {
            s.push_str(&format!("  dropped {line}\n"));
        }
        for line in summarize(&self.kept) {
            let what = line.split(": durable only after").next().unwrap_or(&line);
            s.push_str(&format!("  kept    {what}\n"));
        }
        for line in self.torn_lines() {
            s.push_str(&format!("  torn    {line}\n"));
        }
        for r in &self.refused {
            s.push_str(&format!(
                "  refused {} by the backing directory: {}\n",
                r.op.describe(),
                r.error
            ));
        }
        s
    }
}

/// A sync that was made to fail: the call, the file, the error it
/// returned, and what it covered, dropped for good (never durable: no
/// later sync, and not the unmount, writes it; the programs still read it
/// until the mount is unmounted or crashes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SyncFailure {
    /// `fsync`, `fdatasync` or `fsyncdir`.
    pub call: String,
    /// The file or directory synced, relative to the mount.
    pub path: String,
    /// The error it returned (`EIO`).
    pub errno: String,
    /// What was pending on it, dropped, in order.
    pub dropped: Vec<OpView>,
}

impl SyncFailure {
    /// The sync as a call: `fsync(data.log)`.
    pub fn sync(&self) -> String {
        format!("{}({})", self.call, self.path)
    }

    /// The dropped ops, one line each (runs of one call on one file
    /// folded): `2 writes log in [0, 20): never durable`.
    pub fn dropped_lines(&self) -> Vec<String> {
        let noted: Vec<(&OpView, String)> = self
            .dropped
            .iter()
            .map(|v| (v, "never durable".to_string()))
            .collect();
        summarize_noted(&noted)
    }

    /// The report for people.
    ///
    /// ```
    /// use blackout_live::faults::SyncFailure;
    /// let f = SyncFailure {
    ///     call: "fsync".into(), path: "log".into(), errno: "EIO".into(), dropped: vec![],
    /// };
    /// assert_eq!(f.text(), "sync failed: fsync(log) returned EIO; nothing was pending on it\n");
    /// ```
    pub fn text(&self) -> String {
        if self.dropped.is_empty() {
            return format!(
                "sync failed: {} returned {}; nothing was pending on it\n",
                self.sync(),
                self.errno
            );
        }
        let n = self.dropped.len();
        let mut s = format!(
            "sync failed: {} returned {}; {n} op{} it covered dropped, never durable (programs read {} until the mount is unmounted or crashes)\n",
            self.sync(),
            self.errno,
            if n == 1 { "" } else { "s" },
            if n == 1 { "it" } else { "them" },
        );
        for line in self.dropped_lines() {
            s.push_str(&format!("  dropped {line}\n"));
        }
        s
    }
}

/// The ops the backing directory refused, in one line: `2 ops could not be
/// made durable in the backing directory (everything else is): write a [0,
/// 10): No space left on device (os error 28); ...`.
///
/// ```
/// use blackout_live::faults::{refused_line, Refused};
/// use blackout_live::pending::OpView;
/// use blackout_oplog::ops::Part;
/// let op = OpView {
///     seq: 3, call: "write".into(), path: "a".into(), to: None,
///     offset: Some(0), length: Some(10), size: None, part: Part::Whole,
///     durable_by: "fsync(a)".into(),
/// };
/// let line = refused_line(&[Refused { op, error: "No space left on device (os error 28)".into() }]);
/// assert_eq!(line, "1 op could not be made durable in the backing directory (everything else is): write a [0, 10): No space left on device (os error 28)");
/// ```
pub fn refused_line(refused: &[Refused]) -> String {
    let mut each: Vec<String> = refused
        .iter()
        .take(REFUSED_SHOWN)
        .map(|r| format!("{}: {}", r.op.describe(), r.error))
        .collect();
    if refused.len() > REFUSED_SHOWN {
        each.push(format!("and {} more", refused.len() - REFUSED_SHOWN));
    }
    format!(
        "{} op{} could not be made durable in the backing directory (everything else is): {}",
        refused.len(),
        if refused.len() == 1 { "" } else { "s" },
        each.join("; ")
    )
}

/// The refused ops [`refused_line`] names; it counts the rest.
pub const REFUSED_SHOWN: usize = 10;

/// The ops pending on one path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PendingFile {
    /// The path (relative to the mount).
    pub path: String,
    /// Its pending units, in order.
    pub ops: Vec<OpView>,
}

/// What is pending now, per file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PendingReport {
    /// Per path, in order of each path's first pending op.
    pub files: Vec<PendingFile>,
    /// Pending units in all.
    pub units: usize,
    /// Bytes of pending writes.
    pub bytes: u64,
}

impl PendingReport {
    /// The report for people.
    pub fn text(&self) -> String {
        if self.units == 0 {
            return "nothing pending: everything is durable\n".to_string();
        }
        let mut s = format!(
            "{} pending ops ({} bytes written) would be lost by a crash now:\n",
            self.units, self.bytes
        );
        for f in &self.files {
            s.push_str(&format!("{}\n", f.path));
            for v in &f.ops {
                s.push_str(&format!(
                    "  {}: durable after {}\n",
                    v.describe(),
                    v.durable_by
                ));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blackout_oplog::ops::Part;

    #[test]
    fn the_refused_line_names_ten_ops_and_counts_the_rest() {
        let refused: Vec<Refused> = (0..12)
            .map(|i| Refused {
                op: OpView {
                    seq: i,
                    call: "link".into(),
                    path: format!("d/l{i}"),
                    to: None,
                    offset: None,
                    length: None,
                    size: None,
                    part: Part::Whole,
                    durable_by: "fsync(d)".into(),
                },
                error: "Too many links (os error 31)".into(),
            })
            .collect();
        let line = refused_line(&refused);
        assert!(
            line.starts_with("12 ops could not be made durable"),
            "{line}"
        );
        assert!(line.contains("link d/l9: Too many links") && !line.contains("d/l10"));
        assert!(line.ends_with("; and 2 more"), "{line}");
    }
}
