//! Content keys of crash states, kept along the crash points instead of
//! built per state.
//!
//! An op changes each inode it touches by that inode's own state alone
//! (`store::apply_one`): a file's bytes by its bytes, a directory's entries
//! by its entries. So a crash state is the state every crash at its point
//! keeps (all ops before it) except in the inodes its lost or torn ops
//! touch, and each of those is its state before its first op still pending
//! plus the ops on it since then that the state kept. [`Keyer`] keeps the
//! whole state at the current crash point, each inode as it was before its
//! first pending op, and each file's block shares ([`Term`]); a state's key
//! replays only its damaged inodes' pending ops, and rehashes only the
//! blocks its damaged ops could change.
//!
//! A file with only writes pending (the common case: appends, page
//! writes) is not replayed at all: its pending writes are listed by block
//! once, a damaged block is made of the writes over it the state kept
//! (remembered by which those are), and its lengths are found from the
//! furthest-ending writes down, so a state costs about what it lost, not
//! what is pending. A file with a truncate or zeroing pending is replayed
//! op by op, as lengths, with only its damaged blocks made anew.

use std::collections::BTreeSet;

use blackout_oplog::contents::Data;
use blackout_oplog::ops::{synced_by, Ino, InodeKind, OpKind, Part, SyncedBy};
use blackout_oplog::store::{self, Halves, InodeState};
use blackout_oplog::trace::Trace;
use rustc_hash::FxHashMap;

use crate::enumerate::{Cut, StateDesc, Tear};
use crate::state::{
    block_term, file_hash, tree_hash, written_blocks, FsState, Kept, Term, TreeTemplate,
    HASH_BLOCK_BYTES,
};

/// Content hashes of crash states, for states asked in crash-point order.
///
/// ```
/// use blackout_explore::enumerate::{enumerate, ExploreConfig};
/// use blackout_explore::keys::Keyer;
/// use blackout_explore::model::Model;
/// use blackout_explore::state::FsState;
/// use blackout_oplog::trace::Trace;
///
/// // The careful document save, as recorded (run from the crate's root).
/// let trace = Trace::load("../../tests/reports/save-full.trace".as_ref()).unwrap();
/// let mut keys = Keyer::new(&trace, 512);
/// let posix = Model::Posix.crash_model();
/// enumerate(&trace.ops, posix, &ExploreConfig::default(), |desc| {
///     let whole = FsState::build(&trace, &desc, 512);
///     assert_eq!(keys.hash(&desc), whole.content_hash());
/// })
/// .unwrap();
/// assert_eq!(keys.rebuilt(), 0);
/// ```
pub struct Keyer<'t> {
    trace: &'t Trace,
    sector: u64,
    synced: Vec<SyncedBy>,
    /// For each inode, the ops that change it, ascending.
    ops_of: Vec<Vec<usize>>,
    /// The state holding ops `0..at`.
    full: FsState,
    at: usize,
    /// For each inode, the position in `ops_of` of its first op not yet
    /// durable at `at`, and the inode before that op.
    front: Vec<usize>,
    before: Vec<InodeState>,
    /// For each file, the shares of its written blocks in `full`, and
    /// their sum.
    terms: Vec<FxHashMap<usize, Term>>,
    sums: Vec<Term>,
    /// For each file, its hash in `full`, once asked.
    file_hashes: Vec<Option<blake3::Hash>>,
    /// What the tree hash of `full` hashes, files left as slots; `None`
    /// once an op changed a directory or link.
    template: Option<TreeTemplate>,
    /// The hash of `full`, once asked.
    plain: Option<blake3::Hash>,
    /// For each file, its pending writes by block.
    listed: Vec<Listed>,
    /// For each op, the state (numbered by `stamp`) that last said it
    /// lost it whole; the halves of renames a state lost, apart.
    lost_by: Vec<u32>,
    stamp: u32,
    /// For each inode, the state that last found it damaged and its place
    /// in that state's list ([`Keyer::damaged`]).
    slot_of: Vec<(u32, usize)>,
    halves_lost: Vec<(usize, Part)>,
    /// Blocks a state damages in one file (reused).
    blocks: Vec<usize>,
    /// States whose key was built from the first op (asked out of order,
    /// or losing an op this keyer thought durable).
    rebuilt: u64,
    /// Shares of blocks as states kept them, by what made the block: a
    /// crash point's states lose different ops of one window, and a block
    /// most of them make alike is hashed once.
    made: FxHashMap<Box<[u64]>, Term>,
    /// The same, for makings of at most [`SMALL_SIG`] words (most: kept
    /// inline, found without following a pointer).
    made_small: FxHashMap<[u64; SMALL_SIG], Term>,
    /// What made a block, as words (compared whole: no two makings share
    /// an entry).
    sig: Vec<u64>,
    buf: Vec<u8>,
}

/// Blocks whose shares [`Keyer`] remembers, at most (then it forgets them
/// all): about a hundred bytes each, per exploring thread. At 1 << 18 the
/// tables grew to about 50 MB each, and writing 1 GiB in 1 MiB writes
/// peaked at 180 MB (89 s); at 1 << 16, 112 MB (83 s).
pub const BLOCKS_REMEMBERED: usize = 1 << 16;

/// Words of a block's making kept inline (zeros after the last word).
const SMALL_SIG: usize = 8;

/// A file's pending ops since its first pending op (`front`), listed up to
/// the crash point asked: the writes on each block, in order, so a state's
/// block is made of the writes it kept there, told apart by which.
#[derive(Debug, Default)]
struct Listed {
    /// The position in the file's ops of its first pending op when listed.
    front: usize,
    /// The position in the file's ops up to which its ops are listed.
    upto: usize,
    /// The pending writes over each block, ascending.
    by_block: FxHashMap<usize, Vec<usize>>,
    /// The shares of blocks as they were before the first pending op, by
    /// block and bytes hashed: what a state that lost every write over a
    /// block holds there (most blocks of states that lose much).
    bare: FxHashMap<(usize, u64), Term>,
    /// The pending ops that can move the file's lengths (writes, and
    /// allocations that grow the size), by where they end: a state's
    /// lengths are found from the furthest ends down, past those it lost.
    ends: BTreeSet<(u64, usize)>,
    /// The file's size before each pending op (by its place among them)
    /// with every op kept, and after the last.
    sizes: Vec<u64>,
    size: u64,
    /// Whether a pending op truncates or zeroes: where those fall depends
    /// on the lengths every op moves, and the file's states are then made
    /// from every pending op ([`Keyer::file_replayed`]).
    wide: bool,
}

/// What a kept data op does to a file's bytes, for replaying one block.
#[derive(Debug, Clone, Copy)]
enum Effect {
    /// Bytes `start..start+len` of the trace's data at `off`.
    Write { off: u64, start: u64, len: u64 },
    /// The written length cut to `size` when longer.
    Truncate { size: u64 },
    /// Bytes `off..end` zeroed within the written length.
    Zero { off: u64, end: u64 },
}

/// A file's written length and size, as ops change them.
#[derive(Debug, Clone, Copy)]
struct Lengths {
    len: u64,
    size: u64,
}

impl Lengths {
    /// A file's lengths as `node` holds it.
    fn of(node: &InodeState) -> Lengths {
        Lengths {
            len: node.data.len(),
            size: node.size,
        }
    }

    fn hashed(self) -> u64 {
        self.len.min(self.size)
    }

    fn write(&mut self, end: u64) {
        self.len = self.len.max(end);
        self.size = self.size.max(end);
    }

    fn truncate(&mut self, size: u64) {
        self.len = self.len.min(size);
        self.size = size;
    }

    /// What `kind` (a data op) does to the lengths.
    fn apply(&mut self, kind: &OpKind) {
        match kind {
            OpKind::Write { off, data, .. } => self.write(off + data.len),
            OpKind::Truncate { size, .. } => self.truncate(*size),
            OpKind::Fallocate {
                off,
                len,
                keep_size,
                ..
            } => {
                let end = off.saturating_add(*len);
                if !keep_size && end > self.size {
                    self.size = end;
                }
            }
            _ => {}
        }
    }
}

/// The bytes a data op names: its own range (a truncate's is empty, at the
/// new size).
fn op_range(kind: &OpKind) -> (u64, u64) {
    match kind {
        OpKind::Write { off, data, .. } => (*off, off + data.len),
        OpKind::Truncate { size, .. } => (*size, *size),
        OpKind::Fallocate { off, len, .. } => (*off, off.saturating_add(*len)),
        _ => (0, 0),
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

/// The blocks, ascending and once each, that the byte ranges `ranges`
/// touch below `top` (a file's bytes past every length it had are never
/// hashed).
fn blocks_of(ranges: &[(u64, u64)], top: u64) -> Vec<usize> {
    let mut blocks: Vec<usize> = ranges
        .iter()
        .filter(|&&(lo, _)| lo <= top)
        .flat_map(|&(lo, hi)| block_range(lo, hi.min(top).max(lo)))
        .collect();
    blocks.sort_unstable();
    blocks.dedup();
    blocks
}

/// What each of `blocks` is made of, in order: the effects that reach
/// into it. A block's bytes are the file's before its first pending op
/// with those replayed: a truncate or zeroing that starts past the block
/// leaves it as it is, and what a block holds past the file's written
/// length reads as zeros whatever the other blocks hold, so the lengths
/// the other effects move make no difference to it.
fn effects_by_block(blocks: &[usize], effects: &[Effect]) -> Vec<Vec<Effect>> {
    let b = HASH_BLOCK_BYTES as u64;
    let mut on = vec![Vec::new(); blocks.len()];
    for e in effects {
        let (lo, hi) = match *e {
            Effect::Write { off, len, .. } => (off, off + len),
            Effect::Truncate { size } => (size, u64::MAX),
            Effect::Zero { off, end } => (off, end),
        };
        let first = blocks.partition_point(|&i| (i as u64 + 1) * b <= lo);
        for (at, &i) in blocks.iter().enumerate().skip(first) {
            if i as u64 * b >= hi {
                break;
            }
            on[at].push(*e);
        }
    }
    on
}

/// A making of at most [`SMALL_SIG`] words, padded with zeros. No two
/// makings pad alike: those of [`Keyer::block_kept`] have six words and
/// then words of kept writes, the last of them not zero, and those of
/// [`Keyer::block_replayed`] a fifth word the others never have.
fn small(sig: &[u64]) -> Option<[u64; SMALL_SIG]> {
    (sig.len() <= SMALL_SIG).then(|| {
        let mut key = [0; SMALL_SIG];
        key[..sig.len()].copy_from_slice(sig);
        key
    })
}

/// A range between two lengths.
fn between(a: u64, b: u64) -> (u64, u64) {
    (a.min(b), a.max(b))
}

impl<'t> Keyer<'t> {
    /// A keyer at crash point 0 of `trace`, tearing writes at `sector`.
    pub fn new(trace: &'t Trace, sector: u64) -> Keyer<'t> {
        let full = FsState::initial(trace);
        let n = full.inodes.len();
        let mut ops_of = vec![Vec::new(); n];
        for (i, op) in trace.ops.iter().enumerate() {
            for ino in store::changes(&op.kind).into_iter().flatten() {
                if let Some(list) = ops_of.get_mut(ino as usize) {
                    list.push(i);
                }
            }
        }
        let mut buf = Vec::new();
        let mut terms = vec![FxHashMap::default(); n];
        let mut sums = vec![Term::default(); n];
        for (ino, node) in full.inodes.iter().enumerate() {
            if node.kind != InodeKind::File {
                continue;
            }
            let len = node.hashed_len();
            for i in written_blocks(&node.data, len) {
                let t = block_term(&node.data, len, i, &mut buf);
                if t != Term::default() {
                    terms[ino].insert(i, t);
                    sums[ino] = sums[ino].plus(t);
                }
            }
        }
        Keyer {
            trace,
            sector,
            synced: synced_by(&trace.ops),
            ops_of,
            before: full.inodes.clone(),
            full,
            at: 0,
            front: vec![0; n],
            terms,
            sums,
            file_hashes: vec![None; n],
            template: None,
            plain: None,
            // Listed for no front yet: each starts from its file's state
            // when first listed.
            listed: (0..n)
                .map(|_| Listed {
                    front: usize::MAX,
                    ..Listed::default()
                })
                .collect(),
            lost_by: vec![0; trace.ops.len()],
            stamp: 0,
            slot_of: vec![(0, 0); n],
            halves_lost: Default::default(),
            blocks: Vec::new(),
            rebuilt: 0,
            made: FxHashMap::default(),
            made_small: FxHashMap::default(),
            sig: Vec::new(),
            buf,
        }
    }

    /// How many keys were built from the first op instead (states asked
    /// before the current crash point, or losing an op already durable).
    pub fn rebuilt(&self) -> u64 {
        self.rebuilt
    }

    /// The content hash of the state `desc` describes: the same as
    /// `FsState::build(trace, desc, sector).content_hash()`. Cheap for
    /// states asked in crash-point order.
    pub fn hash(&mut self, desc: &StateDesc) -> blake3::Hash {
        let k = desc.crash.min(self.trace.ops.len());
        if k < self.at {
            return self.rebuild(desc);
        }
        self.advance(k);
        self.mark(desc);
        let Some(damaged) = self.damaged(desc, k) else {
            return self.rebuild(desc);
        };
        if damaged.is_empty() {
            return self.plain_hash();
        }
        let mut dirs: Vec<(Ino, InodeState)> = Vec::new();
        let mut files: Vec<(Ino, u64, blake3::Hash)> = Vec::new();
        for ino in damaged {
            if self.full.inodes[ino as usize].kind == InodeKind::Dir {
                dirs.push((ino, self.inode_as_kept(ino, k, None)));
            } else {
                let (size, hash) = self.file_as_kept(ino, k, desc);
                files.push((ino, size, hash));
            }
        }
        if dirs.is_empty() {
            return self.hash_with_files(&files);
        }
        let full = &self.full;
        let sums = &self.sums;
        tree_hash(
            |ino| {
                dirs.iter()
                    .find(|(d, _)| *d == ino)
                    .map_or(&full.inodes[ino as usize], |(_, node)| node)
            },
            |ino, node| match files.iter().find(|(f, ..)| *f == ino) {
                Some(&(_, size, hash)) => (size, hash),
                None => (node.size, sums[ino as usize].file_hash(node.hashed_len())),
            },
        )
    }

    /// The key built the slow way, from the first op.
    fn rebuild(&mut self, desc: &StateDesc) -> blake3::Hash {
        self.rebuilt += 1;
        FsState::build(self.trace, desc, self.sector).content_hash()
    }

    /// The hash of the state holding every op before the crash point.
    fn plain_hash(&mut self) -> blake3::Hash {
        if let Some(h) = self.plain {
            return h;
        }
        let h = self.hash_with_files(&[]);
        self.plain = Some(h);
        h
    }

    /// The hash of the state holding every op before the crash point but
    /// with `files` (inode, size, hash) as given: its directories' tree
    /// ([`TreeTemplate`]) walked once per tree, and the other files' hashes
    /// once per crash point.
    fn hash_with_files(&mut self, files: &[(Ino, u64, blake3::Hash)]) -> blake3::Hash {
        if self.template.is_none() {
            let full = &self.full;
            self.template = Some(TreeTemplate::of(|ino| &full.inodes[ino as usize]));
        }
        let template = self.template.as_ref().expect("made above");
        let (full, sums, hashes) = (&self.full, &self.sums, &mut self.file_hashes);
        template.hash(|ino| match files.iter().find(|(f, ..)| *f == ino) {
            Some(&(_, size, hash)) => (size, hash),
            None => {
                let node = &full.inodes[ino as usize];
                let hash = *hashes[ino as usize]
                    .get_or_insert_with(|| sums[ino as usize].file_hash(node.hashed_len()));
                (node.size, hash)
            }
        })
    }

    /// Marks what `desc` lost, for [`Keyer::is_lost`].
    fn mark(&mut self, desc: &StateDesc) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            // Marks of 2^32 states ago could read as this state's.
            self.lost_by.fill(0);
            self.slot_of.fill((0, 0));
            self.stamp = 1;
        }
        self.halves_lost.clear();
        for u in desc.lost.iter() {
            if u.part == Part::Whole {
                if let Some(m) = self.lost_by.get_mut(u.op) {
                    *m = self.stamp;
                }
            } else {
                self.halves_lost.push((u.op, u.part));
            }
        }
    }

    /// Whether the state last marked lost part `p` of op `j`.
    fn is_lost(&self, j: usize, p: Part) -> bool {
        if p == Part::Whole {
            self.lost_by[j] == self.stamp
        } else {
            self.halves_lost.contains(&(j, p))
        }
    }

    /// The inodes the state last marked (`desc`) loses or tears an op of,
    /// each once; `None` when one of those ops is already durable here (the
    /// key is then rebuilt).
    fn damaged(&mut self, desc: &StateDesc, k: usize) -> Option<Vec<Ino>> {
        let mut out: Vec<(Ino, usize)> = Vec::new();
        let (stamp, slots) = (self.stamp, &mut self.slot_of);
        let mut note = |ino: Ino, op: usize| {
            let Some(slot) = slots.get_mut(ino as usize) else {
                return;
            };
            if slot.0 == stamp {
                let d = &mut out[slot.1];
                d.1 = d.1.min(op);
            } else {
                *slot = (stamp, out.len());
                out.push((ino, op));
            }
        };
        for u in desc.lost.iter().filter(|u| u.op < k) {
            let kind = &self.trace.ops[u.op].kind;
            match (kind, u.part) {
                (_, Part::Whole) => {
                    for ino in store::changes(kind).into_iter().flatten() {
                        note(ino, u.op);
                    }
                }
                (
                    OpKind::Rename {
                        from_dir, to_dir, ..
                    },
                    part,
                ) if from_dir != to_dir => {
                    note(
                        if part == Part::Source {
                            *from_dir
                        } else {
                            *to_dir
                        },
                        u.op,
                    );
                }
                // A half of anything else is applied whole.
                _ => {}
            }
        }
        if let Some((t, _)) = desc.torn.filter(|&(t, _)| t < k) {
            if let OpKind::Write { ino, .. } = self.trace.ops[t].kind {
                note(ino, t);
            }
        }
        for &(ino, first) in &out {
            let list = &self.ops_of[ino as usize];
            if list
                .get(self.front[ino as usize])
                .is_none_or(|&f| f > first)
            {
                return None;
            }
        }
        Some(out.into_iter().map(|(ino, _)| ino).collect())
    }

    /// Moves the whole state to crash point `to`, and each inode's state
    /// before its first pending op along.
    fn advance(&mut self, to: usize) {
        let mut synced = false;
        for j in self.at..to {
            let kind = &self.trace.ops[j].kind;
            if !kind.is_durable_change() {
                synced = true;
                continue;
            }
            self.plain = None;
            for ino in store::changes(kind).into_iter().flatten() {
                if let Some(node) = self.full.inodes.get(ino as usize) {
                    if node.kind == InodeKind::File {
                        self.file_hashes[ino as usize] = None;
                    } else {
                        self.template = None;
                    }
                }
            }
            let data = match kind {
                OpKind::Write { data, .. } => Data::Blob(&self.trace.data, *data),
                _ => Data::Bytes(&[]),
            };
            let file = kind.data_inode();
            let before = file.map(|ino| self.full.inodes[ino as usize].hashed_len());
            store::apply(&mut self.full.inodes, kind, data, Halves::BOTH);
            if let (Some(ino), Some(before)) = (file, before) {
                self.rehash(ino, op_range(kind), before);
            }
        }
        self.at = self.at.max(to);
        if synced {
            self.move_fronts();
        }
    }

    /// Updates a file's block shares after an op on `range` changed it from
    /// `before` hashed bytes.
    fn rehash(&mut self, ino: Ino, (lo, hi): (u64, u64), before: u64) {
        let node = &self.full.inodes[ino as usize];
        let after = node.hashed_len();
        // The op's own bytes, and those between the lengths before and
        // after it.
        let blocks = blocks_of(&[(lo, hi), between(before, after)], before.max(after));
        let (terms, sum) = (&mut self.terms[ino as usize], &mut self.sums[ino as usize]);
        for i in blocks {
            let new = block_term(&node.data, after, i, &mut self.buf);
            let old = if new == Term::default() {
                terms.remove(&i)
            } else {
                terms.insert(i, new)
            };
            *sum = sum.minus(old.unwrap_or_default()).plus(new);
        }
    }

    /// Whether op `j`'s part that changes inode `ino` is durable at crash
    /// point `k`.
    fn durable(&self, ino: Ino, j: usize, k: usize) -> bool {
        let s = self.synced[j];
        let by = |s: Option<usize>| s.is_some_and(|s| s < k);
        match &self.trace.ops[j].kind {
            OpKind::Rename {
                from_dir, to_dir, ..
            } if from_dir != to_dir => {
                if ino == *to_dir {
                    by(s.main)
                } else {
                    by(s.source)
                }
            }
            _ => by(s.main) && by(s.source),
        }
    }

    /// Moves each inode's first pending op past those now durable.
    fn move_fronts(&mut self) {
        let k = self.at;
        for ino in 0..self.front.len() {
            while let Some(&j) = self.ops_of[ino].get(self.front[ino]) {
                if j >= k || !self.durable(ino as Ino, j, k) {
                    break;
                }
                let kind = &self.trace.ops[j].kind;
                let data = match kind {
                    OpKind::Write { data, .. } => Data::Blob(&self.trace.data, *data),
                    _ => Data::Bytes(&[]),
                };
                store::apply_one(&mut self.before[ino], ino as Ino, kind, data, Halves::BOTH);
                self.front[ino] += 1;
            }
        }
    }

    /// The pending ops on inode `ino` before crash point `k`.
    fn window(&self, ino: Ino, k: usize) -> &[usize] {
        let list = &self.ops_of[ino as usize];
        let from = self.front[ino as usize].min(list.len());
        let to = from + list[from..].partition_point(|&j| j < k);
        &list[from..to]
    }

    /// Lists file `ino`'s pending ops before crash point `k` by block
    /// ([`Listed`]), starting over when its first pending op moved.
    fn list(&mut self, ino: Ino, k: usize) {
        let front = self.front[ino as usize];
        let ops = &self.ops_of[ino as usize];
        let l = &mut self.listed[ino as usize];
        if l.front != front {
            l.front = front;
            l.upto = front;
            l.by_block.clear();
            l.bare.clear();
            l.ends.clear();
            l.sizes.clear();
            l.size = self.before[ino as usize].size;
            l.wide = false;
        }
        while let Some(&j) = ops.get(l.upto).filter(|&&j| j < k) {
            l.sizes.push(l.size);
            match self.trace.ops[j].kind {
                OpKind::Write { off, data, .. } => {
                    if data.len > 0 {
                        for i in block_range(off, off + data.len) {
                            l.by_block.entry(i).or_default().push(j);
                        }
                    }
                    l.ends.insert((off + data.len, j));
                    l.size = l.size.max(off + data.len);
                }
                OpKind::Truncate { .. } | OpKind::Fallocate { zero: true, .. } => l.wide = true,
                OpKind::Fallocate {
                    off,
                    len,
                    keep_size: false,
                    ..
                } => {
                    let end = off.saturating_add(len);
                    l.ends.insert((end, j));
                    l.size = l.size.max(end);
                }
                _ => {}
            }
            l.upto += 1;
        }
    }

    /// An inode as the state last marked holds it at crash point `k`
    /// (tearing `torn`): the inode before its first pending op, plus the
    /// pending ops on it that the state kept.
    fn inode_as_kept(&self, ino: Ino, k: usize, torn: Option<(usize, Tear)>) -> InodeState {
        let mut node = self.before[ino as usize].clone();
        for &j in self.window(ino, k) {
            if let Some(kept) = Kept::of(self.trace, j, |j, p| self.is_lost(j, p), torn) {
                let (kind, data, halves) = kept.cut(|_| node.size, self.sector);
                store::apply_one(&mut node, ino, &kind, data, halves);
            }
        }
        node
    }

    /// The state `desc` describes, built from the state at its crash point
    /// and its damaged inodes alone (the same as [`FsState::build`]), and
    /// its content hash: its damaged files hashed from what was built
    /// where they may differ (`Keyer::built_file_hash`), the rest from
    /// the shares kept for them. A state before the
    /// current crash point starts the keyer over.
    pub fn state(&mut self, desc: &StateDesc) -> (FsState, blake3::Hash) {
        let k = desc.crash.min(self.trace.ops.len());
        if k < self.at {
            *self = Keyer::new(self.trace, self.sector);
        }
        self.advance(k);
        self.mark(desc);
        let Some(damaged) = self.damaged(desc, k) else {
            self.rebuilt += 1;
            let fs = FsState::build(self.trace, desc, self.sector);
            let hash = fs.content_hash();
            return (fs, hash);
        };
        let mut fs = self.full.clone();
        let mut built: Vec<(Ino, blake3::Hash)> = Vec::new();
        for &ino in &damaged {
            let node = self.inode_as_kept(ino, k, desc.torn);
            if node.kind == InodeKind::File {
                built.push((ino, self.built_file_hash(ino, k, &node)));
            }
            fs.inodes[ino as usize] = node;
        }
        let sums = &self.sums;
        let hash = tree_hash(
            |ino| &fs.inodes[ino as usize],
            |ino, node| {
                let hash = match built.iter().find(|(f, _)| *f == ino) {
                    Some(&(_, h)) => h,
                    None => sums[ino as usize].file_hash(node.hashed_len()),
                };
                (node.size, hash)
            },
        );
        (fs, hash)
    }

    /// The file hash of file `ino` as built for a state at crash point `k`
    /// (`node`), hashed from what was built wherever it may differ from
    /// the whole state at `k`: the blocks a pending op on it touches (a
    /// truncate or zeroing, everything from where it starts), and those
    /// between the two lengths; the other blocks' shares are the whole
    /// state's. A state of a 1 GB file costs the blocks its pending ops
    /// touch, not a GB of hashing.
    fn built_file_hash(&self, ino: Ino, k: usize, node: &InodeState) -> blake3::Hash {
        let hashed = node.hashed_len();
        let hashed_all = self.full.inodes[ino as usize].hashed_len();
        let top = hashed.max(hashed_all);
        let mut ranges: Vec<(u64, u64)> = self
            .window(ino, k)
            .iter()
            .map(|&j| match &self.trace.ops[j].kind {
                OpKind::Truncate { size, .. } => (*size, top),
                kind => op_range(kind),
            })
            .collect();
        if hashed != hashed_all {
            ranges.push(between(hashed, hashed_all));
        }
        let blocks = blocks_of(&ranges, top);
        if blocks.len() as u64 * HASH_BLOCK_BYTES as u64 >= top / 2 {
            return file_hash(&node.data, hashed);
        }
        let mut sum = self.sums[ino as usize];
        let mut buf = Vec::new();
        for &i in &blocks {
            let old = self.terms[ino as usize]
                .get(&i)
                .copied()
                .unwrap_or_default();
            sum = sum
                .minus(old)
                .plus(block_term(&node.data, hashed, i, &mut buf));
        }
        sum.file_hash(hashed)
    }

    /// The lengths of file `ino` (with writes and allocations alone
    /// pending) as the state last marked holds it at crash point `k`, and
    /// what it tore of `torn`, for a state that lost nothing or tore
    /// nothing ([`Keyer::file_replayed`] takes the others): from the
    /// pending ops that end furthest, down past those it lost, so a state
    /// losing little costs little.
    fn lengths_kept(
        &self,
        ino: Ino,
        k: usize,
        torn: Option<(usize, Tear)>,
    ) -> (Lengths, Option<(usize, Cut)>) {
        let l = &self.listed[ino as usize];
        // A tear with nothing lost cuts against the size every op before
        // it left.
        let cut = torn.and_then(|(t, tear)| {
            let OpKind::Write { off, data, .. } = self.trace.ops[t].kind else {
                return None;
            };
            let at = self.window(ino, k).binary_search(&t).ok()?;
            Some((t, tear.cut(off, data.len, l.sizes[at], self.sector)?))
        });
        let mut kept = Lengths::of(&self.before[ino as usize]);
        for &(end, j) in l.ends.iter().rev() {
            if end <= kept.len.min(kept.size) {
                break;
            }
            if self.lost_by[j] == self.stamp {
                continue;
            }
            match (cut.filter(|&(t, _)| t == j), &self.trace.ops[j].kind) {
                (Some((_, Cut::Prefix(n))), OpKind::Write { off, .. }) => kept.write(off + n),
                (Some((_, Cut::SizeOnly)), _) => kept.size = kept.size.max(end),
                (_, OpKind::Write { .. }) => kept.write(end),
                _ => kept.size = kept.size.max(end),
            }
        }
        (kept, cut)
    }

    /// A file's size and hash as the state `desc` (last marked) holds it at
    /// crash point `k`: its pending ops replayed as lengths, and only the
    /// blocks a lost or torn op could change made anew, each from the file
    /// before its first pending op plus the writes the state kept there.
    fn file_as_kept(&mut self, ino: Ino, k: usize, desc: &StateDesc) -> (u64, blake3::Hash) {
        self.list(ino, k);
        let torn = desc.torn.filter(|&(t, _)| t < k);
        // A tear with losses (no model makes one) cuts against the size
        // the ops kept before it left: replayed, as a file with a truncate
        // or zeroing pending is.
        if self.listed[ino as usize].wide || (torn.is_some() && !desc.lost.is_empty()) {
            return self.file_replayed(ino, k, desc.torn);
        }
        // With writes alone pending (and allocations, which move the size
        // only), a block's bytes are the writes kept over it, and the
        // file's lengths the furthest of them.
        let (kept, cut) = self.lengths_kept(ino, k, torn);
        let hashed = kept.hashed();
        let hashed_all = self.full.inodes[ino as usize].hashed_len();
        // The blocks whose share may differ from the whole state's: those
        // a lost or torn write lies in, and those between the two lengths.
        let top = hashed.max(hashed_all);
        let mut blocks = std::mem::take(&mut self.blocks);
        blocks.clear();
        let mut add = |lo: u64, hi: u64| {
            if lo < top {
                blocks.extend(block_range(lo, hi.min(top)));
            }
        };
        // The writes it lost, from the file's pending ops or the state's
        // lost ones, whichever are fewer (a state can lose thousands of
        // ops over hundreds of files).
        let window = self.window(ino, k);
        let lost: Vec<usize> = if window.len() <= desc.lost.len() {
            window
                .iter()
                .copied()
                .filter(|&j| self.lost_by[j] == self.stamp)
                .collect()
        } else {
            desc.lost
                .iter()
                .filter(|u| u.part == Part::Whole && u.op < k)
                .map(|u| u.op)
                .collect()
        };
        for j in lost.into_iter().chain(torn.map(|(t, _)| t)) {
            if let OpKind::Write { ino: i, off, data } = self.trace.ops[j].kind {
                if i == ino && data.len > 0 {
                    add(off, off + data.len);
                }
            }
        }
        if hashed != hashed_all {
            // Every block from the shorter length to the longer: those a
            // write put there are among them.
            let (lo, hi) = between(hashed, hashed_all);
            let from = block_range(lo, hi);
            blocks.retain(|i| *i < from.start);
            blocks.extend(from);
        }
        if !blocks.is_sorted() {
            blocks.sort_unstable();
        }
        blocks.dedup();
        let mut sum = self.sums[ino as usize];
        for &i in &blocks {
            let old = self.terms[ino as usize]
                .get(&i)
                .copied()
                .unwrap_or_default();
            let new = self.block_kept(ino, i, hashed, cut);
            sum = sum.minus(old).plus(new);
        }
        self.blocks = blocks;
        (kept.size, sum.file_hash(hashed))
    }

    /// The share of block `i` of a file whose first `hashed` bytes are
    /// hashed, as the file before its first pending op plus the pending
    /// writes over the block that the state last marked kept (`cut`: its
    /// torn write and what the tear left). Remembered by which writes
    /// those are.
    fn block_kept(&mut self, ino: Ino, i: usize, hashed: u64, cut: Option<(usize, Cut)>) -> Term {
        let b = HASH_BLOCK_BYTES as u64;
        let lo = i as u64 * b;
        if lo >= hashed {
            return Term::default();
        }
        let n = (hashed - lo).min(b);
        let list: &[usize] = self.listed[ino as usize]
            .by_block
            .get(&i)
            .map_or(&[], Vec::as_slice);
        // The block's file and first pending op, the block and its length,
        // the torn write's place in the block's writes and the bytes it
        // kept, then one bit per write over the block: kept whole or not.
        let sig = &mut self.sig;
        sig.clear();
        let front = self.front[ino as usize] as u64;
        sig.extend([u64::from(ino), front, i as u64, n, 0, 0]);
        for (p, &j) in list.iter().enumerate() {
            if p % 64 == 0 {
                sig.push(0);
            }
            let whole = match cut {
                _ if self.lost_by[j] == self.stamp => false,
                Some((t, c)) if t == j => {
                    if let Cut::Prefix(m) = c {
                        sig[4] = p as u64 + 1;
                        sig[5] = m;
                    }
                    false
                }
                _ => true,
            };
            if whole {
                *sig.last_mut().expect("pushed above") |= 1 << (p % 64);
            }
        }
        while sig.len() > 6 && sig.last() == Some(&0) {
            sig.pop();
        }
        let bare = sig.len() == 6 && sig[4] == 0;
        if bare {
            if let Some(&t) = self.listed[ino as usize].bare.get(&(i, n)) {
                return t;
            }
            let t = self.block_made(ino, i, n as usize, &[]);
            self.listed[ino as usize].bare.insert((i, n), t);
            return t;
        }
        if let Some(t) = self.remembered() {
            return t;
        }
        let sig = &self.sig;
        let mut effects = Vec::new();
        for (p, &j) in list.iter().enumerate() {
            let OpKind::Write { off, data, .. } = self.trace.ops[j].kind else {
                continue;
            };
            let len = if sig[4] == p as u64 + 1 {
                sig[5]
            } else if sig
                .get(6 + p / 64)
                .is_some_and(|w| w & (1 << (p % 64)) != 0)
            {
                data.len
            } else {
                continue;
            };
            effects.push(Effect::Write {
                off,
                start: data.start,
                len,
            });
        }
        let t = self.block_made(ino, i, n as usize, &effects);
        self.remember(t);
        t
    }

    /// The share of the block `sig` says what made, if remembered.
    fn remembered(&self) -> Option<Term> {
        match small(&self.sig) {
            Some(key) => self.made_small.get(&key).copied(),
            None => self.made.get(&self.sig[..]).copied(),
        }
    }

    /// Remembers `t` as the share of the block `sig` says what made.
    fn remember(&mut self, t: Term) {
        if self.made.len() + self.made_small.len() >= BLOCKS_REMEMBERED {
            self.made.clear();
            self.made_small.clear();
        }
        match small(&self.sig) {
            Some(key) => self.made_small.insert(key, t),
            None => self.made.insert(self.sig.clone().into_boxed_slice(), t),
        };
    }

    /// [`Keyer::file_as_kept`] for a file with a truncate or zeroing
    /// pending, or a state that both lost and tore: its pending ops
    /// replayed as lengths, and the blocks a lost or torn op could change
    /// (by its range or by the lengths it moves) made from every kept op
    /// that reaches them.
    fn file_replayed(
        &mut self,
        ino: Ino,
        k: usize,
        torn: Option<(usize, Tear)>,
    ) -> (u64, blake3::Hash) {
        let start = Lengths::of(&self.before[ino as usize]);
        let (mut all, mut kept) = (start, start);
        let mut top = start.len;
        let mut effects: Vec<Effect> = Vec::new();
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for &j in self.window(ino, k) {
            let kind = &self.trace.ops[j].kind;
            let (was_all, was_kept) = (all, kept);
            all.apply(kind);
            let damaged = if self.lost_by[j] == self.stamp {
                true
            } else if let Some((_, tear)) =
                torn.filter(|&(t, _)| t == j && matches!(kind, OpKind::Write { .. }))
            {
                effects.extend(torn_effect(kind, tear, &mut kept, self.sector));
                true
            } else {
                kept.apply(kind);
                effects.extend(kept_effect(kind));
                false
            };
            top = top.max(all.len).max(kept.len);
            if damaged {
                // Every byte this op could change in either state: its
                // range, and those between each state's lengths before and
                // after it.
                ranges.push(op_range(kind));
                ranges.push(between(was_all.len, all.len));
                ranges.push(between(was_kept.len, kept.len));
            }
        }
        let hashed_all = self.full.inodes[ino as usize].hashed_len();
        debug_assert_eq!(hashed_all, all.hashed());
        let hashed = kept.hashed();
        ranges.push(between(hashed, hashed_all));
        let blocks = blocks_of(&ranges, top);
        let on = effects_by_block(&blocks, &effects);
        let mut sum = self.sums[ino as usize];
        for (&i, made) in blocks.iter().zip(&on) {
            let old = self.terms[ino as usize]
                .get(&i)
                .copied()
                .unwrap_or_default();
            let new = self.block_replayed(ino, i, hashed, made);
            sum = sum.minus(old).plus(new);
        }
        (kept.size, sum.file_hash(hashed))
    }

    /// The share of block `i` of a file whose first `hashed` bytes are
    /// hashed, as the file before its first pending op plus `effects` (all
    /// that reach the block, in order). Remembered by those effects.
    fn block_replayed(&mut self, ino: Ino, i: usize, hashed: u64, effects: &[Effect]) -> Term {
        let b = HASH_BLOCK_BYTES as u64;
        let lo = i as u64 * b;
        if lo >= hashed {
            return Term::default();
        }
        // What makes the block: the file before its first pending op, the
        // block's length, and `effects`; a word no block made of kept
        // writes has in its place tells the two kinds of making apart.
        let n = ((hashed - lo).min(b)) as usize;
        let sig = &mut self.sig;
        sig.clear();
        sig.extend([
            u64::from(ino),
            self.front[ino as usize] as u64,
            i as u64,
            n as u64,
            u64::MAX,
        ]);
        for e in effects {
            sig.extend(match *e {
                Effect::Write { off, start, len } => [0, off, start, len],
                Effect::Truncate { size } => [1, size, 0, 0],
                Effect::Zero { off, end } => [2, off, end, 0],
            });
        }
        if let Some(t) = self.remembered() {
            return t;
        }
        let t = self.block_made(ino, i, n, effects);
        self.remember(t);
        t
    }

    /// Block `i`, `n` bytes long, made of the file before its first pending
    /// op and `effects`, hashed.
    fn block_made(&mut self, ino: Ino, i: usize, n: usize, effects: &[Effect]) -> Term {
        let b = HASH_BLOCK_BYTES as u64;
        let lo = i as u64 * b;
        let before = &self.before[ino as usize];
        let buf = &mut self.buf;
        buf.clear();
        buf.resize(HASH_BLOCK_BYTES, 0);
        before.data.read_into(lo, buf);
        let mut len = before.data.len();
        let zero = |buf: &mut Vec<u8>, from: u64, to: u64| {
            let (from, to) = (from.max(lo), to.min(lo + b));
            if from < to {
                buf[(from - lo) as usize..(to - lo) as usize].fill(0);
            }
        };
        for e in effects {
            match *e {
                Effect::Write { off, start, len: n } => {
                    len = len.max(off + n);
                    let (from, to) = (off.max(lo), (off + n).min(lo + b));
                    if from < to {
                        let dst = &mut buf[(from - lo) as usize..(to - lo) as usize];
                        self.trace.data.read_into(start + (from - off), dst);
                    }
                }
                Effect::Truncate { size } => {
                    if len > size {
                        zero(buf, size, u64::MAX);
                        len = size;
                    }
                }
                Effect::Zero { off, end } => zero(buf, off, end.min(len)),
            }
        }
        Term::of_block(i, &buf[..n])
    }
}

/// What a kept op does to its file's bytes, as an [`Effect`] (`None` for
/// an op that changes no byte).
fn kept_effect(kind: &OpKind) -> Option<Effect> {
    match kind {
        OpKind::Write { off, data, .. } => Some(Effect::Write {
            off: *off,
            start: data.start,
            len: data.len,
        }),
        OpKind::Truncate { size, .. } => Some(Effect::Truncate { size: *size }),
        OpKind::Fallocate {
            off,
            len,
            zero: true,
            ..
        } => Some(Effect::Zero {
            off: *off,
            end: off.saturating_add(*len),
        }),
        _ => None,
    }
}

/// What a torn write leaves (`tear` of it, over a file of `kept`'s
/// lengths, which it moves): its first bytes, its new size alone, or the
/// whole write where storage cannot tear it so. Only a write tears: any
/// other op is kept whole.
fn torn_effect(kind: &OpKind, tear: Tear, kept: &mut Lengths, sector: u64) -> Option<Effect> {
    let OpKind::Write { off, data, .. } = kind else {
        kept.apply(kind);
        return kept_effect(kind);
    };
    Some(match tear.cut(*off, data.len, kept.size, sector) {
        Some(Cut::Prefix(n)) => {
            kept.write(off + n);
            Effect::Write {
                off: *off,
                start: data.start,
                len: n,
            }
        }
        Some(Cut::SizeOnly) => {
            let size = kept.size.max(off + data.len);
            kept.truncate(size);
            Effect::Truncate { size }
        }
        None => {
            kept.apply(kind);
            Effect::Write {
                off: *off,
                start: data.start,
                len: data.len,
            }
        }
    })
}
