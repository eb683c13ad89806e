//! `blackout run`'s flags, its examples, and the settings they become:
//! the run's (`run_config`) and, with `--backend block`, the real file
//! system's (`block_config`).

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{anyhow, Result};
use clap::Args;

use blackout::analysis::fix::FIX_VERIFICATIONS_MAX;
use blackout::block::BlockConfig;
use blackout::block_device::session::FsKind;
use blackout::check::shell::CHECKER_TIMEOUT_SECONDS_DEFAULT;
use blackout::check::CheckerKind;
use blackout::run::RunConfig;

use crate::args::{parse_budget, positive_seconds, ExploreArgs, RecordingArgs, ReportArgs};
use crate::INTERRUPTED;

pub(crate) const RUN_EXAMPLES: &str = "\
Examples:
  Check the bundled save example under every model, keeping the trace:
    blackout run -o run.trace --setup 'echo \"version 1\" > doc.txt' \\
        --checker \"sh $PWD/examples/save/check.sh\" -- examples/save/save.sh no-dir-fsync

  Check that recording again under posix only, with reports for CI:
    blackout run --trace run.trace --model posix --checker \"sh $PWD/examples/save/check.sh\" \\
        --junit blackout.xml --markdown summary.md --html report.html";

#[derive(Args)]
pub(crate) struct RunArgs {
    /// The checker: a shell command run in each crash state's directory
    /// (`{dir}` is replaced by its path). Exit 0 accepts the state.
    #[arg(long, value_name = "CMD", required_unless_present = "checker_server")]
    pub(crate) checker: Option<String>,
    /// A checker server instead: a shell command started once per worker
    /// that reads one JSON request line per state and answers `ok` or
    /// `fail REASON` (docs/CHECKER.md).
    #[arg(long, value_name = "CMD", conflicts_with = "checker")]
    pub(crate) checker_server: Option<String>,
    /// Re-explore this trace instead of recording (with --backend block: a
    /// recording saved by its -o, checked again without the workload).
    #[arg(long, value_name = "TRACE", conflicts_with_all = ["output", "init", "setup", "keep_log", "no_seccomp", "stacks", "volatile", "command", "recorder"])]
    pub(crate) trace: Option<PathBuf>,
    /// Also write the trace here (needed to reproduce a state later; with
    /// --backend block, the whole recording: trace, block log and data).
    #[arg(short = 'o', long = "output", value_name = "TRACE")]
    pub(crate) output: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) recording: RecordingArgs,
    #[command(flatten)]
    pub(crate) explore: ExploreArgs,
    /// Checkers run at once (default: the number of CPUs).
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) jobs: Option<u64>,
    /// Seconds one checker run may take; then it is killed with its process
    /// group and the state counts as an error.
    #[arg(long, value_name = "SECS", default_value_t = CHECKER_TIMEOUT_SECONDS_DEFAULT as f64)]
    pub(crate) timeout: f64,
    /// The checker tests consistency alone: run even if nothing was promised,
    /// and skip the pre-check.
    #[arg(long)]
    pub(crate) consistency_only: bool,
    /// How long checking may go on past the representatives: their states
    /// are always checked, then the rest of the trace is explored in full
    /// and checked, the states most unlike those checked first, until
    /// every distinct state is checked (the verdict is then exact) or this
    /// is spent (a PASS then says it is a sample). Seconds, or with a unit
    /// (90s, 5m, 1h); 0 checks the representatives alone. --exhaustive
    /// checks every state, without a budget.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_budget, conflicts_with = "exhaustive")]
    pub(crate) check_budget: std::time::Duration,
    /// A PASS on a sample (not every distinct state checked) is
    /// INCONCLUSIVE, exit 2: for gates that must not accept a sample.
    #[arg(long)]
    pub(crate) require_exact: bool,
    /// How crash states are shown to the checker: `fuse`, one FUSE mount
    /// per worker whose files are read straight from the trace (a state
    /// costs what the checker reads and writes; needs root and /dev/fuse),
    /// or `dir`, each state written out as a directory. Chosen
    /// automatically (fuse for states of 4 MiB or more, where it can be
    /// mounted); the run says which on standard error.
    #[arg(long, value_name = "KIND", value_parser = ["dir", "fuse"])]
    pub(crate) materializer: Option<String>,
    /// Distinct fixes verified per model (each re-explores the trace with
    /// one added fsync); 0 verifies none. Verification takes at most as long
    /// as the run took to explore and check (at least 5 s): a fix still
    /// being verified then is reported as not verified to the end.
    #[arg(long, value_name = "N", default_value_t = FIX_VERIFICATIONS_MAX)]
    pub(crate) verify_fixes: usize,
    /// How long fix verification may take in all, instead of as long as
    /// the run took (seconds, or with a unit: 90s, 5m, 1h): a fix that must
    /// be verified on every state of a slow checker's long run.
    #[arg(long, value_name = "DURATION", value_parser = parse_budget)]
    pub(crate) fix_time: Option<std::time::Duration>,
    /// Judge every sync the program made, grouped by call site: each
    /// site's syncs taken out, the trace re-explored under posix and its
    /// states checked; "needed" names the simplest state that then breaks a
    /// promise, "not needed" holds for this checker and this run. Also
    /// scores the checker: a state missing data synced before a promise
    /// that it accepts names it weak. Takes as long as fix verification
    /// may (--fix-time) again.
    #[arg(long)]
    pub(crate) syncs: bool,
    /// Make each sync call site's first call fail with EIO (strace injects
    /// the error; the call is not made), run the program again, and check
    /// that run's states under posix, where what a failed sync covered is
    /// never durable: a program that promises after the failure (retrying
    /// the sync, or ignoring the error) and can lose the promised data
    /// fails; one that stops promising passes. Needs the workload (not
    /// --trace); runs it once more per call site.
    #[arg(long, conflicts_with = "trace")]
    pub(crate) fail_syncs: bool,
    #[command(flatten)]
    pub(crate) report: ReportArgs,
    /// Check only shard K of N of the distinct states (with --trace and
    /// --part); `blackout merge` makes the report from every shard's part.
    #[arg(long, value_name = "K/N", conflicts_with_all = ["json", "junit", "markdown", "html"])]
    pub(crate) shard: Option<String>,
    /// With --shard: write what the shard found to FILE (JSON).
    #[arg(long, value_name = "FILE")]
    pub(crate) part: Option<PathBuf>,
    /// Compare the result with a baseline of verdicts and cause kinds
    /// (docs/BASELINE.md): exit 1 if anything is worse than recorded, else
    /// 0 (a recorded FAIL too). Only this case's rows are compared.
    /// BLACKOUT_UPDATE_BASELINE=1 records them instead (not when CI is set).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["shard", "part"])]
    pub(crate) baseline: Option<PathBuf>,
    /// The case's name in the baseline (default: the workload's command
    /// line, joined by spaces; with --trace, the trace file's name).
    #[arg(long, value_name = "NAME", requires = "baseline", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub(crate) case: Option<String>,
    #[command(flatten)]
    pub(crate) block: BlockArgs,
    /// The workload and its arguments (with --trace: none).
    #[arg(
        last = true,
        value_name = "WORKLOAD",
        required_unless_present = "trace"
    )]
    pub(crate) command: Vec<OsString>,
}

/// Where crash states come from.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Backend {
    /// The persistence models over the recorded system calls.
    Model,
    /// A real file system on a recorded block device (root).
    Block,
}

/// The real-file-system backend (`--backend block`).
#[derive(Args, Clone)]
pub(crate) struct BlockArgs {
    /// Where crash states come from: `model` (the persistence models over
    /// the recorded system calls) or `block` (the workload runs on a real
    /// file system on a recorded block device; every crash point's device
    /// is mounted so the file system's recovery runs, then checked, beside
    /// the posix model's verdict, or the models --model names; needs root,
    /// /dev/fuse and a loop device).
    #[arg(long, value_enum, value_name = "BACKEND", default_value_t = Backend::Model)]
    pub(crate) backend: Backend,
    /// With --backend block: the file system (ext4, xfs, btrfs; default
    /// ext4, or with --trace the one the recording was made on).
    #[arg(long = "fs", value_name = "FS", value_parser = parse_fs)]
    pub(crate) fs: Option<String>,
    /// With --backend block: the device size, in bytes or with K, M, G
    /// (default 128M, at least what the file system needs).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub(crate) fs_size: Option<u64>,
    /// With --backend block: options for mkfs, split at spaces.
    #[arg(long, value_name = "OPTS", allow_hyphen_values = true)]
    pub(crate) mkfs_opts: Option<String>,
    /// With --backend block: mount options (`commit=1,data=journal`),
    /// used when recording and for every crash state.
    #[arg(long, value_name = "OPTS")]
    pub(crate) mount_opts: Option<String>,
    /// With --backend block: subsets of the writes in flight since the last
    /// flush tried per crash point (every subset when they fit, else every
    /// prefix, each single write lost, and seeded random ones).
    #[arg(long, value_name = "N", default_value_t = blackout::block::SUBSETS_MAX_DEFAULT as u64, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub(crate) max_subsets: u64,
    /// With --backend block: keep the file system up SECS after the
    /// workload and check only crash points at least SECS after the last
    /// promise: would the promises hold if the machine stayed up that long?
    #[arg(long, value_name = "SECS", value_parser = positive_seconds)]
    pub(crate) settle: Option<f64>,
    /// With --backend block: also run the file system's own checker
    /// (e2fsck -fn, xfs_repair -n, btrfs check --readonly) on each state
    /// after it was mounted and checked, and report its complaints.
    #[arg(long)]
    pub(crate) fsck: bool,
    /// With --backend block: run the whole thing N times (a fresh file
    /// system each time) and say whether the verdict held; the worst run
    /// is shown and sets the exit code.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) repeat: u32,
}

pub(crate) fn parse_fs(s: &str) -> Result<String, String> {
    s.parse::<FsKind>()
        .map(|_| s.to_string())
        .map_err(|e| e.to_string())
}

/// A size in bytes: a number, optionally followed by K, M or G (powers of
/// 1024).
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let (num, shift) = match s.char_indices().last() {
        Some((i, 'K' | 'k')) => (&s[..i], 10),
        Some((i, 'M' | 'm')) => (&s[..i], 20),
        Some((i, 'G' | 'g')) => (&s[..i], 30),
        _ => (s, 0),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("`{s}` is not a size (a number of bytes, or with K, M or G)"))
}

/// The block backend's settings from the run's flags.
pub(crate) fn block_config(a: &RunArgs) -> Result<BlockConfig> {
    let fs: FsKind = match &a.block.fs {
        Some(fs) => fs.parse().map_err(|e| anyhow!("--fs: {e}"))?,
        None => FsKind::Ext4,
    };
    let mut bcfg = BlockConfig::new(fs);
    if let Some(size) = a.block.fs_size {
        bcfg.session.size = size;
    }
    if let Some(opts) = &a.block.mkfs_opts {
        bcfg.session.mkfs_opts = opts.split_whitespace().map(str::to_string).collect();
    }
    if let Some(opts) = &a.block.mount_opts {
        bcfg.session.mount_opts = vec![opts.clone()];
    }
    bcfg.max_subsets = usize::try_from(a.block.max_subsets).unwrap_or(usize::MAX);
    bcfg.seed = a.explore.seed;
    bcfg.settle = a.block.settle.map(std::time::Duration::from_secs_f64);
    bcfg.fsck = a.block.fsck;
    Ok(bcfg)
}

/// The run's settings from its flags, and the flag that named the checker.
pub(crate) fn run_config(a: &RunArgs) -> Result<(RunConfig, &'static str)> {
    let timeout = std::time::Duration::from_secs_f64(a.timeout);
    let (kind, command) = match (&a.checker, &a.checker_server) {
        (_, Some(server)) => (CheckerKind::Server, server),
        (Some(command), None) => (CheckerKind::Shell, command),
        (None, None) => return Err(anyhow!("give --checker CMD or --checker-server CMD")),
    };
    let checker = kind
        .checker(command.clone(), timeout)
        .expect("a command's checker");
    let checker_flag = kind.flag().expect("a command's flag");
    let mut cfg = RunConfig::with_checker(checker);
    cfg.models = a.explore.models();
    if let Some(j) = a.jobs {
        cfg.jobs = usize::try_from(j).unwrap_or(usize::MAX);
    }
    cfg.explore = a.explore.config();
    cfg.sector = a.explore.sector;
    cfg.ack_prefix = a.explore.ack_prefix.as_ref().map(|p| p.as_bytes().to_vec());
    cfg.consistency_only = a.consistency_only;
    cfg.fix_verifications = a.verify_fixes;
    cfg.fix_time = a.fix_time;
    cfg.syncs = a.syncs;
    cfg.check_budget = (!a.explore.exhaustive).then_some(a.check_budget);
    cfg.require_exact = a.require_exact;
    cfg.materializer = a
        .materializer
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|e: String| anyhow!(e))?;
    cfg.handles.cancel = Some(Arc::clone(&INTERRUPTED));
    Ok((cfg, checker_flag))
}
