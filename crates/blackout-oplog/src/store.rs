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
///
/// An op changes each inode it [`changes`] by that inode's own state alone
/// ([`apply_one`]): a file's bytes by its bytes, a directory's entries by
/// its entries. This is what lets a crash state be built one inode at a
/// time.
pub fn apply(inodes: &mut [InodeState], kind: &OpKind, data: Data<'_>, halves: Halves) {
    for ino in changes(kind).into_iter().flatten() {
        apply_one(&mut inodes[ino as usize], ino, kind, data, halves);
    }
}

/// The inodes an op may change (and reads): a data op's file, an entry
/// op's directory, a rename's source and destination directories (once
/// when they are one). Syncs and outputs change none.
///
/// ```
/// use blackout_oplog::ops::OpKind;
/// use blackout_oplog::store::changes;
/// assert_eq!(changes(&OpKind::Truncate { ino: 4, size: 0 }), [Some(4), None]);
/// ```
pub fn changes(kind: &OpKind) -> [Option<Ino>; 2] {
    match kind {
        OpKind::Write { ino, .. }
        | OpKind::Truncate { ino, .. }
        | OpKind::Fallocate { ino, .. } => [Some(*ino), None],
        OpKind::Link { dir, .. } | OpKind::Unlink { dir, .. } => [Some(*dir), None],
        OpKind::Rename {
            from_dir, to_dir, ..
        } => [Some(*from_dir), (to_dir != from_dir).then_some(*to_dir)],
        OpKind::Fsync { .. }
        | OpKind::Fdatasync { .. }
        | OpKind::Sync { .. }
        | OpKind::SyncFileRange { .. }
        | OpKind::FailedSync { .. }
        | OpKind::Output { .. } => [None, None],
    }
}

/// Applies what one op does to inode `ino` alone (`node` is its state):
/// nothing when the op does not change it. [`apply`] is this on each inode
/// the op [`changes`].
pub fn apply_one(node: &mut InodeState, ino: Ino, kind: &OpKind, data: Data<'_>, halves: Halves) {
    match kind {
        OpKind::Write { ino: i, off, .. } if *i == ino => {
            node.data.write(&mut node.size, *off, data);
        }
        OpKind::Truncate { ino: i, size } if *i == ino => {
            node.data.truncate(&mut node.size, *size);
        }
        OpKind::Fallocate {
            ino: i,
            off,
            len,
            zero,
            keep_size,
        } if *i == ino => {
            node.data
                .fallocate(&mut node.size, *off, *len, *zero, *keep_size);
        }
        OpKind::Link {
            dir, name, ino: to, ..
        } if *dir == ino => {
            node.entries.insert(name.0.clone(), *to);
        }
        OpKind::Unlink { dir, name, ino: of } if *dir == ino => unlink(node, &name.0, *of),
        OpKind::Rename {
            from_dir,
            from_name,
            to_dir,
            to_name,
            ino: moved,
            replaced,
            exchange,
        } => {
            if halves.source && *from_dir == ino {
                if *exchange {
                    if let Some(r) = replaced {
                        node.entries.insert(from_name.0.clone(), *r);
                    }
                } else {
                    unlink(node, &from_name.0, *moved);
                }
            }
            if halves.dest && *to_dir == ino {
                node.entries.insert(to_name.0.clone(), *moved);
            }
        }
        _ => {}
    }
}

/// Removes `dir/name` if it still names `ino` (a later op may have reused
/// the name; an entry a lost op never made is not there to remove).
fn unlink(dir: &mut InodeState, name: &[u8], ino: Ino) {
    if dir.entries.get(name) == Some(&ino) {
        dir.entries.remove(name);
    }
}
