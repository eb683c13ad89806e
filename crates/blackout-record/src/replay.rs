//! Replay: system calls → ops, on a model of the file system.
//!
//! The model holds inodes and directory entries for the directory under test,
//! per-process fd tables (threads share one, fork copies it) whose entries
//! point at shared open file descriptions (offset, `O_APPEND`, `O_SYNC`), and a
//! working directory per process. Every call is applied to the model; the
//! calls that change the directory under test emit [`Op`]s naming inodes.
//!
//! Replay never does I/O: paths in a log are only ever looked up in the model,
//! so a hostile log (absolute paths, `..`, symlinks pointing anywhere) cannot
//! make blackout read or write outside its own memory.
//!
//! Where the model and the log disagree (a call succeeded that the model says
//! must fail) replay stops with an error naming the line: a silent divergence
//! would make every later verdict wrong.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::os::unix::ffi::OsStrExt;

use blackout_oplog::contents;
use blackout_oplog::ops::{DataRef, Ino, InodeKind, Name, Op, OpKind, ROOT_INO};
pub use blackout_oplog::trace::{ReplayStats, Replayed, MODEL_FILE_BYTES_MAX};
use blackout_oplog::tree::{Node, Tree};

use crate::strace::{self, Call, Event, Ret};

/// How many symlinks one lookup may follow (as Linux: 40).
const SYMLINK_FOLLOW_MAX: u32 = 40;

/// A replay error: the log line and call it is about, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayError {
    /// Log line (1-based).
    pub line: u32,
    /// The system call, when the error is about one.
    pub syscall: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for ReplayError {
    /// `LINE: syscall: message`, always on one line: control characters that
    /// a hostile log put into a path are escaped.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let message = blackout_oplog::ops::escape_controls(&self.message);
        match &self.syscall {
            Some(s) => write!(f, "{}: {}: {}", self.line, s, message),
            None => write!(f, "{}: {}", self.line, message),
        }
    }
}

impl std::error::Error for ReplayError {}

impl From<strace::ParseError> for ReplayError {
    fn from(e: strace::ParseError) -> Self {
        ReplayError {
            line: e.line,
            syscall: None,
            message: e.message,
        }
    }
}

/// Replays a log against an initial tree. `dir` is the absolute path the
/// directory under test had when the log was recorded.
pub fn replay(log: &[u8], tree: &Tree, dir: &[u8]) -> Result<Replayed, ReplayError> {
    replay_with(log, tree, dir, &ReplayOptions::default())
}

/// What replay may accept beyond the default.
#[derive(Debug, Clone, Default)]
pub struct ReplayOptions {
    /// Files (globs on the path inside the directory under test or on the
    /// file name, `*-shm`) the program treats as volatile and rebuilds on restart: a shared
    /// writable mmap of them is allowed, and what is written through memory
    /// is not modelled.
    pub volatile: Vec<String>,
}

impl ReplayOptions {
    /// Checks the volatile globs: an error names the first invalid one.
    pub fn validate(&self) -> Result<(), String> {
        for p in &self.volatile {
            globset::Glob::new(p).map_err(|e| format!("--volatile `{p}`: {e}"))?;
        }
        Ok(())
    }
}

/// [`replay`] with options. Fails with a message naming the pattern when a
/// volatile glob is invalid.
pub fn replay_with(
    log: &[u8],
    tree: &Tree,
    dir: &[u8],
    opts: &ReplayOptions,
) -> Result<Replayed, ReplayError> {
    let mut volatile = globset::GlobSetBuilder::new();
    for p in &opts.volatile {
        volatile.add(globset::Glob::new(p).map_err(|e| ReplayError {
            line: 0,
            syscall: None,
            message: format!("--volatile `{p}`: {e}"),
        })?);
    }
    let volatile = volatile.build().map_err(|e| ReplayError {
        line: 0,
        syscall: None,
        message: format!("--volatile: {e}"),
    })?;
    let parsed = strace::parse_log(log)?;
    let mut m = Model::new(tree, dir);
    m.volatile = volatile;
    m.stats.lines = parsed.stats.lines;
    m.stats.calls = parsed.stats.calls;
    m.stats.skipped = parsed.stats.skipped;
    m.prescan_clones(&parsed.events);
    for (idx, ev) in parsed.events.iter().enumerate() {
        match ev {
            Event::Call(c) => {
                m.ensure_proc(c.pid, idx).map_err(|msg| ReplayError {
                    line: c.line,
                    syscall: Some(c.name_str().to_string()),
                    message: msg,
                })?;
                m.current_end_line = c.end_line;
                m.call(c, idx).map_err(|msg| ReplayError {
                    line: c.line,
                    syscall: Some(c.name_str().to_string()),
                    message: msg,
                })?;
            }
            Event::Exit(x) => {
                m.procs.remove(&x.pid);
            }
            Event::Unfinished(c) => m.unfinished(c)?,
        }
    }
    Ok(m.finish())
}

#[derive(Debug, Clone)]
struct Inode {
    kind: InodeKind,
    /// File bytes (up to `size`; the rest reads as zeros) or symlink target.
    data: Vec<u8>,
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

struct Model {
    dir: Vec<u8>,
    /// Files whose shared writable mmaps are allowed (see [`ReplayOptions`]).
    volatile: globset::GlobSet,
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
    data: Vec<u8>,
    symlinks: BTreeMap<Ino, Name>,
    stats: ReplayStats,
    current_end_line: u32,
}

/// Parsed open flags.
#[derive(Debug, Default, Clone, Copy)]
struct OpenFlags {
    creat: bool,
    excl: bool,
    trunc: bool,
    append: bool,
    tmpfile: bool,
    sync: bool,
    dsync: bool,
    nofollow: bool,
    cloexec: bool,
    writable: bool,
}

impl OpenFlags {
    fn parse(arg: &[u8]) -> OpenFlags {
        let has = |f: &[u8]| strace::has_flag(arg, f);
        OpenFlags {
            creat: has(b"O_CREAT"),
            excl: has(b"O_EXCL"),
            trunc: has(b"O_TRUNC"),
            append: has(b"O_APPEND"),
            tmpfile: has(b"O_TMPFILE"),
            sync: has(b"O_SYNC"),
            dsync: has(b"O_DSYNC"),
            nofollow: has(b"O_NOFOLLOW"),
            cloexec: has(b"O_CLOEXEC"),
            writable: has(b"O_WRONLY") || has(b"O_RDWR"),
        }
    }
}

type R<T> = Result<T, String>;

fn arg<'a>(args: &[&'a [u8]], i: usize) -> R<&'a [u8]> {
    args.get(i)
        .copied()
        .ok_or_else(|| format!("argument {} is missing", i + 1))
}

fn int_arg(args: &[&[u8]], i: usize) -> R<i64> {
    let a = arg(args, i)?;
    if a.starts_with(b"~") {
        // close_range's `~0U`.
        return Ok(i64::from(u32::MAX));
    }
    strace::parse_int(a)
        .ok_or_else(|| format!("argument {} is not a number: `{}`", i + 1, strace::show(a)))
}

fn str_arg(args: &[&[u8]], i: usize) -> R<Vec<u8>> {
    let a = arg(args, i)?;
    let d = strace::decode_string(a)
        .ok_or_else(|| format!("argument {} is not a string: `{}`", i + 1, strace::show(a)))?;
    if d.truncated {
        return Err(format!(
            "argument {} was cut short by strace's string limit (-s)",
            i + 1
        ));
    }
    Ok(d.bytes)
}

/// The value inside `[N]` or `[N => M]` (an in/out offset), `None` for NULL.
fn offset_arg(args: &[&[u8]], i: usize) -> R<Option<u64>> {
    let a = arg(args, i)?;
    if a == b"NULL" {
        return Ok(None);
    }
    let inner = a
        .strip_prefix(b"[")
        .ok_or_else(|| format!("argument {} is not an offset: `{}`", i + 1, strace::show(a)))?;
    let v = strace::parse_int(inner)
        .ok_or_else(|| format!("argument {} is not an offset: `{}`", i + 1, strace::show(a)))?;
    u64::try_from(v)
        .map(Some)
        .map_err(|_| format!("argument {} is a negative offset", i + 1))
}

fn data_arg(a: &[u8], n: u64) -> R<Vec<u8>> {
    let d = strace::decode_string(a)
        .ok_or_else(|| format!("the data argument is not a string: `{}`", strace::show(a)))?;
    take(d, n)
}

fn iov_arg(a: &[u8], n: u64) -> R<Vec<u8>> {
    let d = strace::decode_iovecs(a).ok_or_else(|| {
        format!(
            "the iovec argument is not understood: `{}`",
            strace::show(a)
        )
    })?;
    take(d, n)
}

fn take(mut d: strace::Decoded, n: u64) -> R<Vec<u8>> {
    if (d.bytes.len() as u64) < n {
        return Err(if d.truncated {
            format!(
                "wrote {n} bytes but strace kept only {} (raise its string limit, -s)",
                d.bytes.len()
            )
        } else {
            format!(
                "returned {n} but its data holds only {} bytes",
                d.bytes.len()
            )
        });
    }
    d.bytes.truncate(n as usize);
    Ok(d.bytes)
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

impl Model {
    fn new(tree: &Tree, dir: &[u8]) -> Self {
        let mut dir = dir.to_vec();
        while dir.len() > 1 && dir.ends_with(b"/") {
            dir.pop();
        }
        let mut inodes: Vec<Inode> = tree
            .nodes
            .iter()
            .map(|n| {
                let (kind, data) = match n {
                    Node::File(d) => (InodeKind::File, d.clone()),
                    Node::Dir => (InodeKind::Dir, Vec::new()),
                    Node::Symlink(t) => (InodeKind::Symlink, t.clone()),
                };
                Inode {
                    kind,
                    size: data.len() as u64,
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
        Model {
            dir,
            volatile: globset::GlobSet::empty(),
            inodes,
            procs: HashMap::new(),
            tables: Vec::new(),
            cwds: Vec::new(),
            ofds: Vec::new(),
            pipes: Vec::new(),
            clones: HashMap::new(),
            ops: Vec::new(),
            op_end_lines: Vec::new(),
            data: Vec::new(),
            symlinks,
            stats: ReplayStats::default(),
            current_end_line: 0,
        }
    }

    fn finish(self) -> Replayed {
        Replayed {
            ops: self.ops,
            inodes: self.inodes.iter().map(|i| i.kind).collect(),
            symlinks: self.symlinks,
            data: self.data,
            stats: self.stats,
        }
    }

    // ---- processes -------------------------------------------------------

    fn prescan_clones(&mut self, events: &[Event<'_>]) {
        for (idx, ev) in events.iter().enumerate() {
            let Event::Call(c) = ev else { continue };
            let name = c.name();
            if !matches!(name, b"clone" | b"clone3" | b"fork" | b"vfork") {
                continue;
            }
            let Some(child) = c.ret().ok() else { continue };
            let Ok(child) = u32::try_from(child) else {
                continue;
            };
            let args = c.args_text();
            let flags = |f: &[u8]| memchr::memmem::find(args, f).is_some();
            let threadish = matches!(name, b"clone" | b"clone3");
            self.clones
                .entry(child)
                .or_default()
                .push_back(CloneRecord {
                    event: idx,
                    parent: c.pid,
                    share_files: threadish && flags(b"CLONE_FILES"),
                    share_fs: threadish && flags(b"CLONE_FS"),
                });
        }
    }

    /// Makes sure `pid` has a process entry: the first process of the log gets
    /// stdin/stdout/stderr and the directory under test as cwd; a child gets
    /// its parent's tables, shared or copied as its clone flags say.
    fn ensure_proc(&mut self, pid: u32, _event: usize) -> R<()> {
        if self.procs.contains_key(&pid) {
            return Ok(());
        }
        if let Some(rec) = self.clones.get_mut(&pid).and_then(|q| q.pop_front()) {
            return self.spawn(pid, rec.parent, rec.share_files, rec.share_fs);
        }
        if self.tables.is_empty() {
            let mut table = BTreeMap::new();
            for (fd, target) in [(0, Target::Other), (1, Target::Stdout), (2, Target::Other)] {
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
        Err(format!(
            "process {pid} appears without the clone/fork that created it"
        ))
    }

    fn spawn(&mut self, child: u32, parent: u32, share_files: bool, share_fs: bool) -> R<()> {
        let p = *self.procs.get(&parent).ok_or_else(|| {
            format!("process {child} was created by process {parent}, which the log never shows")
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
    fn resolve(&self, pid: u32, dirfd: i64, path: &[u8], follow: bool) -> R<Resolved> {
        if path.is_empty() {
            return Ok(Resolved::Missing);
        }
        let start = if path[0] == b'/' {
            Loc::Out(b"/".to_vec())
        } else if dirfd == strace::AT_FDCWD {
            self.cwds[self.proc(pid).cwd].clone()
        } else {
            match self.ofd(pid, dirfd).map(|o| &o.target) {
                Some(Target::Inode(i)) => Loc::In(*i),
                Some(Target::Outside(p)) => Loc::Out(p.clone()),
                _ => return Ok(Resolved::Out(path.to_vec())),
            }
        };
        let mut budget = SYMLINK_FOLLOW_MAX;
        Ok(self.walk(start, path, follow, &mut budget))
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
        if comps.is_empty() {
            return Resolved::In {
                entry: None,
                ino: Some(cur),
            };
        }
        for (k, comp) in comps.iter().enumerate() {
            let last = k + 1 == comps.len();
            match *comp {
                b"." => {
                    if last {
                        return Resolved::In {
                            entry: None,
                            ino: Some(cur),
                        };
                    }
                }
                b".." => {
                    if cur == ROOT_INO {
                        // Leaves the directory under test: continue lexically
                        // from its parent.
                        let mut rest = b"..".to_vec();
                        for c in &comps[k + 1..] {
                            rest.push(b'/');
                            rest.extend_from_slice(c);
                        }
                        return self.walk(Loc::Out(self.dir.clone()), &rest, follow, budget);
                    }
                    cur = self.inodes[cur as usize].parent;
                    if last {
                        return Resolved::In {
                            entry: None,
                            ino: Some(cur),
                        };
                    }
                }
                name => {
                    let node = &self.inodes[cur as usize];
                    if node.kind != InodeKind::Dir {
                        return Resolved::Missing;
                    }
                    let child = node.entries.get(name).copied();
                    match child {
                        None => {
                            if last {
                                return Resolved::In {
                                    entry: Some((cur, name.to_vec())),
                                    ino: None,
                                };
                            }
                            return Resolved::Missing;
                        }
                        Some(c) => {
                            let ck = &self.inodes[c as usize];
                            if ck.kind == InodeKind::Symlink && (!last || follow) {
                                if *budget == 0 {
                                    return Resolved::Missing;
                                }
                                *budget -= 1;
                                let mut rest = ck.data.clone();
                                for c in &comps[k + 1..] {
                                    rest.push(b'/');
                                    rest.extend_from_slice(c);
                                }
                                let from = if ck.data.first() == Some(&b'/') {
                                    Loc::Out(b"/".to_vec())
                                } else {
                                    Loc::In(cur)
                                };
                                if rest.is_empty() {
                                    return Resolved::Missing;
                                }
                                return self.walk(from, &rest, follow, budget);
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
            }
        }
        Resolved::In {
            entry: None,
            ino: Some(cur),
        }
    }

    /// The inode a `-y` annotation names, if it is inside the directory under
    /// test and the model has it.
    fn annotated_inode(&self, ann: Option<&[u8]>) -> Option<Option<Ino>> {
        let path = strace::decode_annotation(ann?)?;
        let rest = self.inside(&path)?.to_vec();
        let mut budget = 0;
        Some(
            match self.walk(Loc::In(ROOT_INO), &rest, false, &mut budget) {
                Resolved::In { ino, .. } => ino,
                _ => None,
            },
        )
    }

    /// Whether a `-y` annotation names a path inside the directory under test.
    fn annotation_inside(&self, ann: Option<&[u8]>) -> Option<Vec<u8>> {
        let path = strace::decode_annotation(ann?)?;
        let inside = self.inside(&path).is_some();
        inside.then_some(path)
    }

    // ---- ops -------------------------------------------------------------

    fn push(&mut self, call: &Call<'_>, kind: OpKind, path: &[u8]) {
        self.ops.push(Op {
            kind,
            syscall: call.name_str().to_string(),
            pid: call.pid,
            line: call.line,
            path: Name(path.to_vec()),
            stack: call
                .stack
                .iter()
                .filter_map(|l| crate::stacks::parse_frame(l))
                .collect(),
            origin: None,
        });
        self.op_end_lines.push(self.current_end_line);
    }

    /// Index of the first op that completed after `line` (where a sync
    /// started): the sync covers the ops before it.
    fn barrier(&self, line: u32) -> usize {
        self.op_end_lines.partition_point(|&l| l < line)
    }

    fn blob(&mut self, bytes: &[u8]) -> DataRef {
        let start = self.data.len() as u64;
        self.data.extend_from_slice(bytes);
        DataRef {
            start,
            len: bytes.len() as u64,
        }
    }

    fn new_inode(&mut self, kind: InodeKind, data: Vec<u8>, parent: Ino) -> R<Ino> {
        let ino = Ino::try_from(self.inodes.len()).map_err(|_| "too many inodes".to_string())?;
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
            data,
            entries: BTreeMap::new(),
            parent,
        });
        Ok(ino)
    }

    fn model_write(&mut self, ino: Ino, off: u64, bytes: &[u8]) -> R<()> {
        let end = off
            .checked_add(bytes.len() as u64)
            .filter(|&e| e <= MODEL_FILE_BYTES_MAX)
            .ok_or_else(|| {
                format!(
                    "writes past {MODEL_FILE_BYTES_MAX} bytes, the largest file blackout models"
                )
            })?;
        let node = &mut self.inodes[ino as usize];
        debug_assert!(end <= MODEL_FILE_BYTES_MAX);
        contents::write(&mut node.data, &mut node.size, off, bytes);
        Ok(())
    }

    fn model_truncate(&mut self, ino: Ino, size: u64) {
        let node = &mut self.inodes[ino as usize];
        contents::truncate(&mut node.data, &mut node.size, size);
    }

    fn file_bytes(&self, ino: Ino, off: u64, len: u64) -> Vec<u8> {
        contents::read(&self.inodes[ino as usize].data, off, len)
    }

    /// A write of `bytes` through fd `fd`. `at` is an explicit offset
    /// (pwrite); `append` forces the end of file (`RWF_APPEND`).
    #[allow(clippy::too_many_arguments)]
    fn write_fd(
        &mut self,
        call: &Call<'_>,
        fd_arg: &[u8],
        n: u64,
        bytes: &dyn Fn() -> R<Vec<u8>>,
        at: Option<u64>,
        force_append: bool,
        rwf_sync: Option<bool>,
    ) -> R<()> {
        let pid = call.pid;
        let fd = strace::parse_int(fd_arg).ok_or("the fd is not a number")?;
        let Some(entry) = self.fd(pid, fd) else {
            return self.unknown_fd(fd, fd_arg, "writes");
        };
        let ofd = self.ofds[entry.ofd].clone();
        match ofd.target {
            Target::Inode(ino) => {
                if self.inodes[ino as usize].kind != InodeKind::File {
                    return Err("writes to an inode that is not a regular file".into());
                }
                let bytes = bytes()?;
                let append = ofd.append || force_append;
                let off = if append {
                    self.inodes[ino as usize].size
                } else {
                    at.unwrap_or(ofd.offset)
                };
                self.model_write(ino, off, &bytes)?;
                let data = self.blob(&bytes);
                self.push(call, OpKind::Write { ino, off, data }, &ofd.name);
                if at.is_none() {
                    self.ofds[entry.ofd].offset = off + bytes.len() as u64;
                }
                if let Some(dsync) = rwf_sync.or(ofd.sync) {
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
                    self.push(call, kind, &ofd.name);
                }
            }
            Target::Stdout => {
                let data = self.blob(&bytes()?);
                self.push(call, OpKind::Output { data }, b"<stdout>");
            }
            Target::PipeWrite(p) => {
                self.pipes[p].buf.extend(bytes()?);
            }
            Target::Outside(_) => {
                self.stats.outside += 1;
                if at.is_none() {
                    self.ofds[entry.ofd].offset = ofd.offset + n;
                }
            }
            Target::Other | Target::PipeRead(_) => {}
        }
        Ok(())
    }

    /// A write through an fd the model does not know: refused when strace's
    /// annotation places it inside the directory under test.
    fn unknown_fd(&self, fd: i64, fd_arg: &[u8], what: &str) -> R<()> {
        if let Some(path) = self.annotation_inside(strace::arg_annotation(fd_arg)) {
            return Err(format!(
                "{what} through fd {fd}, whose origin the log does not show, into the directory under test ({})",
                String::from_utf8_lossy(&path)
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
                    return Err(format!(
                        "reads {n} bytes at offset {off} of `{}`, past its end in the model",
                        String::from_utf8_lossy(&ofd.name)
                    ));
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

    /// copy_file_range, sendfile, splice: `n` bytes from `in_fd` to `out_fd`.
    fn copy(
        &mut self,
        call: &Call<'_>,
        in_arg: &[u8],
        in_at: Option<u64>,
        out_arg: &[u8],
        out_at: Option<u64>,
        n: u64,
    ) -> R<()> {
        let pid = call.pid;
        let in_fd = strace::parse_int(in_arg).ok_or("the input fd is not a number")?;
        let out_fd = strace::parse_int(out_arg).ok_or("the output fd is not a number")?;
        let bytes = self.read_source(pid, in_fd, in_at, n, true)?;
        let out_target = self.ofd(pid, out_fd).map(|o| o.target.clone());
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
                return self.unknown_fd(out_fd, out_arg, "copies");
            }
            _ => false,
        };
        match bytes {
            Some(b) => self.write_fd(call, out_arg, n, &|| Ok(b.clone()), out_at, false, None),
            None if matters => Err(format!(
                "copies {n} bytes {} from fd {in_fd}, whose bytes the log does not hold (a file outside the directory, a socket, or a pipe fed from one)",
                if out_target == Some(Target::Stdout) {
                    "to standard output (where promises are read)"
                } else {
                    "into the directory under test"
                }
            )),
            None => Ok(()),
        }
    }

    fn unfinished(&mut self, c: &Call<'_>) -> Result<(), ReplayError> {
        if !self.procs.contains_key(&c.pid) || !self.touches_dir(c) {
            return Ok(());
        }
        Err(ReplayError {
            line: c.line,
            syscall: Some(c.name_str().to_string()),
            message: "never completed (its process ended or the log was cut), so what it changed in the directory under test is unknown".into(),
        })
    }

    /// Whether a modifying call names the directory under test: an fd
    /// argument on a file inside it, or a path argument that resolves inside.
    /// Used for calls whose result the log does not show.
    fn touches_dir(&self, c: &Call<'_>) -> bool {
        // (fd argument positions, (dirfd, path) argument positions)
        let (fds, paths): (&[usize], &[(Option<usize>, usize)]) = match c.name() {
            b"write" | b"writev" | b"pwrite64" | b"pwritev" | b"pwritev2" | b"ftruncate"
            | b"fallocate" | b"vmsplice" => (&[0], &[]),
            b"copy_file_range" | b"splice" => (&[2], &[]),
            b"sendfile" | b"sendfile64" => (&[0], &[]),
            b"rename" | b"link" => (&[], &[(None, 0), (None, 1)]),
            b"renameat" | b"renameat2" | b"linkat" => (&[], &[(Some(0), 1), (Some(2), 3)]),
            b"unlink" | b"rmdir" | b"truncate" | b"mkdir" => (&[], &[(None, 0)]),
            b"unlinkat" | b"mkdirat" => (&[], &[(Some(0), 1)]),
            b"symlink" => (&[], &[(None, 1)]),
            b"symlinkat" => (&[], &[(Some(1), 2)]),
            _ => return false,
        };
        let args = c.args();
        let fd_inside = |i: &usize| {
            args.get(*i)
                .and_then(|a| strace::parse_int(a))
                .is_some_and(|fd| {
                    matches!(
                        self.ofd(c.pid, fd).map(|o| &o.target),
                        Some(Target::Inode(_))
                    )
                })
        };
        let path_inside = |(dirfd, p): &(Option<usize>, usize)| {
            let dirfd = match dirfd {
                Some(i) => match args.get(*i).and_then(|a| strace::parse_int(a)) {
                    Some(fd) => fd,
                    None => return false,
                },
                None => strace::AT_FDCWD,
            };
            args.get(*p)
                .and_then(|a| strace::decode_string(a))
                .is_some_and(|d| {
                    matches!(
                        self.resolve(c.pid, dirfd, &d.bytes, false),
                        Ok(Resolved::In { .. })
                    )
                })
        };
        fds.iter().any(fd_inside) || paths.iter().any(path_inside)
    }

    // ---- dispatch --------------------------------------------------------

    fn call(&mut self, c: &Call<'_>, event: usize) -> R<()> {
        let ret = c.ret();
        let name = c.name();
        // Fork-like calls are handled whether or not the child appeared yet.
        if matches!(name, b"clone" | b"clone3" | b"fork" | b"vfork") {
            if let Some(child) = ret.ok().and_then(|v| u32::try_from(v).ok()) {
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
            }
            return Ok(());
        }
        if let Ret::Err(errno) = ret {
            self.stats.failed += 1;
            if matches!(name, b"fsync" | b"fdatasync") {
                let args = c.args();
                let fd = int_arg(&args, 0)?;
                if let Some(Target::Inode(ino)) = self.ofd(c.pid, fd).map(|o| o.target.clone()) {
                    let path = self
                        .ofd(c.pid, fd)
                        .map(|o| o.name.clone())
                        .unwrap_or_default();
                    let errno = String::from_utf8_lossy(errno).into_owned();
                    self.push(c, OpKind::FailedSync { ino, errno }, &path);
                }
            }
            return Ok(());
        }
        if ret == Ret::Unknown && !matches!(name, b"execve" | b"execveat") {
            // Left without a result (the process ended inside it): harmless
            // unless it may have changed the directory under test.
            if self.touches_dir(c) {
                return Err("returned no result (its process ended inside it), so what it changed in the directory under test is unknown".into());
            }
            return Ok(());
        }
        let args = c.args();
        let pid = c.pid;
        // The byte count of a successful read, write or copy.
        let n = ret.ok().and_then(|v| u64::try_from(v).ok()).unwrap_or(0);
        match name {
            b"open" => {
                let path = str_arg(&args, 0)?;
                let flags = OpenFlags::parse(arg(&args, 1)?);
                self.open(c, strace::AT_FDCWD, &path, flags)
            }
            b"openat" => {
                let dirfd = int_arg(&args, 0)?;
                let path = str_arg(&args, 1)?;
                let flags = OpenFlags::parse(arg(&args, 2)?);
                self.open(c, dirfd, &path, flags)
            }
            b"openat2" => {
                let dirfd = int_arg(&args, 0)?;
                let path = str_arg(&args, 1)?;
                let how = arg(&args, 2)?;
                let inner = how
                    .strip_prefix(b"{")
                    .and_then(|h| h.strip_suffix(b"}"))
                    .ok_or("the open_how argument is not a struct")?;
                let flags = strace::split_args(inner)
                    .into_iter()
                    .find_map(|f| f.strip_prefix(b"flags="))
                    .unwrap_or(b"O_RDONLY");
                self.open(c, dirfd, &path, OpenFlags::parse(flags))
            }
            b"creat" => {
                let path = str_arg(&args, 0)?;
                let flags = OpenFlags::parse(b"O_WRONLY|O_CREAT|O_TRUNC");
                self.open(c, strace::AT_FDCWD, &path, flags)
            }
            b"close" => {
                let fd = int_arg(&args, 0)?;
                let t = self.proc(pid).table;
                self.tables[t].remove(&fd);
                Ok(())
            }
            b"close_range" => {
                let first = int_arg(&args, 0)?;
                let last = int_arg(&args, 1)?;
                let flags = arg(&args, 2)?;
                if strace::has_flag(flags, b"CLOSE_RANGE_UNSHARE") {
                    self.unshare(pid);
                }
                let t = self.proc(pid).table;
                let cloexec = strace::has_flag(flags, b"CLOSE_RANGE_CLOEXEC");
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
                Ok(())
            }
            b"dup" => {
                let old = int_arg(&args, 0)?;
                let new = ret.ok().unwrap_or(-1);
                self.dup(pid, old, new, false);
                Ok(())
            }
            b"dup2" | b"dup3" => {
                let old = int_arg(&args, 0)?;
                let new = int_arg(&args, 1)?;
                let cloexec = name == b"dup3" && strace::has_flag(arg(&args, 2)?, b"O_CLOEXEC");
                if old != new {
                    self.dup(pid, old, new, cloexec);
                }
                Ok(())
            }
            b"fcntl" | b"fcntl64" => {
                let fd = int_arg(&args, 0)?;
                let cmd = arg(&args, 1)?;
                match cmd {
                    b"F_DUPFD" | b"F_DUPFD_CLOEXEC" => {
                        let new = ret.ok().unwrap_or(-1);
                        self.dup(pid, fd, new, cmd == b"F_DUPFD_CLOEXEC");
                    }
                    b"F_SETFL" => {
                        let append = strace::has_flag(arg(&args, 2)?, b"O_APPEND");
                        if let Some(e) = self.fd(pid, fd) {
                            self.ofds[e.ofd].append = append;
                        }
                    }
                    b"F_SETFD" => {
                        let a = arg(&args, 2)?;
                        let cloexec = strace::has_flag(a, b"FD_CLOEXEC")
                            || strace::parse_int(a).unwrap_or(0) & 1 == 1;
                        let t = self.proc(pid).table;
                        if let Some(e) = self.tables[t].get_mut(&fd) {
                            e.cloexec = cloexec;
                        }
                    }
                    _ => {}
                }
                Ok(())
            }
            b"read" | b"readv" => {
                let fd = int_arg(&args, 0)?;
                self.read_source(pid, fd, None, n, false)?;
                Ok(())
            }
            b"preadv2" => {
                let fd = int_arg(&args, 0)?;
                let off = int_arg(&args, 3)?;
                if off == -1 {
                    self.read_source(pid, fd, None, n, false)?;
                }
                Ok(())
            }
            b"write" => {
                let fd_arg = arg(&args, 0)?;
                let data = arg(&args, 1)?;
                self.write_fd(c, fd_arg, n, &|| data_arg(data, n), None, false, None)
            }
            b"writev" => {
                let fd_arg = arg(&args, 0)?;
                let iov = arg(&args, 1)?;
                self.write_fd(c, fd_arg, n, &|| iov_arg(iov, n), None, false, None)
            }
            b"pwrite64" => {
                let fd_arg = arg(&args, 0)?;
                let data = arg(&args, 1)?;
                let off = u64::try_from(int_arg(&args, 3)?).map_err(|_| "negative offset")?;
                self.write_fd(c, fd_arg, n, &|| data_arg(data, n), Some(off), false, None)
            }
            b"pwritev" | b"pwritev2" => {
                let fd_arg = arg(&args, 0)?;
                let iov = arg(&args, 1)?;
                let off = int_arg(&args, 3)?;
                let at = if off == -1 && name == b"pwritev2" {
                    None
                } else {
                    Some(u64::try_from(off).map_err(|_| "negative offset")?)
                };
                let (append, sync) = if name == b"pwritev2" {
                    let f = args.get(4).copied().unwrap_or(b"0");
                    let sync = if strace::has_flag(f, b"RWF_SYNC") {
                        Some(false)
                    } else if strace::has_flag(f, b"RWF_DSYNC") {
                        Some(true)
                    } else {
                        None
                    };
                    (strace::has_flag(f, b"RWF_APPEND"), sync)
                } else {
                    (false, None)
                };
                self.write_fd(c, fd_arg, n, &|| iov_arg(iov, n), at, append, sync)
            }
            b"vmsplice" => {
                let fd_arg = arg(&args, 0)?;
                let iov = arg(&args, 1)?;
                self.write_fd(c, fd_arg, n, &|| iov_arg(iov, n), None, false, None)
            }
            b"lseek" => {
                let fd = int_arg(&args, 0)?;
                if let (Some(e), Some(v)) = (self.fd(pid, fd), ret.ok()) {
                    self.ofds[e.ofd].offset = v as u64;
                }
                Ok(())
            }
            b"truncate" => {
                let path = str_arg(&args, 0)?;
                let size = u64::try_from(int_arg(&args, 1)?).map_err(|_| "negative size")?;
                match self.resolve(pid, strace::AT_FDCWD, &path, true)? {
                    Resolved::In { ino: Some(ino), .. } => self.truncate(c, ino, size, &path),
                    Resolved::Out(_) => {
                        self.stats.outside += 1;
                        Ok(())
                    }
                    _ => Err(self.diverged(&path, "truncate")),
                }
            }
            b"ftruncate" => {
                let fd = int_arg(&args, 0)?;
                let size = u64::try_from(int_arg(&args, 1)?).map_err(|_| "negative size")?;
                match self.ofd(pid, fd).cloned() {
                    Some(Ofd {
                        target: Target::Inode(ino),
                        name,
                        ..
                    }) => self.truncate(c, ino, size, &name),
                    Some(_) => {
                        self.stats.outside += 1;
                        Ok(())
                    }
                    None => self.unknown_fd(fd, arg(&args, 0)?, "truncates"),
                }
            }
            b"fallocate" => self.fallocate(c, &args),
            b"rename" => {
                let from = str_arg(&args, 0)?;
                let to = str_arg(&args, 1)?;
                self.rename(c, strace::AT_FDCWD, &from, strace::AT_FDCWD, &to, b"0")
            }
            b"renameat" | b"renameat2" => {
                let fd1 = int_arg(&args, 0)?;
                let from = str_arg(&args, 1)?;
                let fd2 = int_arg(&args, 2)?;
                let to = str_arg(&args, 3)?;
                let flags = args.get(4).copied().unwrap_or(b"0");
                self.rename(c, fd1, &from, fd2, &to, flags)
            }
            b"unlink" | b"rmdir" => {
                let path = str_arg(&args, 0)?;
                self.unlink(c, strace::AT_FDCWD, &path)
            }
            b"unlinkat" => {
                let fd = int_arg(&args, 0)?;
                let path = str_arg(&args, 1)?;
                self.unlink(c, fd, &path)
            }
            b"link" => {
                let from = str_arg(&args, 0)?;
                let to = str_arg(&args, 1)?;
                self.link(c, strace::AT_FDCWD, &from, strace::AT_FDCWD, &to, b"0")
            }
            b"linkat" => {
                let fd1 = int_arg(&args, 0)?;
                let from = str_arg(&args, 1)?;
                let fd2 = int_arg(&args, 2)?;
                let to = str_arg(&args, 3)?;
                let flags = args.get(4).copied().unwrap_or(b"0");
                self.link(c, fd1, &from, fd2, &to, flags)
            }
            b"symlink" => {
                let target = str_arg(&args, 0)?;
                let path = str_arg(&args, 1)?;
                self.create(c, strace::AT_FDCWD, &path, InodeKind::Symlink, target)
            }
            b"symlinkat" => {
                let target = str_arg(&args, 0)?;
                let fd = int_arg(&args, 1)?;
                let path = str_arg(&args, 2)?;
                self.create(c, fd, &path, InodeKind::Symlink, target)
            }
            b"mkdir" => {
                let path = str_arg(&args, 0)?;
                self.create(c, strace::AT_FDCWD, &path, InodeKind::Dir, Vec::new())
            }
            b"mkdirat" => {
                let fd = int_arg(&args, 0)?;
                let path = str_arg(&args, 1)?;
                self.create(c, fd, &path, InodeKind::Dir, Vec::new())
            }
            b"mknod" | b"mknodat" => {
                let (fd, pi, mi) = if name == b"mknod" {
                    (strace::AT_FDCWD, 0, 1)
                } else {
                    (int_arg(&args, 0)?, 1, 2)
                };
                let path = str_arg(&args, pi)?;
                let mode = arg(&args, mi)?;
                let regular = !mode.starts_with(b"S_IF")
                    || strace::has_flag(mode, b"S_IFREG")
                    || mode.starts_with(b"S_IFREG");
                if regular {
                    return self.create(c, fd, &path, InodeKind::File, Vec::new());
                }
                match self.resolve(pid, fd, &path, false)? {
                    Resolved::Out(_) => {
                        self.stats.outside += 1;
                        Ok(())
                    }
                    _ => Err(format!(
                        "creates a special file `{}` in the directory under test; blackout models regular files, directories and symlinks",
                        String::from_utf8_lossy(&path)
                    )),
                }
            }
            b"fsync" | b"fdatasync" => {
                let fd = int_arg(&args, 0)?;
                match self.ofd(pid, fd).cloned() {
                    Some(Ofd {
                        target: Target::Inode(ino),
                        name: path,
                        ..
                    }) => {
                        let barrier = self.barrier(c.line);
                        let kind = if name == b"fsync" {
                            OpKind::Fsync {
                                ino,
                                barrier,
                                implied: false,
                            }
                        } else {
                            OpKind::Fdatasync {
                                ino,
                                barrier,
                                implied: false,
                            }
                        };
                        self.push(c, kind, &path);
                    }
                    _ => self.stats.outside += 1,
                }
                Ok(())
            }
            b"sync" => {
                let barrier = self.barrier(c.line);
                self.push(c, OpKind::Sync { barrier }, b"");
                Ok(())
            }
            b"syncfs" => {
                let fd = int_arg(&args, 0)?;
                match self.ofd(pid, fd).cloned() {
                    Some(Ofd {
                        target: Target::Inode(_),
                        name: path,
                        ..
                    }) => {
                        let barrier = self.barrier(c.line);
                        self.push(c, OpKind::Sync { barrier }, &path);
                    }
                    _ => self.stats.outside += 1,
                }
                Ok(())
            }
            b"sync_file_range" => {
                let fd = int_arg(&args, 0)?;
                if let Some(Ofd {
                    target: Target::Inode(ino),
                    name: path,
                    ..
                }) = self.ofd(pid, fd).cloned()
                {
                    self.push(c, OpKind::SyncFileRange { ino }, &path);
                }
                Ok(())
            }
            b"copy_file_range" => {
                let in_at = offset_arg(&args, 1)?;
                let out_at = offset_arg(&args, 3)?;
                self.copy(c, arg(&args, 0)?, in_at, arg(&args, 2)?, out_at, n)
            }
            b"sendfile" | b"sendfile64" => {
                let in_at = offset_arg(&args, 2)?;
                self.copy(c, arg(&args, 1)?, in_at, arg(&args, 0)?, None, n)
            }
            b"splice" => {
                let in_at = offset_arg(&args, 1)?;
                let out_at = offset_arg(&args, 3)?;
                self.copy(c, arg(&args, 0)?, in_at, arg(&args, 2)?, out_at, n)
            }
            b"tee" => {
                let n = usize::try_from(n).unwrap_or(usize::MAX);
                let in_fd = int_arg(&args, 0)?;
                let out_fd = int_arg(&args, 1)?;
                let src = match self.ofd(pid, in_fd).map(|o| o.target.clone()) {
                    Some(Target::PipeRead(p)) => Some(p),
                    _ => None,
                };
                if let Some(Target::PipeWrite(dst)) =
                    self.ofd(pid, out_fd).map(|o| o.target.clone())
                {
                    match src {
                        Some(s) if self.pipes[s].buf.len() >= n && !self.pipes[s].unknown => {
                            let bytes: Vec<u8> =
                                self.pipes[s].buf.iter().take(n).copied().collect();
                            self.pipes[dst].buf.extend(bytes);
                        }
                        _ => self.pipes[dst].unknown = true,
                    }
                }
                Ok(())
            }
            b"execve" | b"execveat" => {
                if ret.ok() == Some(0) {
                    self.unshare(pid);
                    let t = self.proc(pid).table;
                    self.tables[t].retain(|_, e| !e.cloexec);
                }
                Ok(())
            }
            b"chdir" => {
                let path = str_arg(&args, 0)?;
                let loc = match self.resolve(pid, strace::AT_FDCWD, &path, true)? {
                    Resolved::In { ino: Some(i), .. } => Loc::In(i),
                    Resolved::Out(p) => Loc::Out(p),
                    _ => return Err(self.diverged(&path, "chdir")),
                };
                let cw = self.proc(pid).cwd;
                self.cwds[cw] = loc;
                Ok(())
            }
            b"fchdir" => {
                let fd = int_arg(&args, 0)?;
                let loc = match self.ofd(pid, fd).map(|o| o.target.clone()) {
                    Some(Target::Inode(i)) => Loc::In(i),
                    Some(Target::Outside(p)) => Loc::Out(p),
                    _ => match strace::arg_annotation(arg(&args, 0)?)
                        .and_then(strace::decode_annotation)
                    {
                        Some(p) if self.inside(&p).is_none() => Loc::Out(p),
                        _ => {
                            return Err(
                                "changes to a directory whose fd the log does not show".into()
                            )
                        }
                    },
                };
                let cw = self.proc(pid).cwd;
                self.cwds[cw] = loc;
                Ok(())
            }
            b"mmap" => {
                let prot = arg(&args, 2)?;
                let flags = arg(&args, 3)?;
                let fd = int_arg(&args, 4)?;
                let shared = strace::has_flag(flags, b"MAP_SHARED")
                    || strace::has_flag(flags, b"MAP_SHARED_VALIDATE");
                if shared && strace::has_flag(prot, b"PROT_WRITE") {
                    if let Some(o) = self.ofd(pid, fd) {
                        // The glob may name the path inside the directory
                        // (as opened, or made relative) or the file name.
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
                            return Err(format!(
                                "maps `{}` shared and writable: writes through memory are not in the log (if the program rebuilds this file on restart, name it with --volatile)",
                                String::from_utf8_lossy(&o.name)
                            ));
                        }
                    } else {
                        self.unknown_fd(fd, arg(&args, 4)?, "maps a file")?;
                    }
                }
                Ok(())
            }
            b"io_uring_setup" => {
                Err("io_uring submits I/O the log does not show; blackout cannot model it".into())
            }
            b"pipe" | b"pipe2" => {
                let fds = arg(&args, 0)?;
                let inner = fds
                    .strip_prefix(b"[")
                    .and_then(|f| f.strip_suffix(b"]"))
                    .ok_or("the fd pair is not a list")?;
                let pair = strace::split_args(inner);
                let r = strace::parse_int(arg(&pair, 0)?).ok_or("bad pipe fd")?;
                let w = strace::parse_int(arg(&pair, 1)?).ok_or("bad pipe fd")?;
                let cloexec = args
                    .get(1)
                    .map(|f| strace::has_flag(f, b"O_CLOEXEC"))
                    .unwrap_or(false);
                self.pipes.push(Pipe::default());
                let p = self.pipes.len() - 1;
                for (fd, target) in [(r, Target::PipeRead(p)), (w, Target::PipeWrite(p))] {
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
                Ok(())
            }
            b"ioctl" => {
                let fd = int_arg(&args, 0)?;
                let req = arg(&args, 1)?;
                if matches!(req, b"FICLONE" | b"FICLONERANGE" | b"FIDEDUPERANGE") {
                    let inside =
                        matches!(self.ofd(pid, fd).map(|o| &o.target), Some(Target::Inode(_)))
                            || self
                                .annotation_inside(strace::arg_annotation(arg(&args, 0)?))
                                .is_some();
                    if inside {
                        return Err(
                            "clones extents into the directory under test; blackout cannot model reflinks"
                                .into(),
                        );
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn diverged(&self, path: &[u8], what: &str) -> String {
        format!(
            "{what} of `{}` succeeded, but the model of the directory under test has no such path (did something outside the log change it?)",
            String::from_utf8_lossy(path)
        )
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

    fn open(&mut self, c: &Call<'_>, dirfd: i64, path: &[u8], fl: OpenFlags) -> R<()> {
        let pid = c.pid;
        let ret = c.ret();
        let Ret::Ok(fd, ann) = ret else {
            return Ok(());
        };
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
            match self.resolve(pid, dirfd, path, true)? {
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
            self.install(pid, fd, ofd, fl.cloexec);
            return Ok(());
        }
        let follow = !(fl.nofollow || (fl.creat && fl.excl));
        let resolved = self.resolve(pid, dirfd, path, follow)?;
        let annotated = self.annotated_inode(ann);
        let ino = match resolved {
            Resolved::In { ino: Some(i), .. } => {
                if let Some(Some(a)) = annotated {
                    if a != i {
                        return Err(format!(
                            "opened `{}`, which the model resolves to inode {i} but strace shows as inode {a}'s path",
                            String::from_utf8_lossy(path)
                        ));
                    }
                }
                // Linux truncates on O_TRUNC whatever the access mode: a
                // successful O_RDONLY|O_TRUNC open empties the file too.
                if fl.trunc
                    && self.inodes[i as usize].kind == InodeKind::File
                    && self.inodes[i as usize].size > 0
                {
                    self.truncate(c, i, 0, path)?;
                }
                i
            }
            Resolved::In {
                entry: Some((dir, name)),
                ino: None,
            } if fl.creat => {
                let ino = self.new_inode(InodeKind::File, Vec::new(), dir)?;
                self.inodes[dir as usize].entries.insert(name.clone(), ino);
                self.push(
                    c,
                    OpKind::Link {
                        dir,
                        name: Name(name),
                        ino,
                        new: true,
                    },
                    path,
                );
                ino
            }
            Resolved::Out(p) => match annotated {
                // Reached the directory by a route the model cannot follow
                // (e.g. /proc/self/cwd or an outside symlink into it): strace's
                // path for the fd is the truth.
                Some(Some(a)) => a,
                Some(None) => return Err(self.diverged(path, "open")),
                None => {
                    self.stats.outside += 1;
                    ofd.target = Target::Outside(p);
                    self.install(pid, fd, ofd, fl.cloexec);
                    return Ok(());
                }
            },
            _ => return Err(self.diverged(path, "open")),
        };
        ofd.target = Target::Inode(ino);
        self.install(pid, fd, ofd, fl.cloexec);
        Ok(())
    }

    fn truncate(&mut self, c: &Call<'_>, ino: Ino, size: u64, path: &[u8]) -> R<()> {
        if self.inodes[ino as usize].kind != InodeKind::File {
            return Err("truncates an inode that is not a regular file".into());
        }
        self.model_truncate(ino, size);
        self.push(c, OpKind::Truncate { ino, size }, path);
        Ok(())
    }

    fn fallocate(&mut self, c: &Call<'_>, args: &[&[u8]]) -> R<()> {
        let fd = int_arg(args, 0)?;
        let mode = arg(args, 1)?;
        let off = u64::try_from(int_arg(args, 2)?).map_err(|_| "negative offset")?;
        let len = u64::try_from(int_arg(args, 3)?).map_err(|_| "negative length")?;
        let Some(o) = self.ofd(c.pid, fd).cloned() else {
            return self.unknown_fd(fd, arg(args, 0)?, "fallocates");
        };
        let Target::Inode(ino) = o.target else {
            self.stats.outside += 1;
            return Ok(());
        };
        let has = |f: &[u8]| strace::has_flag(mode, f);
        if has(b"FALLOC_FL_COLLAPSE_RANGE") || has(b"FALLOC_FL_INSERT_RANGE") {
            return Err("collapses or inserts a range; blackout does not model that".into());
        }
        let punch = has(b"FALLOC_FL_PUNCH_HOLE");
        let zero = punch || has(b"FALLOC_FL_ZERO_RANGE");
        let keep_size = punch || has(b"FALLOC_FL_KEEP_SIZE");
        let end = off.checked_add(len).ok_or("range overflows")?;
        let size = self.inodes[ino as usize].size;
        if !zero && (keep_size || end <= size) {
            // Allocation only: nothing a reader sees changes.
            return Ok(());
        }
        if end > MODEL_FILE_BYTES_MAX && !keep_size {
            return Err(format!(
                "grows a file past {MODEL_FILE_BYTES_MAX} bytes, the largest blackout models"
            ));
        }
        let node = &mut self.inodes[ino as usize];
        contents::fallocate(&mut node.data, &mut node.size, off, len, zero, keep_size);
        self.push(
            c,
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

    fn rename(
        &mut self,
        c: &Call<'_>,
        fd1: i64,
        from: &[u8],
        fd2: i64,
        to: &[u8],
        flags: &[u8],
    ) -> R<()> {
        let pid = c.pid;
        if strace::has_flag(flags, b"RENAME_WHITEOUT") {
            return Err("RENAME_WHITEOUT is not modelled".into());
        }
        let exchange = strace::has_flag(flags, b"RENAME_EXCHANGE");
        let src = self.resolve(pid, fd1, from, false)?;
        let dst = self.resolve(pid, fd2, to, false)?;
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
            ) => {
                if replaced == Some(ino) && !exchange {
                    return Ok(()); // Two links to one inode: POSIX says nothing happens.
                }
                if exchange {
                    let other = replaced.ok_or_else(|| self.diverged(to, "RENAME_EXCHANGE"))?;
                    self.inodes[fdir as usize].entries.insert(fname.clone(), other);
                    self.inodes[tdir as usize].entries.insert(tname.clone(), ino);
                    if self.inodes[other as usize].kind == InodeKind::Dir {
                        self.inodes[other as usize].parent = fdir;
                    }
                } else {
                    self.inodes[fdir as usize].entries.remove(&fname);
                    self.inodes[tdir as usize].entries.insert(tname.clone(), ino);
                }
                if self.inodes[ino as usize].kind == InodeKind::Dir {
                    self.inodes[ino as usize].parent = tdir;
                }
                self.push(
                    c,
                    OpKind::Rename {
                        from_dir: fdir,
                        from_name: Name(fname),
                        to_dir: tdir,
                        to_name: Name(tname),
                        ino,
                        replaced,
                        exchange,
                    },
                    from,
                );
                Ok(())
            }
            (
                Resolved::In {
                    entry: Some((dir, name)),
                    ino: Some(ino),
                },
                Resolved::Out(_),
            ) => {
                if exchange {
                    return Err("exchanges a file inside the directory under test with one outside; its bytes are not in the log".into());
                }
                self.inodes[dir as usize].entries.remove(&name);
                self.push(
                    c,
                    OpKind::Unlink {
                        dir,
                        name: Name(name),
                        ino,
                    },
                    from,
                );
                Ok(())
            }
            (Resolved::Out(_), Resolved::In { .. }) => Err(format!(
                "moves `{}` from outside the directory under test into it; its bytes are not in the log (create it there, or seed it with --init)",
                String::from_utf8_lossy(from)
            )),
            (Resolved::Out(_), Resolved::Out(_)) => {
                self.stats.outside += 1;
                Ok(())
            }
            _ => Err(self.diverged(from, "rename")),
        }
    }

    fn unlink(&mut self, c: &Call<'_>, fd: i64, path: &[u8]) -> R<()> {
        match self.resolve(c.pid, fd, path, false)? {
            Resolved::In {
                entry: Some((dir, name)),
                ino: Some(ino),
            } => {
                self.inodes[dir as usize].entries.remove(&name);
                self.push(
                    c,
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

    /// The inode a `/proc/self/fd/N` (or `/proc/PID/fd/N`) path names.
    fn proc_fd_path(&self, pid: u32, path: &[u8]) -> Option<Option<Ino>> {
        let rest = path.strip_prefix(b"/proc/")?;
        let mut parts = rest.split(|&b| b == b'/');
        let who = parts.next()?;
        if parts.next()? != b"fd" {
            return None;
        }
        let fd = strace::parse_int(parts.next()?)?;
        if parts.next().is_some() {
            return None;
        }
        let owner = match who {
            b"self" | b"thread-self" => pid,
            n => std::str::from_utf8(n).ok()?.parse().ok()?,
        };
        if !self.procs.contains_key(&owner) {
            return Some(None);
        }
        Some(match self.ofd(owner, fd).map(|o| &o.target) {
            Some(Target::Inode(i)) => Some(*i),
            _ => None,
        })
    }

    fn link(
        &mut self,
        c: &Call<'_>,
        fd1: i64,
        from: &[u8],
        fd2: i64,
        to: &[u8],
        flags: &[u8],
    ) -> R<()> {
        let pid = c.pid;
        let src: Option<Ino> = if from.is_empty() && strace::has_flag(flags, b"AT_EMPTY_PATH") {
            match self.ofd(pid, fd1).map(|o| &o.target) {
                Some(Target::Inode(i)) => Some(*i),
                _ => None,
            }
        } else if let Some(i) = self.proc_fd_path(pid, from) {
            i
        } else {
            let follow = strace::has_flag(flags, b"AT_SYMLINK_FOLLOW");
            match self.resolve(pid, fd1, from, follow)? {
                Resolved::In { ino: Some(i), .. } => Some(i),
                Resolved::Out(_) => None,
                _ => return Err(self.diverged(from, "link")),
            }
        };
        match (src, self.resolve(pid, fd2, to, false)?) {
            (
                Some(ino),
                Resolved::In {
                    entry: Some((dir, name)),
                    ino: None,
                },
            ) => {
                self.inodes[dir as usize].entries.insert(name.clone(), ino);
                self.push(
                    c,
                    OpKind::Link {
                        dir,
                        name: Name(name),
                        ino,
                        new: false,
                    },
                    to,
                );
                Ok(())
            }
            (None, Resolved::In { .. }) => Err(format!(
                "links `{}` into the directory under test from a file the log does not hold",
                String::from_utf8_lossy(to)
            )),
            (_, Resolved::Out(_)) => {
                self.stats.outside += 1;
                Ok(())
            }
            _ => Err(self.diverged(to, "link")),
        }
    }

    fn create(
        &mut self,
        c: &Call<'_>,
        fd: i64,
        path: &[u8],
        kind: InodeKind,
        data: Vec<u8>,
    ) -> R<()> {
        match self.resolve(c.pid, fd, path, false)? {
            Resolved::In {
                entry: Some((dir, name)),
                ino: None,
            } => {
                let ino = self.new_inode(kind, data, dir)?;
                self.inodes[dir as usize].entries.insert(name.clone(), ino);
                self.push(
                    c,
                    OpKind::Link {
                        dir,
                        name: Name(name),
                        ino,
                        new: true,
                    },
                    path,
                );
                Ok(())
            }
            Resolved::Out(_) => {
                self.stats.outside += 1;
                Ok(())
            }
            _ => Err(self.diverged(path, "create")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIR: &str = "/t/d";

    fn hex(s: &str) -> String {
        s.bytes().map(|b| format!("\\x{b:02x}")).collect()
    }

    fn run(lines: &[String]) -> Result<Replayed, ReplayError> {
        let log = lines.join("\n") + "\n";
        replay(log.as_bytes(), &Tree::default(), DIR.as_bytes())
    }

    fn labels(r: &Replayed) -> Vec<String> {
        r.ops
            .iter()
            .map(|o| o.kind.label(|i| r.inodes[i as usize]).to_string())
            .collect()
    }

    #[test]
    fn create_write_fsync_rename() {
        let r = run(&[
            format!(
                "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 3",
                hex("a.tmp")
            ),
            format!("1 write(3, \"{}\", 5) = 5", hex("hello")),
            "1 fsync(3) = 0".into(),
            "1 close(3) = 0".into(),
            format!("1 rename(\"{}\", \"{}\") = 0", hex("a.tmp"), hex("a")),
            format!("1 write(1, \"{}\", 6) = 6", hex("saved\n")),
        ])
        .unwrap();
        assert_eq!(labels(&r), ["create", "write", "fsync", "rename", "output"]);
        let OpKind::Write { ino, off, data } = r.ops[1].kind.clone() else {
            panic!()
        };
        assert_eq!((ino, off), (1, 0));
        assert_eq!(
            &r.data[data.start as usize..(data.start + data.len) as usize],
            b"hello"
        );
    }

    #[test]
    fn paths_outside_are_ignored_and_counted() {
        let r = run(&[
            format!(
                "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT, 0644) = 3",
                hex("/etc/x")
            ),
            format!("1 write(3, \"{}\", 1) = 1", hex("a")),
            format!("1 mkdir(\"{}\", 0755) = 0", hex("../escape")),
            format!("1 symlink(\"{}\", \"{}\") = 0", hex("/etc"), hex("l")),
            format!(
                "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT, 0644) = 4",
                hex("l/passwd")
            ),
            format!(
                "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT, 0644) = 5",
                hex("../d/in")
            ),
        ])
        .unwrap();
        assert_eq!(labels(&r), ["symlink", "create"]);
        assert_eq!(r.stats.outside, 4);
    }

    #[test]
    fn divergence_is_an_error_with_the_line() {
        let e = run(&[format!("1 unlink(\"{}\") = 0", hex("nope"))]).unwrap_err();
        assert_eq!(e.line, 1);
        assert_eq!(e.syscall.as_deref(), Some("unlink"));
    }

    #[test]
    fn append_uses_the_model_size_and_fork_shares_offsets() {
        let r = run(&[
            format!(
                "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT|O_APPEND, 0644) = 3",
                hex("log")
            ),
            format!(
                "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_APPEND) = 4",
                hex("log")
            ),
            format!("1 write(3, \"{}\", 2) = 2", hex("ab")),
            format!("1 write(4, \"{}\", 2) = 2", hex("cd")),
            format!("1 openat(AT_FDCWD, \"{}\", O_WRONLY) = 5", hex("log")),
            "1 clone(child_stack=NULL, flags=SIGCHLD) = 2".into(),
            format!("2 write(5, \"{}\", 1) = 1", hex("x")),
            format!("1 write(5, \"{}\", 1) = 1", hex("y")),
        ])
        .unwrap();
        let offs: Vec<u64> = r
            .ops
            .iter()
            .filter_map(|o| match o.kind {
                OpKind::Write { off, .. } => Some(off),
                _ => None,
            })
            .collect();
        assert_eq!(offs, [0, 2, 0, 1]);
    }

    #[test]
    fn o_trunc_empties_the_file_even_when_opened_read_only() {
        let mut tree = Tree::default();
        tree.nodes.push(Node::File(b"old bytes".to_vec()));
        tree.entries.push(blackout_oplog::tree::Entry {
            dir: ROOT_INO,
            name: "f".into(),
            ino: 1,
        });
        let log = format!(
            "1 openat(AT_FDCWD, \"{}\", O_RDONLY|O_TRUNC) = 3\n",
            hex("f")
        );
        let r = replay(log.as_bytes(), &tree, DIR.as_bytes()).unwrap();
        assert_eq!(labels(&r), ["truncate"]);
        assert_eq!(r.ops[0].kind, OpKind::Truncate { ino: 1, size: 0 });
    }

    #[test]
    fn an_unfinished_call_is_refused_only_when_it_touches_the_directory() {
        // A write to stdout (fd 1) cut short: harmless.
        run(&[
            format!("1 write(1, \"{}\", 2 <unfinished ...>", hex("ab")),
            "1 +++ killed by SIGKILL +++".into(),
        ])
        .unwrap();
        // A data string that happens to name a file, and a count that happens
        // to equal an open fd, do not count.
        run(&[
            format!(
                "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT, 0644) = 3",
                hex("f")
            ),
            format!("1 write(1, \"{}\", 3 <unfinished ...>", hex("f")),
        ])
        .unwrap();
        let e = run(&[
            format!(
                "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT, 0644) = 3",
                hex("f")
            ),
            format!("1 write(3, \"{}\", 2) = ?", hex("ab")),
        ])
        .unwrap_err();
        assert_eq!(e.line, 2);
        let e = run(&[
            "1 sync() = 0".into(),
            format!("1 unlink(\"{}\" <unfinished ...>", hex("x")),
        ])
        .unwrap_err();
        assert!(e.message.contains("never completed"), "{e}");
    }

    #[test]
    fn unmodelable_calls_are_refused() {
        let e = run(&[
            format!(
                "1 openat(AT_FDCWD, \"{}\", O_RDWR|O_CREAT, 0644) = 3",
                hex("m")
            ),
            "1 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_SHARED, 3, 0) = 0x7f0000000000".into(),
        ])
        .unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("shared and writable"), "{e}");
        let e = run(&[format!(
            "1 write(7<{}>, \"{}\", 1) = 1",
            hex("/t/d/f"),
            hex("a")
        )])
        .unwrap_err();
        assert!(e.message.contains("origin"), "{e}");
    }
}
