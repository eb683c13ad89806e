//! Processes and their descriptors: fd tables (shared by threads, copied
//! by fork), open file descriptions, `dup`, pipes, `close_range`,
//! `unshare`, working directories, and the processes a spawn starts.

use std::collections::BTreeMap;

use blackout_oplog::ops::{Ino, ROOT_INO};

use crate::error::{Fault, ReplayErrorKind};
use crate::syscall::{Outcome, ProcFd, ProcFdOwner, Spawn, Syscall, AT_FDCWD};

use super::{CloneRecord, FdEntry, FsModel, Loc, Ofd, Pipe, Proc, Resolved, Target, R};

impl FsModel {
    /// Notes that the call at position `event` of the log, made by `parent`,
    /// created a process: the child takes its tables from `parent` when it
    /// first appears, whether its first call completes before or after the
    /// call that created it. Called for every creating call before any is
    /// applied.
    pub fn expect_spawn(&mut self, event: usize, parent: u32, spawn: &Spawn) {
        let Some(child) = spawn.child else { return };
        self.clones
            .entry(child)
            .or_default()
            .push_back(CloneRecord {
                event,
                parent,
                share_files: spawn.share_files,
                share_fs: spawn.share_fs,
            });
    }

    /// Makes sure `pid` has a process entry: the first process of the log gets
    /// stdin/stdout/stderr and the directory under test as cwd; a child gets
    /// its parent's tables, shared or copied as its clone flags say.
    pub fn ensure_proc(&mut self, pid: u32) -> R<()> {
        if self.procs.contains_key(&pid) {
            return Ok(());
        }
        if let Some(rec) = self.clones.get_mut(&pid).and_then(|q| q.pop_front()) {
            return self.spawn(pid, rec.parent, rec.share_files, rec.share_fs);
        }
        if self.tables.is_empty() {
            let mut table = BTreeMap::new();
            let mut fds = vec![0, 1, 2];
            if !fds.contains(&self.output_fd) {
                fds.push(self.output_fd);
            }
            for fd in fds {
                let target = if fd == self.output_fd {
                    Target::Stdout
                } else {
                    Target::Other
                };
                self.ofds.push(Ofd {
                    target,
                    offset: 0,
                    append: false,
                    sync: None,
                    writable: true,
                    name: format!("<fd {fd}>").into_bytes(),
                });
                table.insert(
                    fd,
                    FdEntry {
                        ofd: self.ofds.len() - 1,
                        cloexec: false,
                    },
                );
            }
            self.tables.push(table);
            self.cwds.push(Loc::In(ROOT_INO));
            self.procs.insert(pid, Proc { table: 0, cwd: 0 });
            return Ok(());
        }
        Err(Fault::new(
            ReplayErrorKind::UnknownProcess,
            format!("process {pid} appears without the clone/fork that created it"),
        ))
    }

    /// What the model knows of fd `fd` of process `pid`, for a recorder
    /// that reads from the process only what the model will look at: `None`
    /// when the model does not know the fd (a call through it is then judged
    /// by the path it names), `Some(true)` when the bytes written through it
    /// are kept (a file inside the directory under test or new outside it,
    /// the output stream, a pipe), `Some(false)` when they are not.
    pub fn fd_keeps_bytes(&self, pid: u32, fd: i64) -> Option<bool> {
        if !self.procs.contains_key(&pid) {
            return None;
        }
        let target = &self.ofd(pid, fd)?.target;
        Some(matches!(
            target,
            Target::Inode(_) | Target::Stdout | Target::PipeWrite(_)
        ))
    }

    /// A process or thread ended.
    pub fn exit(&mut self, pid: u32) {
        self.procs.remove(&pid);
    }

    pub(super) fn spawn(
        &mut self,
        child: u32,
        parent: u32,
        share_files: bool,
        share_fs: bool,
    ) -> R<()> {
        let p = *self.procs.get(&parent).ok_or_else(|| {
            Fault::new(
                ReplayErrorKind::UnknownProcess,
                format!(
                    "process {child} was created by process {parent}, which the log never shows"
                ),
            )
        })?;
        let table = if share_files {
            p.table
        } else {
            self.tables.push(self.tables[p.table].clone());
            self.tables.len() - 1
        };
        let cwd = if share_fs {
            p.cwd
        } else {
            self.cwds.push(self.cwds[p.cwd].clone());
            self.cwds.len() - 1
        };
        self.procs.insert(child, Proc { table, cwd });
        Ok(())
    }

    pub(super) fn proc(&self, pid: u32) -> Proc {
        self.procs[&pid]
    }

    pub(super) fn fd(&self, pid: u32, fd: i64) -> Option<FdEntry> {
        self.tables[self.proc(pid).table].get(&fd).copied()
    }

    pub(super) fn ofd(&self, pid: u32, fd: i64) -> Option<&Ofd> {
        self.fd(pid, fd).map(|e| &self.ofds[e.ofd])
    }

    pub(super) fn install(&mut self, pid: u32, fd: i64, ofd: Ofd, cloexec: bool) {
        self.ofds.push(ofd);
        let e = FdEntry {
            ofd: self.ofds.len() - 1,
            cloexec,
        };
        let t = self.proc(pid).table;
        self.tables[t].insert(fd, e);
    }

    pub(super) fn clone_call(&mut self, spawn: &Spawn, event: usize) -> R<()> {
        let Some(child) = spawn.child else {
            return Ok(());
        };
        let pending = self
            .clones
            .get(&child)
            .and_then(|q| q.front())
            .map(|r| r.event == event)
            .unwrap_or(false);
        if pending {
            let rec = self.clones.get_mut(&child).and_then(|q| q.pop_front());
            if let Some(rec) = rec {
                self.spawn(child, rec.parent, rec.share_files, rec.share_fs)?;
            }
        }
        Ok(())
    }

    /// close, close_range, dup*, fcntl, lseek, execve, pipe: calls that
    /// change only fd tables and open file descriptions.
    pub(super) fn fd_table_call(&mut self, pid: u32, call: &Syscall, result: &Outcome) {
        match *call {
            Syscall::Close { fd } => {
                let t = self.proc(pid).table;
                self.tables[t].remove(&fd);
            }
            Syscall::CloseRange {
                first,
                last,
                unshare,
                cloexec,
            } => self.close_range(pid, first, last, unshare, cloexec),
            Syscall::Dup { old, new, cloexec } => self.dup(pid, old, new, cloexec),
            Syscall::DupTo { old, new, cloexec } if old != new => {
                self.dup(pid, old, new, cloexec);
            }
            Syscall::SetStatusFlags { fd, append } => {
                if let Some(e) = self.fd(pid, fd) {
                    self.ofds[e.ofd].append = append;
                }
            }
            Syscall::SetFdFlags { fd, cloexec } => {
                let t = self.proc(pid).table;
                if let Some(e) = self.tables[t].get_mut(&fd) {
                    e.cloexec = cloexec;
                }
            }
            Syscall::Seek { fd, offset } => {
                if let (Some(e), Some(v)) = (self.fd(pid, fd), offset) {
                    self.ofds[e.ofd].offset = v;
                }
            }
            Syscall::Exec if result.value() == Some(0) => {
                self.unshare(pid);
                let t = self.proc(pid).table;
                self.tables[t].retain(|_, e| !e.cloexec);
            }
            Syscall::Pipe {
                read_fd,
                write_fd,
                cloexec,
            } => self.pipe(pid, read_fd, write_fd, cloexec),
            _ => {}
        }
    }

    pub(super) fn close_range(
        &mut self,
        pid: u32,
        first: i64,
        last: i64,
        unshare: bool,
        cloexec: bool,
    ) {
        if unshare {
            self.unshare(pid);
        }
        if first > last {
            // The kernel refuses an empty range (EINVAL): nothing to close.
            return;
        }
        let t = self.proc(pid).table;
        let fds: Vec<i64> = self.tables[t]
            .range(first..=last)
            .map(|(k, _)| *k)
            .collect();
        for fd in fds {
            if cloexec {
                if let Some(e) = self.tables[t].get_mut(&fd) {
                    e.cloexec = true;
                }
            } else {
                self.tables[t].remove(&fd);
            }
        }
    }

    pub(super) fn unshare(&mut self, pid: u32) {
        let p = self.proc(pid);
        self.tables.push(self.tables[p.table].clone());
        let t = self.tables.len() - 1;
        self.procs.insert(
            pid,
            Proc {
                table: t,
                cwd: p.cwd,
            },
        );
    }

    pub(super) fn dup(&mut self, pid: u32, old: i64, new: i64, cloexec: bool) {
        if new < 0 {
            return;
        }
        let t = self.proc(pid).table;
        match self.tables[t].get(&old).copied() {
            Some(e) => {
                self.tables[t].insert(
                    new,
                    FdEntry {
                        ofd: e.ofd,
                        cloexec,
                    },
                );
            }
            None => {
                self.tables[t].remove(&new);
            }
        }
    }

    pub(super) fn pipe(&mut self, pid: u32, read_fd: i64, write_fd: i64, cloexec: bool) {
        self.pipes.push(Pipe::default());
        let p = self.pipes.len() - 1;
        for (fd, target) in [
            (read_fd, Target::PipeRead(p)),
            (write_fd, Target::PipeWrite(p)),
        ] {
            let ofd = Ofd {
                target,
                offset: 0,
                append: false,
                sync: None,
                writable: true,
                name: b"<pipe>".to_vec(),
            };
            self.install(pid, fd, ofd, cloexec);
        }
    }

    pub(super) fn chdir(&mut self, pid: u32, path: &[u8]) -> R<()> {
        let loc = match self.resolve(pid, AT_FDCWD, path, true) {
            Resolved::In { ino: Some(i), .. } => Loc::In(i),
            Resolved::Out(p) => Loc::Out(p),
            _ => return Err(self.diverged(path, "chdir")),
        };
        let cw = self.proc(pid).cwd;
        self.cwds[cw] = loc;
        Ok(())
    }

    pub(super) fn fchdir(&mut self, pid: u32, fd: i64, fd_path: Option<Vec<u8>>) -> R<()> {
        let loc = match self.ofd(pid, fd).map(|o| o.target.clone()) {
            Some(Target::Inode(i)) => Loc::In(i),
            Some(Target::Outside(p)) => Loc::Out(p),
            _ => match fd_path {
                Some(p) if self.inside(&p).is_none() => Loc::Out(p),
                _ => {
                    return Err(Fault::new(
                        ReplayErrorKind::UnknownFd,
                        "changes to a directory whose fd the log does not show",
                    ))
                }
            },
        };
        let cw = self.proc(pid).cwd;
        self.cwds[cw] = loc;
        Ok(())
    }

    /// A change through an fd the model does not know: refused when its
    /// recorded path (`-y`) is inside the directory under test.
    pub(super) fn unknown_fd(&self, fd: i64, fd_path: Option<&[u8]>, what: &str) -> R<()> {
        if let Some(path) = self.annotation_inside(fd_path) {
            return Err(Fault::new(
                ReplayErrorKind::UnknownFd,
                format!(
                    "{what} through fd {fd}, whose origin the log does not show, into the directory under test ({})",
                    String::from_utf8_lossy(path)
                ),
            ));
        }
        Ok(())
    }

    /// The inode a `/proc/…/fd/N` path names: `None` when the process or
    /// the fd is unknown, or the fd is not on a file inside.
    pub(super) fn proc_fd_inode(&self, pid: u32, p: &ProcFd) -> Option<Ino> {
        let owner = match p.owner {
            ProcFdOwner::Caller => pid,
            ProcFdOwner::Pid(n) => n,
        };
        if !self.procs.contains_key(&owner) {
            return None;
        }
        match self.ofd(owner, p.fd).map(|o| &o.target) {
            Some(Target::Inode(i)) => Some(*i),
            _ => None,
        }
    }
}
