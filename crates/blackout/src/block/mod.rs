//! The real-file-system backend: the workload runs on a real ext4, xfs or
//! btrfs whose block device is recorded ([`blackout_block`]), traced by
//! strace at the same time; every crash point's device (with each subset
//! of the writes in flight, within a bound) is rebuilt, mounted so the file
//! system's own recovery runs, and checked in place.
//!
//! [`record_block`] makes a [`BlockRecording`]: the block log and its data,
//! the syscall trace, and when each call returned. [`check_block`] checks
//! every state and makes a [`BlockReport`]; each failing state is matched
//! to the posix model's failing states by what its files hold, which names
//! the lost operation in the model backend's terms — and a real failure
//! the posix model does not reproduce is the differential check's finding.

use std::fs;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use blackout_analysis::blame::{blame, ops_done};
pub use blackout_analysis::block::{
    block_verdict, Blame, BlockChecked, BlockReport, FsckComplaint, PointInfo, Timings,
};
use blackout_analysis::report::RunReport;
use blackout_block::crash::{crash_points_settled, LogPoint};
use blackout_block::session::{tool_installed, DeviceSession, FsKind, SessionConfig, SessionError};
use blackout_block::states::{enumerate, window, BlockState, SubsetCoverage, Window};
use blackout_check::image::{listing, ImageSource, ImageTally, Images, Listing};
use blackout_check::shard::BlockSettings;
use blackout_check::workers::{PoolError, Scratch, Workers};
use blackout_check::Checker;
use blackout_explore::model::Model;
use blackout_explore::state::{FsState, SECTOR_BYTES_DEFAULT};
use blackout_oplog::outcome::Outcome;
use blackout_oplog::promises::join_lines;
use blackout_oplog::promises::{LineBuffer, PromiseRule};
use blackout_record::record::{prepare_dir, RecordConfig, RecordError, StraceRecorder};
use blackout_record::Recorder;

pub use blackout_block::states::SUBSETS_MAX_DEFAULT;

pub mod run;
/// Saved recordings of a real file system (the checking crate's).
pub use blackout_check::saved;
pub use blackout_check::saved::BlockRecording;
pub mod sharded;
pub mod syncs;

/// The block backend's own settings.
#[derive(Debug, Clone)]
pub struct BlockConfig {
    /// The file system, its device size, mkfs and mount options, and where
    /// the device's scratch directory goes.
    pub session: SessionConfig,
    /// Subsets of the writes in flight tried per crash point.
    pub max_subsets: usize,
    /// Seed for the subsets sampled when a window has too many.
    pub seed: u64,
    /// Keep the file system up this long after the workload, and check
    /// only crash points at least this long after the last promise.
    pub settle: Option<Duration>,
    /// Also run the file system's own checker ([`FsKind::fsck`],
    /// read-only) on each state after it was mounted and checked.
    pub fsck: bool,
}

impl BlockConfig {
    /// Defaults for `fs`: a device of 128 MiB, or the least the file
    /// system needs if that is more.
    pub fn new(fs: FsKind) -> BlockConfig {
        let mut session = SessionConfig::new(fs);
        session.size = session.size.max(fs.min_size());
        BlockConfig {
            session,
            max_subsets: SUBSETS_MAX_DEFAULT,
            seed: 0,
            settle: None,
            fsck: false,
        }
    }

    /// What of these settings changes what a run finds (what the shards
    /// of one must share).
    pub fn settings(&self) -> BlockSettings {
        BlockSettings {
            fs: self.session.fs.name().to_string(),
            mount_opts: self.session.mount_opts.join(","),
            max_subsets: self.max_subsets,
            seed: self.seed,
            fsck: self.fsck,
        }
    }

    /// Settings on `fs` that find what `settings` found (the others at
    /// their defaults): what merges the parts of a sharded run.
    pub fn from_settings(fs: FsKind, settings: &BlockSettings) -> BlockConfig {
        let mut config = BlockConfig::new(fs);
        config.session.mount_opts = Some(settings.mount_opts.clone())
            .filter(|o| !o.is_empty())
            .into_iter()
            .collect();
        config.max_subsets = settings.max_subsets;
        config.seed = settings.seed;
        config.fsck = settings.fsck;
        config
    }
}

/// Why a block run could not finish.
#[derive(Debug, thiserror::Error)]
pub enum BlockError {
    /// The device could not be set up or taken down (a requirement missing:
    /// root, FUSE, a loop device, a tool).
    #[error(transparent)]
    Session(#[from] SessionError),
    /// Recording the workload failed.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// `--fsck` without the file system's checker installed.
    #[error("--fsck needs {0} (Debian package {1})")]
    FsckMissing(&'static str, &'static str),
    /// Cancelled (Ctrl-C): everything was taken down.
    #[error("interrupted")]
    Interrupted,
    /// I/O on the scratch directory.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Records `record.command` on a fresh `config.session.fs`: the device is
/// made, `init` and `setup` fill the file system and the base is taken,
/// then the workload runs under strace with `{dir}` and its working
/// directory at the mount and its output stream (its standard output, or
/// `record.output_fd`) logged as marks.
///
/// # Errors
///
/// A requirement missing, the workload failing to start or being killed,
/// the log unreadable, or a cancel (then everything is taken down).
pub fn record_block(
    config: &BlockConfig,
    record: &RecordConfig,
    recorder: &StraceRecorder,
) -> Result<BlockRecording, BlockError> {
    let mut session = DeviceSession::start(&config.session)?;
    let mount = session.mount_path();
    prepare_dir(record, &mount)?;
    session.rebase()?;
    let mut rc = record.clone();
    rc.init = None;
    rc.setup = None;
    rc.dir = Some(mount);
    rc.stdout = Some(session.output_path());
    rc.timestamps = true;
    let recorded = recorder.record(&rc)?;
    // A last line printed without a newline is a promise once the workload
    // exited normally (the promise rule): marked where it ended.
    let mut lines = LineBuffer::default();
    lines.push(&session.output(), |_| {});
    if let Some(tail) = lines.finish(recorded.trace.exit.code.is_some()) {
        session.mark(&String::from_utf8_lossy(&tail));
    }
    let exited = session.position();
    if let Some(settle) = config.settle {
        let until = Instant::now() + settle;
        while Instant::now() < until {
            if record
                .cancel
                .as_deref()
                .is_some_and(|c| c.load(Ordering::Relaxed))
            {
                return Err(BlockError::Interrupted);
            }
            std::thread::sleep(Duration::from_millis(50).min(until - Instant::now()));
        }
    }
    let end = session.position();
    let output = session.output();
    let started_unix = session.log_started_unix();
    let device = session.finish()?;
    let times = recorded.call_times;
    Ok(BlockRecording {
        fs: config.session.fs,
        trace: recorded.trace,
        device,
        end,
        exited,
        settle: config.settle,
        started_unix,
        returned: times.into_iter().collect(),
        output,
        stdout: recorded.stdout,
        stderr: recorded.stderr,
    })
}

/// How to check a block recording.
pub struct BlockCheck<'a> {
    /// The block settings (file system, mount options, subsets, settle).
    pub config: &'a BlockConfig,
    /// The checker, run with its working directory at the mounted state.
    pub checker: &'a dyn Checker,
    /// Only lines starting with this are promises.
    pub ack_prefix: Option<&'a [u8]>,
    /// Where the scratch directory goes.
    pub scratch_parent: PathBuf,
    /// Set from outside to stop (the state being checked is unmounted).
    pub cancel: Option<&'a AtomicBool>,
    /// The posix model's report on the same trace, to match failures to.
    pub posix: Option<&'a RunReport>,
    /// How long checking states may take (the run's check budget): states
    /// are taken crash point by crash point, and none is started after it;
    /// `None` checks every one.
    pub budget: Option<std::time::Duration>,
    /// States checked at once, each worker with its own image and mount.
    pub jobs: usize,
}

/// Checks every state of `rec` (see the module docs).
///
/// # Errors
///
/// I/O on the scratch directory, a checker that cannot be run at all, or a
/// cancel ([`BlockError::Interrupted`]); the state being checked is
/// unmounted first.
pub fn check_block(rec: &BlockRecording, how: &BlockCheck<'_>) -> Result<BlockReport, BlockError> {
    let started = Instant::now();
    let plan = Plan::new(rec, how);
    let todo: Vec<usize> = (0..plan.states.len()).collect();
    let tally = plan.check(rec, how, &todo, started)?;
    Ok(tallied(
        rec,
        how,
        plan.found(started.elapsed().as_secs_f64()),
        tally,
    ))
}

/// What checking a recording ranges over: the crash points explored, their
/// states, windows and promises.
struct Plan {
    points: Vec<LogPoint>,
    states: Vec<BlockState>,
    coverage: SubsetCoverage,
    windows: Vec<Window>,
    promised: Vec<Vec<String>>,
    texts: Vec<Vec<u8>>,
}

impl Plan {
    fn new(rec: &BlockRecording, how: &BlockCheck<'_>) -> Plan {
        let log = rec.device.log();
        let base = rec.device.base();
        let points = crash_points_settled(log, base, rec.end, rec.exited, rec.settle);
        let (states, coverage) =
            enumerate(log, base, &points, how.config.max_subsets, how.config.seed);
        let windows: Vec<Window> = points.iter().map(|p| window(log, base, p)).collect();
        let rule = PromiseRule::new(how.ack_prefix);
        let promised: Vec<Vec<String>> = points
            .iter()
            .map(|p| rule.promises(log.marks_before(p.position).map(str::as_bytes)))
            .collect();
        let texts: Vec<Vec<u8>> = promised
            .iter()
            .map(|ps| join_lines(&ps.iter().map(|p| p.as_bytes()).collect::<Vec<_>>()))
            .collect();
        Plan {
            points,
            states,
            coverage,
            windows,
            promised,
            texts,
        }
    }

    /// Checks the states at `todo` (indexes, in enumeration order) with the
    /// shared work loop.
    fn check(
        &self,
        rec: &BlockRecording,
        how: &BlockCheck<'_>,
        todo: &[usize],
        started: Instant,
    ) -> Result<ImageTally, BlockError> {
        if how.config.fsck && !tool_installed(rec.fs.fsck().0) {
            return Err(BlockError::FsckMissing(rec.fs.fsck().0, rec.fs.package()));
        }
        let scratch = Scratch::new(&how.scratch_parent)?;
        let source = ImageSource {
            device: &rec.device,
            fs: rec.fs,
            mount_opts: how.config.session.mount_opts.join(","),
            states: &self.states,
            windows: &self.windows,
            promises: &self.texts,
            checker: how.checker,
            fsck: how.config.fsck,
            tally: Mutex::new(ImageTally::default()),
            images: Images::default(),
        };
        let workers = Workers {
            checker: how.checker,
            jobs: how.jobs,
            cancel: how.cancel,
            progress: None,
            scratch: &scratch,
        };
        let ran = workers.run(&source, todo, how.budget.map(|b| started + b));
        let removed = scratch.remove();
        match ran {
            Err(PoolError::Interrupted) => return Err(BlockError::Interrupted),
            Err(PoolError::Io(e)) => return Err(e.into()),
            Ok(_) => removed?,
        }
        Ok(source.into_tally())
    }

    /// The plan as the report needs it, checked in `seconds`.
    fn found(&self, seconds: f64) -> Found<'_> {
        Found {
            points: &self.points,
            states: &self.states,
            promised: &self.promised,
            coverage: self.coverage.clone(),
            seconds,
        }
    }
}

/// What a block check enumerated, for its report.
struct Found<'a> {
    points: &'a [LogPoint],
    states: &'a [BlockState],
    promised: &'a [Vec<String>],
    coverage: SubsetCoverage,
    seconds: f64,
}

/// The report from what the workers found: distinct states and errors in
/// enumeration order (so it does not depend on `-j`), times, fsck.
fn tallied(
    rec: &BlockRecording,
    how: &BlockCheck<'_>,
    f: Found<'_>,
    tally: ImageTally,
) -> BlockReport {
    let states = f.states;
    let entry = |i: usize, outcome: Outcome| {
        let state = &states[i];
        BlockChecked {
            id: state.id(),
            point: state.point,
            lost: state.lost.clone(),
            promises: f.promised[state.point].clone(),
            states: 1,
            outcome,
            blame: None,
        }
    };
    let mut errors: Vec<(usize, BlockChecked)> = tally
        .unmounted
        .iter()
        .map(|(i, why)| {
            (
                *i,
                entry(
                    *i,
                    Outcome::CannotRun {
                        reason: why.clone(),
                    },
                ),
            )
        })
        .collect();
    let mut distinct: Vec<(usize, BlockChecked, Listing)> = Vec::new();
    for found in tally.found.into_values() {
        let Some(outcome) = found.outcome else {
            continue;
        };
        let mut c = entry(found.first, outcome);
        c.states = found.states;
        if !matches!(c.outcome, Outcome::Pass | Outcome::Fail { .. }) {
            errors.push((found.first, c.clone()));
        }
        distinct.push((found.first, c, found.files));
    }
    distinct.sort_by_key(|d| d.0);
    errors.sort_by_key(|e| e.0);
    let mut out = report(
        rec,
        how,
        f.points,
        (tally.visited, states.len()),
        f.coverage,
        distinct.into_iter().map(|(_, c, l)| (c, l)).collect(),
        errors.into_iter().map(|(_, c)| c).collect(),
        f.seconds,
    );
    out.time = tally.time.clone();
    out.fsck = how.config.fsck.then(|| {
        let mut said = tally.fsck;
        said.sort_by_key(|s| s.0);
        said.into_iter()
            .map(|(i, s)| FsckComplaint {
                id: states[i].id(),
                status: s.status,
                line: s.line,
            })
            .collect()
    });
    out
}

#[allow(clippy::too_many_arguments)]
fn report(
    rec: &BlockRecording,
    how: &BlockCheck<'_>,
    points: &[LogPoint],
    (visited, states): (usize, usize),
    coverage: SubsetCoverage,
    distinct: Vec<(BlockChecked, Listing)>,
    errors: Vec<BlockChecked>,
    seconds: f64,
) -> BlockReport {
    let infos = point_infos(rec, points);
    let count = distinct.len();
    let mut posix_misses = Vec::new();
    // A miss is a failure the posix model was asked about and lacks (not
    // one of a run that explored other models only).
    let posix_ran = how
        .posix
        .is_some_and(|r| r.models.iter().any(|m| m.model == Model::Posix));
    let failing: Vec<BlockChecked> = distinct
        .into_iter()
        .filter(|(c, _)| c.outcome.is_fail())
        .map(|(mut c, files)| {
            let blame = blame_state(rec, how.posix, &points[c.point], &files);
            if posix_ran && blame.posix_state.is_none() {
                posix_misses.push(c.id.clone());
            }
            c.blame = Some(blame);
            c
        })
        .collect();
    let (verdict, reason) = block_verdict(
        rec.fs.name(),
        how.budget,
        (failing.len(), errors.len(), count),
        (visited, states),
    );
    BlockReport {
        fs: rec.fs.name().to_string(),
        verdict,
        reason,
        points: infos,
        states,
        states_checked: visited,
        exact: visited == states,
        distinct: count,
        failing,
        errors,
        subsets_left_out: coverage.subsets_left_out.to_string(),
        deepest_window: coverage.deepest_window,
        posix_misses,
        seconds,
        states_per_second: if seconds > 0.0 {
            states as f64 / seconds
        } else {
            0.0
        },
        time: Timings::default(),
        fsck: None,
    }
}

/// Each explored point as the report shows it: what it is after, when,
/// where in the log and how many writes were in flight.
fn point_infos(rec: &BlockRecording, points: &[LogPoint]) -> Vec<PointInfo> {
    let log = rec.device.log();
    let start_nanos = log.records.get(rec.device.base()).map_or(0, |r| r.nanos);
    points
        .iter()
        .enumerate()
        .map(|(index, p)| PointInfo {
            index,
            after: p.barrier.to_string(),
            seconds: p.nanos.saturating_sub(start_nanos) as f64 / 1e9,
            position: p.position,
            in_flight: window(log, rec.device.base(), p).writes.len(),
        })
        .collect()
}

/// The blame of a failing state recovered to `files` at `point`
/// ([`blackout_analysis::blame::blame`]): a posix failing state holds the
/// same files when, written out, it lists as they do.
fn blame_state(
    rec: &BlockRecording,
    posix: Option<&RunReport>,
    point: &LogPoint,
    files: &Listing,
) -> Blame {
    let at = rec.started_unix + point.nanos as f64 / 1e9;
    let k = ops_done(&rec.trace, &rec.returned, at);
    let mut dir: Option<Option<tempfile::TempDir>> = None;
    let mut n = 0;
    blame(&rec.trace, posix, k, |c| {
        let made = dir.get_or_insert_with(|| {
            tempfile::Builder::new()
                .prefix("blackout-match-")
                .tempdir()
                .ok()
        });
        let Some(dir) = made else {
            return false;
        };
        let root = dir.path().join(n.to_string());
        n += 1;
        let fs_state = FsState::build(&rec.trace, &c.desc(), SECTOR_BYTES_DEFAULT);
        let same = fs::create_dir(&root).is_ok()
            && fs_state.write_out(&root).is_ok()
            && listing(&root).is_ok_and(|l| &l == files);
        let _ = blackout_sys::scratch::remove_tree(&root);
        same
    })
}
