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
//! its own function; [`FsModel::apply`] only dispatches. The families live
//! in their own files: `paths` (lookups), `processes` (fd tables,
//! processes, pipes), `data` (writes, copies, truncates, syncs), `names`
//! (open, create, link, rename, unlink).
//!
//! The model never does I/O: paths are only ever looked up in it, so a
//! hostile log (absolute paths, `..`, symlinks pointing anywhere) cannot make
//! blackout read or write outside its own memory.
//!
//! Where the model and the log disagree (a call succeeded that the model says
//! must fail) the call fails with a [`ReplayErrorKind::Divergence`]: a silent
//! divergence would make every later verdict wrong.

use std::collections::{BTreeMap, HashMap, VecDeque};

use blackout_oplog::blob::Blob;
use blackout_oplog::contents::{Contents, Data};
use blackout_oplog::ops::{DataRef, Ino, InodeKind, Name, Op, OpKind, ROOT_INO};
use blackout_oplog::store::InodeState;
use blackout_oplog::trace::{ReplayStats, Replayed, MODEL_FILE_BYTES_MAX};
use blackout_oplog::tree::{Node, Tree};

use crate::error::{Fault, ReplayErrorKind};
use crate::syscall::{CallSite, Outcome, Syscall, SyscallEvent, Touched};

mod data;
mod names;
mod outside;
mod paths;
mod processes;

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
    /// Files the run created outside the directory under test.
    outside: outside::Outside,
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
            outside: outside::Outside::default(),
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

    // ---- paths -----------------------------------------------------------

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

    // ---- data ------------------------------------------------------------

    // ---- syncs -----------------------------------------------------------

    // ---- files -----------------------------------------------------------

    // ---- names -----------------------------------------------------------
}
