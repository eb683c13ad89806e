//! Ops: what a recording did to the directory under test, naming inodes.
//!
//! Replay turns system calls into ops; the explorer decides which ops a crash
//! keeps. An op names **inodes**, not paths, so losing the creation of a file
//! does not break a later write to it: the write lands on an inode nothing
//! points to, as it would on a real disk.

use serde::{Deserialize, Serialize};

/// An inode number in the model (not the real file system's). The directory
/// under test is inode 0.
pub type Ino = u32;

/// The inode of the directory under test.
pub const ROOT_INO: Ino = 0;

/// A file name or path as raw bytes. Serialized as a string when it is UTF-8,
/// and as `{"hex": "..."}` otherwise, so any name survives a round trip.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Name(pub Vec<u8>);

impl Name {
    /// The name for display: printable ASCII and UTF-8 as is, other bytes
    /// escaped.
    pub fn display(&self) -> String {
        match std::str::from_utf8(&self.0) {
            Ok(s) if !s.chars().any(|c| c.is_control()) => s.to_string(),
            _ => self.0.escape_ascii().to_string(),
        }
    }
}

impl From<&[u8]> for Name {
    fn from(b: &[u8]) -> Self {
        Name(b.to_vec())
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Self {
        Name(s.as_bytes().to_vec())
    }
}

impl Serialize for Name {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(&self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => {
                use serde::ser::SerializeMap;
                let mut m = s.serialize_map(Some(1))?;
                let hex: String = self.0.iter().map(|b| format!("{b:02x}")).collect();
                m.serialize_entry("hex", &hex)?;
                m.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Text(String),
            Hex { hex: String },
        }
        match Repr::deserialize(d)? {
            Repr::Text(t) => Ok(Name(t.into_bytes())),
            Repr::Hex { hex } => {
                if hex.len() % 2 != 0 || !hex.is_ascii() {
                    return Err(serde::de::Error::custom("odd-length hex name"));
                }
                (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16))
                    .collect::<Result<Vec<u8>, _>>()
                    .map(Name)
                    .map_err(serde::de::Error::custom)
            }
        }
    }
}

/// Escapes control characters (newlines, escapes) so a message built from
/// hostile input stays on one line; everything else is kept.
pub fn escape_controls(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// A range of the trace's data blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct DataRef {
    /// Offset in the blob.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
}

/// What kind of inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InodeKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
}

/// The inode field of the op `$kind` (a reference, or a mutable one, as
/// `$kind` is), `None` for `sync` and output: one match for
/// [`OpKind::inode`] and [`OpKind::inode_mut`].
macro_rules! acted_on {
    ($kind:expr) => {
        match $kind {
            OpKind::Write { ino, .. }
            | OpKind::Truncate { ino, .. }
            | OpKind::Fallocate { ino, .. }
            | OpKind::Link { ino, .. }
            | OpKind::Unlink { ino, .. }
            | OpKind::Rename { ino, .. }
            | OpKind::Fsync { ino, .. }
            | OpKind::Fdatasync { ino, .. }
            | OpKind::SyncFileRange { ino }
            | OpKind::FailedSync { ino, .. } => Some(ino),
            OpKind::Sync { .. } | OpKind::Output { .. } => None,
        }
    };
}

/// What an op does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OpKind {
    /// Bytes written at an offset.
    Write {
        /// The file.
        ino: Ino,
        /// Where.
        off: u64,
        /// What (in the trace's data blob).
        data: DataRef,
    },
    /// The size set (truncate, ftruncate, `O_TRUNC`).
    Truncate {
        /// The file.
        ino: Ino,
        /// The new size.
        size: u64,
    },
    /// fallocate that changes what a reader sees: a size change, a zeroed
    /// range or a punched hole (reads as zeros).
    Fallocate {
        /// The file.
        ino: Ino,
        /// Start of the range.
        off: u64,
        /// Length of the range.
        len: u64,
        /// Whether the range reads as zeros afterwards.
        zero: bool,
        /// Whether the size stays as it was.
        keep_size: bool,
    },
    /// A directory entry added: create, mkdir, symlink, link.
    Link {
        /// The directory.
        dir: Ino,
        /// The entry's name.
        name: Name,
        /// The inode it points to.
        ino: Ino,
        /// Whether the inode was created by this op.
        new: bool,
    },
    /// A directory entry removed: unlink, rmdir, or a rename out of the
    /// directory under test.
    Unlink {
        /// The directory.
        dir: Ino,
        /// The entry's name.
        name: Name,
        /// The inode it pointed to.
        ino: Ino,
    },
    /// A rename: the entry `from_dir/from_name` moves to `to_dir/to_name`,
    /// replacing what was there. Two halves: the removal is covered by a sync
    /// of `from_dir`, the addition by a sync of `to_dir`.
    Rename {
        /// Source directory.
        from_dir: Ino,
        /// Source name.
        from_name: Name,
        /// Destination directory.
        to_dir: Ino,
        /// Destination name.
        to_name: Name,
        /// The inode moved.
        ino: Ino,
        /// The inode the destination pointed to before, if any.
        replaced: Option<Ino>,
        /// `RENAME_EXCHANGE`: `replaced` moves to the source name.
        exchange: bool,
    },
    /// fsync of an inode (file data and size; for a directory, its entries).
    Fsync {
        /// The inode.
        ino: Ino,
        /// Ops with an index below this are covered: those that completed
        /// before the call started.
        barrier: usize,
        /// Implied by a write through an `O_SYNC` fd or with `RWF_SYNC`.
        implied: bool,
    },
    /// fdatasync of an inode: covers its data ops like fsync.
    Fdatasync {
        /// The inode.
        ino: Ino,
        /// As for [`OpKind::Fsync`].
        barrier: usize,
        /// Implied by a write through an `O_DSYNC` fd or with `RWF_DSYNC`.
        implied: bool,
    },
    /// sync or syncfs: covers every earlier op.
    Sync {
        /// As for [`OpKind::Fsync`].
        barrier: usize,
    },
    /// sync_file_range: recorded, but **not** a durability barrier.
    SyncFileRange {
        /// The file.
        ino: Ino,
    },
    /// An fsync or fdatasync that failed: **not** a barrier.
    FailedSync {
        /// The inode.
        ino: Ino,
        /// The error it returned.
        errno: String,
    },
    /// Bytes written to standard output. A line of output is a promise.
    Output {
        /// The bytes (in the trace's data blob).
        data: DataRef,
    },
}

/// One op and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Op {
    /// What it does.
    #[serde(flatten)]
    pub kind: OpKind,
    /// The system call that made it (`pwrite64`, `renameat2`).
    pub syscall: String,
    /// The thread that made it.
    pub pid: u32,
    /// Where the call started: its line in strace's log, or in a native
    /// recording its number among the calls traced (what the trace's
    /// `numbering` says).
    pub line: u32,
    /// The path as the program named it (for ops through an fd, the path the
    /// fd was opened with).
    pub path: Name,
    /// The call's stack, when recorded with `--stacks`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<crate::origin::Frame>,
    /// Where in the program the call was made (resolved from `stack`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<crate::origin::Origin>,
    /// A data op on a file the program rebuilds on restart (one the
    /// trace's `--volatile` globs name, marked when the trace is made or
    /// read): durable as soon as made ([`synced_by`]), since nothing is
    /// asked of its contents after a crash, so no crash state loses it.
    /// Also an entry op in the directory standing for everywhere outside
    /// the directory under test (`Trace::outside_dir`),
    /// and the removal half of a rename from it: what happens outside is
    /// not the directory's to lose.
    #[serde(skip)]
    pub volatile: bool,
}

impl OpKind {
    /// A short label for the op log: `create`, `mkdir`, `write`, ...
    pub fn label(&self, kind_of: impl Fn(Ino) -> InodeKind) -> &'static str {
        match self {
            OpKind::Write { .. } => "write",
            OpKind::Truncate { .. } => "truncate",
            OpKind::Fallocate { .. } => "fallocate",
            OpKind::Link { ino, new, .. } => match (new, kind_of(*ino)) {
                (true, InodeKind::File) => "create",
                (true, InodeKind::Dir) => "mkdir",
                (true, InodeKind::Symlink) => "symlink",
                (false, _) => "link",
            },
            OpKind::Unlink { ino, .. } => match kind_of(*ino) {
                InodeKind::Dir => "rmdir",
                _ => "unlink",
            },
            OpKind::Rename { exchange: true, .. } => "exchange",
            OpKind::Rename { .. } => "rename",
            OpKind::Fsync { .. } => "fsync",
            OpKind::Fdatasync { .. } => "fdatasync",
            OpKind::Sync { .. } => "sync",
            OpKind::SyncFileRange { .. } => "sync_file_range",
            OpKind::FailedSync { .. } => "failed_sync",
            OpKind::Output { .. } => "output",
        }
    }

    /// The inode an op acts on: a data op's or a sync's file, an entry
    /// op's inode (what a link, unlink or rename names); `None` for `sync`
    /// and output.
    ///
    /// ```
    /// use blackout_oplog::ops::OpKind;
    /// assert_eq!(OpKind::Truncate { ino: 4, size: 0 }.inode(), Some(4));
    /// assert_eq!(OpKind::Sync { barrier: 0 }.inode(), None);
    /// ```
    pub fn inode(&self) -> Option<Ino> {
        acted_on!(self).copied()
    }

    /// The inode an op acts on ([`OpKind::inode`]), to change it.
    pub fn inode_mut(&mut self) -> Option<&mut Ino> {
        acted_on!(self)
    }

    /// The file a data op (write, truncate, fallocate) changes; `None`
    /// for every other op.
    ///
    /// ```
    /// use blackout_oplog::ops::OpKind;
    /// assert_eq!(OpKind::Truncate { ino: 4, size: 0 }.data_inode(), Some(4));
    /// assert_eq!(OpKind::Sync { barrier: 0 }.data_inode(), None);
    /// ```
    pub fn data_inode(&self) -> Option<Ino> {
        match self {
            OpKind::Write { ino, .. }
            | OpKind::Truncate { ino, .. }
            | OpKind::Fallocate { ino, .. } => Some(*ino),
            _ => None,
        }
    }

    /// Whether this op is a sync a crash model honours: fsync, fdatasync
    /// (also implied by an `O_SYNC`/`O_DSYNC` write), sync or syncfs. Not
    /// sync_file_range, not a failed sync.
    pub fn is_sync(&self) -> bool {
        matches!(
            self,
            OpKind::Fsync { .. } | OpKind::Fdatasync { .. } | OpKind::Sync { .. }
        )
    }

    /// Whether a crash may lose this op (it changes the file system and is
    /// not a sync or an output).
    pub fn is_durable_change(&self) -> bool {
        matches!(
            self,
            OpKind::Write { .. }
                | OpKind::Truncate { .. }
                | OpKind::Fallocate { .. }
                | OpKind::Link { .. }
                | OpKind::Unlink { .. }
                | OpKind::Rename { .. }
        )
    }
}

/// Which part of an op a pending unit is. A rename between two directories is
/// two halves, each covered by its own directory's sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Part {
    /// The whole op.
    Whole,
    /// A rename's removal from its source directory.
    Source,
    /// A rename's addition to its destination directory.
    Dest,
}

/// One op, or one half of a rename, that a crash may lose.
///
/// Packed (9 bytes, not 16): a state at a crash point with thousands of
/// pending ops loses thousands of units, and a full-size run holds
/// millions of them. Its fields are read by value (`u.op`), never by
/// reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[repr(C, packed)]
pub struct Unit {
    /// The op's index.
    pub op: usize,
    /// Which part of it.
    pub part: Part,
}

/// For one op, the first sync that makes it durable.
///
/// A rename has two halves; `source` is the sync that covers the removal from
/// the source directory, `main` the one that covers the rest. For every other
/// op `source` equals `main`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SyncedBy {
    /// Index of the sync op that covers the op (or its destination half).
    pub main: Option<usize>,
    /// Index of the sync op that covers a rename's source half.
    pub source: Option<usize>,
}

impl SyncedBy {
    /// The sync that covers `part` of the op: a rename's source half its
    /// own, the rest (the whole op, a rename's destination half) `main`.
    pub fn of(&self, part: Part) -> Option<usize> {
        match part {
            Part::Source => self.source,
            Part::Whole | Part::Dest => self.main,
        }
    }

    /// Whether a later sync covers the whole op.
    pub fn synced(&self) -> bool {
        self.main.is_some() && self.source.is_some()
    }
}

/// Computes, for every op, which later sync covers it (DESIGN "explore"):
/// fsync/fdatasync of a file covers its earlier data ops; fsync of a directory
/// covers earlier entry ops in it (each rename half by its own directory);
/// sync/syncfs covers everything earlier. Only ops that completed before the
/// sync call started are covered. Syncs and outputs count as covered. An
/// fsync or fdatasync that failed with a writeback error
/// ([`writeback_error`]) leaves what was pending on its file uncovered for
/// good: no later sync covers it (Linux drops the failed pages' dirty
/// state; docs/MODELS.md, "When a sync fails").
pub fn synced_by(ops: &[Op]) -> Vec<SyncedBy> {
    use std::collections::HashMap;
    // Pending halves by the inode whose sync covers them: (op index, is the
    // source half). A data op's halves wait on its file, an entry op's on its
    // directory, a rename's on its source and destination directories.
    let mut pending: HashMap<Ino, Vec<(usize, bool)>> = HashMap::new();
    let mut out = vec![SyncedBy::default(); ops.len()];
    // Marks the halves in `list` that completed before `barrier` as covered
    // by sync `s`, and drops them.
    let cover = |list: &mut Vec<(usize, bool)>, barrier: usize, s: usize, out: &mut [SyncedBy]| {
        list.retain(|&(j, source)| {
            if j >= barrier {
                return true;
            }
            let slot = if source {
                &mut out[j].source
            } else {
                &mut out[j].main
            };
            slot.get_or_insert(s);
            false
        });
    };
    let itself = |i: usize| SyncedBy {
        main: Some(i),
        source: Some(i),
    };
    for (i, op) in ops.iter().enumerate() {
        match &op.kind {
            OpKind::Write { .. }
            | OpKind::Truncate { .. }
            | OpKind::Fallocate { .. }
            | OpKind::Link { .. }
            | OpKind::Unlink { .. }
                if op.volatile =>
            {
                out[i] = itself(i);
            }
            // A rename from outside the directory under test: its removal
            // there is not the directory's to lose.
            OpKind::Rename { to_dir, .. } if op.volatile => {
                out[i].source = Some(i);
                pending.entry(*to_dir).or_default().push((i, false));
            }
            OpKind::Write { ino: at, .. }
            | OpKind::Truncate { ino: at, .. }
            | OpKind::Fallocate { ino: at, .. }
            | OpKind::Link { dir: at, .. }
            | OpKind::Unlink { dir: at, .. } => {
                pending
                    .entry(*at)
                    .or_default()
                    .extend([(i, false), (i, true)]);
            }
            OpKind::Rename {
                from_dir, to_dir, ..
            } => {
                pending.entry(*to_dir).or_default().push((i, false));
                pending.entry(*from_dir).or_default().push((i, true));
            }
            OpKind::Fsync { ino, barrier, .. } | OpKind::Fdatasync { ino, barrier, .. } => {
                if let Some(list) = pending.get_mut(ino) {
                    cover(list, *barrier, i, &mut out);
                }
                out[i] = itself(i);
            }
            OpKind::Sync { barrier } => {
                for list in pending.values_mut() {
                    cover(list, *barrier, i, &mut out);
                }
                out[i] = itself(i);
            }
            OpKind::FailedSync { ino, errno } => {
                // After a failed writeback the kernel marks the pages clean
                // and reports the error once: what was pending on the file
                // may never reach the disk, and no later sync writes it. A
                // sync refused before any writeback (EBADF, EINVAL) leaves
                // everything as it was.
                if writeback_error(errno) {
                    pending.remove(ino);
                }
                out[i] = itself(i);
            }
            OpKind::SyncFileRange { .. } | OpKind::Output { .. } => {
                out[i] = itself(i);
            }
        }
    }
    out
}

/// Whether a failed sync's error is the disk's (a writeback that failed:
/// EIO, ENOSPC, EDQUOT), after which the kernel forgets the failed pages,
/// rather than the call's own refusal (EBADF, EINVAL, EROFS), which writes
/// nothing back.
pub fn writeback_error(errno: &str) -> bool {
    matches!(errno, "EIO" | "ENOSPC" | "EDQUOT")
}

/// Builders of ops with placeholder provenance, for the unit tests of the
/// stages that consume ops.
pub mod test_ops {
    use super::*;

    /// An op of `kind` with placeholder provenance.
    pub fn op(kind: OpKind) -> Op {
        Op {
            kind,
            syscall: "x".into(),
            pid: 1,
            line: 1,
            path: Name::default(),
            stack: Vec::new(),
            origin: None,
            volatile: false,
        }
    }

    /// A one-byte write at offset 0 of `ino`.
    pub fn write(ino: Ino) -> Op {
        op(OpKind::Write {
            ino,
            off: 0,
            data: DataRef { start: 0, len: 1 },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::test_ops::{op, write};
    use super::*;

    fn fsync(ino: Ino, barrier: usize) -> Op {
        op(OpKind::Fsync {
            ino,
            barrier,
            implied: false,
        })
    }

    #[test]
    fn a_unit_is_nine_bytes_and_orders_by_op_then_part() {
        // Millions of lost units are held by a full-size run.
        assert_eq!(std::mem::size_of::<Unit>(), 9);
        let u = |op, part| Unit { op, part };
        let mut v = [
            u(300, Part::Whole),
            u(2, Part::Dest),
            u(2, Part::Source),
            u(usize::MAX, Part::Whole),
        ];
        v.sort();
        assert_eq!(
            v,
            [
                u(2, Part::Source),
                u(2, Part::Dest),
                u(300, Part::Whole),
                u(usize::MAX, Part::Whole)
            ]
        );
        let json = serde_json::to_string(&u(7, Part::Source)).unwrap();
        assert_eq!(json, r#"{"op":7,"part":"source"}"#);
    }

    #[test]
    fn file_fsync_covers_only_its_file_and_earlier_ops() {
        let ops = vec![write(1), write(2), fsync(1, 2), write(1)];
        let s = synced_by(&ops);
        assert_eq!(s[0].main, Some(2));
        assert!(!s[1].synced());
        assert!(!s[3].synced());
    }

    #[test]
    fn a_write_completing_during_the_sync_is_not_covered() {
        // The fsync started before op 1 completed.
        let ops = vec![write(1), write(1), fsync(1, 1)];
        let s = synced_by(&ops);
        assert!(s[0].synced());
        assert!(!s[1].synced());
    }

    #[test]
    fn rename_halves_need_both_directories() {
        let ops = vec![
            op(OpKind::Rename {
                from_dir: 1,
                from_name: "a".into(),
                to_dir: 2,
                to_name: "b".into(),
                ino: 3,
                replaced: None,
                exchange: false,
            }),
            fsync(2, 1),
        ];
        let s = synced_by(&ops);
        assert_eq!(s[0].main, Some(1));
        assert_eq!(s[0].source, None);
        assert!(!s[0].synced());
    }

    #[test]
    fn sync_covers_everything_and_file_fsync_not_entries() {
        let ops = vec![
            op(OpKind::Link {
                dir: 0,
                name: "a".into(),
                ino: 1,
                new: true,
            }),
            write(1),
            fsync(1, 2),
            op(OpKind::Sync { barrier: 3 }),
        ];
        let s = synced_by(&ops);
        assert_eq!(s[0].main, Some(3));
        assert_eq!(s[1].main, Some(2));
    }

    #[test]
    fn a_failed_sync_leaves_what_it_covered_unsynced_for_good() {
        // write, fsync fails, fsync again returns 0, write, fsync.
        let failed = op(OpKind::FailedSync {
            ino: 1,
            errno: "EIO".into(),
        });
        let ops = vec![write(1), failed, fsync(1, 2), write(1), fsync(1, 4)];
        let s = synced_by(&ops);
        assert!(!s[0].synced(), "the retried fsync does not cover it");
        assert_eq!(s[3].main, Some(4), "what came after the failure syncs");
        // A sync refused without writing back (a wrong descriptor) leaves
        // the next one to cover what was pending.
        let refused = op(OpKind::FailedSync {
            ino: 1,
            errno: "EBADF".into(),
        });
        let ops = vec![write(1), refused, fsync(1, 2)];
        assert_eq!(synced_by(&ops)[0].main, Some(2));
    }

    #[test]
    fn names_round_trip_through_json_even_when_not_utf8() {
        for name in [Name::from("doc.txt"), Name(vec![0xff, b'/', 0])] {
            let json = serde_json::to_string(&name).unwrap();
            let back: Name = serde_json::from_str(&json).unwrap();
            assert_eq!(back, name);
        }
    }
}
