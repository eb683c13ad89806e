//! Which syncs matter. A trace's syncs are grouped by call site
//! ([`sync_sites`]: the source line with `--stacks`, else the call and the
//! path, or the path's role when a site syncs several files); `--syncs`'
//! judge (the `needed` module) re-explores the trace without each site's syncs
//! ([`crate::explain::without_syncs`]) and checks its states, and
//! [`Removal`] says what each state means for the trace as recorded: a
//! state the recorded trace cannot make (it loses an op one of the removed
//! syncs made durable), and whether what it loses was durable before a
//! promise. A site is **needed** when such a state fails, **not needed**
//! when every state checked without it passes or fails as it did with it
//! ([`SyncCheck`]); and a checker that accepts a state missing data synced
//! before a promise is **weak** on it ([`SyncsReport::weak`]).

use serde::Serialize;

use blackout_explore::enumerate::StateDesc;
use blackout_explore::model::Model;
use blackout_oplog::ops::{synced_by, Ino, OpKind, Part, SyncedBy};
use blackout_oplog::promises::Outputs;
use blackout_oplog::trace::Trace;

use crate::explain::{recorded_index, role};

/// One call site's syncs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyncSite {
    /// The site for people: `fsync(doc.txt.tmp)`, `fdatasync(files named
    /// like #.log)`, `fsync in append at src/log.rs:88`; an implied sync
    /// reads as the write that made it (`pwrite64 with O_SYNC(db)`).
    pub call: String,
    /// Its sync ops (indices in the trace), ascending.
    pub ops: Vec<usize>,
}

/// The trace's syncs grouped by call site, in the order of each site's
/// first call. Two syncs share a site when the same call made them at the
/// same source line (with `--stacks`), else when the same call synced
/// paths of one role (`000003.log` and `000005.log` play one).
pub fn sync_sites(trace: &Trace) -> Vec<SyncSite> {
    struct Site {
        key: (String, String),
        call: String,
        origin: Option<String>,
        paths: Vec<String>,
        ops: Vec<usize>,
    }
    let mut sites: Vec<Site> = Vec::new();
    for (i, op) in trace.ops.iter().enumerate() {
        let call = match op.kind {
            OpKind::Fsync { implied: true, .. } => format!("{} with O_SYNC", op.syscall),
            OpKind::Fdatasync { implied: true, .. } => format!("{} with O_DSYNC", op.syscall),
            ref k if k.is_sync() => op.syscall.clone(),
            _ => continue,
        };
        let path = match op.kind {
            OpKind::Sync { .. } => String::new(),
            _ => trace.show_path(&op.path),
        };
        let origin = op.origin.as_ref().map(|o| o.describe());
        let key = (call.clone(), origin.clone().unwrap_or_else(|| role(&path)));
        match sites.iter_mut().find(|s| s.key == key) {
            Some(site) => {
                if !site.paths.contains(&path) {
                    site.paths.push(path);
                }
                site.ops.push(i);
            }
            None => sites.push(Site {
                key,
                call,
                origin,
                paths: vec![path],
                ops: vec![i],
            }),
        }
    }
    sites
        .into_iter()
        .map(|s| {
            let call = match (&s.origin, s.paths.as_slice()) {
                (Some(origin), _) => format!("{} in {origin}", s.call),
                (None, [one]) => format!("{}({one})", s.call),
                (None, more) => format!("{}(files named like {})", s.call, role(&more[0])),
            };
            SyncSite { call, ops: s.ops }
        })
        .collect()
}

/// A trace without a site's syncs, read against the trace as recorded.
pub struct Removal<'a> {
    outputs: &'a Outputs,
    synced: Vec<SyncedBy>,
    gone: Vec<usize>,
    /// For each op of the recorded trace: whether it carries data anyone
    /// was promised (not an op on a file the program rebuilds on restart,
    /// `--volatile`, nor its entry).
    promised: Vec<bool>,
}

impl<'a> Removal<'a> {
    /// The removal of the syncs at `gone` (indices in `trace`, ascending)
    /// from `trace`, whose promises are `outputs`.
    pub fn new(trace: &Trace, outputs: &'a Outputs, gone: &[usize]) -> Removal<'a> {
        let volatile: std::collections::HashSet<Ino> = trace
            .ops
            .iter()
            .filter(|op| op.volatile)
            .filter_map(|op| op.kind.data_inode())
            .collect();
        let promised = trace
            .ops
            .iter()
            .map(|op| match op.kind {
                OpKind::Link { ino, .. }
                | OpKind::Unlink { ino, .. }
                | OpKind::Rename { ino, .. } => !volatile.contains(&ino),
                _ => !op.volatile,
            })
            .collect();
        Removal {
            outputs,
            synced: synced_by(&trace.ops),
            gone: gone.to_vec(),
            promised,
        }
    }

    /// The crash point in the recorded trace of crash point `k` of the
    /// trace without the syncs: right after the last op it had issued.
    pub fn crash(&self, k: usize) -> usize {
        if k == 0 {
            0
        } else {
            recorded_index(k - 1, &self.gone) + 1
        }
    }

    /// `desc` (a state of the trace without the syncs) with the numbers
    /// its crash point and ops have in the recorded trace, for people.
    pub fn recorded(&self, desc: &StateDesc) -> StateDesc {
        StateDesc {
            crash: self.crash(desc.crash),
            lost: desc
                .lost
                .iter()
                .map(|u| blackout_oplog::ops::Unit {
                    op: recorded_index(u.op, &self.gone),
                    part: u.part,
                })
                .collect::<Vec<_>>()
                .into(),
            torn: desc
                .torn
                .map(|(op, tear)| (recorded_index(op, &self.gone), tear)),
        }
    }

    /// Each op (index in the recorded trace) `desc` loses or tears that a
    /// sync of the recorded trace made durable before its crash, with that
    /// sync: a state the recorded trace cannot make, which only the
    /// removal allows.
    fn durable_lost<'d>(
        &'d self,
        desc: &'d StateDesc,
    ) -> impl Iterator<Item = (usize, usize)> + 'd {
        let k = self.crash(desc.crash);
        let covered = move |op: usize, part: Part| {
            let o = recorded_index(op, &self.gone);
            let s = self.synced.get(o)?.of(part);
            s.filter(|&s| s < k).map(|s| (o, s))
        };
        let torn = desc.torn.map(|(op, _)| (op, Part::Whole));
        desc.lost
            .iter()
            .map(|u| (u.op, u.part))
            .chain(torn)
            .filter_map(move |(op, part)| covered(op, part))
    }

    /// Whether `desc` (a state of the trace without the syncs) is one the
    /// recorded trace cannot make.
    pub fn is_new(&self, desc: &StateDesc) -> bool {
        self.durable_lost(desc).next().is_some()
    }

    /// The promise `desc` breaks by the model alone: the latest line
    /// printed before its crash, when a removed sync had made something it
    /// loses durable before that line was printed (not an op on a file the
    /// program rebuilds on restart, `--volatile`, nor its entry).
    pub fn promise_lost(&self, desc: &StateDesc) -> Option<String> {
        let k = self.crash(desc.crash);
        let (p, line) = self.outputs.latest_promise_before(k)?;
        self.durable_lost(desc)
            .any(|(o, s)| s < p && self.promised.get(o).copied().unwrap_or(true))
            .then(|| String::from_utf8_lossy(line).into_owned())
    }
}

/// Whether a site's syncs are needed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum SyncVerdict {
    /// A state only their removal allows fails.
    Needed {
        /// The simplest such state (op numbers of the recorded trace).
        state: String,
        /// What the checker said of it.
        reason: String,
        /// Why it fails, one sentence.
        why: String,
    },
    /// Every state checked without them passes, or fails as it did with
    /// them.
    NotNeeded,
    /// The bound ended the check before a state was checked, or the
    /// checker could not be run.
    NotKnown,
}

/// One site's syncs judged.
#[derive(Debug, Clone, Serialize)]
pub struct SyncCheck {
    /// The site.
    pub site: SyncSite,
    /// Needed, not needed, or not known.
    #[serde(flatten)]
    pub verdict: SyncVerdict,
    /// Every state of the trace without them was explored and checked.
    pub exact: bool,
    /// Distinct states of the trace without them.
    pub states: usize,
    /// Of them, checked.
    pub states_checked: usize,
    /// States only their removal allows that fail.
    pub new_failing: usize,
    /// Some state of the trace without them loses data they made durable
    /// before a promise (the model knows the promise broken, whatever the
    /// checker says).
    pub loses_promised: bool,
    /// The simplest such state the checker accepted, and the promise: on a
    /// site not needed, the checker is weak on it ([`SyncsReport::weak`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepted_loss: Option<(String, String)>,
    /// Seconds the recorded run spent in these syncs, when it was recorded
    /// with call times.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// With the block backend: the site measured on the real file system,
    /// the workload run again without its syncs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_fs: Option<FsSyncCheck>,
}

/// A site measured on a real file system: the workload recorded on it
/// again with the site's syncs taken out of the program (not out of the
/// trace), and the device's crash states checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FsSyncCheck {
    /// The file system (`ext4`).
    pub fs: String,
    /// Needed there, not needed, or not measured.
    #[serde(flatten)]
    pub verdict: FsSyncVerdict,
}

/// Whether a site's syncs are needed on a real file system.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum FsSyncVerdict {
    /// A state of the run without them fails (every state of the run with
    /// them passed).
    Needed {
        /// The first failing state found (`b7.lost2`, in the run without
        /// them).
        state: String,
        /// What the checker said of it.
        reason: String,
        /// Which run without them failed (from 1), of how many it would
        /// have made (`--repeat`): the runs stop at the first failure.
        run: u32,
        /// The runs it would have made.
        runs: u32,
    },
    /// Every state of the run without them checked passes.
    NotNeeded {
        /// Every state was checked (none left out, no budget ended it).
        exact: bool,
        /// Distinct states after recovery, checked (the most of any run).
        distinct: usize,
        /// Runs without them, every one passing (`--repeat`).
        runs: u32,
        /// With `--settle`: the crash points were those at least this many
        /// seconds after the last promise; without, those up to the
        /// program's exit (what the file system writes later is not
        /// recorded).
        #[serde(skip_serializing_if = "Option::is_none")]
        settle: Option<f64>,
    },
    /// Not measured, and why: the run fails with them too, the program
    /// makes them in a way that cannot be taken out, or its states could
    /// not be judged.
    NotMeasured {
        /// Why, one clause.
        why: String,
    },
}

impl FsSyncCheck {
    /// The site's clause on the file system, for every report format,
    /// `them` naming its syncs (`it`, `them`): `on ext4: not needed: the
    /// program run without it passes in every one of its 4 distinct
    /// states`.
    pub fn sentence(&self, them: &str) -> String {
        let fs = &self.fs;
        match &self.verdict {
            FsSyncVerdict::Needed {
                state,
                reason,
                run,
                runs,
            } => {
                let which = match runs {
                    1 => String::new(),
                    n => format!(" (run {run} of {n})"),
                };
                format!("on {fs}: needed: the program run without {them} fails in its state {state}{which}: {reason}")
            }
            FsSyncVerdict::NotNeeded {
                exact,
                distinct,
                runs,
                settle,
            } => format!(
                "on {fs}: not needed{}: the program run without {them} passes in every one of its {distinct} distinct states{} ({}; a run that writes back at other moments can differ)",
                match runs {
                    1 => String::new(),
                    n => format!(" in {n} runs"),
                },
                if *exact { "" } else { " checked" },
                match settle {
                    Some(secs) => format!("crashes at least {secs} s after the last promise"),
                    None => "crashes until the program exited: --settle SECS records what the file system writes after".into(),
                }
            ),
            FsSyncVerdict::NotMeasured { why } => format!("on {fs}: not measured: {why}"),
        }
    }
}

/// Every sync site of a run judged, under one model.
#[derive(Debug, Clone, Serialize)]
pub struct SyncsReport {
    /// The model the removals were explored under.
    pub model: Model,
    /// Each site, in the order of its first call.
    pub sites: Vec<SyncCheck>,
    /// Seconds spent judging them.
    pub seconds: f64,
    /// How long judging them could take at most.
    pub bound_seconds: f64,
}

impl SyncsReport {
    /// The checker's mutation score: of the sites whose removal loses
    /// data synced before a promise, how many the checker caught (some
    /// state failed), and how many there are.
    pub fn mutation(&self) -> (usize, usize) {
        let of: Vec<&SyncCheck> = self.sites.iter().filter(|c| c.loses_promised).collect();
        let caught = of
            .iter()
            .filter(|c| matches!(c.verdict, SyncVerdict::Needed { .. }))
            .count();
        (caught, of.len())
    }

    /// The first site the checker misses: its removal loses data synced
    /// before a promise, and no state without it failed (it is not
    /// needed by this checker), with the simplest such state the checker
    /// accepted. The checker is weak there. A site the checker catches in
    /// some state is no evidence, whatever else it accepts: data synced
    /// before a promise can stop mattering (copied elsewhere, superseded),
    /// and only the checker knows when.
    pub fn weak(&self) -> Option<&SyncCheck> {
        self.sites.iter().find(|c| {
            c.loses_promised && c.verdict == SyncVerdict::NotNeeded && c.accepted_loss.is_some()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blackout_oplog::ops::Unit;

    fn trace(log: &str) -> Trace {
        blackout_record::replay::trace_of_log(log.as_bytes(), b"/d").unwrap()
    }

    /// save.sh's full recipe: write a temporary file, fsync it, rename it
    /// over the document, fsync the directory, print "saved", then an
    /// extra fsync of the document.
    const SAVE: &str = "\
1 openat(AT_FDCWD, \"doc.txt.tmp\", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3
1 write(3, \"v2\\n\", 3) = 3
1 fsync(3) = 0
1 rename(\"doc.txt.tmp\", \"doc.txt\") = 0
1 openat(AT_FDCWD, \".\", O_RDONLY|O_DIRECTORY) = 4
1 fsync(4) = 0
1 write(1, \"saved\\n\", 6) = 6
1 openat(AT_FDCWD, \"doc.txt\", O_RDONLY) = 5
1 fsync(5) = 0
";

    #[test]
    fn sites_are_the_call_and_the_path() {
        let t = trace(SAVE);
        let calls: Vec<String> = sync_sites(&t).into_iter().map(|s| s.call).collect();
        assert_eq!(calls, ["fsync(doc.txt.tmp)", "fsync(.)", "fsync(doc.txt)"]);
        let logs = trace(
            "1 openat(AT_FDCWD, \"000003.log\", O_WRONLY|O_CREAT, 0644) = 3\n1 fsync(3) = 0\n\
             1 openat(AT_FDCWD, \"000004.log\", O_WRONLY|O_CREAT, 0644) = 4\n1 fsync(4) = 0\n",
        );
        let sites = sync_sites(&logs);
        assert_eq!(sites.len(), 1);
        assert_eq!(sites[0].call, "fsync(files named like #.log)");
        assert_eq!(sites[0].ops, [1, 3]);
    }

    #[test]
    fn a_state_is_new_when_it_loses_what_a_removed_sync_made_durable() {
        let t = trace(SAVE);
        let outputs = Outputs::new(&t, None);
        // Without the file's fsync (op 2): ops after it move down one.
        let gone = [2];
        let r = Removal::new(&t, &outputs, &gone);
        assert_eq!(r.crash(2), 2);
        assert_eq!(r.crash(3), 4);
        let lost = |crash: usize, ops: &[usize]| StateDesc {
            crash,
            lost: ops
                .iter()
                .map(|&op| Unit {
                    op,
                    part: Part::Whole,
                })
                .collect::<Vec<_>>()
                .into(),
            torn: None,
        };
        // The write lost after the directory's fsync and "saved": only the
        // removal allows it, and "saved" was printed after the file's
        // fsync made it durable.
        let after_saved = lost(7, &[1]);
        assert!(r.is_new(&after_saved));
        assert_eq!(r.promise_lost(&after_saved).as_deref(), Some("saved"));
        // Lost before the fsync's place: the recorded trace makes it too.
        let before = lost(2, &[1]);
        assert!(!r.is_new(&before));
        assert_eq!(r.promise_lost(&before), None);
        // Lost before "saved": new, but nothing promised yet.
        let unpromised = lost(4, &[1]);
        assert!(r.is_new(&unpromised));
        assert_eq!(r.promise_lost(&unpromised), None);
    }
}
