//! The inode store: a file-system state as inodes (kind, contents, size,
//! entries), and the one [`apply`] that changes it by an op.
//!
//! Crash states are built by applying the ops a crash kept, in order, to the
//! initial tree; every data and entry op goes through [`apply`], so an op
//! means one thing wherever it is applied. A rename between two directories
//! can be applied by halves ([`Halves`]), as a crash may keep one without
//! the other.

use std::collections::BTreeMap;

use crate::contents::{Contents, Data};
use crate::ops::{Ino, InodeKind, OpKind};

/// One inode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InodeState {
    /// Kind.
    pub kind: InodeKind,
    /// File bytes (the file is `size` long; holes and bytes past what was
    /// written read as zeros), or a symlink's target.
    pub data: Contents,
    /// File size.
    pub size: u64,
    /// Directory entries.
    pub entries: BTreeMap<Vec<u8>, Ino>,
}

impl InodeState {
    /// How many of a file's bytes its content hash covers: those written
    /// within its size (the rest of the size reads as zeros, and the size
    /// is hashed apart).
    ///
    /// ```
    /// use blackout_oplog::store::InodeState;
    /// use blackout_oplog::ops::InodeKind;
    /// let f = InodeState { kind: InodeKind::File, data: b"abc".to_vec().into(), size: 2, entries: Default::default() };
    /// assert_eq!(f.hashed_len(), 2);
    /// ```
    pub fn hashed_len(&self) -> u64 {
        self.data.len().min(self.size)
    }
}

/// Which halves of a rename between two directories to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Halves {
    /// The removal from the source directory (for an exchange, the replaced
    /// inode's new entry there).
    pub source: bool,
    /// The new entry in the destination directory.
    pub dest: bool,
}

impl Halves {
    /// Both halves: the whole op.
    pub const BOTH: Halves = Halves {
        source: true,
        dest: true,
    };
}

/// Applies one op to the inodes. `data` is what a write puts at its
/// offset (the op's data, or what a tear left of it; a blob's range is held
/// by reference); `halves` says which
/// halves of a rename to apply (ignored for every other op). Syncs and
/// outputs change nothing. Inode numbers must be valid (as
/// `Trace::validate` ensures).
pub fn apply(inodes: &mut [InodeState], kind: &OpKind, data: Data<'_>, halves: Halves) {
    match kind {
        OpKind::Write { ino, off, .. } => {
            let node = &mut inodes[*ino as usize];
            node.data.write(&mut node.size, *off, data);
        }
        OpKind::Truncate { ino, size } => {
            let node = &mut inodes[*ino as usize];
            node.data.truncate(&mut node.size, *size);
        }
        OpKind::Fallocate {
            ino,
            off,
            len,
            zero,
            keep_size,
        } => {
            let node = &mut inodes[*ino as usize];
            node.data
                .fallocate(&mut node.size, *off, *len, *zero, *keep_size);
        }
        OpKind::Link { dir, name, ino, .. } => {
            inodes[*dir as usize].entries.insert(name.0.clone(), *ino);
        }
        OpKind::Unlink { dir, name, ino } => unlink(inodes, *dir, &name.0, *ino),
        OpKind::Rename {
            from_dir,
            from_name,
            to_dir,
            to_name,
            ino,
            replaced,
            exchange,
        } => {
            if halves.source {
                if *exchange {
                    if let Some(r) = replaced {
                        inodes[*from_dir as usize]
                            .entries
                            .insert(from_name.0.clone(), *r);
                    }
                } else {
                    unlink(inodes, *from_dir, &from_name.0, *ino);
                }
            }
            if halves.dest {
                inodes[*to_dir as usize]
                    .entries
                    .insert(to_name.0.clone(), *ino);
            }
        }
        OpKind::Fsync { .. }
        | OpKind::Fdatasync { .. }
        | OpKind::Sync { .. }
        | OpKind::SyncFileRange { .. }
        | OpKind::FailedSync { .. }
        | OpKind::Output { .. } => {}
    }
}

/// Removes `dir/name` if it still names `ino` (a later op may have reused
/// the name; an entry a lost op never made is not there to remove).
fn unlink(inodes: &mut [InodeState], dir: Ino, name: &[u8], ino: Ino) {
    let entries = &mut inodes[dir as usize].entries;
    if entries.get(name) == Some(&ino) {
        entries.remove(name);
    }
}
