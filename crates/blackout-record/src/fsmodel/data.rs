//! Data calls: writes through a descriptor (and the syncs `O_SYNC` and
//! `O_DSYNC` imply), copies between descriptors, mmap, reflinks,
//! truncates, fallocate, and the syncs themselves.

use std::os::unix::ffi::OsStrExt;

use blackout_oplog::ops::{Ino, InodeKind, OpKind};
use blackout_oplog::trace::MODEL_FILE_BYTES_MAX;

use crate::error::{Fault, ReplayErrorKind};
use crate::syscall::{CallSite, FallocateMode, Syscall, Transfer, Write, AT_FDCWD};

use super::{FsModel, Ofd, Resolved, Target, R};

impl FsModel {
    /// A write through fd `w.fd`. `w.at` is an explicit offset (pwrite);
    /// `w.append` forces the end of file (`RWF_APPEND`).
    pub(super) fn write_fd(&mut self, site: &CallSite<'_>, w: Write) -> R<()> {
        let Some(entry) = self.fd(site.pid, w.fd) else {
            return self.unknown_fd(w.fd, w.fd_path.as_deref(), "writes");
        };
        let ofd = self.ofds[entry.ofd].clone();
        match ofd.target {
            Target::Inode(ino) => {
                if self.inodes[ino as usize].kind != InodeKind::File {
                    return Err(Fault::divergence(
                        "writes to an inode that is not a regular file",
                    ));
                }
                let bytes = w.data?;
                let append = ofd.append || w.append;
                let off = if append {
                    self.inodes[ino as usize].size
                } else {
                    w.at.unwrap_or(ofd.offset)
                };
                let data = self.model_write(ino, off, &bytes)?;
                self.push(site, OpKind::Write { ino, off, data }, &ofd.name);
                if w.at.is_none() {
                    self.ofds[entry.ofd].offset = off + bytes.len() as u64;
                }
                let rwf_sync = if w.sync {
                    Some(false)
                } else if w.dsync {
                    Some(true)
                } else {
                    None
                };
                if let Some(dsync) = rwf_sync.or(ofd.sync) {
                    self.implied_sync(site, ino, dsync, &ofd.name);
                }
            }
            Target::Stdout => {
                let data = self.blob(&w.data?)?;
                self.push(site, OpKind::Output { data }, b"<stdout>");
            }
            Target::PipeWrite(p) => {
                self.pipes[p].buf.extend(w.data?);
            }
            Target::Outside(_) => {
                self.stats.outside += 1;
                if w.at.is_none() {
                    self.ofds[entry.ofd].offset = ofd.offset + w.count;
                }
            }
            Target::Other | Target::PipeRead(_) => {}
        }
        Ok(())
    }

    /// The sync an `O_SYNC`/`O_DSYNC` fd or an `RWF_SYNC`/`RWF_DSYNC` write
    /// implies, right after the write.
    pub(super) fn implied_sync(&mut self, site: &CallSite<'_>, ino: Ino, dsync: bool, path: &[u8]) {
        let barrier = self.ops.len();
        let kind = if dsync {
            OpKind::Fdatasync {
                ino,
                barrier,
                implied: true,
            }
        } else {
            OpKind::Fsync {
                ino,
                barrier,
                implied: true,
            }
        };
        self.push(site, kind, path);
    }

    /// The bytes a copy reads from fd `fd` (file or pipe), moving its offset
    /// when `at` is `None`. `None` when the bytes are not known (outside).
    pub(super) fn read_source(
        &mut self,
        pid: u32,
        fd: i64,
        at: Option<u64>,
        n: u64,
        want: bool,
    ) -> R<Option<Vec<u8>>> {
        let Some(entry) = self.fd(pid, fd) else {
            return Ok(None);
        };
        let ofd = self.ofds[entry.ofd].clone();
        match ofd.target {
            Target::Inode(ino) => {
                let off = at.unwrap_or(ofd.offset);
                if at.is_none() {
                    self.ofds[entry.ofd].offset = off + n;
                }
                if !want {
                    return Ok(None);
                }
                if off.saturating_add(n) > self.inodes[ino as usize].size {
                    return Err(Fault::divergence(format!(
                        "reads {n} bytes at offset {off} of `{}`, past its end in the model",
                        String::from_utf8_lossy(&ofd.name)
                    )));
                }
                Ok(Some(self.file_bytes(ino, off, n)))
            }
            Target::PipeRead(p) => {
                let pipe = &mut self.pipes[p];
                let take = usize::try_from(n).unwrap_or(usize::MAX).min(pipe.buf.len());
                let bytes: Vec<u8> = pipe.buf.drain(..take).collect();
                if pipe.unknown || (take as u64) < n {
                    return Ok(None);
                }
                Ok(Some(bytes))
            }
            Target::Outside(_) => {
                if at.is_none() {
                    self.ofds[entry.ofd].offset = ofd.offset + n;
                }
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// copy_file_range, sendfile, splice: `t.count` bytes from `t.in_fd` to
    /// `t.out_fd`.
    pub(super) fn copy(&mut self, site: &CallSite<'_>, t: Transfer) -> R<()> {
        let pid = site.pid;
        let n = t.count;
        if n == 0 {
            // The end of the source (a copy loop's last call): nothing moved.
            return Ok(());
        }
        let bytes = self.read_source(pid, t.in_fd, t.in_at, n, true)?;
        let out_target = self.ofd(pid, t.out_fd).map(|o| o.target.clone());
        let matters = match &out_target {
            Some(Target::Inode(_)) | Some(Target::Stdout) => true,
            Some(Target::PipeWrite(p)) => {
                if bytes.is_none() {
                    self.pipes[*p].unknown = true;
                    return Ok(());
                }
                false
            }
            None => {
                return self.unknown_fd(t.out_fd, t.out_path.as_deref(), "copies");
            }
            _ => false,
        };
        match bytes {
            Some(b) => self.write_fd(
                site,
                Write {
                    fd: t.out_fd,
                    fd_path: t.out_path,
                    count: n,
                    data: Ok(b),
                    at: t.out_at,
                    append: false,
                    sync: false,
                    dsync: false,
                },
            ),
            None if matters => Err(Fault::unmodelable(format!(
                "copies {n} bytes {} from fd {}, whose bytes the log does not hold (a file outside the directory, a socket, or a pipe fed from one)",
                if out_target == Some(Target::Stdout) {
                    "to standard output (where promises are read)"
                } else {
                    "into the directory under test"
                },
                t.in_fd
            ))),
            None => Ok(()),
        }
    }

    /// tee: `n` bytes from one pipe to another, left in the first.
    pub(super) fn tee(&mut self, pid: u32, in_fd: i64, out_fd: i64, n: u64) {
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        let src = match self.ofd(pid, in_fd).map(|o| o.target.clone()) {
            Some(Target::PipeRead(p)) => Some(p),
            _ => None,
        };
        if let Some(Target::PipeWrite(dst)) = self.ofd(pid, out_fd).map(|o| o.target.clone()) {
            match src {
                Some(s) if self.pipes[s].buf.len() >= n && !self.pipes[s].unknown => {
                    let bytes: Vec<u8> = self.pipes[s].buf.iter().take(n).copied().collect();
                    self.pipes[dst].buf.extend(bytes);
                }
                _ => self.pipes[dst].unknown = true,
            }
        }
    }

    pub(super) fn mmap(
        &mut self,
        pid: u32,
        fd: i64,
        fd_path: Option<&[u8]>,
        shared_writable: bool,
    ) -> R<()> {
        if !shared_writable {
            return Ok(());
        }
        let Some(o) = self.ofd(pid, fd) else {
            return self.unknown_fd(fd, fd_path, "maps a file");
        };
        // The glob may name the path inside the directory (as opened, or
        // made relative) or the file name.
        let name = o.name.as_slice();
        let rel = match self.inside(name) {
            Some(p) => p.strip_prefix(b"/").unwrap_or(p),
            None => name,
        };
        let base = name.rsplit(|&b| b == b'/').next().unwrap_or(name);
        let is_volatile = [rel, base]
            .iter()
            .any(|p| self.volatile.is_match(std::ffi::OsStr::from_bytes(p)));
        if matches!(o.target, Target::Inode(_)) && o.writable && !is_volatile {
            return Err(Fault::unmodelable(format!(
                "maps `{}` shared and writable: writes through memory are not in the log (if the program rebuilds this file on restart, name it with --volatile)",
                String::from_utf8_lossy(&o.name)
            )));
        }
        Ok(())
    }

    pub(super) fn reflink(&self, pid: u32, fd: i64, fd_path: Option<&[u8]>) -> R<()> {
        let inside = matches!(self.ofd(pid, fd).map(|o| &o.target), Some(Target::Inode(_)))
            || self.annotation_inside(fd_path).is_some();
        if inside {
            return Err(Fault::unmodelable(
                "clones extents into the directory under test; blackout cannot model reflinks",
            ));
        }
        Ok(())
    }

    /// fsync, fdatasync, sync, syncfs, sync_file_range that succeeded.
    pub(super) fn sync_call(&mut self, site: &CallSite<'_>, call: &Syscall) {
        let fd = match *call {
            Syscall::Sync => {
                let barrier = self.barrier(site.line);
                self.push(site, OpKind::Sync { barrier }, b"");
                return;
            }
            Syscall::SyncFileRange { fd } => {
                self.sync_file_range(site, fd);
                return;
            }
            Syscall::Fsync { fd, .. } | Syscall::Syncfs { fd } => fd,
            _ => return,
        };
        let Some(Ofd {
            target: Target::Inode(ino),
            name: path,
            ..
        }) = self.ofd(site.pid, fd).cloned()
        else {
            self.stats.outside += 1;
            return;
        };
        let barrier = self.barrier(site.line);
        let kind = match *call {
            Syscall::Fsync {
                data_only: false, ..
            } => OpKind::Fsync {
                ino,
                barrier,
                implied: false,
            },
            Syscall::Fsync { .. } => OpKind::Fdatasync {
                ino,
                barrier,
                implied: false,
            },
            _ => OpKind::Sync { barrier },
        };
        self.push(site, kind, &path);
    }

    /// A fsync or fdatasync that failed: an op, as what a program does after
    /// a failed sync matters.
    pub(super) fn failed_sync(&mut self, site: &CallSite<'_>, fd: i64, errno: String) {
        if let Some(Target::Inode(ino)) = self.ofd(site.pid, fd).map(|o| o.target.clone()) {
            let path = self
                .ofd(site.pid, fd)
                .map(|o| o.name.clone())
                .unwrap_or_default();
            self.push(site, OpKind::FailedSync { ino, errno }, &path);
        }
    }

    pub(super) fn sync_file_range(&mut self, site: &CallSite<'_>, fd: i64) {
        if let Some(Ofd {
            target: Target::Inode(ino),
            name: path,
            ..
        }) = self.ofd(site.pid, fd).cloned()
        {
            self.push(site, OpKind::SyncFileRange { ino }, &path);
        }
    }

    pub(super) fn truncate(
        &mut self,
        site: &CallSite<'_>,
        ino: Ino,
        size: u64,
        path: &[u8],
    ) -> R<()> {
        if self.inodes[ino as usize].kind != InodeKind::File {
            return Err(Fault::divergence(
                "truncates an inode that is not a regular file",
            ));
        }
        self.model_truncate(ino, size);
        self.push(site, OpKind::Truncate { ino, size }, path);
        Ok(())
    }

    pub(super) fn truncate_path(&mut self, site: &CallSite<'_>, path: &[u8], size: u64) -> R<()> {
        match self.resolve(site.pid, AT_FDCWD, path, true) {
            Resolved::In { ino: Some(ino), .. } => self.truncate(site, ino, size, path),
            Resolved::Out(_) => {
                self.stats.outside += 1;
                Ok(())
            }
            _ => Err(self.diverged(path, "truncate")),
        }
    }

    pub(super) fn ftruncate(
        &mut self,
        site: &CallSite<'_>,
        fd: i64,
        fd_path: Option<&[u8]>,
        size: u64,
    ) -> R<()> {
        match self.ofd(site.pid, fd).cloned() {
            Some(Ofd {
                target: Target::Inode(ino),
                name,
                ..
            }) => self.truncate(site, ino, size, &name),
            Some(_) => {
                self.stats.outside += 1;
                Ok(())
            }
            None => self.unknown_fd(fd, fd_path, "truncates"),
        }
    }

    pub(super) fn fallocate(
        &mut self,
        site: &CallSite<'_>,
        fd: i64,
        fd_path: Option<&[u8]>,
        mode: FallocateMode,
        off: u64,
        len: u64,
    ) -> R<()> {
        let Some(o) = self.ofd(site.pid, fd).cloned() else {
            return self.unknown_fd(fd, fd_path, "fallocates");
        };
        let Target::Inode(ino) = o.target else {
            self.stats.outside += 1;
            return Ok(());
        };
        if self.inodes[ino as usize].kind != InodeKind::File {
            return Err(Fault::divergence(
                "fallocates an inode that is not a regular file",
            ));
        }
        if mode.collapse_or_insert {
            return Err(Fault::unmodelable(
                "collapses or inserts a range; blackout does not model that",
            ));
        }
        let punch = mode.punch_hole;
        let zero = punch || mode.zero_range;
        let keep_size = punch || mode.keep_size;
        let end = off
            .checked_add(len)
            .ok_or_else(|| Fault::malformed("range overflows"))?;
        let size = self.inodes[ino as usize].size;
        if !zero && (keep_size || end <= size) {
            // Allocation only: nothing a reader sees changes.
            return Ok(());
        }
        if end > MODEL_FILE_BYTES_MAX && !keep_size {
            return Err(Fault::new(
                ReplayErrorKind::TooLarge,
                format!(
                    "grows a file past {MODEL_FILE_BYTES_MAX} bytes, the largest blackout models"
                ),
            ));
        }
        let node = &mut self.inodes[ino as usize];
        node.data
            .fallocate(&mut node.size, off, len, zero, keep_size);
        self.push(
            site,
            OpKind::Fallocate {
                ino,
                off,
                len,
                zero,
                keep_size,
            },
            &o.name,
        );
        Ok(())
    }
}
