//! What makes ops durable and what loses them: the syncs (each applying
//! what it covers to the durable tree, an op the backing directory refuses
//! kept pending), the pending report, and the crash.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;

use blackout_oplog::ops::{Ino, InodeKind, OpKind, Part, ROOT_INO};
use blackout_oplog::tear::{Cut, Tear};

use super::{sync_errno, Errno, Live, SECTOR};
use crate::faults::{
    refused_line, CrashReport, CrashSpec, PendingFile, PendingReport, Refused, SyncFailure, Torn,
};
use crate::pending::{kept, named, Change, Keep, Rng, Taken};

impl Live {
    /// The pending ops the backing directory refused, in order, with why.
    pub fn refused(&self) -> Vec<Refused> {
        self.refused
            .iter()
            .filter_map(|(&seq, error)| {
                let op = self.pending.view(seq, blackout_oplog::ops::Part::Whole)?;
                Some(Refused {
                    op,
                    error: error.clone(),
                })
            })
            .collect()
    }

    /// The refused ops in one line ([`refused_line`]), if there are any.
    pub fn refused_text(&self) -> Option<String> {
        let refused = self.refused();
        (!refused.is_empty()).then(|| refused_line(&refused))
    }

    /// Applies one taken op to the durable tree.
    fn apply_taken(&mut self, t: &Taken) -> io::Result<()> {
        let nodes = &self.nodes;
        let pending = &self.pending;
        let alive = |i: Ino| {
            i == ROOT_INO
                || nodes.get(i as usize).is_some_and(|n| !n.names.is_empty())
                || pending.names(i)
        };
        match &t.op.change {
            Change::Op(kind) => self
                .durable
                .apply(kind, &t.op.data, t.halves, t.size_only, &alive),
            Change::Attr(ino, attr) => self.durable.set_attr(*ino, attr),
        }
    }

    /// Applies the ops a sync took to the durable tree, in order. An op the
    /// backing directory refuses goes back on the pending list, and so does
    /// every later one on an inode it names (their order kept); every other
    /// op is applied. The sync then fails with the first refusal's error.
    fn apply(&mut self, taken: Vec<Taken>) -> Result<(), Errno> {
        let mut failed: Option<Errno> = None;
        let mut held: HashMap<Ino, u64> = HashMap::new();
        for t in taken {
            let inos = named(&t.op.change);
            let behind = inos.iter().find_map(|i| held.get(i).copied());
            let error = match behind {
                Some(first) => Err(format!("waits for op {first}, refused before it")),
                None => self.apply_taken(&t).map_err(|e| {
                    failed.get_or_insert(sync_errno(&e));
                    e.to_string()
                }),
            };
            match error {
                Ok(()) => {
                    self.refused.remove(&t.seq);
                }
                Err(why) => {
                    for i in inos {
                        held.entry(i).or_insert(t.seq);
                    }
                    self.refused.insert(t.seq, why);
                    self.pending.restore(t);
                }
            }
        }
        self.durable.close();
        failed.map_or(Ok(()), Err)
    }

    /// Makes what a sync of `ino` covers durable: its data (and entries),
    /// and unless `data_only` its attributes, times included.
    pub(super) fn sync_inode(&mut self, ino: Ino, data_only: bool) -> Result<(), Errno> {
        let taken = self.pending.take_synced(ino, data_only);
        let applied = self.apply(taken);
        if !data_only {
            self.durable_times(ino);
        }
        applied
    }

    /// The durable copy of `ino` takes the times its view has now (what an
    /// fsync makes durable of them; a copy the disk refuses them keeps
    /// its own, as after a crash).
    fn durable_times(&self, ino: Ino) {
        let Ok(md) = self.metadata(ino, None) else {
            return;
        };
        let times = rustix::fs::Timestamps {
            last_access: rustix::fs::Timespec {
                tv_sec: md.atime(),
                tv_nsec: md.atime_nsec() as _,
            },
            last_modification: rustix::fs::Timespec {
                tv_sec: md.mtime(),
                tv_nsec: md.mtime_nsec() as _,
            },
        };
        let _ = self.durable.set_times(ino, &times);
    }

    /// fsync or fdatasync of a file, fsync of a directory: what it covers
    /// becomes durable.
    ///
    /// # Errors
    ///
    /// `EIO` when the backing directory could not be changed.
    pub fn fsync(&mut self, ino: Ino, fh: Option<u64>, datasync: bool) -> Result<(), Errno> {
        let rel = fh
            .and_then(|f| self.handles.get(&f))
            .map(|h| h.path.clone())
            .unwrap_or_else(|| self.rel(ino).into());
        let call = match (self.kind(ino), datasync) {
            (Some(InodeKind::Dir), _) => "fsyncdir",
            (_, true) => "fdatasync",
            (_, false) => "fsync",
        };
        let fire = self.gate(call, &rel, None)?;
        let synced = if self.fails(call, &rel, ino) {
            Err(libc::EIO)
        } else {
            self.sync_inode(ino, datasync)
        };
        self.after(fire);
        synced
    }

    /// Whether the armed sync failure goes off at this sync (`call` of
    /// `ino`, at `rel`): if so, what the sync covers is dropped for good,
    /// as after a writeback error, and the one who armed it hears what.
    fn fails(&mut self, call: &str, rel: &str, ino: Ino) -> bool {
        if !self
            .failing
            .as_ref()
            .is_some_and(|(t, _)| t.matches(call, rel, None))
        {
            return false;
        }
        let Some((_, tx)) = self.failing.take() else {
            return false;
        };
        let dropped = self.pending.drop_synced(ino);
        let pending = &self.pending;
        self.refused.retain(|&seq, _| pending.get(seq).is_some());
        let _ = tx.send(SyncFailure {
            call: call.to_string(),
            path: rel.to_string(),
            errno: "EIO".to_string(),
            dropped,
        });
        true
    }

    /// sync: everything pending becomes durable. Returns how many ops.
    ///
    /// # Errors
    ///
    /// `EIO` when the backing directory could not be changed.
    pub fn sync_all(&mut self) -> Result<usize, Errno> {
        let taken = self.pending.take_all();
        let n = taken.len();
        let applied = self.apply(taken);
        for ino in 0..self.nodes.len() {
            self.durable_times(ino as Ino);
        }
        applied.map(|()| n)
    }

    /// What is pending now, per path.
    pub fn pending_report(&self) -> PendingReport {
        let mut files: Vec<PendingFile> = Vec::new();
        let mut at: HashMap<String, usize> = HashMap::new();
        let mut bytes = 0;
        let units = self.pending.units();
        for &(seq, part) in &units {
            let Some(v) = self.pending.view(seq, part) else {
                continue;
            };
            if v.call == "write" {
                bytes += v.length.unwrap_or(0);
            }
            let i = *at.entry(v.path.clone()).or_insert_with(|| {
                files.push(PendingFile {
                    path: v.path.clone(),
                    ops: Vec::new(),
                });
                files.len() - 1
            });
            files[i].ops.push(v);
        }
        PendingReport {
            files,
            units: units.len(),
            bytes,
        }
    }

    /// The crash: the power is off; what `spec` keeps of the pending units
    /// reaches the backing directory (torn as it says), the rest is
    /// dropped, the orphans are freed. The view still shows the old state
    /// until [`Live::reset`].
    ///
    /// # Errors
    ///
    /// Changing the backing directory.
    pub fn crash(&mut self, spec: &CrashSpec) -> io::Result<CrashReport> {
        self.frozen = true;
        self.trigger = None;
        self.failing = None;
        let units = self.pending.units();
        let keep: std::collections::HashSet<(u64, Part)> =
            kept(&units, spec.keep, spec.seed).into_iter().collect();
        // With a prefix, the unit right after it is the one a tear cuts.
        let boundary = units.iter().position(|u| !keep.contains(u));
        let mut rng = Rng::new(spec.seed.wrapping_add(1));
        let mut report = CrashReport::default();
        for (i, &(seq, part)) in units.iter().enumerate() {
            let view = self.pending.view(seq, part).expect("listed");
            let is_write = matches!(
                self.pending.get(seq).map(|o| &o.change),
                Some(Change::Op(OpKind::Write { .. }))
            );
            let kept_whole = keep.contains(&(seq, part));
            let tear = spec.tear
                && is_write
                && match spec.keep {
                    Keep::None => true,
                    Keep::Random => kept_whole,
                    Keep::Prefix => Some(i) == boundary,
                };
            if !kept_whole && !tear {
                report.dropped.push(view);
                continue;
            }
            let mut taken = self.pending.take_unit(seq, part).expect("listed");
            let torn = if tear {
                self.tear(&mut taken, &mut rng)
            } else {
                None
            };
            if torn.is_none() && !kept_whole {
                // Inside one sector: storage writes it whole or not at all.
                report.dropped.push(view);
                continue;
            }
            match (self.apply_taken(&taken), torn) {
                // Kept by the crash, refused by the disk: lost after all.
                (Err(e), _) => report.refused.push(Refused {
                    op: view,
                    error: e.to_string(),
                }),
                (Ok(()), Some(tear)) => report.torn.push(Torn { op: view, tear }),
                (Ok(()), None) => report.kept.push(view),
            }
        }
        self.pending.clear();
        self.refused.clear();
        self.durable.free_orphans()?;
        Ok(report)
    }

    /// Tears a write a crash lets reach the disk as storage tears it (a
    /// tear the seed picks): what reached the disk, for people, or `None`
    /// when it cannot be torn (not a write, or inside one sector).
    fn tear(&self, taken: &mut Taken, rng: &mut Rng) -> Option<String> {
        let Change::Op(OpKind::Write { ino, off, .. }) = taken.op.change else {
            return None;
        };
        let size_before = self
            .durable
            .reach(ino)
            .ok()
            .flatten()
            .and_then(|p| fs::symlink_metadata(&*p).ok())
            .map_or(0, |m| m.len());
        let len = taken.op.data.len() as u64;
        let offered = Tear::offered(off, len, size_before, SECTOR);
        if offered.is_empty() {
            return None;
        }
        let t = offered[rng.below(offered.len() as u64) as usize];
        match t.cut(off, len, size_before, SECTOR) {
            Some(Cut::Prefix(n)) => {
                let mut d = std::mem::take(&mut taken.op.data).into_vec();
                d.truncate(n as usize);
                taken.op.data = d.into_boxed_slice();
            }
            Some(Cut::SizeOnly) => taken.size_only = true,
            None => {}
        }
        Some(t.describe().to_string())
    }
}
