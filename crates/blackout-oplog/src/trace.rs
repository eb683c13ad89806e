//! The trace file: a recording, self-contained and versioned.
//!
//! Layout (see `docs/TRACE-FORMAT.md`):
//!
//! ```text
//! blackout-trace 1\n
//! {JSON header: metadata, inodes, initial tree, ops, stats, data_len}\n
//! <data_len bytes: the data blob that DataRefs point into>
//! ```
//!
//! A trace is read as hostile input: [`Trace::read`] checks every inode
//! number, data range and name before anything uses them, so later stages can
//! index without checking again.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{self, BufRead, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::blob::Blob;
use crate::contents::Contents;
use crate::ops::{escape_controls, synced_by, DataRef, Ino, InodeKind, Name, Op, OpKind, ROOT_INO};
use crate::store::InodeState;
use crate::tree::{Entry, Node, Tree};

/// The largest file the model holds, in bytes. A log that writes past it is
/// refused rather than allowed to exhaust memory.
pub const MODEL_FILE_BYTES_MAX: u64 = 1 << 32;

/// What replay saw, besides ops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReplayStats {
    /// Lines in the log (in a native recording: calls traced, each
    /// numbered as it started).
    pub lines: u64,
    /// System calls in the log (in a native recording: calls that
    /// completed).
    pub calls: u64,
    /// Calls replay never looks at (they cannot change the directory).
    pub skipped: u64,
    /// Calls that failed (no effect).
    pub failed: u64,
    /// Calls on paths or files outside the directory under test (ignored).
    pub outside: u64,
}

/// The result of a replay: what a recorder hands to [`Trace::new`].
#[derive(Debug, Clone, Default)]
pub struct Replayed {
    /// The ops, in completion order.
    pub ops: Vec<Op>,
    /// Every inode: initial ones first, then those created by ops.
    pub inodes: Vec<InodeKind>,
    /// Symlink targets by inode.
    pub symlinks: BTreeMap<Ino, Name>,
    /// The bytes that ops' [`DataRef`]s point into.
    pub data: Blob,
    /// The file-system model's inodes after the last call. Applying every
    /// op in order to the initial tree ([`crate::store::apply`]) must give
    /// the same: the two paths are compared in tests. Not part of a trace.
    pub final_inodes: Vec<InodeState>,
    /// Counts.
    pub stats: ReplayStats,
}

/// The first line of every trace file, before the version number.
pub const TRACE_MAGIC: &str = "blackout-trace";

/// The trace format version this build writes and reads.
pub const TRACE_VERSION: u32 = 1;

/// What a trace's op numbers ([`Op::line`]) count, and so how reports name
/// the place of a call: `log line 25` or `call 25`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Numbering {
    /// Lines of strace's log: each op carries the line where its call
    /// started. Traces that do not say are numbered so.
    #[default]
    LogLine,
    /// Calls of the native recorder: each op carries the number its call
    /// took when it started (the Nth traced call), as there is no log.
    Call,
}

impl Numbering {
    /// Whether the numbers are log lines (a trace file leaves the field
    /// out then, as it did before the field existed).
    pub fn is_log_line(&self) -> bool {
        *self == Numbering::LogLine
    }
}

/// How the workload ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct WorkloadExit {
    /// Exit code, when it exited.
    pub code: Option<i32>,
    /// Signal name, when a signal killed it.
    pub signal: Option<String>,
}

/// A file of the initial tree and its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InitialFile {
    /// The inode.
    pub ino: Ino,
    /// Its bytes in the data blob.
    pub data: DataRef,
}

/// A recording: what ran, what the directory held before, and every op.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Trace {
    /// Version of blackout that wrote the trace.
    pub tool_version: String,
    /// `strace -V`'s version, when recorded live.
    pub strace_version: Option<String>,
    /// What the ops' numbers ([`Op::line`]) count: strace's log lines
    /// unless the native recorder made the trace (absent from the file
    /// then, so a trace saved before the field existed reads as log
    /// lines).
    #[serde(default, skip_serializing_if = "Numbering::is_log_line")]
    pub numbering: Numbering,
    /// The workload command, as run (`{dir}` substituted).
    pub command: Vec<String>,
    /// The absolute path the directory under test had while recording.
    pub dir: Name,
    /// How the workload ended.
    pub exit: WorkloadExit,
    /// Files the program rebuilds on restart (`--volatile` globs): shared
    /// writable mmaps of them were allowed, and writes through memory are not
    /// in the ops.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volatile: Vec<String>,
    /// Kind of every inode (index = [`Ino`]); the first `initial_inodes` are
    /// the initial tree's.
    pub inodes: Vec<InodeKind>,
    /// How many inodes the initial tree has.
    pub initial_inodes: u32,
    /// Symlink targets.
    pub symlinks: BTreeMap<Ino, Name>,
    /// Directory entries of the initial tree, parents first.
    pub initial_entries: Vec<Entry>,
    /// Contents of the initial tree's files.
    pub initial_files: Vec<InitialFile>,
    /// The ops, in order.
    pub ops: Vec<Op>,
    /// How long each sync op took while recording (op index,
    /// microseconds: the time from entering the call to its return, as
    /// strace's `-T` saw it), when recorded with call times; for the trace
    /// as recorded (ops added or taken out later do not renumber it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sync_micros: Vec<(usize, u64)>,
    /// What replay saw.
    pub stats: ReplayStats,
    /// Length of the data blob that follows the header.
    pub data_len: u64,
    /// The data blob (in memory, or read by range from its file).
    #[serde(skip)]
    pub data: Blob,
}

/// Something wrong with a trace file.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// Could not read or write it.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// Not a trace, or a damaged one.
    #[error("not a valid trace: {0}")]
    Invalid(String),
}

fn invalid(msg: impl Into<String>) -> TraceError {
    TraceError::Invalid(msg.into())
}

/// Metadata of a recording, besides what replay produced.
#[derive(Debug, Clone, Default)]
pub struct TraceMeta {
    /// `strace -V`'s version.
    pub strace_version: Option<String>,
    /// What the ops' numbers count: log lines unless the native recorder
    /// made the recording.
    pub numbering: Numbering,
    /// The command as run.
    pub command: Vec<String>,
    /// Absolute path of the directory under test while recording.
    pub dir: Vec<u8>,
    /// How the workload ended.
    pub exit: WorkloadExit,
    /// Files the program rebuilds on restart (`--volatile` globs).
    pub volatile: Vec<String>,
}

impl Trace {
    /// Assembles a trace from the initial tree and a replay of the log.
    ///
    /// # Panics
    ///
    /// When the replay's blob is a file the initial tree's bytes cannot be
    /// appended to; [`Trace::try_new`] returns that error.
    pub fn new(tree: &Tree, replayed: Replayed, meta: TraceMeta) -> Trace {
        Trace::try_new(tree, replayed, meta)
            .unwrap_or_else(|e| panic!("cannot append the initial tree to the data blob: {e}"))
    }

    /// [`Trace::new`], failing when the initial tree's bytes cannot be
    /// appended to the replay's blob (a file).
    pub fn try_new(tree: &Tree, replayed: Replayed, meta: TraceMeta) -> io::Result<Trace> {
        let mut data = replayed.data;
        let mut initial_files = Vec::new();
        for (i, node) in tree.nodes.iter().enumerate() {
            if let Node::File(bytes) = node {
                initial_files.push(InitialFile {
                    ino: i as Ino,
                    data: data.append(bytes)?,
                });
            }
        }
        let mut trace = Trace {
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            strace_version: meta.strace_version,
            numbering: meta.numbering,
            command: meta.command,
            dir: Name(meta.dir),
            exit: meta.exit,
            volatile: meta.volatile,
            inodes: replayed.inodes,
            initial_inodes: tree.nodes.len() as u32,
            symlinks: replayed.symlinks,
            initial_entries: tree.entries.clone(),
            initial_files,
            ops: replayed.ops,
            sync_micros: Vec::new(),
            stats: replayed.stats,
            data_len: data.len(),
            data,
        };
        trace
            .mark_volatile()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        Ok(trace)
    }

    /// The bytes a [`DataRef`] names (borrowed from a blob in memory, read
    /// from one in a file). Valid after [`Trace::read`] or [`Trace::new`].
    pub fn bytes(&self, r: DataRef) -> Cow<'_, [u8]> {
        self.data.get(r)
    }

    /// For each op, the size of the file it writes, truncates or
    /// fallocates just before it, with every earlier op applied (0 for any
    /// other op): what a torn write finds already there.
    pub fn sizes_before(&self) -> Vec<u64> {
        // Only the sizes: the initial files' bytes are not copied.
        let mut sizes = vec![0u64; self.inodes.len()];
        for f in &self.initial_files {
            sizes[f.ino as usize] = f.data.len;
        }
        self.ops
            .iter()
            .map(|op| {
                let (ino, after) = match &op.kind {
                    OpKind::Write { ino, off, data } => (*ino, Some(off + data.len)),
                    OpKind::Truncate { ino, size } => {
                        let before = sizes[*ino as usize];
                        sizes[*ino as usize] = *size;
                        return before;
                    }
                    OpKind::Fallocate {
                        ino,
                        off,
                        len,
                        keep_size,
                        ..
                    } => (*ino, (!keep_size).then(|| off.saturating_add(*len))),
                    _ => return 0,
                };
                let before = sizes[ino as usize];
                if let Some(end) = after {
                    sizes[ino as usize] = before.max(end);
                }
                before
            })
            .collect()
    }

    /// The kind of an inode.
    pub fn kind(&self, ino: Ino) -> InodeKind {
        self.inodes[ino as usize]
    }

    /// Writes the trace.
    pub fn write_to(&self, mut w: impl Write) -> io::Result<()> {
        writeln!(w, "{TRACE_MAGIC} {TRACE_VERSION}")?;
        serde_json::to_writer(&mut w, self)?;
        w.write_all(b"\n")?;
        self.data.copy_to(&mut w)?;
        w.flush()
    }

    /// The trace's content id: the first 12 hex digits of the BLAKE3 hash of
    /// its file. `reproduce:` lines carry it, so a state is never rebuilt
    /// from another recording saved at the same path.
    pub fn content_id(&self) -> String {
        let mut h = blake3::Hasher::new();
        // Writing into a hasher cannot fail.
        let _ = self.write_to(&mut h);
        h.finalize().to_hex()[..12].to_string()
    }

    /// Writes the trace to a file durably
    /// ([`blackout_sys::durable::write_durably`]): a failed write or a power
    /// cut leaves the old file or the new one whole, never a half trace.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        blackout_sys::durable::write_durably(path, 0o644, |w| self.write_to(w))
    }

    /// The directory that stands for everywhere outside the directory
    /// under test, when the run created files there (a temporary file made
    /// in `TMPDIR` and renamed in): the directory no entry names, neither
    /// in the initial tree nor by an op.
    pub fn outside_dir(&self) -> Option<Ino> {
        let mut named = vec![false; self.inodes.len()];
        named[ROOT_INO as usize] = true;
        for e in &self.initial_entries {
            if let Some(n) = named.get_mut(e.ino as usize) {
                *n = true;
            }
        }
        for op in &self.ops {
            let ino = match op.kind {
                OpKind::Link { ino, .. } | OpKind::Rename { ino, .. } => ino,
                _ => continue,
            };
            if let Some(n) = named.get_mut(ino as usize) {
                *n = true;
            }
        }
        (0..self.inodes.len())
            .find(|&i| self.inodes[i] == InodeKind::Dir && !named[i])
            .and_then(|i| Ino::try_from(i).ok())
    }

    /// Marks the entry ops in the outside directory, and the removal half
    /// of a rename from it, as durable at once ([`Op::volatile`]).
    fn mark_outside(&mut self) {
        let Some(out) = self.outside_dir() else {
            return;
        };
        for op in &mut self.ops {
            op.volatile |= match op.kind {
                OpKind::Link { dir, .. } | OpKind::Unlink { dir, .. } => dir == out,
                OpKind::Rename { from_dir, .. } => from_dir == out,
                _ => false,
            };
        }
    }

    /// Marks the data ops on files the volatile globs name, by the path
    /// inside the directory under test or the file name ([`Op::volatile`]),
    /// and the outside directory's entry ops ([`Trace::mark_outside`]).
    fn mark_volatile(&mut self) -> Result<(), TraceError> {
        self.mark_outside();
        if self.volatile.is_empty() {
            return Ok(());
        }
        let mut globs = globset::GlobSetBuilder::new();
        for g in &self.volatile {
            let glob =
                globset::Glob::new(g).map_err(|e| invalid(format!("volatile glob `{g}`: {e}")))?;
            globs.add(glob);
        }
        let globs = globs
            .build()
            .map_err(|e| invalid(format!("volatile globs: {e}")))?;
        let dir = &self.dir.0;
        for op in &mut self.ops {
            if !matches!(
                op.kind,
                OpKind::Write { .. } | OpKind::Truncate { .. } | OpKind::Fallocate { .. }
            ) {
                continue;
            }
            let name = op.path.0.as_slice();
            let rel = name
                .strip_prefix(dir.as_slice())
                .and_then(|r| r.strip_prefix(b"/"))
                .unwrap_or(name);
            let base = name.rsplit(|&b| b == b'/').next().unwrap_or(name);
            op.volatile = [rel, base].iter().any(|p| {
                globs.is_match(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(p))
            });
        }
        Ok(())
    }

    /// Reads and checks a trace.
    pub fn read(bytes: &[u8]) -> Result<Trace, TraceError> {
        let nl = memchr::memchr(b'\n', bytes).ok_or_else(|| Trace::no_first_line(bytes))?;
        Trace::check_version(&bytes[..nl])?;
        let rest = &bytes[nl + 1..];
        let end = memchr::memchr(b'\n', rest)
            .ok_or_else(|| invalid("the file is cut short inside its header"))?;
        let mut trace = Trace::header(&rest[..end], (rest.len() - end - 1) as u64)?;
        trace.data = Blob::from_vec(rest[end + 1..].to_vec());
        trace.validate()?;
        trace.mark_volatile()?;
        Ok(trace)
    }

    /// Reads and checks a trace file. Its data stays in the file, read by
    /// range, unless it is small ([`crate::blob::BLOB_IN_MEMORY_BYTES_MAX`]).
    pub fn load(path: &Path) -> Result<Trace, TraceError> {
        let file = std::fs::File::open(path)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            // A pipe: read whole.
            return Trace::read(&std::fs::read(path)?);
        }
        let file_len = meta.len();
        let mut r = io::BufReader::new(&file);
        let mut first = Vec::new();
        r.read_until(b'\n', &mut first)?;
        if first.pop() != Some(b'\n') {
            return Err(Trace::no_first_line(&first));
        }
        Trace::check_version(&first)?;
        let mut header = Vec::new();
        r.read_until(b'\n', &mut header)?;
        if header.pop() != Some(b'\n') {
            return Err(invalid("the file is cut short inside its header"));
        }
        let start = (first.len() + header.len() + 2) as u64;
        let mut trace = Trace::header(&header, file_len.saturating_sub(start))?;
        drop(r);
        trace.data = Blob::from_file(file, start, trace.data_len).small_in_memory();
        trace.validate()?;
        trace.mark_volatile()?;
        Ok(trace)
    }

    /// What a file whose first line never ends (`bytes`, all of it) is: a
    /// trace cut short, or not a trace.
    fn no_first_line(bytes: &[u8]) -> TraceError {
        let magic = TRACE_MAGIC.as_bytes();
        let n = bytes.len().min(magic.len());
        if bytes[..n] == magic[..n] {
            invalid("the file is cut short inside its first line")
        } else {
            invalid(format!("it does not start with `{TRACE_MAGIC}`"))
        }
    }

    /// Checks the first line of a trace file (without its newline).
    fn check_version(first: &[u8]) -> Result<(), TraceError> {
        let first = std::str::from_utf8(first).map_err(|_| invalid("no header line"))?;
        let version = first
            .strip_prefix(TRACE_MAGIC)
            .and_then(|v| v.trim().parse::<u32>().ok())
            .ok_or_else(|| invalid(format!("it does not start with `{TRACE_MAGIC}`")))?;
        if version != TRACE_VERSION {
            return Err(invalid(format!(
                "format version {version}; this blackout reads version {TRACE_VERSION}"
            )));
        }
        Ok(())
    }

    /// Parses the JSON header, which a blob of `blob_len` bytes follows.
    fn header(json: &[u8], blob_len: u64) -> Result<Trace, TraceError> {
        let trace: Trace =
            serde_json::from_slice(json).map_err(|e| invalid(format!("bad header: {e}")))?;
        if blob_len < trace.data_len {
            return Err(invalid(format!(
                "the file is cut short: its data blob holds {blob_len} bytes, the header says {}",
                trace.data_len
            )));
        }
        if blob_len != trace.data_len {
            return Err(invalid(format!(
                "the data blob holds {blob_len} bytes, the header says {}",
                trace.data_len
            )));
        }
        Ok(trace)
    }

    /// Checks every reference in the trace.
    pub fn validate(&self) -> Result<(), TraceError> {
        let n = self.inodes.len();
        if n == 0 || self.inodes[ROOT_INO as usize] != InodeKind::Dir {
            return Err(invalid("inode 0 is not a directory"));
        }
        if self.initial_inodes as usize > n || self.initial_inodes == 0 {
            return Err(invalid("bad initial inode count"));
        }
        let refs = Refs { trace: self };
        for ino in self.symlinks.keys() {
            refs.ino(*ino)?;
            if self.inodes[*ino as usize] != InodeKind::Symlink {
                return Err(invalid(format!(
                    "inode {ino} has a target but is not a symlink"
                )));
            }
        }
        for e in &self.initial_entries {
            refs.dir(e.dir)?;
            refs.ino(e.ino)?;
            refs.name(&e.name)?;
            if e.dir >= self.initial_inodes || e.ino >= self.initial_inodes || e.ino == ROOT_INO {
                return Err(invalid(
                    "an initial entry names an inode outside the initial tree",
                ));
            }
        }
        for f in &self.initial_files {
            refs.file(f.ino)?;
            refs.data(f.data)?;
        }
        for (i, op) in self.ops.iter().enumerate() {
            refs.op(i, &op.kind).map_err(|e| match e {
                TraceError::Invalid(m) => invalid(format!("op {i}: {m}")),
                other => other,
            })?;
        }
        Ok(())
    }

    /// The inodes of a trace's initial tree, with every later inode empty
    /// (symlinks hold their targets).
    pub fn initial_inodes(&self) -> Vec<InodeState> {
        let trace = self;
        let mut inodes: Vec<InodeState> = trace
            .inodes
            .iter()
            .enumerate()
            .map(|(i, kind)| {
                // A symlink holds its target, and its size is the target's
                // length (as lstat says).
                let data = match kind {
                    InodeKind::Symlink => trace
                        .symlinks
                        .get(&(i as Ino))
                        .map(|n| Contents::from_bytes(&n.0))
                        .unwrap_or_default(),
                    _ => Contents::default(),
                };
                InodeState {
                    kind: *kind,
                    size: data.len(),
                    data,
                    entries: BTreeMap::new(),
                }
            })
            .collect();
        for f in &trace.initial_files {
            let node = &mut inodes[f.ino as usize];
            node.data = Contents::from_blob(&trace.data, f.data);
            node.size = f.data.len;
        }
        for e in &trace.initial_entries {
            inodes[e.dir as usize]
                .entries
                .insert(e.name.0.clone(), e.ino);
        }
        inodes
    }

    /// The initial tree.
    pub fn initial_tree(&self) -> Tree {
        let mut nodes: Vec<Node> = self.inodes[..self.initial_inodes as usize]
            .iter()
            .enumerate()
            .map(|(i, k)| match k {
                InodeKind::Dir => Node::Dir,
                InodeKind::File => Node::File(Vec::new()),
                InodeKind::Symlink => Node::Symlink(
                    self.symlinks
                        .get(&(i as Ino))
                        .map(|n| n.0.clone())
                        .unwrap_or_default(),
                ),
            })
            .collect();
        for f in &self.initial_files {
            nodes[f.ino as usize] = Node::File(self.bytes(f.data).into_owned());
        }
        Tree {
            nodes,
            entries: self.initial_entries.clone(),
        }
    }

    /// A path as the program named it, shown relative to the directory
    /// under test when it lies inside it, control characters escaped.
    pub fn show_path(&self, path: &Name) -> String {
        let dir = &self.dir.0;
        let shown = match path.0.strip_prefix(dir.as_slice()) {
            Some(rest) if !dir.is_empty() && rest.first() == Some(&b'/') => {
                Name(rest[1..].to_vec()).display()
            }
            Some([]) if !dir.is_empty() => ".".to_string(),
            _ => path.display(),
        };
        // `root//etc/passwd` names what `root/etc/passwd` does.
        let mut shown = shown;
        while shown.contains("//") {
            shown = shown.replace("//", "/");
        }
        escape_controls(&shown)
    }

    /// The op log without its header line and without the call numbers
    /// (`@N`): what two recordings of the same run share whichever
    /// recorder made them (strace numbers log lines, the native recorder
    /// calls, and the header counts both).
    pub fn op_log_unnumbered(&self) -> String {
        let text = self.op_log_text();
        let mut out = String::new();
        for line in text.lines().skip(1) {
            let mut rest = line;
            while let Some(at) = rest.find('@') {
                out.push_str(&rest[..=at]);
                rest = rest[at + 1..].trim_start_matches(|c: char| c.is_ascii_digit());
            }
            out.push_str(rest);
            out.push('\n');
        }
        out
    }

    /// The op log as text: one line per op, with `(never synced)` marks.
    pub fn op_log_text(&self) -> String {
        let synced = synced_by(&self.ops);
        let never = self
            .ops
            .iter()
            .zip(&synced)
            .filter(|(o, s)| o.kind.is_durable_change() && !s.synced())
            .count();
        let calls = match self.numbering {
            Numbering::LogLine => format!(
                "{} calls in {} log lines",
                self.stats.calls, self.stats.lines
            ),
            Numbering::Call => format!(
                "{} calls traced, {} completed",
                self.stats.lines, self.stats.calls
            ),
        };
        let mut out = format!(
            "# {} ops, {} never synced; {calls}, {} outside the directory (ignored), {} failed\n",
            self.ops.len(),
            never,
            self.stats.outside,
            self.stats.failed,
        );
        for (i, (op, s)) in self.ops.iter().zip(&synced).enumerate() {
            let label = op.kind.label(|ino| self.kind(ino));
            let detail = self.detail(&op.kind);
            let mut line = format!(
                "{i:>5}  {label:<15} {detail:<44} {}@{}  {}",
                op.syscall,
                op.line,
                self.show_path(&op.path)
            );
            if let Some(o) = &op.origin {
                line.push_str(&format!("  [{}]", escape_controls(&o.describe())));
            }
            if op.kind.is_durable_change() {
                match (s.main, s.source) {
                    (None, None) => line.push_str("  (never synced)"),
                    (None, Some(_)) => line.push_str("  (never synced: the new entry)"),
                    (Some(_), None) => {
                        line.push_str("  (never synced: the removal from the source directory)")
                    }
                    (Some(_), Some(_)) => {}
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }

    /// The op log for machines: each op's `line` is what
    /// [`Trace::numbering`] says, and `numbering` is there when that is not
    /// log lines.
    pub fn op_log_json(&self) -> serde_json::Value {
        let synced = synced_by(&self.ops);
        let ops: Vec<serde_json::Value> = self
            .ops
            .iter()
            .zip(&synced)
            .enumerate()
            .map(|(i, (op, s))| {
                let mut v = serde_json::to_value(op).unwrap_or(serde_json::Value::Null);
                if let Some(m) = v.as_object_mut() {
                    m.insert("index".into(), i.into());
                    m.insert("label".into(), op.kind.label(|ino| self.kind(ino)).into());
                    m.insert(
                        "never_synced".into(),
                        (op.kind.is_durable_change() && !s.synced()).into(),
                    );
                    if let OpKind::Output { data } | OpKind::Write { data, .. } = op.kind {
                        m.insert(
                            "text".into(),
                            String::from_utf8_lossy(&self.bytes(data))
                                .into_owned()
                                .into(),
                        );
                    }
                }
                v
            })
            .collect();
        let mut log = serde_json::json!({
            "command": self.command,
            "dir": self.dir,
            "stats": self.stats,
            "ops": ops,
        });
        // As in the trace file: said only when the numbers are not log lines.
        if let (false, Some(m)) = (self.numbering.is_log_line(), log.as_object_mut()) {
            m.insert("numbering".into(), serde_json::json!(self.numbering));
        }
        log
    }

    fn detail(&self, kind: &OpKind) -> String {
        match kind {
            OpKind::Write { ino, off, data } => {
                format!("ino={ino} off={off} len={}", data.len)
            }
            OpKind::Truncate { ino, size } => format!("ino={ino} size={size}"),
            OpKind::Fallocate {
                ino,
                off,
                len,
                zero,
                keep_size,
            } => format!(
                "ino={ino} off={off} len={len}{}{}",
                if *zero { " zero" } else { "" },
                if *keep_size { " keep_size" } else { "" }
            ),
            OpKind::Link { dir, name, ino, .. } | OpKind::Unlink { dir, name, ino } => {
                format!("ino={ino} dir={dir} name={}", name.display())
            }
            OpKind::Rename {
                from_dir,
                from_name,
                to_dir,
                to_name,
                ino,
                replaced,
                ..
            } => {
                let mut s = format!(
                    "ino={ino} dir={from_dir} name={} -> dir={to_dir} name={}",
                    from_name.display(),
                    to_name.display()
                );
                if let Some(r) = replaced {
                    s.push_str(&format!(" replaces={r}"));
                }
                s
            }
            OpKind::Fsync { ino, implied, .. } => {
                if *implied {
                    format!("ino={ino} (O_SYNC write)")
                } else {
                    format!("ino={ino}")
                }
            }
            OpKind::Fdatasync { ino, implied, .. } => {
                if *implied {
                    format!("ino={ino} (O_DSYNC write)")
                } else {
                    format!("ino={ino}")
                }
            }
            OpKind::Sync { .. } => "all".to_string(),
            OpKind::SyncFileRange { ino } => format!("ino={ino} (not a barrier)"),
            OpKind::FailedSync { ino, errno } => format!("ino={ino} {errno} (not a barrier)"),
            OpKind::Output { data } => {
                let text = self.bytes(*data).escape_ascii().to_string();
                let short: String = text.chars().take(30).collect();
                let more = if text.chars().count() > 30 { "..." } else { "" };
                format!("len={} \"{short}\"{more}", data.len)
            }
        }
    }
}

/// The checks [`Trace::validate`] makes of each reference.
struct Refs<'a> {
    trace: &'a Trace,
}

impl Refs<'_> {
    fn ino(&self, i: Ino) -> Result<(), TraceError> {
        if (i as usize) < self.trace.inodes.len() {
            Ok(())
        } else {
            Err(invalid(format!("inode {i} does not exist")))
        }
    }

    fn kind(&self, i: Ino, kind: InodeKind, use_: &str) -> Result<(), TraceError> {
        self.ino(i)?;
        if self.trace.inodes[i as usize] == kind {
            Ok(())
        } else {
            Err(invalid(format!("inode {i} is {use_} but is not one")))
        }
    }

    fn dir(&self, i: Ino) -> Result<(), TraceError> {
        self.kind(i, InodeKind::Dir, "used as a directory")
    }

    fn file(&self, i: Ino) -> Result<(), TraceError> {
        self.kind(i, InodeKind::File, "written as a regular file")
    }

    fn data(&self, r: DataRef) -> Result<(), TraceError> {
        match r.start.checked_add(r.len) {
            Some(end) if end <= self.trace.data.len() => Ok(()),
            _ => Err(invalid("a data range lies outside the data blob")),
        }
    }

    fn size(&self, end: Option<u64>) -> Result<(), TraceError> {
        match end {
            Some(e) if e <= MODEL_FILE_BYTES_MAX => Ok(()),
            _ => Err(invalid(format!(
                "a file grows past {MODEL_FILE_BYTES_MAX} bytes, the largest blackout models"
            ))),
        }
    }

    fn name(&self, name: &Name) -> Result<(), TraceError> {
        let b = &name.0;
        if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') || b.contains(&0) {
            Err(invalid(format!("`{}` is not a file name", name.display())))
        } else {
            Ok(())
        }
    }

    /// Op `i`'s references: inodes of the right kind, data inside the blob,
    /// sizes the model holds, names that are names, barriers not ahead.
    fn op(&self, i: usize, kind: &OpKind) -> Result<(), TraceError> {
        match kind {
            OpKind::Write { ino, off, data } => {
                self.file(*ino)?;
                self.data(*data)?;
                self.size(off.checked_add(data.len))
            }
            OpKind::Truncate { ino, size } => {
                self.file(*ino)?;
                self.size(Some(*size))
            }
            OpKind::SyncFileRange { ino } => self.file(*ino),
            OpKind::Fallocate {
                ino,
                off,
                len,
                keep_size,
                ..
            } => {
                self.file(*ino)?;
                let end = off.checked_add(*len);
                if *keep_size {
                    end.map(|_| ())
                        .ok_or_else(|| invalid("fallocate range overflows"))
                } else {
                    self.size(end)
                }
            }
            OpKind::Link { dir, name, ino, .. } | OpKind::Unlink { dir, name, ino } => {
                self.dir(*dir)?;
                self.name(name)?;
                self.ino(*ino)?;
                if *ino == ROOT_INO {
                    return Err(invalid("the root directory is linked"));
                }
                Ok(())
            }
            OpKind::Rename {
                from_dir,
                from_name,
                to_dir,
                to_name,
                ino,
                replaced,
                ..
            } => {
                self.dir(*from_dir)?;
                self.dir(*to_dir)?;
                self.name(from_name)?;
                self.name(to_name)?;
                self.ino(*ino)?;
                replaced.map_or(Ok(()), |r| self.ino(r))
            }
            OpKind::Fsync { ino, barrier, .. } | OpKind::Fdatasync { ino, barrier, .. } => {
                self.ino(*ino)?;
                if *barrier > i + 1 {
                    return Err(invalid("a sync covers ops after it"));
                }
                Ok(())
            }
            OpKind::Sync { barrier } => {
                if *barrier > i {
                    return Err(invalid("a sync covers ops after it"));
                }
                Ok(())
            }
            OpKind::FailedSync { ino, .. } => self.ino(*ino),
            OpKind::Output { data } => self.data(*data),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_shown_inside_the_directory_with_one_slash_between_names() {
        let t = Trace {
            dir: Name::from("/d"),
            ..Trace::default()
        };
        assert_eq!(
            t.show_path(&Name::from("/d/root//etc/passwd")),
            "root/etc/passwd"
        );
        assert_eq!(t.show_path(&Name::from("/d")), ".");
        assert_eq!(t.show_path(&Name::from("/elsewhere//x")), "/elsewhere/x");
    }

    fn sample() -> Trace {
        let mut tree = Tree::default();
        tree.nodes.push(Node::File(b"seed".to_vec()));
        tree.entries.push(Entry {
            dir: 0,
            name: "s".into(),
            ino: 1,
        });
        let op = |kind| Op {
            kind,
            syscall: "write".into(),
            pid: 1,
            line: 1,
            path: "a".into(),
            stack: Vec::new(),
            origin: None,
            volatile: false,
        };
        let r = Replayed {
            ops: vec![
                op(OpKind::Link {
                    dir: 0,
                    name: "a".into(),
                    ino: 2,
                    new: true,
                }),
                op(OpKind::Write {
                    ino: 2,
                    off: 0,
                    data: DataRef { start: 0, len: 2 },
                }),
                op(OpKind::Output {
                    data: DataRef { start: 2, len: 3 },
                }),
            ],
            inodes: vec![InodeKind::Dir, InodeKind::File, InodeKind::File],
            symlinks: BTreeMap::new(),
            data: crate::blob::Blob::from_vec(b"hiok\n".to_vec()),
            stats: ReplayStats::default(),
            final_inodes: Vec::new(),
        };
        Trace::new(&tree, r, TraceMeta::default())
    }

    #[test]
    fn data_ops_on_volatile_files_are_durable_when_made() {
        let mut t = sample();
        let plain = synced_by(&t.ops);
        assert_eq!(plain[1].main, None);
        t.dir = Name(b"/d".to_vec());
        for (glob, path, volatile) in [
            ("a", "/d/a", true),
            ("*-shm", "/d/a", false),
            ("*-shm", "/d/db-shm", true),
            ("sub/a", "/d/sub/a", true),
            ("sub/a", "/e/sub/a", false),
        ] {
            t.volatile = vec![glob.into()];
            t.ops[1].path = path.into();
            let mut buf = Vec::new();
            t.write_to(&mut buf).unwrap();
            let read = Trace::read(&buf).unwrap();
            assert_eq!(read.ops[1].volatile, volatile, "{glob} {path}");
            // The link is an entry op: never volatile.
            assert!(!read.ops[0].volatile);
            let synced = synced_by(&read.ops);
            assert_eq!(synced[1].main, volatile.then_some(1), "{glob} {path}");
        }
        t.volatile = vec!["[".into()];
        let mut buf = Vec::new();
        t.write_to(&mut buf).unwrap();
        let e = Trace::read(&buf).unwrap_err().to_string();
        assert!(e.contains("volatile glob `[`"), "{e}");
    }

    #[test]
    fn round_trips() {
        let t = sample();
        let mut buf = Vec::new();
        t.write_to(&mut buf).unwrap();
        let back = Trace::read(&buf).unwrap();
        assert_eq!(back, t);
        assert_eq!(back.initial_tree().nodes[1], Node::File(b"seed".to_vec()));
        assert!(t.op_log_text().contains("(never synced)"));
    }

    #[test]
    fn the_numbering_is_written_only_for_a_native_trace_and_read_back() {
        let header = |t: &Trace| {
            let mut buf = Vec::new();
            t.write_to(&mut buf).unwrap();
            let back = Trace::read(&buf).unwrap();
            (String::from_utf8_lossy(&buf).into_owned(), back)
        };
        // Log lines: the file is as before the field existed, and such a
        // file reads as log lines.
        let t = sample();
        let (text, back) = header(&t);
        assert!(!text.contains("numbering"), "{text}");
        assert_eq!(back.numbering, Numbering::LogLine);
        assert!(t.op_log_text().contains(" log lines, "));
        assert!(t.op_log_json().get("numbering").is_none());
        // Calls: said, and read back.
        let mut native = sample();
        native.numbering = Numbering::Call;
        let (text, back) = header(&native);
        assert!(text.contains(r#""numbering":"call""#), "{text}");
        assert_eq!(back, native);
        let log = native.op_log_text();
        assert!(
            log.contains(" calls traced, ") && !log.contains("log line"),
            "{log}"
        );
        assert_eq!(native.op_log_json()["numbering"], "call");
    }

    #[test]
    fn a_large_blob_is_read_from_the_file_by_range_a_small_one_into_memory() {
        let mut t = sample();
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small.trace");
        t.save(&small).unwrap();
        let back = Trace::load(&small).unwrap();
        assert!(back.data.in_memory().is_some());
        assert_eq!(back, t);
        // Past the in-memory limit: an output op naming the last byte.
        let big = crate::blob::BLOB_IN_MEMORY_BYTES_MAX as usize + 1;
        let mut bytes = t.data.in_memory().unwrap().to_vec();
        let tail = DataRef {
            start: bytes.len() as u64 + big as u64 - 1,
            len: 1,
        };
        bytes.extend(std::iter::repeat_n(7u8, big - 1));
        bytes.push(b'!');
        t.data = Blob::from_vec(bytes);
        t.data_len = t.data.len();
        t.ops.push(t.ops[2].clone());
        t.ops[3].kind = OpKind::Output { data: tail };
        let path = dir.path().join("big.trace");
        t.save(&path).unwrap();
        let back = Trace::load(&path).unwrap();
        assert!(back.data.in_memory().is_none());
        assert_eq!(&*back.bytes(tail), b"!");
        assert_eq!(back.initial_tree().nodes[1], Node::File(b"seed".to_vec()));
        assert_eq!(back.content_id(), t.content_id());
        assert_eq!(back, t);
        // Cut short: refused, not read past.
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(std::fs::metadata(&path).unwrap().len() - 1)
            .unwrap();
        assert!(Trace::load(&path).is_err());
    }

    #[test]
    fn rejects_damaged_traces() {
        let t = sample();
        let mut buf = Vec::new();
        t.write_to(&mut buf).unwrap();
        buf.pop();
        assert!(Trace::read(&buf).is_err());
        assert!(Trace::read(b"hello\n").is_err());
        let mut bad = t.clone();
        bad.ops[0].kind = OpKind::Link {
            dir: 0,
            name: "../../etc".into(),
            ino: 2,
            new: true,
        };
        let mut buf = Vec::new();
        bad.write_to(&mut buf).unwrap();
        let e = Trace::read(&buf).unwrap_err().to_string();
        assert!(e.contains("not a file name"), "{e}");
    }
}
