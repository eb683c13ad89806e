//! The command line: every subcommand's flags (clap), their parsers, the
//! examples each `--help` ends with, and what the flags turn into (a
//! run's `RunConfig`, the flags that rebuild a state by hand).

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{anyhow, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};

use blackout::analysis::fix::FIX_VERIFICATIONS_MAX;
use blackout::block::BlockConfig;
use blackout::block_device::session::FsKind;
use blackout::check::shell::CHECKER_TIMEOUT_SECONDS_DEFAULT;
use blackout::check::CheckerKind;
use blackout::explore::enumerate::{
    ExploreConfig, Representatives, BUDGET_DEFAULT, EXHAUSTIVE_LIMIT_DEFAULT, EXHAUSTIVE_LIMIT_MAX,
};
use blackout::explore::model::Model;
use blackout::explore::state::SECTOR_BYTES_DEFAULT;
use blackout::export::text::shell_quote;
use blackout::record::omit::OmittedSync;
use blackout::record::record::WORKLOAD_TIMEOUT_SECONDS_DEFAULT;
use blackout::record::{RecordConfig, StraceRecorder};
use blackout::run::RunConfig;

use crate::INTERRUPTED;

mod soak;
pub(crate) use soak::{SoakArgs, SOAK_EXAMPLES};

/// blackout: crash-consistency testing for storage code.
///
/// Records every file-system operation a program makes, builds every disk
/// state a power failure could leave, and runs your checker on each.
#[derive(Parser)]
#[command(name = "blackout", version, about, long_about = None)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Cmd,
}

#[derive(Subcommand)]
pub(crate) enum Cmd {
    /// Record a workload, explore its crash states, check each, give a verdict.
    #[command(after_long_help = RUN_EXAMPLES)]
    Run(Box<RunArgs>),
    /// Merge the parts of a run split with `run --shard K/N` into its report.
    #[command(after_long_help = MERGE_EXAMPLES)]
    Merge(MergeArgs),
    /// Run a workload under strace in a fresh directory and write a trace.
    #[command(after_long_help = RECORD_EXAMPLES)]
    Record(RecordArgs),
    /// Print the op log of a trace, or of a raw strace log.
    #[command(after_long_help = OPS_EXAMPLES)]
    Ops(OpsArgs),
    /// List the distinct crash states of a trace.
    #[command(after_long_help = STATES_EXAMPLES)]
    States(StatesArgs),
    /// Write one crash state of a trace into a directory.
    #[command(after_long_help = STATE_EXAMPLES)]
    State(StateArgs),
    /// A live file system that forgets what was never synced: mount, crash, pending.
    #[command(subcommand, after_long_help = FS_EXAMPLES)]
    Fs(FsCmd),
    /// Crash a service on a live mount again and again under a client's load;
    /// stop at the first broken promise.
    #[command(after_long_help = SOAK_EXAMPLES)]
    Soak(Box<SoakArgs>),
    /// Remove the scratch directories that killed runs left behind.
    #[command(after_long_help = CLEAN_EXAMPLES)]
    Clean(CleanArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(after_long_help = COMPLETIONS_EXAMPLES)]
    Completions(CompletionsArgs),
    /// Print the manual page (roff), of blackout or of one command.
    #[command(after_long_help = MAN_EXAMPLES)]
    Man(ManArgs),
}

pub(crate) const FS_EXAMPLES: &str = "\
Examples:
  Serve DIR at /mnt/live in the background; a crash loses what was never synced:
    blackout fs mount /mnt/live --backing DIR --background
    (cd /mnt/live && my-server &)
    blackout fs pending /mnt/live
    blackout fs crash /mnt/live --pgid $SERVER_PGID
  Crash right after the next rename of a .wal file, keeping a seeded subset:
    blackout fs crash /mnt/live --at 'rename:*.wal' --keep random --seed 7
  Make the next fsync of a file under data/ fail with EIO; what it covered
  is never durable (a retried fsync returns 0, as on Linux):
    blackout fs fail-sync /mnt/live --at 'fsync:data/*'
  Make everything durable, unmount, stop the daemon:
    blackout fs unmount /mnt/live
";

/// `blackout fs`: a live mount and the commands sent to it.
#[derive(Subcommand)]
pub(crate) enum FsCmd {
    /// Mount a live file system over DIR; serve until `fs unmount`, Ctrl-C or SIGTERM.
    Mount(FsMountArgs),
    /// Make everything durable, unmount and stop the daemon.
    Unmount(FsTarget),
    /// Lose what is pending (or keep what the model allows of it), kill the
    /// program first, and show the durable state again.
    Crash(FsCrashArgs),
    /// Make the next fsync or fdatasync matching CALL:GLOB fail with EIO: what
    /// was pending on its file is never made durable (the programs still read it).
    FailSync(FsFailSyncArgs),
    /// What a crash now would lose, per file, and which sync would save it.
    Pending(FsPendingArgs),
    /// Make everything pending durable (what sync(2) does: FUSE is not told of it).
    Sync(FsTarget),
}

/// `blackout fs mount`.
#[derive(Args)]
pub(crate) struct FsMountArgs {
    /// Where to mount (an existing directory).
    #[arg(value_name = "MOUNTPOINT")]
    pub(crate) mountpoint: PathBuf,
    /// The durable state: what a crash leaves, changed only by syncs.
    #[arg(long, value_name = "DIR")]
    pub(crate) backing: PathBuf,
    /// Return once the mount is up; the daemon serves on in the background.
    #[arg(long)]
    pub(crate) background: bool,
    /// Where the view (the page cache) is kept (default: $TMPDIR, else
    /// /dev/shm).
    #[arg(long, value_name = "DIR")]
    pub(crate) scratch: Option<PathBuf>,
}

/// A live mount.
#[derive(Args)]
pub(crate) struct FsTarget {
    /// The mount point of a live file system.
    #[arg(value_name = "MOUNTPOINT")]
    pub(crate) mountpoint: PathBuf,
}

/// `blackout fs pending`.
#[derive(Args)]
pub(crate) struct FsPendingArgs {
    /// The mount point of a live file system.
    #[arg(value_name = "MOUNTPOINT")]
    pub(crate) mountpoint: PathBuf,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// What a crash keeps of the pending ops.
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum KeepArg {
    /// Nothing never synced reaches the disk.
    None,
    /// A seeded subset of the pending ops (entries included).
    Random,
    /// The pending ops up to a seeded point, in order.
    Prefix,
}

impl From<KeepArg> for blackout::live::pending::Keep {
    fn from(k: KeepArg) -> Self {
        use blackout::live::pending::Keep;
        match k {
            KeepArg::None => Keep::None,
            KeepArg::Random => Keep::Random,
            KeepArg::Prefix => Keep::Prefix,
        }
    }
}

/// `blackout fs crash`.
#[derive(Args)]
pub(crate) struct FsCrashArgs {
    /// The mount point of a live file system.
    #[arg(value_name = "MOUNTPOINT")]
    pub(crate) mountpoint: PathBuf,
    /// What reaches the disk of what is pending.
    #[arg(long, value_enum, default_value = "none")]
    pub(crate) keep: KeepArg,
    /// The seed of the random choices (subset, prefix, tears).
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Writes that reach the disk may be torn at 512-byte sector boundaries
    /// (with --keep none: each pending write reaches it torn, nothing else).
    #[arg(long)]
    pub(crate) tear: bool,
    /// Wait for the next op matching CALL:GLOB (`rename:*.wal`) and crash
    /// right after it.
    #[arg(long, value_name = "CALL:GLOB")]
    pub(crate) at: Option<String>,
    /// With --at: crash just before the op (it is refused) instead of after.
    #[arg(long, requires = "at")]
    pub(crate) before: bool,
    /// Kill this process group first, and every process descending from it.
    #[arg(long, value_name = "PGID", conflicts_with = "cgroup")]
    pub(crate) pgid: Option<i32>,
    /// Kill every process of this cgroup (v2 directory) first.
    #[arg(long, value_name = "DIR")]
    pub(crate) cgroup: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `blackout fs fail-sync`.
#[derive(Args)]
pub(crate) struct FsFailSyncArgs {
    /// The mount point of a live file system.
    #[arg(value_name = "MOUNTPOINT")]
    pub(crate) mountpoint: PathBuf,
    /// Wait for the next sync matching CALL:GLOB (`fsync:*.db`; the call
    /// fsync, fdatasync, fsyncdir or *) and make it fail with EIO.
    #[arg(long, value_name = "CALL:GLOB")]
    pub(crate) at: String,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) const CLEAN_EXAMPLES: &str = "\
Examples:
  Remove what runs killed with SIGKILL left in the scratch directory
  ($TMPDIR, else /dev/shm); every run also does this when it starts:
    blackout clean

  Look in another directory:
    blackout clean --dir /var/tmp
";

/// `blackout clean`.
#[derive(Args)]
pub(crate) struct CleanArgs {
    /// Where to look (default: $TMPDIR, else /dev/shm, else the system's
    /// temp directory).
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
}

pub(crate) const RUN_EXAMPLES: &str = "\
Examples:
  Check the bundled save example under every model, keeping the trace:
    blackout run -o run.trace --setup 'echo \"version 1\" > doc.txt' \\
        --checker \"sh $PWD/examples/save/check.sh\" -- examples/save/save.sh no-dir-fsync

  Check that recording again under posix only, with reports for CI:
    blackout run --trace run.trace --model posix --checker \"sh $PWD/examples/save/check.sh\" \\
        --junit blackout.xml --markdown summary.md --html report.html";

pub(crate) const MERGE_EXAMPLES: &str = "\
Examples:
  Split the checking of a recording in three (each command on its own machine), then merge:
    blackout run --trace run.trace --checker \"sh $PWD/check.sh\" --shard 1/3 --part part1.json
    blackout run --trace run.trace --checker \"sh $PWD/check.sh\" --shard 2/3 --part part2.json
    blackout run --trace run.trace --checker \"sh $PWD/check.sh\" --shard 3/3 --part part3.json
    blackout merge part1.json part2.json part3.json

  Merge parts whose trace now lives elsewhere, with the reports for CI:
    blackout merge --trace artifacts/run.trace --junit blackout.xml --markdown summary.md parts/*.json";

pub(crate) const RECORD_EXAMPLES: &str = "\
Examples:
  Record the save example into a trace:
    blackout record -o run.trace --setup 'echo \"version 1\" > doc.txt' -- examples/save/save.sh full

  Record a program on a copy of a seed tree, naming the source line of each op:
    blackout record -o db.trace --init seed/ --stacks -- ./mydb insert 42";

pub(crate) const OPS_EXAMPLES: &str = "\
Examples:
  Print the op log of a trace, with (never synced) marks:
    blackout ops run.trace

  Read a raw strace log instead (what `strace -f -xx -y` wrote), as JSON:
    blackout ops --strace run.log --dir /srv/test-dir --json";

pub(crate) const STATES_EXAMPLES: &str = "\
Examples:
  List every distinct crash state of a trace, per model:
    blackout states run.trace

  Only posix, as JSON, with a larger sample past the exhaustive limit:
    blackout states run.trace --model posix --budget 256 --json";

pub(crate) const STATE_EXAMPLES: &str = "\
Examples:
  Write the state a report names into a directory:
    blackout state run.trace c5.lost3 state-c5.lost3

  Also print the command that runs the checker on it by hand:
    blackout state run.trace c5.lost3 state-c5.lost3 --checker \"sh $PWD/examples/save/check.sh\"";

pub(crate) const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  Install bash completion for your user:
    blackout completions bash > ~/.local/share/bash-completion/completions/blackout

  Install fish completion:
    blackout completions fish > ~/.config/fish/completions/blackout.fish";

pub(crate) const MAN_EXAMPLES: &str = "\
Examples:
  Read the manual page of blackout:
    blackout man | man -l -

  Install the page of the run command:
    blackout man run > ~/.local/share/man/man1/blackout-run.1";

#[derive(Args)]
pub(crate) struct CompletionsArgs {
    /// The shell.
    #[arg(value_name = "SHELL")]
    pub(crate) shell: clap_complete::Shell,
}

#[derive(Args)]
pub(crate) struct ManArgs {
    /// A command (run, record, ...): its page instead of blackout's.
    #[arg(value_name = "COMMAND")]
    pub(crate) command: Option<String>,
}

/// When the text report is coloured.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ColorWhen {
    /// On a terminal, unless NO_COLOR is set (or CLICOLOR=0, TERM=dumb).
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

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

/// A number of seconds that is positive and finite.
pub(crate) fn positive_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() && v < 1e9 => Ok(v),
        _ => Err(format!("`{s}` is not a positive number of seconds")),
    }
}

/// The models a `--model` value names, in the order process, ordered, posix.
pub(crate) fn models_of(spec: &str) -> Result<Vec<Model>, String> {
    let mut models = Vec::new();
    for name in spec.split(',') {
        match name.trim() {
            "all" => models.extend(Model::ALL),
            other => match Model::by_name(other) {
                Some(m) => models.push(m),
                None => {
                    let names: Vec<&str> = Model::ALL.iter().map(|m| m.name()).collect();
                    return Err(format!(
                        "`{other}` is not a model ({}, all)",
                        names.join(", ")
                    ));
                }
            },
        }
    }
    models.sort();
    models.dedup();
    Ok(models)
}

/// A check budget: seconds (`90`, `0.5`), or a duration with units
/// (`90s`, `5m`, `1h 30m`).
pub(crate) fn parse_budget(spec: &str) -> Result<std::time::Duration, String> {
    let spec = spec.trim();
    if let Ok(secs) = spec.parse::<f64>() {
        return std::time::Duration::try_from_secs_f64(secs)
            .map_err(|_| format!("`{spec}` is not a duration of zero seconds or more"));
    }
    humantime::parse_duration(spec)
        .map_err(|e| format!("`{spec}` is not a duration (90, 90s, 5m, 1h): {e}"))
}

pub(crate) fn parse_models(spec: &str) -> Result<String, String> {
    models_of(spec).map(|_| spec.to_string())
}

/// How crash states are enumerated.
#[derive(Args, Clone)]
pub(crate) struct ExploreArgs {
    /// The persistence models: process, ordered, posix, all, or a
    /// comma-separated list (process,posix).
    #[arg(long, value_name = "MODEL", default_value = "all", value_parser = parse_models)]
    pub(crate) model: String,
    /// Under posix, enumerate every subset of the pending ops at a crash
    /// point when there are at most this many.
    #[arg(long, value_name = "N", default_value_t = EXHAUSTIVE_LIMIT_DEFAULT as u64, value_parser = clap::value_parser!(u64).range(0..=EXHAUSTIVE_LIMIT_MAX as u64))]
    pub(crate) exhaustive_limit: u64,
    /// Beyond the limit: random subsets sampled per crash point, besides the
    /// structured families.
    #[arg(long, value_name = "N", default_value_t = BUDGET_DEFAULT)]
    pub(crate) budget: usize,
    /// Seed of the sample.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) seed: u64,
    /// Explore N crash points of each class of crash points whose pending
    /// work has the same shape (the same calls from the same lines on files
    /// of the same role, the same promise status), and count the rest; at
    /// each, under posix, a few of each set of alike pending ops stand for
    /// the rest. The default above 500 ops or 8 MiB written, with 3 per
    /// class.
    #[arg(long, value_name = "N", conflicts_with = "exhaustive", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) representatives: Option<u64>,
    /// Explore every crash point, however long the trace.
    #[arg(long)]
    pub(crate) exhaustive: bool,
    /// Sector size, in bytes: storage writes a sector whole or not at all,
    /// so writes tear only at its boundaries.
    #[arg(long, visible_alias = "sector-size", value_name = "BYTES", default_value_t = SECTOR_BYTES_DEFAULT, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) sector: u64,
    /// Only lines of output starting with this are promises.
    #[arg(long, value_name = "PREFIX")]
    pub(crate) ack_prefix: Option<String>,
}

impl ExploreArgs {
    pub(crate) fn models(&self) -> Vec<Model> {
        models_of(&self.model).unwrap_or_default()
    }

    pub(crate) fn config(&self) -> ExploreConfig {
        let representatives = match (self.exhaustive, self.representatives) {
            (true, _) => Representatives::Exhaustive,
            (false, Some(n)) => Representatives::PerClass(usize::try_from(n).unwrap_or(usize::MAX)),
            (false, None) => Representatives::Auto,
        };
        ExploreConfig {
            exhaustive_limit: self.exhaustive_limit as usize,
            budget: self.budget,
            seed: self.seed,
            representatives,
        }
    }

    /// The flags `blackout state` needs to rebuild the same states.
    pub(crate) fn state_flags(&self) -> String {
        state_flags_of(self.ack_prefix.as_deref(), self.sector)
    }
}

#[derive(Args)]
pub(crate) struct StatesArgs {
    /// A trace written by `blackout record` or `blackout run -o`.
    #[arg(value_name = "TRACE")]
    pub(crate) trace: PathBuf,
    #[command(flatten)]
    pub(crate) explore: ExploreArgs,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Args)]
pub(crate) struct StateArgs {
    /// The trace.
    #[arg(value_name = "TRACE")]
    pub(crate) trace: PathBuf,
    /// The state's id, as `blackout run` or `blackout states` prints it
    /// (`c9.lost6`).
    #[arg(value_name = "ID")]
    pub(crate) id: String,
    /// Where to write the state (created; must not exist or be empty). Its
    /// promises go to OUTDIR.acks and what was printed to OUTDIR.output.
    #[arg(value_name = "OUTDIR")]
    pub(crate) out: PathBuf,
    /// Only lines of output starting with this are promises.
    #[arg(long, value_name = "PREFIX")]
    pub(crate) ack_prefix: Option<String>,
    /// Sector size at which writes tear.
    #[arg(long, value_name = "BYTES", default_value_t = SECTOR_BYTES_DEFAULT, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) sector: u64,
    /// The checker, to print the command that checks the state by hand.
    #[arg(long, value_name = "CMD")]
    pub(crate) checker: Option<String>,
    /// A checker server, to print the request that checks the state by
    /// hand.
    #[arg(long, value_name = "CMD", conflicts_with = "checker")]
    pub(crate) checker_server: Option<String>,
    /// The content id of the recording the state was found in (from a
    /// `reproduce:` line): a trace with another id is refused.
    #[arg(long, value_name = "ID")]
    pub(crate) trace_id: Option<String>,
}

/// Which recorder runs the workload.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub(crate) enum RecorderKind {
    /// The native recorder where it can trace and the flags ask nothing
    /// only strace records; strace otherwise.
    Auto,
    /// `strace -f`: every recording flag works.
    Strace,
    /// blackout traces the workload itself (ptrace, with a seccomp filter
    /// stopping only the calls replay reads): faster; x86_64 only.
    Native,
}

/// How a workload is recorded (`record` and a live `run`).
#[derive(Args, Clone)]
pub(crate) struct RecordingArgs {
    /// Which recorder runs the workload: `native` (blackout traces it
    /// itself with ptrace and a seccomp filter: faster, x86_64 only),
    /// `strace` (strace -f), or `auto`: native, unless a flag asks for what
    /// only strace records (--stacks, --sync-times, --without-sync,
    /// --keep-log, --no-seccomp, --fail-syncs, --backend block, and the
    /// sync times `run --syncs` shows) or this kernel or container does not
    /// let blackout trace (then one line says why and strace records).
    #[arg(long, value_enum, value_name = "RECORDER", default_value_t = RecorderKind::Auto)]
    pub(crate) recorder: RecorderKind,
    /// Copy this tree into the directory under test first (durable).
    #[arg(long, value_name = "DIR")]
    pub(crate) init: Option<PathBuf>,
    /// Run this shell command in the directory under test first, unrecorded
    /// (durable). `{dir}` is replaced by its path.
    #[arg(long, value_name = "CMD")]
    pub(crate) setup: Option<String>,
    /// Keep the raw strace log here.
    #[arg(long, value_name = "LOG")]
    pub(crate) keep_log: Option<PathBuf>,
    /// Do not use strace's --seccomp-bpf filtering.
    #[arg(long)]
    pub(crate) no_seccomp: bool,
    /// Record each call's stack (strace -k) and name the function and source
    /// line (where debug info exists) that issued each op.
    #[arg(long)]
    pub(crate) stacks: bool,
    /// Record how long each sync took (strace -T: from entering the call to
    /// its return, as the tracer saw them) and keep it in the trace, for
    /// the costs `run --syncs` reports (which turns this on).
    #[arg(long)]
    pub(crate) sync_times: bool,
    /// A file the program rebuilds on restart (a glob on its path in the
    /// directory under test, e.g. SQLite's '*-shm'): shared writable mmaps of
    /// it are allowed and what is written through memory is not modelled.
    #[arg(long, value_name = "GLOB")]
    pub(crate) volatile: Vec<String>,
    /// Take these syncs out of the program, as a `run --syncs` report names
    /// a call site (`fsync(doc.txt.tmp)`, `fdatasync(files named like
    /// data-#.log)`): a preloaded library makes each such fsync, fdatasync
    /// or sync_file_range the program asks of the C library return 0
    /// unmade. The recording fails if the program makes one anyway.
    #[arg(long, value_name = "CALL(PATH)")]
    pub(crate) without_sync: Vec<OmittedSync>,
    /// Seconds the workload may run under the recorder; then it is killed
    /// with everything it started and the recording fails.
    #[arg(long, value_name = "SECS", default_value_t = WORKLOAD_TIMEOUT_SECONDS_DEFAULT as f64, value_parser = positive_seconds)]
    pub(crate) workload_timeout: f64,
}

impl RecordingArgs {
    /// The recorder these flags ask for.
    pub(crate) fn recorder(&self) -> StraceRecorder {
        StraceRecorder {
            keep_log: self.keep_log.clone(),
            seccomp: !self.no_seccomp,
            ..StraceRecorder::default()
        }
    }

    pub(crate) fn config(self, command: Vec<OsString>) -> RecordConfig {
        let mut cfg = RecordConfig::new(command);
        cfg.init = self.init;
        cfg.setup = self.setup;
        cfg.stacks = self.stacks;
        cfg.timestamps = self.sync_times;
        cfg.volatile = self.volatile;
        cfg.omit_syncs = self.without_sync;
        cfg.timeout = std::time::Duration::from_secs_f64(self.workload_timeout);
        cfg.cancel = Some(Arc::clone(&INTERRUPTED));
        cfg
    }
}

#[derive(Args)]
pub(crate) struct RecordArgs {
    /// Where to write the trace.
    #[arg(short = 'o', long = "output", value_name = "TRACE")]
    pub(crate) output: PathBuf,
    #[command(flatten)]
    pub(crate) recording: RecordingArgs,
    /// The workload and its arguments; `{dir}` is replaced by the directory
    /// under test, which is also its working directory.
    #[arg(last = true, required = true, value_name = "WORKLOAD")]
    pub(crate) command: Vec<OsString>,
}

#[derive(Args)]
pub(crate) struct OpsArgs {
    /// A trace written by `blackout record`.
    #[arg(
        value_name = "TRACE",
        required_unless_present = "strace",
        conflicts_with = "strace"
    )]
    pub(crate) trace: Option<PathBuf>,
    /// Read a raw log of `strace -f -xx -y` instead of a trace.
    #[arg(long, value_name = "LOG", requires = "dir")]
    pub(crate) strace: Option<PathBuf>,
    /// With --strace: the absolute path the directory under test had.
    #[arg(long, value_name = "PATH")]
    pub(crate) dir: Option<PathBuf>,
    /// With --strace: what the directory held before the workload ran.
    #[arg(long, value_name = "DIR", requires = "strace")]
    pub(crate) init: Option<PathBuf>,
    /// With --strace: a file the program rebuilds on restart (see `run`).
    #[arg(long, value_name = "GLOB", requires = "strace")]
    pub(crate) volatile: Vec<String>,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

impl Cmd {
    /// Whether the command was asked for JSON.
    pub(crate) fn json(&self) -> bool {
        match self {
            Cmd::Run(a) => a.report.json,
            Cmd::Merge(a) => a.report.json,
            Cmd::Ops(a) => a.json,
            Cmd::States(a) => a.json,
            Cmd::Fs(FsCmd::Crash(a)) => a.json,
            Cmd::Fs(FsCmd::Pending(a)) => a.json,
            Cmd::Fs(FsCmd::FailSync(a)) => a.json,
            Cmd::Fs(_) | Cmd::Soak(_) => false,
            Cmd::Record(_) | Cmd::State(_) | Cmd::Clean(_) | Cmd::Completions(_) | Cmd::Man(_) => {
                false
            }
        }
    }
}

/// How a report is given (`run` and `merge`).
#[derive(Args)]
pub(crate) struct ReportArgs {
    /// Print every cause (the report prints the first 10 per model, most
    /// serious first).
    #[arg(long)]
    pub(crate) all_causes: bool,
    /// Print the whole result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Also write the result as JUnit XML (one test case per model, one
    /// failure per cause) to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
    /// Also write a Markdown summary (for a CI job summary or a pull-request
    /// comment) to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) markdown: Option<PathBuf>,
    /// Also write a self-contained HTML page (the op timeline, each cause's
    /// simplest state) to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
    /// Colour the verdicts and cause headings of the text report: auto (on
    /// a terminal, unless NO_COLOR is set), always, never. JSON and the
    /// files written are never coloured.
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = ColorWhen::Auto)]
    pub(crate) color: ColorWhen,
}

#[derive(Args)]
pub(crate) struct MergeArgs {
    /// The part file of every shard (`blackout run --shard K/N --part FILE`).
    #[arg(value_name = "PART", required = true)]
    pub(crate) parts: Vec<PathBuf>,
    /// The trace the shards checked (default: the path the parts name).
    #[arg(long, value_name = "TRACE")]
    pub(crate) trace: Option<PathBuf>,
    /// Checkers run at once by the fix verifications (default: the number
    /// of CPUs).
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) jobs: Option<u64>,
    #[command(flatten)]
    pub(crate) report: ReportArgs,
}

/// The flags `blackout state` needs to rebuild the states of a run with
/// this promise prefix and sector size.
pub(crate) fn state_flags_of(ack_prefix: Option<&str>, sector: u64) -> String {
    let mut s = String::new();
    if let Some(p) = ack_prefix {
        s.push_str(&format!(" --ack-prefix {}", shell_quote(p)));
    }
    if sector != SECTOR_BYTES_DEFAULT {
        s.push_str(&format!(" --sector {}", sector));
    }
    s
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
    cfg.cancel = Some(Arc::clone(&INTERRUPTED));
    Ok((cfg, checker_flag))
}
