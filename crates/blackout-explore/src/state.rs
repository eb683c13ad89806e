//! Crash states: applying what a [`StateDesc`] kept to the initial tree, the
//! content hash that deduplicates states, and writing one out.
//!
//! Writing out is the one place blackout creates files from a trace, so it is
//! careful: names were checked by [`Trace::read`] (no `/`, `.`, `..`, NUL),
//! every file is created with `create_new` inside a directory this module just
//! made, only directories are descended into (a symlink is created as a link,
//! never followed), and a directory reachable twice is written once.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use blackout_oplog::contents::{Contents, Data};
use blackout_oplog::ops::{DataRef, Ino, InodeKind, OpKind, Part, ROOT_INO};
use blackout_oplog::promises::Outputs;
pub use blackout_oplog::store::InodeState;
use blackout_oplog::store::{self, Halves};
use blackout_oplog::trace::Trace;

use crate::enumerate::{Cut, StateDesc, Tear};

/// The file system a crash leaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsState {
    /// Inodes, indexed by [`Ino`] (as in the trace).
    pub inodes: Vec<InodeState>,
}

/// The materializers, by name.
///
/// ```
/// use blackout_explore::state::MaterializerKind;
/// assert_eq!(MaterializerKind::Fuse.name(), "fuse");
/// assert_eq!("dir".parse::<MaterializerKind>(), Ok(MaterializerKind::Dir));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MaterializerKind {
    /// Each state written out as a directory tree.
    Dir,
    /// One FUSE mount per worker, a state's bytes served when read.
    Fuse,
}

impl MaterializerKind {
    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            MaterializerKind::Dir => "dir",
            MaterializerKind::Fuse => "fuse",
        }
    }
}

impl fmt::Display for MaterializerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for MaterializerKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "dir" => Ok(MaterializerKind::Dir),
            "fuse" => Ok(MaterializerKind::Fuse),
            _ => Err(format!("unknown materializer {s:?} (dir or fuse)")),
        }
    }
}

/// What showing states cost, summed over a run's workers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Cost {
    /// Which materializer.
    pub kind: Option<MaterializerKind>,
    /// States shown.
    pub states: u64,
    /// Bytes written: the states' files written out (dir), or what checkers
    /// wrote into them (fuse).
    pub written: u64,
    /// Bytes checkers read through the view (fuse; dir cannot see reads).
    pub read: u64,
}

impl Cost {
    /// One line for the coverage block: "states shown by fuse: 0.01 MB
    /// written, 0.30 MB read per state".
    pub fn line(&self) -> Option<String> {
        let kind = self.kind?;
        if self.states == 0 {
            return None;
        }
        let per = |b: u64| b as f64 / self.states as f64 / 1e6;
        Some(match kind {
            MaterializerKind::Dir => format!(
                "states written as directories: {:.2} MB written per state",
                per(self.written)
            ),
            MaterializerKind::Fuse => format!(
                "states shown by fuse: {:.2} MB written, {:.2} MB read per state",
                per(self.written),
                per(self.read)
            ),
        })
    }
}

/// The sector size used to tear writes, in bytes.
pub const SECTOR_BYTES_DEFAULT: u64 = 512;

impl FsState {
    /// The initial tree of a trace, with every later inode empty.
    pub fn initial(trace: &Trace) -> FsState {
        FsState {
            inodes: trace.initial_inodes(),
        }
    }

    /// Builds the state a [`StateDesc`] describes: the ops before the crash
    /// that it kept, applied in order through [`store::apply`].
    pub fn build(trace: &Trace, desc: &StateDesc, sector: u64) -> FsState {
        let mut fs = FsState::initial(trace);
        fs.apply_kept(trace, desc, sector);
        fs
    }

    /// Applies the ops before `desc.crash` that `desc` kept (its torn write
    /// cut as the tear says).
    fn apply_kept(&mut self, trace: &Trace, desc: &StateDesc, sector: u64) {
        let lost: HashSet<(usize, Part)> = desc.lost.iter().map(|u| (u.op, u.part)).collect();
        let crash = desc.crash.min(trace.ops.len());
        for i in 0..crash {
            let kept = Kept::of(trace, i, |j, p| lost.contains(&(j, p)), desc.torn);
            let size = |ino: Ino| self.inodes[ino as usize].size;
            if let Some(kept) = kept {
                let (kind, data, halves) = kept.cut(size, sector);
                store::apply(&mut self.inodes, &kind, data, halves);
            }
        }
    }
    /// The bytes of file data the state holds (written extents of its
    /// files; holes and symlinks left out): what writing it out copies.
    ///
    /// ```
    /// use blackout_explore::state::FsState;
    /// assert_eq!(FsState { inodes: Vec::new() }.held_bytes(), 0);
    /// ```
    pub fn held_bytes(&self) -> u64 {
        self.inodes
            .iter()
            .filter(|n| n.kind == InodeKind::File)
            .map(|n| n.data.extent_bytes())
            .sum()
    }

    /// The bytes a reader sees in a file, holes as zeros (as many as its
    /// size: for small files).
    pub fn file_bytes(&self, ino: Ino) -> Vec<u8> {
        let node = &self.inodes[ino as usize];
        node.data.read(0, node.size)
    }

    /// Visits the visible tree: (path, inode) for every entry, parents first,
    /// names sorted, each directory entered once.
    fn walk(&self, visit: impl FnMut(&[u8], Ino, bool)) {
        walk_tree(|ino| &self.inodes[ino as usize], visit);
    }

    /// A hash of what a reader of the directory sees: every path, its kind,
    /// bytes or target, and which paths are links to one file.
    pub fn content_hash(&self) -> blake3::Hash {
        tree_hash(
            |ino| &self.inodes[ino as usize],
            |_, node| (node.size, file_hash(&node.data, node.hashed_len())),
        )
    }
    /// Writes the visible tree into `root`, an existing empty directory.
    /// A file's holes stay holes: only its extents are written.
    pub fn write_out(&self, root: &Path) -> io::Result<()> {
        self.write_out_counted(root).map(|_| ())
    }

    /// [`FsState::write_out`], returning how many bytes of files it wrote.
    pub fn write_out_counted(&self, root: &Path) -> io::Result<u64> {
        let mut bytes = 0u64;
        let mut written: HashMap<Ino, std::path::PathBuf> = HashMap::new();
        let mut result = Ok(());
        self.walk(|path, ino, first| {
            if result.is_err() || !first {
                return;
            }
            let target = root.join(std::ffi::OsStr::from_bytes(path));
            let node = &self.inodes[ino as usize];
            let r = match node.kind {
                InodeKind::Dir => fs::create_dir(&target),
                InodeKind::Symlink => {
                    let to = node.data.to_vec();
                    std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(&to), &target)
                }
                InodeKind::File => match written.get(&ino) {
                    Some(first_path) => fs::hard_link(first_path, &target),
                    None => (|| {
                        let f = fs::OpenOptions::new()
                            .write(true)
                            .create_new(true)
                            .open(&target)?;
                        f.set_len(node.size)?;
                        // Extents that follow each other go out in one
                        // write of up to WRITE_OUT_BYTES (a file written
                        // in pages is not a write per page).
                        let mut run: (u64, Vec<u8>) = (0, Vec::new());
                        node.data.for_each_extent(|off, bytes| {
                            let keep = node.size.saturating_sub(off).min(bytes.len() as u64);
                            let bytes = &bytes[..keep as usize];
                            let follows = run.0 + run.1.len() as u64 == off;
                            if !follows || run.1.len() + bytes.len() > WRITE_OUT_BYTES {
                                f.write_all_at(&run.1, run.0)?;
                                run.1.clear();
                                run.0 = off;
                            }
                            if bytes.len() >= WRITE_OUT_BYTES {
                                f.write_all_at(bytes, off)?;
                                run.0 = off + bytes.len() as u64;
                            } else {
                                run.1.extend_from_slice(bytes);
                            }
                            Ok(())
                        })?;
                        f.write_all_at(&run.1, run.0)?;
                        bytes += node.data.extent_bytes().min(node.size);
                        written.insert(ino, target.clone());
                        Ok(())
                    })(),
                },
            };
            if let Err(e) = r {
                result = Err(io::Error::new(
                    e.kind(),
                    format!("{}: {e}", target.display()),
                ));
            }
        });
        result.map(|()| bytes)
    }
}

/// What a crash state kept of one op: the op, which halves of a rename,
/// and whether it is the state's torn write.
pub(crate) struct Kept<'t> {
    trace: &'t Trace,
    kind: &'t OpKind,
    halves: Halves,
    torn: Option<Tear>,
}

impl<'t> Kept<'t> {
    /// What a state that lost the units `lost(op, part)` says and tore
    /// `torn` kept of op `i`; `None` when it lost the whole op.
    pub(crate) fn of(
        trace: &'t Trace,
        i: usize,
        lost: impl Fn(usize, Part) -> bool,
        torn: Option<(usize, Tear)>,
    ) -> Option<Kept<'t>> {
        if lost(i, Part::Whole) {
            return None;
        }
        let kind = &trace.ops[i].kind;
        let halves = match kind {
            OpKind::Rename {
                from_dir, to_dir, ..
            } if from_dir != to_dir => Halves {
                source: !lost(i, Part::Source),
                dest: !lost(i, Part::Dest),
            },
            _ => Halves::BOTH,
        };
        Some(Kept {
            trace,
            kind,
            halves,
            torn: torn.filter(|&(t, _)| t == i).map(|(_, tear)| tear),
        })
    }

    /// The op to apply, its data and halves: a torn write cut as its tear
    /// says (`size(ino)` is the file's size before it), a write's data as
    /// a range of the trace's blob.
    pub(crate) fn cut(
        self,
        size: impl FnOnce(Ino) -> u64,
        sector: u64,
    ) -> (Cow<'t, OpKind>, Data<'t>, Halves) {
        let whole = |data: &DataRef| Data::Blob(&self.trace.data, *data);
        match (self.kind, self.torn) {
            (OpKind::Write { ino, off, data }, Some(tear)) => {
                let size_before = size(*ino);
                match tear.cut(*off, data.len, size_before, sector) {
                    Some(Cut::Prefix(n)) => (
                        Cow::Borrowed(self.kind),
                        Data::Blob(
                            &self.trace.data,
                            DataRef {
                                start: data.start,
                                len: n,
                            },
                        ),
                        self.halves,
                    ),
                    Some(Cut::SizeOnly) => {
                        let size = size_before.max(off + data.len);
                        let grow = OpKind::Truncate { ino: *ino, size };
                        (Cow::Owned(grow), Data::Bytes(&[]), self.halves)
                    }
                    // A tear storage cannot make: the write whole
                    // (exploration does not ask for one).
                    None => (Cow::Borrowed(self.kind), whole(data), self.halves),
                }
            }
            (OpKind::Write { data, .. }, None) => {
                (Cow::Borrowed(self.kind), whole(data), self.halves)
            }
            _ => (Cow::Borrowed(self.kind), Data::Bytes(&[]), self.halves),
        }
    }
}

/// Visits the visible tree of the inodes `node` looks up: (path, inode)
/// for every entry, parents first, names sorted, each directory entered
/// once.
pub(crate) fn walk_tree<'a>(
    node: impl Fn(Ino) -> &'a InodeState,
    mut visit: impl FnMut(&[u8], Ino, bool),
) {
    let mut entered: HashSet<Ino> = HashSet::from([ROOT_INO]);
    let mut stack: Vec<(Vec<u8>, Ino)> = vec![(Vec::new(), ROOT_INO)];
    while let Some((path, dir)) = stack.pop() {
        let mut children = Vec::new();
        for (name, &ino) in &node(dir).entries {
            let mut p = path.clone();
            if !p.is_empty() {
                p.push(b'/');
            }
            p.extend_from_slice(name);
            let first_entry = node(ino).kind != InodeKind::Dir || entered.insert(ino);
            visit(&p, ino, first_entry);
            if first_entry && node(ino).kind == InodeKind::Dir {
                children.push((p, ino));
            }
        }
        // Reverse so the stack pops them in name order.
        stack.extend(children.into_iter().rev());
    }
}

/// The content hash of the tree the inodes `node` looks up: every path,
/// its kind, which paths are links to one file, a symlink's target, and a
/// file's size and [`file_hash`] as `file(ino, node)` answers them (from
/// what it knows of the file, or by hashing it).
pub(crate) fn tree_hash<'a>(
    node: impl Fn(Ino) -> &'a InodeState,
    mut file: impl FnMut(Ino, &'a InodeState) -> (u64, blake3::Hash),
) -> blake3::Hash {
    TreeTemplate::of(&node).hash(|ino| file(ino, node(ino)))
}

/// What [`tree_hash`] hashes, with each file's size and hash left as a
/// slot: a tree whose directories and links stay put is walked once, and
/// each state's files filled in.
#[derive(Debug, Clone, Default)]
pub(crate) struct TreeTemplate {
    bytes: Vec<u8>,
    /// Where in `bytes` each file's size and hash go, in order.
    slots: Vec<(usize, Ino)>,
}

impl TreeTemplate {
    /// The template of the tree the inodes `node` looks up.
    pub(crate) fn of<'a>(node: impl Fn(Ino) -> &'a InodeState) -> TreeTemplate {
        let mut t = TreeTemplate::default();
        let mut ids: HashMap<Ino, u64> = HashMap::new();
        walk_tree(&node, |path, ino, first| {
            let next = ids.len() as u64;
            let id = *ids.entry(ino).or_insert(next);
            let n = node(ino);
            let b = &mut t.bytes;
            b.extend_from_slice(&(path.len() as u64).to_le_bytes());
            b.extend_from_slice(path);
            b.extend_from_slice(&id.to_le_bytes());
            b.extend_from_slice(&[n.kind as u8, u8::from(first)]);
            match n.kind {
                InodeKind::File => t.slots.push((b.len(), ino)),
                InodeKind::Symlink => {
                    b.extend_from_slice(&n.data.len().to_le_bytes());
                    b.extend_from_slice(&n.data.to_vec());
                }
                InodeKind::Dir => {}
            }
        });
        t
    }

    /// The tree's hash, with each file's size and hash as `file` answers.
    pub(crate) fn hash(&self, mut file: impl FnMut(Ino) -> (u64, blake3::Hash)) -> blake3::Hash {
        let mut h = blake3::Hasher::new();
        let mut at = 0;
        for &(slot, ino) in &self.slots {
            h.update(&self.bytes[at..slot]);
            let (size, hash) = file(ino);
            h.update(&size.to_le_bytes());
            h.update(hash.as_bytes());
            at = slot;
        }
        h.update(&self.bytes[at..]);
        h.finalize()
    }
}

/// Bytes of adjacent extents gathered into one write when a state is
/// written out.
const WRITE_OUT_BYTES: usize = 1 << 20;

/// Files are hashed in blocks of this many bytes, so that a file changed in
/// one place is hashed again only there.
pub const HASH_BLOCK_BYTES: usize = 4 * 1024;

/// One block's share of a file's hash: a 256-bit number, added up over the
/// blocks. A block that reads as zeros adds nothing (a hole and the zeros a
/// dense copy holds hash alike, and no hole is visited); any other block
/// adds a hash of its index and bytes. A file changed in a few blocks has
/// its sum changed by those blocks' shares alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Term([u64; 4]);

impl Term {
    /// The share of block `index` holding `bytes`.
    pub fn of_block(index: usize, bytes: &[u8]) -> Term {
        static ZEROS: [u8; HASH_BLOCK_BYTES] = [0; HASH_BLOCK_BYTES];
        if bytes
            .chunks(HASH_BLOCK_BYTES)
            .all(|c| c == &ZEROS[..c.len()])
        {
            return Term::default();
        }
        let mut h = blake3::Hasher::new();
        h.update(&(index as u64).to_le_bytes());
        h.update(bytes);
        let out = h.finalize();
        let mut t = [0u64; 4];
        for (i, lane) in t.iter_mut().enumerate() {
            let mut b = [0u8; 8];
            b.copy_from_slice(&out.as_bytes()[i * 8..i * 8 + 8]);
            *lane = u64::from_le_bytes(b);
        }
        Term(t)
    }

    /// The sum of two shares (lane by lane, wrapping).
    #[must_use]
    pub fn plus(self, o: Term) -> Term {
        Term(std::array::from_fn(|i| self.0[i].wrapping_add(o.0[i])))
    }

    /// The difference of two shares.
    #[must_use]
    pub fn minus(self, o: Term) -> Term {
        Term(std::array::from_fn(|i| self.0[i].wrapping_sub(o.0[i])))
    }

    /// The file hash of a file whose first `len` bytes' shares sum to
    /// `self`.
    pub fn file_hash(self, len: u64) -> blake3::Hash {
        let mut h = blake3::Hasher::new();
        h.update(&len.to_le_bytes());
        for lane in self.0 {
            h.update(&lane.to_le_bytes());
        }
        h.finalize()
    }
}

/// The blocks ([`HASH_BLOCK_BYTES`]) that may hold written bytes of the
/// first `len` bytes of `contents`: those an extent touches, ascending.
pub fn written_blocks(contents: &Contents, len: u64) -> impl Iterator<Item = usize> + '_ {
    let b = HASH_BLOCK_BYTES as u64;
    let mut last: Option<u64> = None;
    contents
        .extent_ranges()
        .take_while(move |&(s, _)| s < len)
        .flat_map(move |(s, l)| {
            let end = (s + l).min(len);
            s / b..end.div_ceil(b)
        })
        .filter(move |&i| {
            let new = last != Some(i);
            last = Some(i);
            new
        })
        .map(|i| i as usize)
}

/// The share of block `index` of the first `len` bytes of `contents`
/// (zero for a block past `len`), read through `buf`.
pub fn block_term(contents: &Contents, len: u64, index: usize, buf: &mut Vec<u8>) -> Term {
    let b = HASH_BLOCK_BYTES as u64;
    let lo = index as u64 * b;
    if lo >= len {
        return Term::default();
    }
    let hi = (lo + b).min(len);
    match contents.block(lo, hi, buf) {
        Some(bytes) => Term::of_block(index, bytes),
        None => Term::default(),
    }
}

/// The hash of a file's first `len` bytes: the length and the sum of its
/// blocks' shares ([`Term`]). Only blocks an extent touches are read: a
/// hole hashes as the zeros it reads as.
///
/// ```
/// use blackout_explore::state::{file_hash, HASH_BLOCK_BYTES};
/// use blackout_oplog::contents::Contents;
/// let len = 3 * HASH_BLOCK_BYTES as u64 + 1;
/// let (mut sparse, mut size) = (Contents::default(), 0);
/// sparse.write(&mut size, len - 1, b"x");
/// let mut dense = vec![0u8; len as usize];
/// dense[len as usize - 1] = b'x';
/// let h = file_hash(&sparse, len);
/// assert_eq!(h, file_hash(&Contents::from(dense), len));
/// assert_ne!(h, file_hash(&sparse, len - 1));
/// ```
pub fn file_hash(contents: &Contents, len: u64) -> blake3::Hash {
    let mut buf = Vec::new();
    written_blocks(contents, len)
        .fold(Term::default(), |sum, i| {
            sum.plus(block_term(contents, len, i, &mut buf))
        })
        .file_hash(len)
}

/// Writes one state of a trace into `out` (created; it must not exist or
/// be empty), with its promises in `OUT.acks` and what was printed in
/// `OUT.output` beside it. Returns those two paths.
pub fn write_state(
    trace: &Trace,
    desc: &StateDesc,
    ack_prefix: Option<&[u8]>,
    sector: u64,
    out: &Path,
) -> io::Result<(PathBuf, PathBuf)> {
    let outputs = Outputs::new(trace, ack_prefix);
    match std::fs::create_dir(out) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            if std::fs::read_dir(out)?.next().is_some() {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not empty", out.display()),
                ));
            }
        }
        Err(e) => return Err(e),
    }
    FsState::build(trace, desc, sector).write_out(out)?;
    let side = |ext: &str| {
        let mut name = out
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_else(|| "state".into());
        name.push(ext);
        out.with_file_name(name)
    };
    let acks = side(".acks");
    let output = side(".output");
    std::fs::write(&acks, outputs.promises_text(desc.crash))?;
    std::fs::write(&output, outputs.output_at(desc.crash))?;
    Ok((acks, output))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::enumerate::Tear;
    use blackout_oplog::ops::Unit;
    use blackout_oplog::trace::TraceMeta;
    use blackout_oplog::tree::Tree;

    fn trace_of(log: &str) -> Trace {
        let r = blackout_record::replay::replay(log.as_bytes(), &Tree::default(), b"/d").unwrap();
        Trace::new(&Tree::default(), r, TraceMeta::default())
    }

    fn hex(s: &str) -> String {
        s.bytes().map(|b| format!("\\x{b:02x}")).collect()
    }

    #[test]
    fn a_lost_create_leaves_the_write_on_an_orphan() {
        let t = trace_of(&format!(
            "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT, 0644) = 3\n1 write(3, \"{}\", 2) = 2\n",
            hex("a"),
            hex("hi")
        ));
        let all = FsState::build(&t, &StateDesc::parse("c2").unwrap(), 512);
        assert_eq!(all.file_bytes(1), b"hi");
        assert_eq!(all.inodes[0].entries.len(), 1);
        let lost = FsState::build(&t, &StateDesc::parse("c2.lost0").unwrap(), 512);
        assert!(lost.inodes[0].entries.is_empty());
        assert_ne!(all.content_hash(), lost.content_hash());
        // Same visible content, same hash.
        let empty = FsState::build(&t, &StateDesc::parse("c0").unwrap(), 512);
        assert_eq!(empty.content_hash(), lost.content_hash());
    }

    #[test]
    fn an_appending_write_tears_at_sector_boundaries_or_to_its_size_alone() {
        let data = "x".repeat(2048);
        let t = trace_of(&format!(
            "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT, 0644) = 3\n1 write(3, \"{}\", 2048) = 2048\n",
            hex("a"),
            hex(&data)
        ));
        let size =
            |id: &str| FsState::build(&t, &StateDesc::parse(id).unwrap(), 512).inodes[1].size;
        assert_eq!(size("c2.torn1h"), 1024);
        assert_eq!(size("c2.torn1s"), 1536);
        let z = FsState::build(&t, &StateDesc::parse("c2.torn1z").unwrap(), 512);
        assert_eq!(z.file_bytes(1), vec![0; 2048]);
    }

    #[test]
    fn an_overwrite_tears_into_old_and_new_sectors_never_zeros() {
        // 8192 bytes of 'a' synced, then 4096 bytes of 'b' at 100.
        let t = trace_of(&format!(
            "1 openat(AT_FDCWD, \"{}\", O_RDWR|O_CREAT, 0644) = 3\n\
             1 write(3, \"{}\", 8192) = 8192\n1 fsync(3) = 0\n\
             1 pwrite64(3, \"{}\", 4096, 100) = 4096\n",
            hex("a"),
            hex(&"a".repeat(8192)),
            hex(&"b".repeat(4096)),
        ));
        let file = |id: &str| FsState::build(&t, &StateDesc::parse(id).unwrap(), 512).file_bytes(1);
        let expect = |new_until: usize| {
            let mut v = vec![b'a'; 8192];
            v[100..new_until].fill(b'b');
            v
        };
        // Cut at the boundary at or before the middle (2148 -> 2048), and
        // before the last sector (4196 -> 4096): each sector old or new.
        assert_eq!(file("c4.torn3h"), expect(2048));
        assert_eq!(file("c4.torn3s"), expect(4096));
        // It does not extend the file: no size-only tear; asked anyway, the
        // write is whole.
        assert_eq!(Tear::Zeros.cut(100, 4096, 8192, 512), None);
        assert_eq!(file("c4.torn3z"), expect(4196));
    }

    /// A file's hash from its bytes read whole: every block's share
    /// summed, holes read as zeros.
    fn dense_hash(fs: &FsState, ino: Ino) -> blake3::Hash {
        let bytes = fs.inodes[ino as usize].data.to_vec();
        let sum = bytes
            .chunks(HASH_BLOCK_BYTES)
            .enumerate()
            .fold(Term::default(), |s, (i, b)| s.plus(Term::of_block(i, b)));
        sum.file_hash(bytes.len() as u64)
    }

    fn pwrite_at(off: u64) -> String {
        format!(
            "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT, 0644) = 3\n1 pwrite64(3, \"{}\", 1, {off}) = 1\n",
            hex("a"),
            hex("x")
        )
    }

    #[test]
    fn a_hole_hashes_like_the_zeros_written_densely() {
        let off = (1 << 20) + 5;
        let sparse = FsState::build(
            &trace_of(&pwrite_at(off)),
            &StateDesc::parse("c2").unwrap(),
            512,
        );
        let dense_log = format!(
            "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT, 0644) = 3\n1 write(3, \"{}\", {off}) = {off}\n1 write(3, \"{}\", 1) = 1\n",
            hex("a"),
            "\\x00".repeat(off as usize),
            hex("x")
        );
        let dense = FsState::build(&trace_of(&dense_log), &StateDesc::parse("c3").unwrap(), 512);
        assert_eq!(sparse.inodes[1].data.extent_bytes(), 1);
        assert_eq!(dense.inodes[1].data.extent_bytes(), off + 1);
        assert_eq!(sparse, dense);
        assert_eq!(sparse.content_hash(), dense.content_hash());
        let file = |fs: &FsState| file_hash(&fs.inodes[1].data, off + 1);
        assert_eq!(file(&sparse), dense_hash(&dense, 1));
        assert_eq!(file(&dense), dense_hash(&dense, 1));
    }

    #[test]
    fn a_byte_at_a_gib_is_built_hashed_and_written_out_sparse() {
        use std::os::unix::fs::MetadataExt;
        let off = 1u64 << 30;
        let t = trace_of(&pwrite_at(off));
        let mut keys = crate::keys::Keyer::new(&t, 512);
        let hash = keys.hash(&StateDesc::parse("c2").unwrap());
        let fs = FsState::build(&t, &StateDesc::parse("c2").unwrap(), 512);
        assert_eq!(fs.inodes[1].size, off + 1);
        assert_eq!(fs.inodes[1].data.extent_bytes(), 1);
        assert_eq!(hash, fs.content_hash());
        let torn = FsState::build(&t, &StateDesc::parse("c2.torn1z").unwrap(), 512);
        assert_eq!(
            (torn.inodes[1].size, torn.inodes[1].data.extent_bytes()),
            (off + 1, 0)
        );
        assert_ne!(torn.content_hash(), hash);
        let dir = tempfile::tempdir().unwrap();
        fs.write_out(dir.path()).unwrap();
        let path = dir.path().join("a");
        let meta = fs::metadata(&path).unwrap();
        assert_eq!(meta.len(), off + 1);
        // 512-byte units: a page or so, not a GiB.
        assert!(meta.blocks() <= 64, "{} blocks allocated", meta.blocks());
        let f = fs::File::open(&path).unwrap();
        let mut last = [0u8; 2];
        f.read_exact_at(&mut last, off - 1).unwrap();
        assert_eq!(&last, b"\0x");
    }

    #[test]
    fn states_built_from_a_blob_in_a_file_are_those_built_from_memory() {
        use crate::enumerate::{enumerate, ExploreConfig};
        use blackout_oplog::blob::Blob;
        let t = trace_of(&format!(
            "1 openat(AT_FDCWD, \"{}\", O_RDWR|O_CREAT, 0644) = 3\n\
             1 write(3, \"{}\", 20000) = 20000\n1 fsync(3) = 0\n\
             1 pwrite64(3, \"{}\", 4096, 100) = 4096\n\
             1 pwrite64(3, \"{}\", 3, 40000) = 3\n",
            hex("a"),
            hex(&"a".repeat(20000)),
            hex(&"b".repeat(4096)),
            hex("ccc"),
        ));
        let mut file = tempfile::tempfile().unwrap();
        t.data.copy_to(&mut file).unwrap();
        let mut in_file = t.clone();
        in_file.data = Blob::from_file(file, 0, t.data.len());
        assert!(in_file.data.in_memory().is_none());
        let mut keys = crate::keys::Keyer::new(&in_file, 512);
        let mut states = 0;
        let model = crate::model::Model::Posix.crash_model();
        enumerate(&t.ops, model, &ExploreConfig::default(), |desc| {
            let want = FsState::build(&t, &desc, 512);
            let fs = FsState::build(&in_file, &desc, 512);
            assert_eq!(fs, want, "{}", desc.id());
            assert_eq!(keys.hash(&desc), want.content_hash(), "{}", desc.id());
            let dir = tempfile::tempdir().unwrap();
            fs.write_out(dir.path()).unwrap();
            let visible = want.inodes[0].entries.contains_key(&b"a"[..]);
            let got = fs::read(dir.path().join("a")).ok();
            assert_eq!(got, visible.then(|| want.file_bytes(1)), "{}", desc.id());
            states += 1;
        })
        .unwrap();
        assert!(states > 10, "{states} states");
    }

    #[test]
    fn a_lost_rename_source_half_leaves_both_names() {
        let t = trace_of(&format!(
            "1 mkdir(\"{a}\", 0755) = 0\n1 mkdir(\"{b}\", 0755) = 0\n1 openat(AT_FDCWD, \"{ax}\", O_WRONLY|O_CREAT, 0644) = 3\n1 rename(\"{ax}\", \"{bx}\") = 0\n",
            a = hex("a"),
            b = hex("b"),
            ax = hex("a/x"),
            bx = hex("b/x")
        ));
        let desc = StateDesc {
            crash: 4,
            lost: vec![Unit {
                op: 3,
                part: Part::Source,
            }]
            .into(),
            torn: None,
        };
        let s = FsState::build(&t, &desc, 512);
        let dir = tempfile::tempdir().unwrap();
        s.write_out(dir.path()).unwrap();
        let ax = dir.path().join("a/x");
        let bx = dir.path().join("b/x");
        assert!(ax.exists() && bx.exists());
        use std::os::unix::fs::MetadataExt;
        assert_eq!(
            fs::metadata(ax).unwrap().ino(),
            fs::metadata(bx).unwrap().ino()
        );
    }

    #[test]
    fn a_written_state_has_its_promises_beside_it() {
        let t = trace_of(
            "1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT, 0644) = 3\n\
             1 write(3, \"\\x78\", 1) = 1\n\
             1 write(1, \"\\x6f\\x6b\\x0a\", 3) = 3\n",
        );
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("s");
        let desc = StateDesc::parse("c3.lost1").unwrap();
        let (acks, output) = write_state(&t, &desc, None, 512, &out).unwrap();
        assert_eq!(std::fs::read(out.join("a")).unwrap(), b"");
        assert_eq!(std::fs::read(acks).unwrap(), b"ok\n");
        assert_eq!(std::fs::read(output).unwrap(), b"ok\n");
        // Not into a directory that holds something.
        assert!(write_state(&t, &desc, None, 512, dir.path()).is_err());
    }
}
