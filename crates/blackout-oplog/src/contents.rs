//! File contents as both the replay model and crash states hold them:
//! extents of written bytes over holes, and the written length.
//!
//! Bytes below the written length that no extent holds are a hole: they read
//! as zeros and hash as the zeros they would be, so one byte written at a
//! 1 GiB offset costs one byte, not a GiB. Bytes past the written length up
//! to the file's size read as zeros too (growing a file by truncate or
//! fallocate allocates nothing), but the content hash tells the two apart,
//! as it always has: the written length is what a dense copy of the bytes
//! would have held. Extents share their buffers: cloning contents (a crash
//! state built from a shared base) copies no bytes, and a file left
//! unchanged shares even its extent map.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::sync::Arc;

use crate::blob::Blob;
use crate::ops::DataRef;

/// Bytes a write puts in a file: its own (copied), or a range of a data
/// blob (held by reference: a trace's data is never copied per state).
#[derive(Debug, Clone, Copy)]
pub enum Data<'a> {
    /// Bytes in memory.
    Bytes(&'a [u8]),
    /// A range of a blob.
    Blob(&'a Blob, DataRef),
}

impl Data<'_> {
    /// How many bytes.
    pub fn len(&self) -> u64 {
        match self {
            Data::Bytes(b) => b.len() as u64,
            Data::Blob(_, r) => r.len,
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<'a> From<&'a [u8]> for Data<'a> {
    fn from(b: &'a [u8]) -> Data<'a> {
        Data::Bytes(b)
    }
}

impl<'a, const N: usize> From<&'a [u8; N]> for Data<'a> {
    fn from(b: &'a [u8; N]) -> Data<'a> {
        Data::Bytes(b)
    }
}

impl<'a> From<&'a Vec<u8>> for Data<'a> {
    fn from(b: &'a Vec<u8>) -> Data<'a> {
        Data::Bytes(b)
    }
}

/// Where an extent's bytes live.
#[derive(Clone)]
enum Store {
    Mem(Arc<Vec<u8>>),
    Blob(Blob),
}

/// A range of shared bytes: `start..start+len` of the store.
#[derive(Clone)]
struct Bytes {
    store: Store,
    start: u64,
    len: usize,
}

impl Bytes {
    fn new(data: Data<'_>) -> Bytes {
        match data {
            Data::Bytes(b) => Bytes {
                store: Store::Mem(Arc::new(b.to_vec())),
                start: 0,
                len: b.len(),
            },
            Data::Blob(blob, r) => Bytes {
                store: Store::Blob(blob.clone()),
                start: r.start,
                len: r.len as usize,
            },
        }
    }

    /// The bytes, when they are in memory.
    fn slice(&self) -> Option<&[u8]> {
        match &self.store {
            Store::Mem(v) => Some(&v[self.start as usize..self.start as usize + self.len]),
            Store::Blob(_) => None,
        }
    }

    /// Fills `buf` with the bytes from `from` (relative to the start).
    fn read(&self, from: u64, buf: &mut [u8]) {
        match &self.store {
            Store::Mem(v) => {
                let at = (self.start + from) as usize;
                buf.copy_from_slice(&v[at..at + buf.len()]);
            }
            Store::Blob(b) => b.read_into(self.start + from, buf),
        }
    }

    /// Bytes `from..to` of this range (relative to its start).
    fn sub(&self, from: u64, to: u64) -> Bytes {
        Bytes {
            store: self.store.clone(),
            start: self.start + from,
            len: (to - from) as usize,
        }
    }
}

/// Bytes read from a blob at a time when extents are copied or compared.
const CHUNK_BYTES: u64 = 1 << 20;

/// Appending to an extent that ends where a write starts grows the extent in
/// place, while it is shorter than this and nothing else shares its buffer:
/// a file written in many small appends is held in few extents.
const GROW_IN_PLACE_BYTES: usize = 64 * 1024;

/// Aligned runs of zeros this long in bytes handed over whole
/// ([`Contents::from_bytes`]) are kept as holes.
const HOLE_PAGE_BYTES: usize = 4096;

/// A file's contents: extents of bytes over holes, and the written length.
///
/// ```
/// use blackout_oplog::contents::Contents;
/// let (mut c, mut size) = (Contents::default(), 0);
/// c.write(&mut size, 1 << 30, b"x");
/// assert_eq!((c.len(), size, c.extent_bytes()), ((1 << 30) + 1, (1 << 30) + 1, 1));
/// assert_eq!(c.read((1 << 30) - 1, 3), b"\0x\0");
/// ```
#[derive(Clone, Default)]
pub struct Contents {
    /// The written length: every extent lies below it.
    len: u64,
    /// Extents by offset: non-empty, not overlapping.
    extents: Arc<BTreeMap<u64, Bytes>>,
}

impl Contents {
    /// `bytes` as contents written from offset 0, aligned pages of zeros
    /// kept as holes.
    pub fn from_bytes(bytes: &[u8]) -> Contents {
        let mut map = BTreeMap::new();
        let mut run: Option<usize> = None;
        for (i, page) in bytes.chunks(HOLE_PAGE_BYTES).enumerate() {
            let at = i * HOLE_PAGE_BYTES;
            let zero = page.iter().all(|&b| b == 0);
            match (zero, run) {
                (false, None) => run = Some(at),
                (true, Some(start)) => {
                    map.insert(start as u64, Bytes::new(Data::Bytes(&bytes[start..at])));
                    run = None;
                }
                _ => {}
            }
        }
        if let Some(start) = run {
            map.insert(start as u64, Bytes::new(Data::Bytes(&bytes[start..])));
        }
        Contents {
            len: bytes.len() as u64,
            extents: Arc::new(map),
        }
    }

    /// The written length: bytes past it read as zeros and are not hashed.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many bytes the extents hold (holes cost nothing).
    pub fn extent_bytes(&self) -> u64 {
        self.extents.values().map(|b| b.len as u64).sum()
    }

    /// The extents, by offset: `(offset, length)`.
    pub fn extent_ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.extents.iter().map(|(&s, b)| (s, b.len as u64))
    }

    /// Calls `f(offset, bytes)` for the bytes of every extent, by offset (an
    /// extent in a blob a chunk at a time).
    pub fn for_each_extent(
        &self,
        mut f: impl FnMut(u64, &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut buf = Vec::new();
        for (&s, b) in self.extents.iter() {
            if let Some(bytes) = b.slice() {
                f(s, bytes)?;
                continue;
            }
            let mut from = 0;
            while from < b.len as u64 {
                let n = (b.len as u64 - from).min(CHUNK_BYTES) as usize;
                buf.resize(n, 0);
                b.read(from, &mut buf);
                f(s + from, &buf)?;
                from += n as u64;
            }
        }
        Ok(())
    }

    /// Writes `data` at `off` (bytes, copied, or a blob's range, held by
    /// reference), growing the written length and `size` as needed.
    pub fn write<'a>(&mut self, size: &mut u64, off: u64, data: impl Into<Data<'a>>) {
        let data = data.into();
        let end = off.saturating_add(data.len());
        self.len = self.len.max(end);
        *size = (*size).max(end);
        if data.is_empty() {
            return;
        }
        self.punch(off, end);
        let map = Arc::make_mut(&mut self.extents);
        if let (Some((&s, prev)), Data::Bytes(bytes)) = (map.range_mut(..off).next_back(), data) {
            if let Store::Mem(buf) = &mut prev.store {
                let grows = s + prev.len as u64 == off
                    && prev.len < GROW_IN_PLACE_BYTES
                    && prev.start as usize + prev.len == buf.len();
                if let Some(buf) = Arc::get_mut(buf).filter(|_| grows) {
                    buf.extend_from_slice(bytes);
                    prev.len += bytes.len();
                    return;
                }
            }
        }
        map.insert(off, Bytes::new(data));
    }

    /// Sets the size to `new_size`, forgetting what was written past it.
    pub fn truncate(&mut self, size: &mut u64, new_size: u64) {
        if self.len > new_size {
            self.len = new_size;
            self.punch(new_size, u64::MAX);
        }
        *size = new_size;
    }

    /// Applies what a reader sees of an fallocate: zeroes `[off, off+len)`
    /// when `zero`, and grows the size to `off+len` unless `keep_size`.
    pub fn fallocate(&mut self, size: &mut u64, off: u64, len: u64, zero: bool, keep_size: bool) {
        let end = off.saturating_add(len);
        if zero {
            self.punch(off, end.min(self.len));
        }
        if !keep_size && end > *size {
            *size = end;
        }
    }

    /// Contents holding the bytes `r` names in `blob`, by reference (a
    /// file of the initial tree).
    pub fn from_blob(blob: &Blob, r: DataRef) -> Contents {
        let (mut c, mut size) = (Contents::default(), 0);
        c.write(&mut size, 0, Data::Blob(blob, r));
        c
    }

    /// The `len` bytes at `off` (zeros in holes and past what was written).
    pub fn read(&self, off: u64, len: u64) -> Vec<u8> {
        let mut out = vec![0u8; len as usize];
        self.read_into(off, &mut out);
        out
    }

    /// Fills `buf` with the bytes at `off`.
    pub fn read_into(&self, off: u64, buf: &mut [u8]) {
        buf.fill(0);
        let hi = off.saturating_add(buf.len() as u64);
        for (s, b) in self.overlapping(off, hi) {
            let (lo, end) = (s.max(off), (s + b.len as u64).min(hi));
            b.read(lo - s, &mut buf[(lo - off) as usize..(end - off) as usize]);
        }
    }

    /// Every written byte, holes as zeros (a symlink's target).
    pub fn to_vec(&self) -> Vec<u8> {
        self.read(0, self.len)
    }

    /// The bytes `lo..hi`, or `None` when no extent holds any of them (all
    /// zeros): a slice of one extent in memory when one holds them all, else
    /// read into `buf`.
    pub fn block<'a>(&'a self, lo: u64, hi: u64, buf: &'a mut Vec<u8>) -> Option<&'a [u8]> {
        let (s, b) = self.overlapping(lo, hi).next()?;
        if s <= lo && s + b.len as u64 >= hi {
            if let Some(bytes) = b.slice() {
                return Some(&bytes[(lo - s) as usize..(hi - s) as usize]);
            }
        }
        buf.clear();
        buf.resize((hi - lo) as usize, 0);
        self.read_into(lo, buf);
        Some(buf)
    }

    /// The extents holding any of the bytes `lo..hi`, by offset.
    fn overlapping(&self, lo: u64, hi: u64) -> impl Iterator<Item = (u64, &Bytes)> {
        let first = self
            .extents
            .range(..lo)
            .next_back()
            .filter(|(&s, b)| s + b.len as u64 > lo);
        let rest = self.extents.range(lo..hi.max(lo));
        first.into_iter().chain(rest).map(|(&s, b)| (s, b))
    }

    /// Makes `lo..hi` a hole (the written length stays).
    fn punch(&mut self, lo: u64, hi: u64) {
        if lo >= hi {
            return;
        }
        let hit: Vec<u64> = self.overlapping(lo, hi).map(|(s, _)| s).collect();
        if hit.is_empty() {
            return;
        }
        let map = Arc::make_mut(&mut self.extents);
        for s in hit {
            let Some(b) = map.remove(&s) else { continue };
            let end = s + b.len as u64;
            if s < lo {
                map.insert(s, b.sub(0, lo - s));
            }
            if end > hi {
                map.insert(hi, b.sub(hi - s, end - s));
            }
        }
    }

    /// Whether no extent holds any of the bytes `lo..hi` (they read as
    /// zeros).
    pub fn is_hole(&self, lo: u64, hi: u64) -> bool {
        self.overlapping(lo, hi).next().is_none()
    }
}

impl From<Vec<u8>> for Contents {
    fn from(bytes: Vec<u8>) -> Contents {
        Contents::from_bytes(&bytes)
    }
}

/// Equal when they read the same: the same written length and bytes, a
/// hole equal to written zeros.
impl PartialEq for Contents {
    fn eq(&self, other: &Contents) -> bool {
        if self.len != other.len {
            return false;
        }
        if Arc::ptr_eq(&self.extents, &other.extents) {
            return true;
        }
        let mut cuts: Vec<u64> = [self, other]
            .iter()
            .flat_map(|c| c.extents.iter().flat_map(|(&s, b)| [s, s + b.len as u64]))
            .chain([0, self.len])
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        let (mut x, mut y) = (Vec::new(), Vec::new());
        cuts.windows(2).all(|w| {
            if self.is_hole(w[0], w[1]) && other.is_hole(w[0], w[1]) {
                return true;
            }
            let mut at = w[0];
            while at < w[1] {
                let n = (w[1] - at).min(CHUNK_BYTES) as usize;
                x.resize(n, 0);
                y.resize(n, 0);
                self.read_into(at, &mut x);
                other.read_into(at, &mut y);
                if x != y {
                    return false;
                }
                at += n as u64;
            }
            true
        })
    }
}

impl Eq for Contents {}

impl fmt::Debug for Contents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let extents: Vec<(u64, u64)> = self
            .extents
            .iter()
            .map(|(&s, b)| (s, b.len as u64))
            .collect();
        f.debug_struct("Contents")
            .field("len", &self.len)
            .field("extents", &extents)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sparse_growth_reads_as_zeros() {
        let (mut d, mut s) = (Contents::default(), 0);
        d.write(&mut s, 2, b"ab");
        assert_eq!((d.to_vec(), s), (b"\0\0ab".to_vec(), 4));
        d.truncate(&mut s, 10);
        assert_eq!(d.len(), 4);
        assert_eq!(d.read(2, 4), b"ab\0\0");
        d.fallocate(&mut s, 0, 3, true, true);
        assert_eq!((d.to_vec(), s), (b"\0\0\0b".to_vec(), 10));
        d.fallocate(&mut s, 8, 8, false, false);
        assert_eq!(s, 16);
        d.truncate(&mut s, 1);
        assert_eq!((d.len(), s), (1, 1));
    }

    #[test]
    fn a_byte_far_out_costs_a_byte_and_equals_its_dense_copy() {
        let (mut d, mut s) = (Contents::default(), 0);
        d.write(&mut s, 1 << 30, b"x");
        assert_eq!(d.extent_bytes(), 1);
        assert_eq!(d.extent_ranges().collect::<Vec<_>>(), [(1 << 30, 1)]);
        let mut buf = Vec::new();
        assert_eq!(d.block(0, 16384, &mut buf), None);
        assert_eq!(d.block(1 << 30, (1 << 30) + 1, &mut buf), Some(&b"x"[..]));
        let mut dense = vec![0u8; (1 << 20) + 1];
        dense[1 << 20] = b'x';
        let (mut small, mut s2) = (Contents::default(), 0);
        small.write(&mut s2, 1 << 20, b"x");
        assert_eq!(Contents::from_bytes(&dense), small);
        assert_eq!(Contents::from_bytes(&dense).extent_bytes(), 1);
        assert_ne!(Contents::from_bytes(&dense[..1 << 20]), small);
    }

    #[test]
    fn small_appends_grow_one_extent_and_clones_share_it() {
        let (mut d, mut s) = (Contents::default(), 0);
        for i in 0..100u8 {
            d.write(&mut s, u64::from(i), &[i]);
        }
        assert_eq!(d.extent_ranges().count(), 1);
        let copy = d.clone();
        d.write(&mut s, 100, b"z");
        assert_eq!(d.extent_ranges().count(), 2, "a shared buffer is not grown");
        assert_eq!(copy.len(), 100);
        assert_eq!(d.read(98, 3), [98, 99, b'z']);
    }

    /// One change to a file: the dense reference applies it too.
    #[derive(Debug, Clone)]
    enum Change {
        Write(u64, Vec<u8>),
        Truncate(u64),
        Fallocate(u64, u64, bool, bool),
    }

    fn change() -> impl Strategy<Value = Change> {
        let off = 0u64..20_000;
        prop_oneof![
            4 => (off.clone(), prop::collection::vec(any::<u8>(), 0..5000))
                .prop_map(|(o, b)| Change::Write(o, b)),
            1 => off.clone().prop_map(Change::Truncate),
            1 => (off, 0u64..10_000, any::<bool>(), any::<bool>())
                .prop_map(|(o, l, z, k)| Change::Fallocate(o, l, z, k)),
        ]
    }

    proptest! {
        /// Against the dense representation it replaces: the bytes written
        /// (what the content hash covers), the size, and every read.
        #[test]
        fn agrees_with_a_dense_copy(changes in prop::collection::vec(change(), 0..40)) {
            let (mut c, mut size) = (Contents::default(), 0u64);
            let (mut dense, mut dsize): (Vec<u8>, u64) = (Vec::new(), 0);
            let mut snapshots = Vec::new();
            for ch in &changes {
                match ch {
                    Change::Write(off, b) => {
                        c.write(&mut size, *off, b);
                        let end = *off as usize + b.len();
                        if dense.len() < end {
                            dense.resize(end, 0);
                        }
                        dense[*off as usize..end].copy_from_slice(b);
                        dsize = dsize.max(end as u64);
                    }
                    Change::Truncate(n) => {
                        c.truncate(&mut size, *n);
                        dense.truncate(*n as usize);
                        dsize = *n;
                    }
                    Change::Fallocate(off, len, zero, keep) => {
                        c.fallocate(&mut size, *off, *len, *zero, *keep);
                        let end = off + len;
                        if *zero {
                            let stop = end.min(dense.len() as u64) as usize;
                            if (*off as usize) < stop {
                                dense[*off as usize..stop].fill(0);
                            }
                        }
                        if !keep && end > dsize {
                            dsize = end;
                        }
                    }
                }
                prop_assert_eq!(c.to_vec(), dense.clone());
                prop_assert_eq!(size, dsize);
                prop_assert_eq!(&c, &Contents::from_bytes(&dense));
                snapshots.push((c.clone(), dense.clone()));
                let mut pos = 0;
                for (s, n) in c.extent_ranges() {
                    prop_assert!(s >= pos && n > 0);
                    pos = s + n;
                }
                prop_assert!(pos <= c.len());
            }
            // Clones taken along the way kept their bytes.
            for (snap, bytes) in &snapshots {
                prop_assert_eq!(&snap.to_vec(), bytes);
                let mut buf = Vec::new();
                for lo in (0..bytes.len() as u64).step_by(1000) {
                    let hi = (lo + 1500).min(bytes.len() as u64);
                    let want = &bytes[lo as usize..hi as usize];
                    match snap.block(lo, hi, &mut buf) {
                        Some(got) => prop_assert_eq!(got, want),
                        None => prop_assert!(want.iter().all(|&b| b == 0)),
                    }
                }
            }
        }
    }
}
