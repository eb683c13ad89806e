//! Crash states: applying what a [`StateDesc`] kept to the initial tree, the
//! content hash that deduplicates states, and writing one out.
//!
//! Writing out is the one place blackout creates files from a trace, so it is
//! careful: names were checked by [`Trace::read`] (no `/`, `.`, `..`, NUL),
//! every file is created with `create_new` inside a directory this module just
//! made, only directories are descended into (a symlink is created as a link,
//! never followed), and a directory reachable twice is written once.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::OnceLock;

use blackout_oplog::contents::{Contents, Data};
use blackout_oplog::ops::{DataRef, Ino, InodeKind, OpKind, Part, ROOT_INO};
pub use blackout_oplog::store::InodeState;
use blackout_oplog::store::{self, Halves};
use blackout_oplog::trace::Trace;

use crate::enumerate::{Cut, StateDesc};

/// The file system a crash leaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsState {
    /// Inodes, indexed by [`Ino`] (as in the trace).
    pub inodes: Vec<InodeState>,
}

/// Turns a built crash state into something a checker can open.
///
/// The directory materializer writes the visible tree into a directory; a
/// disk-image materializer would write an image a real file system mounts.
pub trait Materializer: Send + Sync {
    /// Writes `fs` into `root`, an existing empty directory, creating
    /// nothing outside it.
    fn materialize(&self, fs: &FsState, root: &Path) -> io::Result<()>;
}

/// Writes crash states as directory trees ([`FsState::write_out`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct DirMaterializer;

impl Materializer for DirMaterializer {
    fn materialize(&self, fs: &FsState, root: &Path) -> io::Result<()> {
        fs.write_out(root)
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
        fs.apply_kept(trace, desc, 0, sector, |_, _, _| {});
        fs
    }

    /// Applies the ops `from..desc.crash` that `desc` kept (its torn write
    /// cut as the tear says), calling `touched(ino, lo, hi)` for each applied
    /// op that may change a file's hashed bytes ([`FsState::content_hash`]):
    /// every changed byte lies in `lo..hi`.
    fn apply_kept(
        &mut self,
        trace: &Trace,
        desc: &StateDesc,
        from: usize,
        sector: u64,
        mut touched: impl FnMut(Ino, u64, u64),
    ) {
        let lost: HashSet<(usize, Part)> = desc.lost.iter().map(|u| (u.op, u.part)).collect();
        let crash = desc.crash.min(trace.ops.len());
        for (i, op) in trace.ops.iter().enumerate().take(crash).skip(from) {
            if lost.contains(&(i, Part::Whole)) {
                continue;
            }
            let halves = match &op.kind {
                OpKind::Rename {
                    from_dir, to_dir, ..
                } if from_dir != to_dir => Halves {
                    source: !lost.contains(&(i, Part::Source)),
                    dest: !lost.contains(&(i, Part::Dest)),
                },
                _ => Halves::BOTH,
            };
            // The bytes an op may change: its own range, and everything
            // between the hashed lengths before and after it.
            let range = match &op.kind {
                OpKind::Write { ino, off, data } => Some((*ino, *off, off + data.len)),
                OpKind::Truncate { ino, size } => Some((*ino, *size, *size)),
                OpKind::Fallocate { ino, off, len, .. } => {
                    Some((*ino, *off, off.saturating_add(*len)))
                }
                _ => None,
            };
            let before = range.map(|(ino, ..)| self.inodes[ino as usize].hashed_len());
            let data = match (&op.kind, desc.torn) {
                (OpKind::Write { ino, off, data }, Some((t, tear))) if t == i => {
                    let size_before = self.inodes[*ino as usize].size;
                    match tear.cut(*off, data.len, size_before, sector) {
                        Some(Cut::Prefix(n)) => Data::Blob(
                            &trace.data,
                            DataRef {
                                start: data.start,
                                len: n,
                            },
                        ),
                        Some(Cut::SizeOnly) => {
                            let size = size_before.max(off + data.len);
                            let grow = OpKind::Truncate { ino: *ino, size };
                            store::apply(&mut self.inodes, &grow, Data::Bytes(&[]), halves);
                            self.touched(range, before, &mut touched);
                            continue;
                        }
                        // A tear storage cannot make: the write whole
                        // (exploration does not ask for one).
                        None => Data::Blob(&trace.data, *data),
                    }
                }
                (OpKind::Write { data, .. }, _) => Data::Blob(&trace.data, *data),
                _ => Data::Bytes(&[]),
            };
            store::apply(&mut self.inodes, &op.kind, data, halves);
            self.touched(range, before, &mut touched);
        }
    }

    /// Reports an applied op's range, widened to the hashed lengths before
    /// and after it.
    fn touched(
        &self,
        range: Option<(Ino, u64, u64)>,
        before: Option<u64>,
        touched: &mut impl FnMut(Ino, u64, u64),
    ) {
        if let (Some((ino, lo, hi)), Some(before)) = (range, before) {
            let after = self.inodes[ino as usize].hashed_len();
            touched(ino, lo.min(before).min(after), hi.max(before).max(after));
        }
    }

    /// The bytes a reader sees in a file, holes as zeros (as many as its
    /// size: for small files).
    pub fn file_bytes(&self, ino: Ino) -> Vec<u8> {
        let node = &self.inodes[ino as usize];
        node.data.read(0, node.size)
    }

    /// Visits the visible tree: (path, inode) for every entry, parents first,
    /// names sorted, each directory entered once.
    fn walk(&self, mut visit: impl FnMut(&[u8], Ino, bool)) {
        let mut entered: HashSet<Ino> = HashSet::from([ROOT_INO]);
        let mut stack: Vec<(Vec<u8>, Ino)> = vec![(Vec::new(), ROOT_INO)];
        while let Some((path, dir)) = stack.pop() {
            let mut children = Vec::new();
            for (name, &ino) in &self.inodes[dir as usize].entries {
                let mut p = path.clone();
                if !p.is_empty() {
                    p.push(b'/');
                }
                p.extend_from_slice(name);
                let first_entry =
                    self.inodes[ino as usize].kind != InodeKind::Dir || entered.insert(ino);
                visit(&p, ino, first_entry);
                if first_entry && self.inodes[ino as usize].kind == InodeKind::Dir {
                    children.push((p, ino));
                }
            }
            // Reverse so the stack pops them in name order.
            stack.extend(children.into_iter().rev());
        }
    }

    /// A hash of what a reader of the directory sees: every path, its kind,
    /// bytes or target, and which paths are links to one file.
    pub fn content_hash(&self) -> blake3::Hash {
        self.content_hash_with(|_, node| file_hash(&node.data, node.hashed_len(), |_, hash| hash()))
    }

    /// [`FsState::content_hash`], with each file hashed by `file_hash`
    /// (given the inode and its state; it must answer what [`file_hash`]
    /// does of its [`InodeState::hashed_len`] bytes), which may answer from
    /// what it knows of a file unchanged since it last hashed it.
    pub fn content_hash_with(
        &self,
        mut file_hash: impl FnMut(Ino, &InodeState) -> blake3::Hash,
    ) -> blake3::Hash {
        let mut h = blake3::Hasher::new();
        let mut ids: HashMap<Ino, u64> = HashMap::new();
        self.walk(|path, ino, first| {
            let next = ids.len() as u64;
            let id = *ids.entry(ino).or_insert(next);
            let node = &self.inodes[ino as usize];
            h.update(&(path.len() as u64).to_le_bytes());
            h.update(path);
            h.update(&id.to_le_bytes());
            h.update(&[node.kind as u8, u8::from(first)]);
            match node.kind {
                InodeKind::File => {
                    h.update(&node.size.to_le_bytes());
                    h.update(file_hash(ino, node).as_bytes());
                }
                InodeKind::Symlink => {
                    h.update(&node.data.len().to_le_bytes());
                    h.update(&node.data.to_vec());
                }
                InodeKind::Dir => {}
            }
        });
        h.finalize()
    }

    /// Writes the visible tree into `root`, an existing empty directory.
    /// A file's holes stay holes: only its extents are written.
    pub fn write_out(&self, root: &Path) -> io::Result<()> {
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
                        node.data.for_each_extent(|off, bytes| {
                            let keep = node.size.saturating_sub(off).min(bytes.len() as u64);
                            f.write_all_at(&bytes[..keep as usize], off)
                        })?;
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
        result
    }
}

/// Files are hashed in blocks of this many bytes, so that a file changed in
/// one place is hashed again only there.
pub const HASH_BLOCK_BYTES: usize = 16 * 1024;

/// The hash of a file's first `len` bytes: the length and the hash of each
/// block of [`HASH_BLOCK_BYTES`]. A block holding written bytes is hashed
/// by `block(index, hash)`, which must answer what `hash()` does (the
/// block's bytes read and hashed), from memory or not: a block it knows is
/// not read. A block no extent touches hashes as the zeros it reads as,
/// without reading it: a hole hashes like the zeros a dense copy held.
///
/// ```
/// use blackout_explore::state::{file_hash, HASH_BLOCK_BYTES};
/// use blackout_oplog::contents::Contents;
/// let len = 3 * HASH_BLOCK_BYTES as u64 + 1;
/// let (mut sparse, mut size) = (Contents::default(), 0);
/// sparse.write(&mut size, len - 1, b"x");
/// let mut dense = vec![0u8; len as usize];
/// dense[len as usize - 1] = b'x';
/// let mut blocks = 0;
/// let h = file_hash(&sparse, len, |_, hash| { blocks += 1; hash() });
/// assert_eq!(blocks, 1);
/// assert_eq!(h, file_hash(&Contents::from(dense), len, |_, hash| hash()));
/// assert_ne!(h, file_hash(&sparse, len - 1, |_, hash| hash()));
/// ```
pub fn file_hash(
    contents: &Contents,
    len: u64,
    mut block: impl FnMut(usize, &mut dyn FnMut() -> blake3::Hash) -> blake3::Hash,
) -> blake3::Hash {
    let mut h = blake3::Hasher::new();
    h.update(&len.to_le_bytes());
    let mut buf = Vec::new();
    let b = HASH_BLOCK_BYTES as u64;
    for i in 0..len.div_ceil(b) {
        let (lo, hi) = (i * b, (i * b + b).min(len));
        if contents.is_hole(lo, hi) {
            h.update(zeros_hash((hi - lo) as usize).as_bytes());
            continue;
        }
        let mut hash = || match contents.block(lo, hi, &mut buf) {
            Some(bytes) => blake3::hash(bytes),
            None => zeros_hash((hi - lo) as usize),
        };
        h.update(block(i as usize, &mut hash).as_bytes());
    }
    h.finalize()
}

/// `blake3::hash` of `n` zeros (at most [`HASH_BLOCK_BYTES`]), a whole
/// block's computed once.
fn zeros_hash(n: usize) -> blake3::Hash {
    static ZEROS: [u8; HASH_BLOCK_BYTES] = [0; HASH_BLOCK_BYTES];
    static BLOCK: OnceLock<blake3::Hash> = OnceLock::new();
    if n == HASH_BLOCK_BYTES {
        *BLOCK.get_or_init(|| blake3::hash(&ZEROS))
    } else {
        blake3::hash(&ZEROS[..n])
    }
}

/// Builds crash states from shared bases instead of from the first op: a
/// state that keeps every op before op `m` (its first lost or torn op, or
/// its crash point) is a base holding ops `0..m`, plus the ops from `m` to
/// the crash that it kept. A base is made at each op that states lose
/// first and at each crash point, from the nearest base before it, and the
/// [`BASES_KEPT`] most recently used are kept (a crash point's states lose its pending ops,
/// which move forward with the crash points; a few stay pending long). A content hash rehashes only the blocks of files
/// ([`HASH_BLOCK_BYTES`]) that the ops after the base touched; each base
/// remembers the hashes of its own blocks.
///
/// ```
/// use blackout_explore::enumerate::{enumerate, ExploreConfig};
/// use blackout_explore::model::Model;
/// use blackout_explore::state::{FsState, StateBuilder};
/// use blackout_oplog::trace::Trace;
///
/// // The careful document save, as recorded (run from the crate's root).
/// let trace = Trace::load("../../tests/reports/save-full.trace".as_ref()).unwrap();
/// let mut b = StateBuilder::new(&trace, 512);
/// let posix = Model::Posix.crash_model();
/// enumerate(&trace.ops, posix, &ExploreConfig::default(), |desc| {
///     let (fs, hash) = b.build(&desc);
///     assert_eq!(fs, FsState::build(&trace, &desc, 512));
///     assert_eq!(hash, fs.content_hash());
/// })
/// .unwrap();
/// ```
pub struct StateBuilder<'t> {
    trace: &'t Trace,
    sector: u64,
    /// The bases, by the number of ops they hold, ascending.
    bases: Vec<Base>,
    /// States built.
    built: u64,
}

/// How many bases a [`StateBuilder`] keeps.
pub const BASES_KEPT: usize = 16;

/// A state holding ops `0..at`, and the hashes of its files' blocks once
/// asked for (blocks holding written bytes only: a hole's hash is known).
#[derive(Clone)]
struct Base {
    at: usize,
    /// When a state was last built from it (the builder's count).
    used: u64,
    fs: FsState,
    blocks: Vec<BTreeMap<usize, blake3::Hash>>,
}

impl Base {
    /// Applies ops `at..to`, forgetting the hashes of the blocks they touch.
    fn advance(&mut self, trace: &Trace, sector: u64, to: usize) {
        let kept = StateDesc {
            crash: to,
            lost: Vec::new(),
            torn: None,
        };
        let blocks = &mut self.blocks;
        self.fs
            .apply_kept(trace, &kept, self.at, sector, |ino, lo, hi| {
                let known = &mut blocks[ino as usize];
                let stale: Vec<usize> = known.range(block_range(lo, hi)).map(|(&i, _)| i).collect();
                for i in stale {
                    known.remove(&i);
                }
            });
        self.at = to;
    }

    /// The state `desc` describes, which keeps every op before `at`, and
    /// its content hash.
    fn build(&mut self, trace: &Trace, sector: u64, desc: &StateDesc) -> (FsState, blake3::Hash) {
        let mut fs = self.fs.clone();
        let mut touched: Vec<(Ino, u64, u64)> = Vec::new();
        fs.apply_kept(trace, desc, self.at, sector, |ino, lo, hi| {
            touched.push((ino, lo, hi));
        });
        let blocks = &mut self.blocks;
        let hash = fs.content_hash_with(|ino, node| {
            let known = &mut blocks[ino as usize];
            file_hash(&node.data, node.hashed_len(), |i, hash| {
                let changed = touched
                    .iter()
                    .any(|&(t, lo, hi)| t == ino && block_range(lo, hi).contains(&i));
                // A block no op after the base touched holds the base's bytes.
                if changed {
                    hash()
                } else {
                    *known.entry(i).or_insert_with(hash)
                }
            })
        });
        (fs, hash)
    }
}

impl<'t> StateBuilder<'t> {
    /// A builder whose one base is the initial tree.
    pub fn new(trace: &'t Trace, sector: u64) -> StateBuilder<'t> {
        let fs = FsState::initial(trace);
        let mut base = Base {
            at: 0,
            used: 0,
            blocks: vec![BTreeMap::new(); fs.inodes.len()],
            fs,
        };
        base.advance(trace, sector, 0);
        StateBuilder {
            trace,
            sector,
            bases: vec![base],
            built: 0,
        }
    }

    /// The state `desc` describes and its content hash: the same as
    /// [`FsState::build`] and [`FsState::content_hash`].
    pub fn build(&mut self, desc: &StateDesc) -> (FsState, blake3::Hash) {
        let first_damaged = desc
            .lost
            .iter()
            .map(|u| u.op)
            .chain(desc.torn.map(|(op, _)| op))
            .min()
            .unwrap_or(desc.crash)
            .min(desc.crash)
            .min(self.trace.ops.len());
        // The nearest base at or before the first damaged op; none when the
        // earliest bases were dropped (then from the first op).
        let Some(i) = self.bases.iter().rposition(|b| b.at <= first_damaged) else {
            let fs = FsState::build(self.trace, desc, self.sector);
            let hash = fs.content_hash();
            return (fs, hash);
        };
        // A base at the first op the state loses (or at its crash point),
        // made from the nearest one before it.
        let i = if self.bases[i].at == first_damaged {
            i
        } else {
            let mut base = self.bases[i].clone();
            base.advance(self.trace, self.sector, first_damaged);
            self.bases.insert(i + 1, base);
            if self.bases.len() > BASES_KEPT {
                // The base least recently built from goes.
                let stale = (0..self.bases.len())
                    .filter(|&j| j != i + 1)
                    .min_by_key(|&j| self.bases[j].used)
                    .unwrap_or(0);
                self.bases.remove(stale);
                if stale < i + 1 {
                    i
                } else {
                    i + 1
                }
            } else {
                i + 1
            }
        };
        self.built += 1;
        self.bases[i].used = self.built;
        self.bases[i].build(self.trace, self.sector, desc)
    }
}

/// The blocks ([`HASH_BLOCK_BYTES`]) that bytes `lo..hi` lie in (an empty
/// range touches the block it is in: a length change there).
fn block_range(lo: u64, hi: u64) -> std::ops::Range<usize> {
    let b = HASH_BLOCK_BYTES as u64;
    let first = lo / b;
    let last = hi.max(lo + 1).div_ceil(b);
    first as usize..usize::try_from(last).unwrap_or(usize::MAX)
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

    /// The content hash as it was when files were held dense: the length,
    /// then every block's hash.
    fn dense_hash(fs: &FsState, ino: Ino) -> blake3::Hash {
        let bytes = fs.inodes[ino as usize].data.to_vec();
        let mut h = blake3::Hasher::new();
        h.update(&(bytes.len() as u64).to_le_bytes());
        for block in bytes.chunks(HASH_BLOCK_BYTES) {
            h.update(blake3::hash(block).as_bytes());
        }
        h.finalize()
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
        let file = |fs: &FsState| file_hash(&fs.inodes[1].data, off + 1, |_, hash| hash());
        assert_eq!(file(&sparse), dense_hash(&dense, 1));
        assert_eq!(file(&dense), dense_hash(&dense, 1));
    }

    #[test]
    fn a_byte_at_a_gib_is_built_hashed_and_written_out_sparse() {
        use std::os::unix::fs::MetadataExt;
        let off = 1u64 << 30;
        let t = trace_of(&pwrite_at(off));
        let mut b = StateBuilder::new(&t, 512);
        let (fs, hash) = b.build(&StateDesc::parse("c2").unwrap());
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
        let mut b = StateBuilder::new(&in_file, 512);
        let mut states = 0;
        let model = crate::model::Model::Posix.crash_model();
        enumerate(&t.ops, model, &ExploreConfig::default(), |desc| {
            let want = FsState::build(&t, &desc, 512);
            let (fs, hash) = b.build(&desc);
            assert_eq!(fs, want, "{}", desc.id());
            assert_eq!(hash, want.content_hash(), "{}", desc.id());
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
            }],
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
}
