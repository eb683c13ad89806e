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

use std::collections::HashMap;

use blackout_oplog::contents::Data;
use blackout_oplog::ops::{synced_by, Ino, InodeKind, OpKind, Part, SyncedBy};
use blackout_oplog::store::{self, Halves, InodeState};
use blackout_oplog::trace::Trace;

use crate::enumerate::{Cut, StateDesc, Tear};
use crate::state::{
    block_term, file_hash, tree_hash, written_blocks, FsState, Kept, Term, HASH_BLOCK_BYTES,
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
    terms: Vec<HashMap<usize, Term>>,
    sums: Vec<Term>,
    /// The hash of `full`, once asked.
    plain: Option<blake3::Hash>,
    /// States whose key was built from the first op (asked out of order,
    /// or losing an op this keyer thought durable).
    rebuilt: u64,
    /// Shares of blocks as states kept them, by what made the block: a
    /// crash point's states lose different ops of one window, and a block
    /// most of them make alike is hashed once.
    made: HashMap<Box<[u64]>, Term>,
    /// What made a block, as words (compared whole: no two makings share
    /// an entry).
    sig: Vec<u64>,
    buf: Vec<u8>,
}

/// Blocks whose shares [`Keyer`] remembers, at most (then it forgets them
/// all): about a hundred bytes each.
pub const BLOCKS_REMEMBERED: usize = 1 << 18;

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

/// What each of `blocks` is made of, in order: the writes over it; `None`
/// when `effects` truncate or zero (where those fall depends on the
/// lengths every write moves: every block is made of all of them).
fn effects_by_block(blocks: &[usize], effects: &[Effect]) -> Option<Vec<Vec<Effect>>> {
    if effects.iter().any(|e| !matches!(e, Effect::Write { .. })) {
        return None;
    }
    let b = HASH_BLOCK_BYTES as u64;
    let mut on = vec![Vec::new(); blocks.len()];
    for e in effects {
        if let Effect::Write { off, len, .. } = *e {
            let first = blocks.partition_point(|&i| (i as u64 + 1) * b <= off);
            for (at, &i) in blocks.iter().enumerate().skip(first) {
                if i as u64 * b >= off + len {
                    break;
                }
                on[at].push(*e);
            }
        }
    }
    Some(on)
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
        let mut terms = vec![HashMap::new(); n];
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
            plain: None,
            rebuilt: 0,
            made: HashMap::new(),
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
        let Some(damaged) = self.damaged(desc, k) else {
            return self.rebuild(desc);
        };
        if damaged.is_empty() {
            return self.plain_hash();
        }
        let mut lost: Vec<(usize, Part)> = desc.lost.iter().map(|u| (u.op, u.part)).collect();
        lost.sort_unstable();
        let mut dirs: Vec<(Ino, InodeState)> = Vec::new();
        let mut files: Vec<(Ino, u64, blake3::Hash)> = Vec::new();
        for ino in damaged {
            if self.full.inodes[ino as usize].kind == InodeKind::Dir {
                dirs.push((ino, self.inode_as_kept(ino, k, &lost, None)));
            } else {
                let (size, hash) = self.file_as_kept(ino, k, &lost, desc.torn);
                files.push((ino, size, hash));
            }
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
        let sums = &self.sums;
        let full = &self.full;
        let h = tree_hash(
            |ino| &full.inodes[ino as usize],
            |ino, node| (node.size, sums[ino as usize].file_hash(node.hashed_len())),
        );
        self.plain = Some(h);
        h
    }

    /// The inodes `desc` loses or tears an op of, each once; `None` when
    /// one of those ops is already durable here (the key is then rebuilt).
    fn damaged(&self, desc: &StateDesc, k: usize) -> Option<Vec<Ino>> {
        let mut out: Vec<(Ino, usize)> = Vec::new();
        let mut note = |ino: Ino, op: usize| match out.iter_mut().find(|(i, _)| *i == ino) {
            Some(d) => d.1 = d.1.min(op),
            None => out.push((ino, op)),
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
            let data = match kind {
                OpKind::Write { data, .. } => Data::Blob(&self.trace.data, *data),
                _ => Data::Bytes(&[]),
            };
            let file = match kind {
                OpKind::Write { ino, .. }
                | OpKind::Truncate { ino, .. }
                | OpKind::Fallocate { ino, .. } => Some(*ino),
                _ => None,
            };
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

    /// An inode as a state that lost `lost` and tore `torn` holds it at
    /// crash point `k`: the inode before its first pending op, plus the
    /// pending ops on it that the state kept.
    fn inode_as_kept(
        &self,
        ino: Ino,
        k: usize,
        lost: &[(usize, Part)],
        torn: Option<(usize, Tear)>,
    ) -> InodeState {
        let is_lost = |j: usize, p: Part| lost.binary_search(&(j, p)).is_ok();
        let mut node = self.before[ino as usize].clone();
        for &j in self.window(ino, k) {
            if let Some(kept) = Kept::of(self.trace, j, is_lost, torn) {
                let (kind, data, halves) = kept.cut(|_| node.size, self.sector);
                store::apply_one(&mut node, ino, &kind, data, halves);
            }
        }
        node
    }

    /// The state `desc` describes, built from the state at its crash point
    /// and its damaged inodes alone (the same as [`FsState::build`]), and
    /// its content hash: its damaged files hashed whole from what was
    /// built, the others from the shares kept for them. A state before the
    /// current crash point starts the keyer over.
    pub fn state(&mut self, desc: &StateDesc) -> (FsState, blake3::Hash) {
        let k = desc.crash.min(self.trace.ops.len());
        if k < self.at {
            *self = Keyer::new(self.trace, self.sector);
        }
        self.advance(k);
        let Some(damaged) = self.damaged(desc, k) else {
            self.rebuilt += 1;
            let fs = FsState::build(self.trace, desc, self.sector);
            let hash = fs.content_hash();
            return (fs, hash);
        };
        let mut lost: Vec<(usize, Part)> = desc.lost.iter().map(|u| (u.op, u.part)).collect();
        lost.sort_unstable();
        let mut fs = self.full.clone();
        for &ino in &damaged {
            fs.inodes[ino as usize] = self.inode_as_kept(ino, k, &lost, desc.torn);
        }
        let sums = &self.sums;
        let hash = tree_hash(
            |ino| &fs.inodes[ino as usize],
            |ino, node| {
                let len = node.hashed_len();
                let hash = if damaged.contains(&ino) {
                    file_hash(&node.data, len)
                } else {
                    sums[ino as usize].file_hash(len)
                };
                (node.size, hash)
            },
        );
        (fs, hash)
    }

    /// A file's size and hash as a state that lost `lost` and tore `torn`
    /// holds it at crash point `k`: its pending ops replayed as lengths,
    /// and only the blocks a lost or torn op could change rehashed, each
    /// from the file before its first pending op plus the kept ops' bytes
    /// there.
    fn file_as_kept(
        &mut self,
        ino: Ino,
        k: usize,
        lost: &[(usize, Part)],
        torn: Option<(usize, Tear)>,
    ) -> (u64, blake3::Hash) {
        let before = &self.before[ino as usize];
        let start = Lengths {
            len: before.data.len(),
            size: before.size,
        };
        let (mut all, mut kept) = (start, start);
        let mut top = start.len;
        let mut effects: Vec<Effect> = Vec::new();
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for &j in self.window(ino, k) {
            let kind = &self.trace.ops[j].kind;
            let (was_all, was_kept) = (all, kept);
            all.apply(kind);
            let damaged = if lost.binary_search(&(j, Part::Whole)).is_ok() {
                true
            } else if let (Some((_, tear)), OpKind::Write { off, data, .. }) =
                (torn.filter(|&(t, _)| t == j), kind)
            {
                match tear.cut(*off, data.len, kept.size, self.sector) {
                    Some(Cut::Prefix(n)) => {
                        kept.write(off + n);
                        effects.push(Effect::Write {
                            off: *off,
                            start: data.start,
                            len: n,
                        });
                    }
                    Some(Cut::SizeOnly) => {
                        let size = kept.size.max(off + data.len);
                        kept.truncate(size);
                        effects.push(Effect::Truncate { size });
                    }
                    None => {
                        kept.apply(kind);
                        effects.push(Effect::Write {
                            off: *off,
                            start: data.start,
                            len: data.len,
                        });
                    }
                }
                true
            } else {
                kept.apply(kind);
                match kind {
                    OpKind::Write { off, data, .. } => effects.push(Effect::Write {
                        off: *off,
                        start: data.start,
                        len: data.len,
                    }),
                    OpKind::Truncate { size, .. } => effects.push(Effect::Truncate { size: *size }),
                    OpKind::Fallocate {
                        off,
                        len,
                        zero: true,
                        ..
                    } => effects.push(Effect::Zero {
                        off: *off,
                        end: off.saturating_add(*len),
                    }),
                    _ => {}
                }
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
        for (at, &i) in blocks.iter().enumerate() {
            let old = self.terms[ino as usize]
                .get(&i)
                .copied()
                .unwrap_or_default();
            let made = on.as_ref().map_or(&effects, |on| &on[at]);
            let new = self.block_as_kept(ino, i, hashed, made);
            sum = sum.minus(old).plus(new);
        }
        (kept.size, sum.file_hash(hashed))
    }

    /// The share of block `i` of a file whose first `hashed` bytes are
    /// hashed, as the file before its first pending op plus `effects` (all
    /// that change the block, in order).
    fn block_as_kept(&mut self, ino: Ino, i: usize, hashed: u64, effects: &[Effect]) -> Term {
        let b = HASH_BLOCK_BYTES as u64;
        let lo = i as u64 * b;
        if lo >= hashed {
            return Term::default();
        }
        // What makes the block: the file before its first pending op, the
        // block's length, and `effects`, those the block is made of.
        let n = ((hashed - lo).min(b)) as usize;
        let sig = &mut self.sig;
        sig.clear();
        sig.extend([
            u64::from(ino),
            self.front[ino as usize] as u64,
            i as u64,
            n as u64,
        ]);
        for e in effects {
            sig.extend(match *e {
                Effect::Write { off, start, len } => [0, off, start, len],
                Effect::Truncate { size } => [1, size, 0, 0],
                Effect::Zero { off, end } => [2, off, end, 0],
            });
        }
        if let Some(&t) = self.made.get(&self.sig[..]) {
            return t;
        }
        let t = self.block_made(ino, i, n, effects);
        if self.made.len() >= BLOCKS_REMEMBERED {
            self.made.clear();
        }
        self.made.insert(self.sig.clone().into_boxed_slice(), t);
        t
    }

    /// [`Keyer::block_as_kept`], hashed: block `i`, `n` bytes long.
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
