//! Files the run created outside the directory under test: a temporary
//! file made in `TMPDIR` and renamed into the directory, or copied into it
//! when `TMPDIR` is on another file system (`shutil.move`'s fallback).
//!
//! A file the program creates outside with `O_CREAT|O_EXCL` (so it is new:
//! every byte it holds is in the log) is modelled as an inode of its own,
//! its writes and syncs ops like any file's, entered in one directory that
//! stands for everywhere outside: a directory no entry names, so no crash
//! state shows it, and whose entry ops are durable as soon as made
//! ([`blackout_oplog::ops::synced_by`]: what happens outside is not the
//! directory under test's to lose). Renamed into the directory, it is a
//! rename from that directory (its addition covered by a sync of the
//! destination, as any rename's); read from for a copy, its bytes are the
//! model's. A file that existed outside before the run is not in the log,
//! and moving it in stays refused.

use std::collections::HashMap;

use blackout_oplog::ops::{Ino, InodeKind, Name, OpKind, ROOT_INO};

use crate::syscall::CallSite;

use super::{FsModel, Target, R};

/// The files created outside, by their absolute path.
#[derive(Debug, Default)]
pub(super) struct Outside {
    /// The directory standing for everywhere outside, once needed.
    dir: Option<Ino>,
    /// Each file's inode and its name in that directory.
    files: HashMap<Vec<u8>, (Ino, Vec<u8>)>,
}

impl FsModel {
    /// The inode of a file the run created outside at `path`, if any.
    pub(super) fn outside_file(&self, path: &[u8]) -> Option<Ino> {
        self.outside.files.get(path).map(|(ino, _)| *ino)
    }

    /// What an open of `p` outside targets: a file the run created there
    /// (truncated by `O_TRUNC`), a file it creates new now (`new`:
    /// `O_CREAT|O_EXCL`), else nothing the model holds. `path` is as the
    /// program named it.
    pub(super) fn outside_open(
        &mut self,
        site: &CallSite<'_>,
        p: Vec<u8>,
        (new, trunc): (bool, bool),
        path: &[u8],
    ) -> R<Target> {
        let ino = match self.outside_file(&p) {
            Some(i) => {
                if trunc && self.inodes[i as usize].size > 0 {
                    self.truncate(site, i, 0, path)?;
                }
                i
            }
            None if new => self.outside_create(site, &p)?,
            None => return Ok(Target::Outside(p)),
        };
        Ok(Target::Inode(ino))
    }

    /// A new file created outside at `path` (`O_CREAT|O_EXCL`): its inode,
    /// entered in the outside directory.
    pub(super) fn outside_create(&mut self, site: &CallSite<'_>, path: &[u8]) -> R<Ino> {
        let dir = match self.outside.dir {
            Some(d) => d,
            None => {
                let d = self.new_inode(InodeKind::Dir, Vec::new(), ROOT_INO)?;
                self.outside.dir = Some(d);
                d
            }
        };
        let ino = self.new_inode(InodeKind::File, Vec::new(), dir)?;
        // One name per inode: two paths outside may end alike.
        let base = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
        let mut name = base.to_vec();
        name.extend_from_slice(format!(".{ino}").as_bytes());
        self.inodes[dir as usize].entries.insert(name.clone(), ino);
        self.push(
            site,
            OpKind::Link {
                dir,
                name: Name(name.clone()),
                ino,
                new: true,
            },
            path,
        );
        self.outside.files.insert(path.to_vec(), (ino, name));
        Ok(ino)
    }

    /// The outside file at `path` leaves the outside directory (renamed
    /// into the directory under test, or unlinked): its directory and name
    /// there, and its inode.
    pub(super) fn outside_take(&mut self, path: &[u8]) -> Option<(Ino, Vec<u8>, Ino)> {
        let (ino, name) = self.outside.files.remove(path)?;
        Some((self.outside.dir?, name, ino))
    }

    /// The outside file at `from` renamed to `to`, also outside.
    pub(super) fn outside_move(&mut self, from: &[u8], to: &[u8]) {
        match self.outside.files.remove(from) {
            Some(f) => {
                self.outside.files.insert(to.to_vec(), f);
            }
            // Whatever `to` was, it is now a file the log does not hold.
            None => self.outside_forget(to),
        }
    }

    /// Whatever is at `path` outside is no longer a file the run created
    /// (a file from the directory under test moved over it, an exchange).
    pub(super) fn outside_forget(&mut self, path: &[u8]) {
        self.outside.files.remove(path);
    }

    /// Unlinks the outside file at `path`, if the run created it.
    pub(super) fn outside_unlink(&mut self, site: &CallSite<'_>, path: &[u8]) {
        if let Some((dir, name, ino)) = self.outside_take(path) {
            self.unlink_entry(site, (dir, name), ino, path);
        }
    }
}
