//! The file-system model: typed system calls → ops.
//!
//! The model holds inodes and directory entries for the directory under test,
//! per-process fd tables (threads share one, fork copies it) whose entries
//! point at shared open file descriptions (offset, `O_APPEND`, `O_SYNC`), and a
//! working directory per process. Every call is applied to the model; the
//! calls that change the directory under test emit [`Op`]s naming inodes.
//!
//! The model takes [`SyscallEvent`]s, already decoded (module `decode`): it
//! knows what calls do, not how a log prints them; it comes before the log
//! parser in the crate's module order, so it cannot name it. Each family of calls has
//! its own function; [`FsModel::apply`] only dispatches.
//!
//! The model never does I/O: paths are only ever looked up in it, so a
//! hostile log (absolute paths, `..`, symlinks pointing anywhere) cannot make
//! blackout read or write outside its own memory.
//!
//! Where the model and the log disagree (a call succeeded that the model says
//! must fail) the call fails with a [`ReplayErrorKind::Divergence`]: a silent
//! divergence would make every later verdict wrong.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::os::unix::ffi::OsStrExt;

use blackout_oplog::blob::Blob;
use blackout_oplog::contents::{Contents, Data};
use blackout_oplog::ops::{DataRef, Ino, InodeKind, Name, Op, OpKind, ROOT_INO};
use blackout_oplog::store::InodeState;
use blackout_oplog::trace::{ReplayStats, Replayed, MODEL_FILE_BYTES_MAX};
use blackout_oplog::tree::{Node, Tree};

use crate::error::{Fault, ReplayErrorKind};
use crate::syscall::{
    CallSite, FallocateMode, Link, Open, Outcome, ProcFd, ProcFdOwner, Rename, Spawn, Syscall,
    SyscallEvent, Touched, Transfer, Write, AT_FDCWD,
};

/// How many symlinks one lookup may follow (as Linux: 40).
const SYMLINK_FOLLOW_MAX: u32 = 40;

type R<T> = Result<T, Fault>;

#[derive(Debug, Clone)]
struct Inode {
    kind: InodeKind,
    /// File bytes (up to `size`; the rest reads as zeros) or symlink target.
    data: Contents,
    size: u64,
    entries: BTreeMap<Vec<u8>, Ino>,
    parent: Ino,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Loc {
    In(Ino),
    Out(Vec<u8>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Inode(Ino),
    Outside(Vec<u8>),
    Stdout,
    Other,
    PipeRead(usize),
    PipeWrite(usize),
}

#[derive(Debug, Clone)]
struct Ofd {
    target: Target,
    offset: u64,
    append: bool,
    /// `O_SYNC` (Some(false)) or `O_DSYNC` (Some(true)).
    sync: Option<bool>,
    writable: bool,
    name: Vec<u8>,
}

#[derive(Debug, Clone, Copy)]
struct FdEntry {
    ofd: usize,
    cloexec: bool,
}

#[derive(Debug, Clone, Copy)]
struct Proc {
    table: usize,
    cwd: usize,
}

#[derive(Debug, Default)]
struct Pipe {
    buf: VecDeque<u8>,
    /// Bytes of unknown content went in.
    unknown: bool,
}

/// Where a path leads.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Resolved {
    /// Inside the directory under test. `entry` is the (directory, name) the
    /// last component names, absent for `.`, `..` and the root itself.
    In {
        entry: Option<(Ino, Vec<u8>)>,
        ino: Option<Ino>,
    },
    /// Outside, at this (lexically normalized) absolute path.
    Out(Vec<u8>),
    /// A directory on the way is missing or not a directory, or too many
    /// symlinks.
    Missing,
}

struct CloneRecord {
    event: usize,
    parent: u32,
    share_files: bool,
    share_fs: bool,
}

/// `head` followed by each of `rest`, `/`-separated.
fn joined(head: &[u8], rest: &[&[u8]]) -> Vec<u8> {
    let mut out = head.to_vec();
    for c in rest {
        out.push(b'/');
        out.extend_from_slice(c);
    }
    out
}

fn lexical_join(base: &[u8], rel: &[u8]) -> Vec<u8> {
    let mut parts: Vec<&[u8]> = Vec::new();
    let whole: Vec<u8> = if rel.first() == Some(&b'/') {
        rel.to_vec()
    } else {
        let mut w = base.to_vec();
        w.push(b'/');
        w.extend_from_slice(rel);
        w
    };
    for c in whole.split(|&b| b == b'/') {
        match c {
            b"" | b"." => {}
            b".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    let mut out = Vec::new();
    for p in parts {
        out.push(b'/');
        out.extend_from_slice(p);
    }
    if out.is_empty() {
        out.push(b'/');
    }
    out
}

/// A model of the directory under test and of the processes working in it.
pub struct FsModel {
    dir: Vec<u8>,
    /// Files whose shared writable mmaps are allowed.
    volatile: globset::GlobSet,
    /// The first process's fd whose writes are the output stream (1 unless
    /// [`FsModel::set_output_fd`] said otherwise).
    output_fd: i64,
    inodes: Vec<Inode>,
    procs: HashMap<u32, Proc>,
    tables: Vec<BTreeMap<i64, FdEntry>>,
    cwds: Vec<Loc>,
    ofds: Vec<Ofd>,
    pipes: Vec<Pipe>,
    clones: HashMap<u32, VecDeque<CloneRecord>>,
    ops: Vec<Op>,
    /// Completion line of each op, for sync barriers.
    op_end_lines: Vec<u32>,
    /// Bytes written and printed, which ops' [`DataRef`]s point into.
    data: Blob,
    symlinks: BTreeMap<Ino, Name>,
    stats: ReplayStats,
    current_end_line: u32,
}

impl FsModel {
    /// A model holding `tree` as the directory under test, which had the
    /// absolute path `dir` when the log was recorded. A shared writable mmap
    /// is allowed of the files `volatile` matches (by path inside the
    /// directory or by file name).
    pub fn new(tree: &Tree, dir: &[u8], volatile: globset::GlobSet) -> Self {
        let mut dir = dir.to_vec();
        while dir.len() > 1 && dir.ends_with(b"/") {
            dir.pop();
        }
        let mut inodes: Vec<Inode> = tree
            .nodes
            .iter()
            .map(|n| {
                let (kind, data) = match n {
                    Node::File(d) => (InodeKind::File, Contents::from_bytes(d)),
                    Node::Dir => (InodeKind::Dir, Contents::default()),
                    Node::Symlink(t) => (InodeKind::Symlink, Contents::from_bytes(t)),
                };
                Inode {
                    kind,
                    size: data.len(),
                    data,
                    entries: BTreeMap::new(),
                    parent: ROOT_INO,
                }
            })
            .collect();
        let mut symlinks = BTreeMap::new();
        for (i, n) in tree.nodes.iter().enumerate() {
            if let Node::Symlink(t) = n {
                symlinks.insert(i as Ino, Name(t.clone()));
            }
        }
        for e in &tree.entries {
            inodes[e.dir as usize]
                .entries
                .insert(e.name.0.clone(), e.ino);
            if inodes[e.ino as usize].kind == InodeKind::Dir {
                inodes[e.ino as usize].parent = e.dir;
            }
        }
        FsModel {
            dir,
            volatile,
            output_fd: 1,
            inodes,
            procs: HashMap::new(),
            tables: Vec::new(),
            cwds: Vec::new(),
            ofds: Vec::new(),
            pipes: Vec::new(),
            clones: HashMap::new(),
            ops: Vec::new(),
            op_end_lines: Vec::new(),
            data: Blob::default(),
            symlinks,
            stats: ReplayStats::default(),
            current_end_line: 0,
        }
    }

    /// Takes the first process's fd `fd` (inherited, open for writing) as
    /// the output stream whose lines are promises, instead of standard
    /// output (which then counts as any other inherited fd). Call it before
    /// the first call is applied.
    ///
    /// ```
    /// use blackout_oplog::tree::Tree;
    /// use blackout_record::fsmodel::FsModel;
    ///
    /// let mut model = FsModel::new(&Tree::default(), b"/d", globset::GlobSet::empty());
    /// model.set_output_fd(63);
    /// ```
    pub fn set_output_fd(&mut self, fd: i64) {
        self.output_fd = fd;
    }

    /// Stores the bytes written and printed in `file` (empty) as they come,
    /// instead of in memory; file contents name them there by reference, so
    /// the model holds no file's bytes. Call it before the first call.
    pub fn set_data_file(&mut self, file: std::fs::File) {
        debug_assert!(self.data.is_empty());
        self.data = Blob::to_file(file);
    }

    /// The ops the calls applied so far made, with the inodes, symlink
    /// targets and bytes they name.
    pub fn finish(self) -> Replayed {
        let final_inodes = self
            .inodes
            .iter()
            .map(|i| InodeState {
                kind: i.kind,
                data: i.data.clone(),
                size: i.size,
                entries: i.entries.clone(),
            })
            .collect();
        Replayed {
            final_inodes,
            ops: self.ops,
            inodes: self.inodes.iter().map(|i| i.kind).collect(),
            symlinks: self.symlinks,
            data: self.data,
            stats: self.stats,
        }
    }

    // ---- processes -------------------------------------------------------

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

    /// A process or thread ended.
    pub fn exit(&mut self, pid: u32) {
        self.procs.remove(&pid);
    }

    fn spawn(&mut self, child: u32, parent: u32, share_files: bool, share_fs: bool) -> R<()> {
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

    fn proc(&self, pid: u32) -> Proc {
        self.procs[&pid]
    }

    fn fd(&self, pid: u32, fd: i64) -> Option<FdEntry> {
        self.tables[self.proc(pid).table].get(&fd).copied()
    }

    fn ofd(&self, pid: u32, fd: i64) -> Option<&Ofd> {
        self.fd(pid, fd).map(|e| &self.ofds[e.ofd])
    }

    fn install(&mut self, pid: u32, fd: i64, ofd: Ofd, cloexec: bool) {
        self.ofds.push(ofd);
        let e = FdEntry {
            ofd: self.ofds.len() - 1,
            cloexec,
        };
        let t = self.proc(pid).table;
        self.tables[t].insert(fd, e);
    }

    // ---- paths -----------------------------------------------------------

    /// The path inside the directory under test that an absolute path names,
    /// as components, or `None` when it is outside.
    fn inside<'p>(&self, abs: &'p [u8]) -> Option<&'p [u8]> {
        let rest = abs.strip_prefix(self.dir.as_slice())?;
        if rest.is_empty() || rest[0] == b'/' {
            Some(rest)
        } else {
            None
        }
    }

    /// Resolves `path` as process `pid` would, relative to `dirfd` (AT_FDCWD
    /// for the cwd). `follow` says whether a symlink in the last component is
    /// followed.
    fn resolve(&self, pid: u32, dirfd: i64, path: &[u8], follow: bool) -> Resolved {
        if path.is_empty() {
            return Resolved::Missing;
        }
        let start = if path[0] == b'/' {
            Loc::Out(b"/".to_vec())
        } else if dirfd == AT_FDCWD {
            self.cwds[self.proc(pid).cwd].clone()
        } else {
            match self.ofd(pid, dirfd).map(|o| &o.target) {
                Some(Target::Inode(i)) => Loc::In(*i),
                Some(Target::Outside(p)) => Loc::Out(p.clone()),
                _ => return Resolved::Out(path.to_vec()),
            }
        };
        let mut budget = SYMLINK_FOLLOW_MAX;
        self.walk(start, path, follow, &mut budget)
    }

    fn walk(&self, start: Loc, path: &[u8], follow: bool, budget: &mut u32) -> Resolved {
        let mut cur = match start {
            Loc::In(i) => i,
            Loc::Out(base) => {
                let abs = lexical_join(&base, path);
                return match self.inside(&abs) {
                    Some(rest) => {
                        let rest = rest.to_vec();
                        self.walk(Loc::In(ROOT_INO), &rest, follow, budget)
                    }
                    None => Resolved::Out(abs),
                };
            }
        };
        let comps: Vec<&[u8]> = path
            .split(|&b| b == b'/')
            .filter(|c| !c.is_empty())
            .collect();
        for (k, comp) in comps.iter().enumerate() {
            let last = k + 1 == comps.len();
            match *comp {
                b"." => {}
                b".." => {
                    if cur == ROOT_INO {
                        // Leaves the directory under test: continue lexically
                        // from its parent.
                        let rest = joined(b"..", &comps[k + 1..]);
                        return self.walk(Loc::Out(self.dir.clone()), &rest, follow, budget);
                    }
                    cur = self.inodes[cur as usize].parent;
                }
                name => {
                    let node = &self.inodes[cur as usize];
                    if node.kind != InodeKind::Dir {
                        return Resolved::Missing;
                    }
                    let Some(c) = node.entries.get(name).copied() else {
                        if last {
                            return Resolved::In {
                                entry: Some((cur, name.to_vec())),
                                ino: None,
                            };
                        }
                        return Resolved::Missing;
                    };
                    if self.inodes[c as usize].kind == InodeKind::Symlink && (!last || follow) {
                        return self.through_symlink(cur, c, &comps[k + 1..], follow, budget);
                    }
                    if last {
                        return Resolved::In {
                            entry: Some((cur, name.to_vec())),
                            ino: Some(c),
                        };
                    }
                    cur = c;
                }
            }
        }
        Resolved::In {
            entry: None,
            ino: Some(cur),
        }
    }

    /// Continues a walk through the symlink `link` found in `dir`, with the
    /// components after it still to walk.
    fn through_symlink(
        &self,
        dir: Ino,
        link: Ino,
        rest: &[&[u8]],
        follow: bool,
        budget: &mut u32,
    ) -> Resolved {
        if *budget == 0 {
            return Resolved::Missing;
        }
        *budget -= 1;
        let target = self.inodes[link as usize].data.to_vec();
        let rest = joined(&target, rest);
        let from = if target.first() == Some(&b'/') {
            Loc::Out(b"/".to_vec())
        } else {
            Loc::In(dir)
        };
        if rest.is_empty() {
            return Resolved::Missing;
        }
        self.walk(from, &rest, follow, budget)
    }

    /// The inode the recorded path of an fd (`-y`) names, if it is inside
    /// the directory under test and the model has it.
    fn annotated_inode(&self, fd_path: Option<&[u8]>) -> Option<Option<Ino>> {
        let rest = self.inside(fd_path?)?.to_vec();
        let mut budget = 0;
        Some(
            match self.walk(Loc::In(ROOT_INO), &rest, false, &mut budget) {
                Resolved::In { ino, .. } => ino,
                _ => None,
            },
        )
    }

    /// The recorded path of an fd (`-y`), when it is inside the directory
    /// under test.
    fn annotation_inside<'p>(&self, fd_path: Option<&'p [u8]>) -> Option<&'p [u8]> {
        let path = fd_path?;
        self.inside(path).is_some().then_some(path)
    }

    // ---- ops -------------------------------------------------------------

    fn push(&mut self, site: &CallSite<'_>, kind: OpKind, path: &[u8]) {
        self.ops.push(Op {
            kind,
            syscall: site.name.to_string(),
            pid: site.pid,
            line: site.line,
            path: Name(path.to_vec()),
            stack: site.stack.clone(),
            origin: None,
            volatile: false,
        });
        self.op_end_lines.push(self.current_end_line);
    }

    /// Index of the first op that completed after `line` (where a sync
    /// started): the sync covers the ops before it.
    fn barrier(&self, line: u32) -> usize {
        self.op_end_lines.partition_point(|&l| l < line)
    }

    fn blob(&mut self, bytes: &[u8]) -> R<DataRef> {
        self.data.append(bytes).map_err(|e| {
            Fault::new(
                ReplayErrorKind::TooLarge,
                format!("cannot store the data written: {e}"),
            )
        })
    }

    fn new_inode(&mut self, kind: InodeKind, data: Vec<u8>, parent: Ino) -> R<Ino> {
        let ino = Ino::try_from(self.inodes.len())
            .map_err(|_| Fault::new(ReplayErrorKind::TooLarge, "too many inodes"))?;
        if kind == InodeKind::Symlink {
            self.symlinks.insert(ino, Name(data.clone()));
        }
        self.inodes.push(Inode {
            kind,
            size: if kind == InodeKind::File {
                0
            } else {
                data.len() as u64
            },
            data: Contents::from_bytes(&data),
            entries: BTreeMap::new(),
            parent,
        });
        Ok(ino)
    }

    /// Writes `bytes` at `off` of `ino` and stores them in the blob; where
    /// they lie there. File contents hold a blob in a file by reference.
    fn model_write(&mut self, ino: Ino, off: u64, bytes: &[u8]) -> R<DataRef> {
        let end = off
            .checked_add(bytes.len() as u64)
            .filter(|&e| e <= MODEL_FILE_BYTES_MAX)
            .ok_or_else(|| {
                Fault::new(
                    ReplayErrorKind::TooLarge,
                    format!(
                        "writes past {MODEL_FILE_BYTES_MAX} bytes, the largest file blackout models"
                    ),
                )
            })?;
        let r = self.blob(bytes)?;
        let node = &mut self.inodes[ino as usize];
        debug_assert!(end <= MODEL_FILE_BYTES_MAX);
        if self.data.is_file() {
            node.data
                .write(&mut node.size, off, Data::Blob(&self.data, r));
        } else {
            node.data.write(&mut node.size, off, bytes);
        }
        Ok(r)
    }

    fn model_truncate(&mut self, ino: Ino, size: u64) {
        let node = &mut self.inodes[ino as usize];
        node.data.truncate(&mut node.size, size);
    }

    fn file_bytes(&self, ino: Ino, off: u64, len: u64) -> Vec<u8> {
        self.inodes[ino as usize].data.read(off, len)
    }

    fn diverged(&self, path: &[u8], what: &str) -> Fault {
        Fault::divergence(format!(
            "{what} of `{}` succeeded, but the model of the directory under test has no such path (did something outside the log change it?)",
            String::from_utf8_lossy(path)
        ))
    }

    // ---- dispatch --------------------------------------------------------

    /// Applies one call; `event` is its position in the log's events (to
    /// match a creating call with what [`FsModel::expect_spawn`] noted).
    /// The calling process must exist ([`FsModel::ensure_proc`]).
    pub fn apply(&mut self, ev: SyscallEvent<'_>, event: usize) -> R<()> {
        let SyscallEvent { site, result, call } = ev;
        self.current_end_line = site.end_line;
        // Fork-like calls are handled whether or not the child appeared yet.
        if let Syscall::Clone(spawn) = call {
            return self.clone_call(&spawn, event);
        }
        if let Outcome::Err(errno) = result {
            self.stats.failed += 1;
            if let Syscall::Fsync { fd, .. } = call {
                self.failed_sync(&site, fd, errno);
            }
            return Ok(());
        }
        match call {
            Syscall::Vanished(touched) => self.vanished(site.pid, &touched),
            Syscall::Open(open) => self.open(&site, open),
            Syscall::Read { .. }
            | Syscall::Write(_)
            | Syscall::Copy(_)
            | Syscall::Tee { .. }
            | Syscall::Truncate { .. }
            | Syscall::Ftruncate { .. }
            | Syscall::Fallocate { .. } => self.data_call(&site, call),
            Syscall::Rename(_)
            | Syscall::Unlink { .. }
            | Syscall::Link(_)
            | Syscall::Symlink { .. }
            | Syscall::Mkdir { .. }
            | Syscall::Mknod { .. } => self.name_call(&site, call),
            Syscall::Fsync { .. }
            | Syscall::Sync
            | Syscall::Syncfs { .. }
            | Syscall::SyncFileRange { .. } => {
                self.sync_call(&site, &call);
                Ok(())
            }
            Syscall::Chdir { .. }
            | Syscall::Fchdir { .. }
            | Syscall::Mmap { .. }
            | Syscall::IoUringSetup
            | Syscall::Reflink { .. } => self.process_call(site.pid, call),
            Syscall::Close { .. }
            | Syscall::CloseRange { .. }
            | Syscall::Dup { .. }
            | Syscall::DupTo { .. }
            | Syscall::SetStatusFlags { .. }
            | Syscall::SetFdFlags { .. }
            | Syscall::Seek { .. }
            | Syscall::Exec
            | Syscall::Pipe { .. } => {
                self.fd_table_call(site.pid, &call, &result);
                Ok(())
            }
            Syscall::Clone(_) | Syscall::NoEffect | Syscall::Failed => Ok(()),
        }
    }

    /// read, write, copy, tee, truncate, fallocate: calls on file bytes.
    fn data_call(&mut self, site: &CallSite<'_>, call: Syscall) -> R<()> {
        match call {
            Syscall::Read {
                fd,
                count,
                positioned: false,
            } => {
                self.read_source(site.pid, fd, None, count, false)?;
                Ok(())
            }
            Syscall::Write(w) => self.write_fd(site, w),
            Syscall::Copy(t) => self.copy(site, t),
            Syscall::Tee {
                in_fd,
                out_fd,
                count,
            } => {
                self.tee(site.pid, in_fd, out_fd, count);
                Ok(())
            }
            Syscall::Truncate { path, size } => self.truncate_path(site, &path, size),
            Syscall::Ftruncate { fd, fd_path, size } => {
                self.ftruncate(site, fd, fd_path.as_deref(), size)
            }
            Syscall::Fallocate {
                fd,
                fd_path,
                mode,
                off,
                len,
            } => self.fallocate(site, fd, fd_path.as_deref(), mode, off, len),
            _ => Ok(()),
        }
    }

    /// rename, unlink, link, symlink, mkdir, mknod: calls on directory
    /// entries.
    fn name_call(&mut self, site: &CallSite<'_>, call: Syscall) -> R<()> {
        match call {
            Syscall::Rename(r) => self.rename(site, &r),
            Syscall::Unlink { dirfd, path } => self.unlink(site, dirfd, &path),
            Syscall::Link(l) => self.link(site, &l),
            Syscall::Symlink {
                target,
                dirfd,
                path,
            } => self.create(site, dirfd, &path, InodeKind::Symlink, target),
            Syscall::Mkdir { dirfd, path } => {
                self.create(site, dirfd, &path, InodeKind::Dir, Vec::new())
            }
            Syscall::Mknod {
                dirfd,
                path,
                regular,
            } => self.mknod(site, dirfd, &path, regular),
            _ => Ok(()),
        }
    }

    /// chdir, fchdir, and the calls that reach files by routes the log does
    /// not show (mmap, io_uring, reflinks).
    fn process_call(&mut self, pid: u32, call: Syscall) -> R<()> {
        match call {
            Syscall::Chdir { path } => self.chdir(pid, &path),
            Syscall::Fchdir { fd, fd_path } => self.fchdir(pid, fd, fd_path),
            Syscall::Mmap {
                fd,
                fd_path,
                shared_writable,
            } => self.mmap(pid, fd, fd_path.as_deref(), shared_writable),
            Syscall::IoUringSetup => Err(Fault::unmodelable(
                "io_uring submits I/O the log does not show; blackout cannot model it",
            )),
            Syscall::Reflink { fd, fd_path } => self.reflink(pid, fd, fd_path.as_deref()),
            _ => Ok(()),
        }
    }

    /// A call that never completed before its process ended or the log did:
    /// refused when it may have changed the directory under test.
    pub fn unfinished(&self, pid: u32, touched: &Touched) -> R<()> {
        if !self.procs.contains_key(&pid) || !self.touches_dir(pid, touched) {
            return Ok(());
        }
        Err(Fault::new(
            ReplayErrorKind::Unfinished,
            "never completed (its process ended or the log was cut), so what it changed in the directory under test is unknown",
        ))
    }

    /// A call that returned no result (its process ended inside it):
    /// harmless unless it may have changed the directory under test.
    fn vanished(&self, pid: u32, touched: &Touched) -> R<()> {
        if self.touches_dir(pid, touched) {
            return Err(Fault::new(
                ReplayErrorKind::Unfinished,
                "returned no result (its process ended inside it), so what it changed in the directory under test is unknown",
            ));
        }
        Ok(())
    }

    /// Whether a call names the directory under test: an fd on a file inside
    /// it, or a path that resolves inside.
    fn touches_dir(&self, pid: u32, touched: &Touched) -> bool {
        let fd_inside = |fd: &i64| {
            matches!(
                self.ofd(pid, *fd).map(|o| &o.target),
                Some(Target::Inode(_))
            )
        };
        let path_inside = |(dirfd, path): &(i64, Vec<u8>)| {
            matches!(self.resolve(pid, *dirfd, path, false), Resolved::In { .. })
        };
        touched.fds.iter().any(fd_inside) || touched.paths.iter().any(path_inside)
    }

    // ---- fd tables, working directories ---------------------------------

    fn clone_call(&mut self, spawn: &Spawn, event: usize) -> R<()> {
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
    fn fd_table_call(&mut self, pid: u32, call: &Syscall, result: &Outcome) {
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

    fn close_range(&mut self, pid: u32, first: i64, last: i64, unshare: bool, cloexec: bool) {
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

    fn unshare(&mut self, pid: u32) {
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

    fn dup(&mut self, pid: u32, old: i64, new: i64, cloexec: bool) {
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

    fn pipe(&mut self, pid: u32, read_fd: i64, write_fd: i64, cloexec: bool) {
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

    fn chdir(&mut self, pid: u32, path: &[u8]) -> R<()> {
        let loc = match self.resolve(pid, AT_FDCWD, path, true) {
            Resolved::In { ino: Some(i), .. } => Loc::In(i),
            Resolved::Out(p) => Loc::Out(p),
            _ => return Err(self.diverged(path, "chdir")),
        };
        let cw = self.proc(pid).cwd;
        self.cwds[cw] = loc;
        Ok(())
    }

    fn fchdir(&mut self, pid: u32, fd: i64, fd_path: Option<Vec<u8>>) -> R<()> {
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

    // ---- data ------------------------------------------------------------

    /// A write through fd `w.fd`. `w.at` is an explicit offset (pwrite);
    /// `w.append` forces the end of file (`RWF_APPEND`).
    fn write_fd(&mut self, site: &CallSite<'_>, w: Write) -> R<()> {
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
    fn implied_sync(&mut self, site: &CallSite<'_>, ino: Ino, dsync: bool, path: &[u8]) {
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

    /// A change through an fd the model does not know: refused when its
    /// recorded path (`-y`) is inside the directory under test.
    fn unknown_fd(&self, fd: i64, fd_path: Option<&[u8]>, what: &str) -> R<()> {
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

    /// The bytes a copy reads from fd `fd` (file or pipe), moving its offset
    /// when `at` is `None`. `None` when the bytes are not known (outside).
    fn read_source(
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
    fn copy(&mut self, site: &CallSite<'_>, t: Transfer) -> R<()> {
        let pid = site.pid;
        let n = t.count;
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
    fn tee(&mut self, pid: u32, in_fd: i64, out_fd: i64, n: u64) {
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

    fn mmap(&mut self, pid: u32, fd: i64, fd_path: Option<&[u8]>, shared_writable: bool) -> R<()> {
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

    fn reflink(&self, pid: u32, fd: i64, fd_path: Option<&[u8]>) -> R<()> {
        let inside = matches!(self.ofd(pid, fd).map(|o| &o.target), Some(Target::Inode(_)))
            || self.annotation_inside(fd_path).is_some();
        if inside {
            return Err(Fault::unmodelable(
                "clones extents into the directory under test; blackout cannot model reflinks",
            ));
        }
        Ok(())
    }

    // ---- syncs -----------------------------------------------------------

    /// fsync, fdatasync, sync, syncfs, sync_file_range that succeeded.
    fn sync_call(&mut self, site: &CallSite<'_>, call: &Syscall) {
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
    fn failed_sync(&mut self, site: &CallSite<'_>, fd: i64, errno: String) {
        if let Some(Target::Inode(ino)) = self.ofd(site.pid, fd).map(|o| o.target.clone()) {
            let path = self
                .ofd(site.pid, fd)
                .map(|o| o.name.clone())
                .unwrap_or_default();
            self.push(site, OpKind::FailedSync { ino, errno }, &path);
        }
    }

    fn sync_file_range(&mut self, site: &CallSite<'_>, fd: i64) {
        if let Some(Ofd {
            target: Target::Inode(ino),
            name: path,
            ..
        }) = self.ofd(site.pid, fd).cloned()
        {
            self.push(site, OpKind::SyncFileRange { ino }, &path);
        }
    }

    // ---- files -----------------------------------------------------------

    fn open(&mut self, site: &CallSite<'_>, open: Open) -> R<()> {
        let pid = site.pid;
        let fl = open.flags;
        let path = open.path.as_slice();
        let sync = if fl.sync {
            Some(false)
        } else if fl.dsync {
            Some(true)
        } else {
            None
        };
        let mut ofd = Ofd {
            target: Target::Other,
            offset: 0,
            append: fl.append,
            sync,
            writable: fl.writable,
            name: path.to_vec(),
        };
        if fl.tmpfile {
            match self.resolve(pid, open.dirfd, path, true) {
                Resolved::In { ino: Some(d), .. } => {
                    let ino = self.new_inode(InodeKind::File, Vec::new(), d)?;
                    ofd.target = Target::Inode(ino);
                }
                Resolved::Out(p) => {
                    self.stats.outside += 1;
                    ofd.target = Target::Outside(p);
                }
                _ => return Err(self.diverged(path, "O_TMPFILE open")),
            }
            self.install(pid, open.fd, ofd, fl.cloexec);
            return Ok(());
        }
        let follow = !(fl.nofollow || (fl.creat && fl.excl));
        let resolved = self.resolve(pid, open.dirfd, path, follow);
        let annotated = self.annotated_inode(open.fd_path.as_deref());
        let ino = match resolved {
            Resolved::In { ino: Some(i), .. } => {
                if let Some(Some(a)) = annotated {
                    if a != i {
                        return Err(Fault::divergence(format!(
                            "opened `{}`, which the model resolves to inode {i} but strace shows as inode {a}'s path",
                            String::from_utf8_lossy(path)
                        )));
                    }
                }
                // Linux truncates on O_TRUNC whatever the access mode: a
                // successful O_RDONLY|O_TRUNC open empties the file too.
                if fl.trunc
                    && self.inodes[i as usize].kind == InodeKind::File
                    && self.inodes[i as usize].size > 0
                {
                    self.truncate(site, i, 0, path)?;
                }
                i
            }
            Resolved::In {
                entry: Some((dir, name)),
                ino: None,
            } if fl.creat => self.link_new(site, dir, name, InodeKind::File, Vec::new(), path)?,
            Resolved::Out(p) => match annotated {
                // Reached the directory by a route the model cannot follow
                // (e.g. /proc/self/cwd or an outside symlink into it): the
                // recorded path of the fd is the truth.
                Some(Some(a)) => a,
                Some(None) => return Err(self.diverged(path, "open")),
                None => {
                    self.stats.outside += 1;
                    ofd.target = Target::Outside(p);
                    self.install(pid, open.fd, ofd, fl.cloexec);
                    return Ok(());
                }
            },
            _ => return Err(self.diverged(path, "open")),
        };
        ofd.target = Target::Inode(ino);
        self.install(pid, open.fd, ofd, fl.cloexec);
        Ok(())
    }

    /// A new inode of `kind`, linked as `name` in `dir`.
    fn link_new(
        &mut self,
        site: &CallSite<'_>,
        dir: Ino,
        name: Vec<u8>,
        kind: InodeKind,
        data: Vec<u8>,
        path: &[u8],
    ) -> R<Ino> {
        let ino = self.new_inode(kind, data, dir)?;
        self.inodes[dir as usize].entries.insert(name.clone(), ino);
        self.push(
            site,
            OpKind::Link {
                dir,
                name: Name(name),
                ino,
                new: true,
            },
            path,
        );
        Ok(ino)
    }

    fn truncate(&mut self, site: &CallSite<'_>, ino: Ino, size: u64, path: &[u8]) -> R<()> {
        if self.inodes[ino as usize].kind != InodeKind::File {
            return Err(Fault::divergence(
                "truncates an inode that is not a regular file",
            ));
        }
        self.model_truncate(ino, size);
        self.push(site, OpKind::Truncate { ino, size }, path);
        Ok(())
    }

    fn truncate_path(&mut self, site: &CallSite<'_>, path: &[u8], size: u64) -> R<()> {
        match self.resolve(site.pid, AT_FDCWD, path, true) {
            Resolved::In { ino: Some(ino), .. } => self.truncate(site, ino, size, path),
            Resolved::Out(_) => {
                self.stats.outside += 1;
                Ok(())
            }
            _ => Err(self.diverged(path, "truncate")),
        }
    }

    fn ftruncate(
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

    fn fallocate(
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

    // ---- names -----------------------------------------------------------

    fn rename(&mut self, site: &CallSite<'_>, r: &Rename) -> R<()> {
        let pid = site.pid;
        if r.whiteout {
            return Err(Fault::unmodelable("RENAME_WHITEOUT is not modelled"));
        }
        let src = self.resolve(pid, r.from_dirfd, &r.from, false);
        let dst = self.resolve(pid, r.to_dirfd, &r.to, false);
        match (src, dst) {
            (
                Resolved::In {
                    entry: Some((fdir, fname)),
                    ino: Some(ino),
                },
                Resolved::In {
                    entry: Some((tdir, tname)),
                    ino: replaced,
                },
            ) => self.rename_inside(site, r, (fdir, fname), ino, (tdir, tname), replaced),
            (
                Resolved::In {
                    entry: Some((dir, name)),
                    ino: Some(ino),
                },
                Resolved::Out(_),
            ) => {
                if r.exchange {
                    return Err(Fault::unmodelable("exchanges a file inside the directory under test with one outside; its bytes are not in the log"));
                }
                self.inodes[dir as usize].entries.remove(&name);
                self.push(
                    site,
                    OpKind::Unlink {
                        dir,
                        name: Name(name),
                        ino,
                    },
                    &r.from,
                );
                Ok(())
            }
            (Resolved::Out(_), Resolved::In { .. }) => Err(Fault::unmodelable(format!(
                "moves `{}` from outside the directory under test into it; its bytes are not in the log (create it there, or seed it with --init)",
                String::from_utf8_lossy(&r.from)
            ))),
            (Resolved::Out(_), Resolved::Out(_)) => {
                self.stats.outside += 1;
                Ok(())
            }
            _ => Err(self.diverged(&r.from, "rename")),
        }
    }

    /// A rename (or exchange) of `ino` at `from` to `to`, both inside the
    /// directory under test; `replaced` is the inode `to` named.
    fn rename_inside(
        &mut self,
        site: &CallSite<'_>,
        r: &Rename,
        (fdir, fname): (Ino, Vec<u8>),
        ino: Ino,
        (tdir, tname): (Ino, Vec<u8>),
        replaced: Option<Ino>,
    ) -> R<()> {
        let exchange = r.exchange;
        if replaced == Some(ino) && !exchange {
            return Ok(()); // Two links to one inode: POSIX says nothing happens.
        }
        if exchange {
            let other = replaced.ok_or_else(|| self.diverged(&r.to, "RENAME_EXCHANGE"))?;
            self.inodes[fdir as usize]
                .entries
                .insert(fname.clone(), other);
            self.inodes[tdir as usize]
                .entries
                .insert(tname.clone(), ino);
            if self.inodes[other as usize].kind == InodeKind::Dir {
                self.inodes[other as usize].parent = fdir;
            }
        } else {
            self.inodes[fdir as usize].entries.remove(&fname);
            self.inodes[tdir as usize]
                .entries
                .insert(tname.clone(), ino);
        }
        if self.inodes[ino as usize].kind == InodeKind::Dir {
            self.inodes[ino as usize].parent = tdir;
        }
        self.push(
            site,
            OpKind::Rename {
                from_dir: fdir,
                from_name: Name(fname),
                to_dir: tdir,
                to_name: Name(tname),
                ino,
                replaced,
                exchange,
            },
            &r.from,
        );
        Ok(())
    }

    fn unlink(&mut self, site: &CallSite<'_>, dirfd: i64, path: &[u8]) -> R<()> {
        match self.resolve(site.pid, dirfd, path, false) {
            Resolved::In {
                entry: Some((dir, name)),
                ino: Some(ino),
            } => {
                self.inodes[dir as usize].entries.remove(&name);
                self.push(
                    site,
                    OpKind::Unlink {
                        dir,
                        name: Name(name),
                        ino,
                    },
                    path,
                );
                Ok(())
            }
            Resolved::Out(_) => {
                self.stats.outside += 1;
                Ok(())
            }
            _ => Err(self.diverged(path, "unlink")),
        }
    }

    /// The inode a `/proc/…/fd/N` path names: `None` when the process or
    /// the fd is unknown, or the fd is not on a file inside.
    fn proc_fd_inode(&self, pid: u32, p: &ProcFd) -> Option<Ino> {
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

    fn link(&mut self, site: &CallSite<'_>, l: &Link) -> R<()> {
        let pid = site.pid;
        let src: Option<Ino> = if l.from.is_empty() && l.empty_path {
            match self.ofd(pid, l.from_dirfd).map(|o| &o.target) {
                Some(Target::Inode(i)) => Some(*i),
                _ => None,
            }
        } else if let Some(p) = &l.from_proc_fd {
            self.proc_fd_inode(pid, p)
        } else {
            match self.resolve(pid, l.from_dirfd, &l.from, l.follow) {
                Resolved::In { ino: Some(i), .. } => Some(i),
                Resolved::Out(_) => None,
                _ => return Err(self.diverged(&l.from, "link")),
            }
        };
        match (src, self.resolve(pid, l.to_dirfd, &l.to, false)) {
            (
                Some(ino),
                Resolved::In {
                    entry: Some((dir, name)),
                    ino: None,
                },
            ) => {
                self.inodes[dir as usize].entries.insert(name.clone(), ino);
                self.push(
                    site,
                    OpKind::Link {
                        dir,
                        name: Name(name),
                        ino,
                        new: false,
                    },
                    &l.to,
                );
                Ok(())
            }
            (None, Resolved::In { .. }) => Err(Fault::unmodelable(format!(
                "links `{}` into the directory under test from a file the log does not hold",
                String::from_utf8_lossy(&l.to)
            ))),
            (_, Resolved::Out(_)) => {
                self.stats.outside += 1;
                Ok(())
            }
            _ => Err(self.diverged(&l.to, "link")),
        }
    }

    fn create(
        &mut self,
        site: &CallSite<'_>,
        dirfd: i64,
        path: &[u8],
        kind: InodeKind,
        data: Vec<u8>,
    ) -> R<()> {
        match self.resolve(site.pid, dirfd, path, false) {
            Resolved::In {
                entry: Some((dir, name)),
                ino: None,
            } => {
                self.link_new(site, dir, name, kind, data, path)?;
                Ok(())
            }
            Resolved::Out(_) => {
                self.stats.outside += 1;
                Ok(())
            }
            _ => Err(self.diverged(path, "create")),
        }
    }

    fn mknod(&mut self, site: &CallSite<'_>, dirfd: i64, path: &[u8], regular: bool) -> R<()> {
        if regular {
            return self.create(site, dirfd, path, InodeKind::File, Vec::new());
        }
        match self.resolve(site.pid, dirfd, path, false) {
            Resolved::Out(_) => {
                self.stats.outside += 1;
                Ok(())
            }
            _ => Err(Fault::unmodelable(format!(
                "creates a special file `{}` in the directory under test; blackout models regular files, directories and symlinks",
                String::from_utf8_lossy(path)
            ))),
        }
    }
}
