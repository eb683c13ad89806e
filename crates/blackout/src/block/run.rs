//! A block run whole, as `blackout run --backend block` makes it: the
//! workload recorded on a real file system (or a saved recording read
//! back), the posix model checked on its trace beside it, the device's
//! crash states checked and each failure blamed against posix; with
//! `repeat` the whole thing again on a fresh file system each time, the
//! worst run kept; with [`RunConfig::syncs`] each sync site of that run
//! measured on the file system ([`super::syncs`]). A shard of a saved
//! recording checks its share of both sides ([`BlockRun::shard`]), and
//! [`BlockRun::merge`] makes the one report of the shards' parts, its
//! block settings read back from the parts.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use blackout_analysis::block::BlockSide;
use blackout_analysis::report::{RunReport, Verdict};
use blackout_record::{RecordConfig, StraceRecorder};
use blackout_sys::scratch::default_scratch_parent;

use super::sharded::{check_block_shard, merge_block};
use super::syncs::{measure_syncs_on_fs, FsSyncRuns};
use super::BlockReport;
use super::{check_block, record_block, BlockCheck, BlockConfig, BlockError, BlockRecording};
use crate::run::{check_trace, RunConfig, RunError};
use crate::shard::{PartError, Settings, Shard, ShardPart};
use crate::sharded::{merge_with, shard_with, MergeError};

/// Where a block run's recording comes from.
pub enum BlockSource {
    /// The workload recorded on a fresh file system, once per run.
    Record {
        /// What to record: the workload, its setup, where it prints its
        /// promises.
        record: Box<RecordConfig>,
        /// The recorder.
        recorder: StraceRecorder,
    },
    /// A saved recording (`run --backend block -o`), checked as it was
    /// made: once, whatever `repeat` says, and without `--syncs`' runs
    /// (there is no workload to run again).
    Saved(Box<BlockRecording>),
}

/// A block run's settings: the device's, the posix side's, and how many
/// times to run.
///
/// ```no_run
/// use blackout::block::run::{BlockRun, BlockSource};
/// use blackout::block::BlockConfig;
/// use blackout::block_device::session::FsKind;
/// use blackout::record::{RecordConfig, StraceRecorder};
/// use blackout::run::RunConfig;
///
/// let mut cfg = RunConfig::new("test -s doc.txt");
/// cfg.models = vec![blackout::explore::model::Model::Posix];
/// let run = BlockRun::new(BlockConfig::new(FsKind::Ext4), &cfg);
/// let source = BlockSource::Record {
///     record: Box::new(RecordConfig::new(vec!["./save.sh".into()])),
///     recorder: StraceRecorder::default(),
/// };
/// let done = run.run(source).unwrap();
/// println!("{}", done.report.final_verdict().name());
/// ```
pub struct BlockRun<'a> {
    /// The file system and the device's settings.
    pub config: BlockConfig,
    /// The posix side: the models, the checker (also the device states'),
    /// `-j`, the check budget, the promise prefix, the cancel flag,
    /// `--syncs`.
    pub run: &'a RunConfig,
    /// Runs on a fresh file system each (at least one); the worst is
    /// kept.
    pub repeat: u32,
    /// Where each recording is saved (`-o`), the last one made staying.
    pub save: Option<PathBuf>,
    /// Where to say what each run recorded and found (the command's
    /// standard error); `None` says nothing.
    pub notes: Option<&'a dyn Fn(&str)>,
}

/// What a block run found: the kept run's recording, and the posix
/// report with the file system's side ([`RunReport::block`]).
pub struct BlockRunReport {
    /// The recording checked (the worst run's with `repeat`).
    pub recording: BlockRecording,
    /// The posix report with the file system's beside it.
    pub report: RunReport,
}

/// Why a block run could not finish, by the step that failed.
#[derive(Debug, thiserror::Error)]
pub enum BlockRunError {
    /// Cancelled through the run's cancel flag.
    #[error("interrupted")]
    Interrupted,
    /// Recording the workload on the file system failed.
    #[error(transparent)]
    Record(BlockError),
    /// The recording could not be saved.
    #[error("cannot write {}", path.display())]
    Save {
        /// Where it was to go.
        path: PathBuf,
        /// Why not.
        #[source]
        source: io::Error,
    },
    /// Checking the posix model on the trace failed.
    #[error("checking the posix model's crash states")]
    Posix(#[source] RunError),
    /// Checking the device's states failed.
    #[error("checking the block device's crash states")]
    Check(#[source] BlockError),
    /// A shard's posix side failed.
    #[error("checking crash states")]
    Shard(#[source] RunError),
    /// The posix side of the parts could not be merged.
    #[error("merging the parts")]
    Merge(#[source] MergeError),
    /// A part holds no block share where the first does.
    #[error("{part} holds no block share, {first} does: parts of one run")]
    NoBlockShare {
        /// The part without one.
        part: String,
        /// The first part.
        first: String,
    },
    /// The first part was not made on a real file system (or there is
    /// none).
    #[error("{part} was not made on a real file system: its settings name none")]
    NoBlockSettings {
        /// The first part, if there is one.
        part: String,
    },
    /// The parts' block shares do not make one run.
    #[error(transparent)]
    Part(PartError),
}

/// One recording checked on both sides.
struct Once {
    rec: BlockRecording,
    posix: RunReport,
    block: Option<BlockReport>,
}

impl Once {
    /// The run's verdict and failing states, for finding the worst run.
    fn outcome(&self) -> (Verdict, usize) {
        match &self.block {
            Some(b) => (b.verdict, b.failing.len()),
            None => (self.posix.verdict, 0),
        }
    }

    /// The posix report with the file system's side, and `runs` when
    /// there were several.
    fn into_report(self, runs: Vec<(Verdict, usize)>) -> BlockRunReport {
        let Once {
            rec,
            mut posix,
            block,
        } = self;
        posix.block = Some(BlockSide {
            fs: rec.fs.name().to_string(),
            report: block,
            repeat: if runs.len() > 1 { runs } else { Vec::new() },
        });
        BlockRunReport {
            recording: rec,
            report: posix,
        }
    }
}

impl<'a> BlockRun<'a> {
    /// One run of `config`'s file system beside `run`'s posix side, saved
    /// nowhere, saying nothing.
    pub fn new(config: BlockConfig, run: &'a RunConfig) -> BlockRun<'a> {
        BlockRun {
            config,
            run,
            repeat: 1,
            save: None,
            notes: None,
        }
    }

    /// Records (or reads back) and checks `repeat` times, keeps the worst
    /// run, and with `--syncs` measures its sync sites on the file system.
    ///
    /// # Errors
    ///
    /// The step that failed ([`BlockRunError`]); a cancel is
    /// [`BlockRunError::Interrupted`] (or the step's own interrupted error).
    pub fn run(&self, source: BlockSource) -> Result<BlockRunReport, BlockRunError> {
        let (record, recorder) = match source {
            BlockSource::Saved(rec) => {
                let once = self.check(*rec, true)?;
                let runs = vec![once.outcome()];
                return Ok(once.into_report(runs));
            }
            BlockSource::Record { record, recorder } => (record, recorder),
        };
        let repeat = self.repeat.max(1);
        let mut runs: Vec<(Verdict, usize)> = Vec::new();
        let mut worst: Option<Once> = None;
        for i in 0..repeat {
            let rec = self.record(&record, &recorder)?;
            let once = self.check(rec, false)?;
            let seen = once.outcome();
            if repeat > 1 {
                self.note(&format!(
                    "run {} of {repeat}: {} ({} failing states)",
                    i + 1,
                    seen.0.name(),
                    seen.1
                ));
            }
            runs.push(seen);
            if worst.as_ref().is_none_or(|w| seen > w.outcome()) {
                worst = Some(once);
            }
        }
        let Some(mut worst) = worst else {
            unreachable!("at least one run");
        };
        self.measure_syncs(&record, &recorder, &mut worst)?;
        Ok(worst.into_report(runs))
    }

    /// A shard's share of a saved recording: the posix model's distinct
    /// states and the device's images that fall in `shard`, in one part.
    ///
    /// # Errors
    ///
    /// [`BlockRunError::Check`] from the device's side,
    /// [`BlockRunError::Shard`] from the posix side.
    pub fn shard(&self, rec: &BlockRecording, shard: Shard) -> Result<ShardPart, BlockRunError> {
        let block = check_block_shard(rec, &self.how(None), shard).map_err(BlockRunError::Check)?;
        let settings = self.settings();
        let part = shard_with(&rec.trace, self.run, settings, shard);
        let mut part = part.map_err(BlockRunError::Shard)?;
        part.block = Some(block);
        Ok(part)
    }

    /// Every setting of this run that changes what it finds, the model
    /// side's and the file system's: one value its shards' parts carry
    /// and a merge compares whole.
    pub fn settings(&self) -> Settings {
        Settings {
            block: Some(self.config.settings()),
            ..self.run.settings()
        }
    }

    /// `blackout merge` of a block run's parts: the posix report merged as
    /// a model run's, the file system's from every part's share (with the
    /// block settings the parts were made with), blamed against it.
    ///
    /// # Errors
    ///
    /// Parts that do not make one run, or a merge that could not finish.
    pub fn merge(
        rec: &BlockRecording,
        run: &RunConfig,
        parts: &[ShardPart],
    ) -> Result<RunReport, BlockRunError> {
        let first = parts
            .first()
            .map(|p| (p.label(), p.settings.block.as_ref()));
        let Some((label, Some(settings))) = first else {
            let part = first.map_or_else(String::new, |f| f.0);
            return Err(BlockRunError::NoBlockSettings { part });
        };
        let config = BlockConfig::from_settings(rec.fs, settings);
        let merging = BlockRun::new(config, run);
        let settings = merging.settings();
        let posix = merge_with(&rec.trace, run, &settings, parts);
        let mut posix = posix.map_err(BlockRunError::Merge)?;
        let mut shares = Vec::with_capacity(parts.len());
        for p in parts {
            let block = p
                .block
                .as_ref()
                .ok_or_else(|| BlockRunError::NoBlockShare {
                    part: p.label(),
                    first: label.clone(),
                })?;
            shares.push((p.shard, block));
        }
        // The parts' settings equal the run's whole (merge_with), the
        // promise prefix among them.
        let block = if matches!(posix.verdict, Verdict::Pass | Verdict::Fail) {
            let how = merging.how(Some(&posix));
            shares.sort_by_key(|s| s.0.index);
            Some(merge_block(rec, &how, &shares).map_err(BlockRunError::Part)?)
        } else {
            None
        };
        posix.block = Some(BlockSide {
            fs: rec.fs.name().to_string(),
            report: block,
            repeat: Vec::new(),
        });
        Ok(posix)
    }

    /// Records the workload once on a fresh file system.
    fn record(
        &self,
        record: &RecordConfig,
        recorder: &StraceRecorder,
    ) -> Result<BlockRecording, BlockRunError> {
        let recorded = record_block(&self.config, record, recorder);
        let cancelled = self.run.handles.cancel.as_deref();
        if cancelled.is_some_and(|c| c.load(Ordering::SeqCst)) {
            return Err(BlockRunError::Interrupted);
        }
        recorded.map_err(BlockRunError::Record)
    }

    /// Saves `rec` if asked, checks the posix model on its trace and,
    /// when that could judge, the device's states.
    fn check(&self, rec: BlockRecording, loaded: bool) -> Result<Once, BlockRunError> {
        if let Some(out) = &self.save {
            rec.save(out).map_err(|source| BlockRunError::Save {
                path: out.clone(),
                source,
            })?;
        }
        self.note(&format!(
            "{} {} ops and {} block records on {} (base at record {})",
            if loaded { "loaded" } else { "recorded" },
            rec.trace.ops.len(),
            rec.device.log().records.len(),
            rec.fs,
            rec.device.base()
        ));
        let posix = check_trace(&rec.trace, self.run).map_err(BlockRunError::Posix)?;
        let block = if matches!(posix.verdict, Verdict::Pass | Verdict::Fail) {
            let how = self.how(Some(&posix));
            Some(check_block(&rec, &how).map_err(BlockRunError::Check)?)
        } else {
            None
        };
        Ok(Once { rec, posix, block })
    }

    /// With `--syncs`: each sync site of the (worst) run run again without
    /// its syncs, `repeat` times.
    fn measure_syncs(
        &self,
        record: &RecordConfig,
        recorder: &StraceRecorder,
        run: &mut Once,
    ) -> Result<(), BlockRunError> {
        let Once { rec, posix, block } = run;
        if let (Some(syncs), Some(with)) = (&mut posix.syncs, &*block) {
            let runs = FsSyncRuns {
                record,
                recorder,
                check: &self.how(None),
                repeat: self.repeat.max(1),
            };
            measure_syncs_on_fs(&runs, &rec.trace, with, syncs).map_err(BlockRunError::Check)?;
        }
        Ok(())
    }

    /// How this run checks its block states, matched to `posix`'s.
    fn how<'b>(&'b self, posix: Option<&'b RunReport>) -> BlockCheck<'b> {
        BlockCheck {
            config: &self.config,
            checker: self.run.checker.as_ref(),
            ack_prefix: self.run.ack_prefix.as_deref(),
            scratch_parent: self
                .run
                .handles
                .scratch_parent
                .clone()
                .unwrap_or_else(default_scratch_parent),
            cancel: self.run.handles.cancel.as_deref(),
            posix,
            budget: self.run.check_budget,
            jobs: self.run.jobs,
        }
    }

    fn note(&self, line: &str) {
        if let Some(notes) = self.notes {
            notes(line);
        }
    }
}
