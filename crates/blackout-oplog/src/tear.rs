//! How storage tears a write a crash lets reach the disk: a sector is
//! written whole or not at all, so a write is cut at a sector boundary
//! inside it, or, when it extends the file, only the new size lands.
//! Data and the rule alone: the explorer enumerates tears for its crash
//! states, the live file system tears the writes a crash keeps.

use serde::Serialize;

/// How a kept write is torn, in terms of what storage does: a sector is
/// written whole or not at all, so a tear is cut at a sector boundary (in
/// file offsets) inside the write; the sectors before the cut hold the new
/// bytes and the ones after it what was there before. A write that lies
/// inside one sector cannot tear this way. A write that extends the file
/// may also leave only the new size on disk (the size reached the disk
/// before the data), its new bytes reading as zeros. [`Tear::cut`] says what
/// each tear leaves of one write, or that storage cannot tear it so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tear {
    /// The sectors up to the boundary at or before its middle reached the
    /// disk.
    Half,
    /// All but its last sector reached the disk.
    ShortSector,
    /// It extended the file: the new size reached the disk, its data did
    /// not.
    Zeros,
}

/// What a torn write leaves on disk ([`Tear::cut`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// The write's first `n` bytes (ending on a sector boundary) reached
    /// the disk; the rest of its range holds what was there before.
    Prefix(u64),
    /// Only the file's new size reached the disk: bytes the write put past
    /// the old end read as zeros, bytes it overwrote hold what was there
    /// before.
    SizeOnly,
}

impl Tear {
    /// Every tear, in the order states are enumerated.
    pub const ALL: [Tear; 3] = [Tear::Half, Tear::ShortSector, Tear::Zeros];

    /// What a crash left of the write, for people.
    pub fn describe(self) -> &'static str {
        match self {
            Tear::Half => "only its sectors up to the middle reached the disk",
            Tear::ShortSector => "its last sector did not reach the disk",
            Tear::Zeros => {
                "the file's new size reached the disk but its data did not: it reads back as zeros"
            }
        }
    }

    /// What this tear leaves of a write of `len` bytes at `off` to a file
    /// `size_before` long, with `sector`-byte sectors; `None` when storage
    /// cannot tear the write this way (no sector boundary inside it, or, for
    /// [`Tear::Zeros`], a write that does not extend the file). Sectors are
    /// counted in file offsets, as a file's blocks are aligned to them.
    ///
    /// ```
    /// use blackout_oplog::tear::{Cut, Tear};
    ///
    /// // 8 bytes over 8 durable bytes: inside one sector, atomic.
    /// assert_eq!(Tear::Half.cut(0, 8, 8, 512), None);
    /// assert_eq!(Tear::Zeros.cut(0, 8, 8, 512), None);
    /// // Appending: the new size may reach the disk without the data.
    /// assert_eq!(Tear::Zeros.cut(8, 8, 8, 512), Some(Cut::SizeOnly));
    /// // A 4 KiB overwrite at 100 tears at 512-byte boundaries only.
    /// assert_eq!(Tear::Half.cut(100, 4096, 8192, 512), Some(Cut::Prefix(2048 - 100)));
    /// assert_eq!(Tear::ShortSector.cut(100, 4096, 8192, 512), Some(Cut::Prefix(4096 - 100)));
    /// ```
    pub fn cut(self, off: u64, len: u64, size_before: u64, sector: u64) -> Option<Cut> {
        let s = sector.max(1);
        let end = off.checked_add(len)?;
        if len == 0 {
            return None;
        }
        // The sector boundaries strictly inside (off, end).
        let first = (off / s + 1).checked_mul(s)?;
        let last = (end - 1) / s * s;
        let inside = first < end;
        let half = || {
            let mid = off + len / 2;
            let at_or_before = mid / s * s;
            if at_or_before > off {
                at_or_before
            } else {
                first
            }
        };
        match self {
            Tear::Half if inside => Some(Cut::Prefix(half() - off)),
            // Where it would be the same cut as Half, it is not a second
            // state.
            Tear::ShortSector if inside && last != half() => Some(Cut::Prefix(last - off)),
            Tear::Zeros if end > size_before => Some(Cut::SizeOnly),
            _ => None,
        }
    }

    /// The tears storage can make of a write of `len` bytes at `off` to a
    /// file `size_before` long with `sector`-byte sectors (those whose
    /// [`Tear::cut`] is some), in [`Tear::ALL`]'s order: what a model
    /// chooses among when it tears the write.
    ///
    /// ```
    /// use blackout_oplog::tear::Tear;
    ///
    /// // A 40-byte record inside one sector: atomic.
    /// assert_eq!(Tear::offered(0, 40, 4000, 512), []);
    /// // The same record across the boundary at 512: it can tear there.
    /// assert_eq!(Tear::offered(480, 40, 4000, 512), [Tear::Half]);
    /// // An append: also its new size without the data.
    /// assert_eq!(Tear::offered(4000, 40, 4000, 512), [Tear::Zeros]);
    /// ```
    pub fn offered(off: u64, len: u64, size_before: u64, sector: u64) -> Vec<Tear> {
        Tear::ALL
            .into_iter()
            .filter(|t| t.cut(off, len, size_before, sector).is_some())
            .collect()
    }

    /// The letter of a state id (`h`, `s`, `z`).
    pub fn code(self) -> &'static str {
        match self {
            Tear::Half => "h",
            Tear::ShortSector => "s",
            Tear::Zeros => "z",
        }
    }
}
