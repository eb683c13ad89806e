//! The `blackout` command: a thin shell over the `blackout` engine crate.
//!
//! `main` → `run` → one function per subcommand. Exit codes: 0 success,
//! 1 a violation was found, 2 could not run (errors print one `error:` line).

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};

use anyhow::{anyhow, Context, Result};
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

use blackout::analysis::fix::FIX_VERIFICATIONS_MAX;
use blackout::analysis::report::{RunReport, Verdict};
use blackout::baseline;
use blackout::block::{check_block, record_block, BlockCheck, BlockConfig, BlockError};
use blackout::block_device::session::FsKind;
use blackout::check::server::{request_line, ServerChecker};
use blackout::check::shell::{
    acked_env_value, ShellChecker, ACKED_ENV_BYTES_MAX, CHECKER_TIMEOUT_SECONDS_DEFAULT,
};
use blackout::check::{Checker, StateFiles};
use blackout::explore::dedup::distinct_states;
use blackout::explore::enumerate::{
    ExploreConfig, Representatives, StateDesc, BUDGET_DEFAULT, EXHAUSTIVE_LIMIT_DEFAULT,
    EXHAUSTIVE_LIMIT_MAX,
};
use blackout::explore::model::{for_people, Model};
use blackout::explore::state::SECTOR_BYTES_DEFAULT;
use blackout::export::html::HtmlExporter;
use blackout::export::json::{JsonExporter, JSON_SCHEMA};
use blackout::export::junit::JunitExporter;
use blackout::export::markdown::MarkdownExporter;
use blackout::export::text::{explored_text, shell_quote, TextExporter};
use blackout::export::{ExportContext, Exporter};
use blackout::oplog::ops::escape_controls;
use blackout::oplog::promises::Outputs;
use blackout::oplog::protocol as env;
use blackout::oplog::trace::{Trace, TraceMeta};
use blackout::oplog::tree::Tree;
use blackout::record::record::WORKLOAD_TIMEOUT_SECONDS_DEFAULT;
use blackout::record::replay::{replay_with, ReplayOptions};
use blackout::record::snapshot::snapshot;
use blackout::record::{RecordConfig, Recorder, StraceRecorder};
use blackout::run::{
    check_shard, check_trace, merge_parts, write_state, MergeError, RunConfig, RunError,
};
use blackout::shard::{Part, Shard};
use blackout::sys::command::substitute;

/// Set when SIGINT (Ctrl-C), SIGTERM or SIGHUP arrives: every stage stops,
/// kills its children's process groups and removes its scratch directories.
static INTERRUPTED: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));

/// The number of the signal that stopped the run (0: none), for the exit
/// code 128 + N.
static STOP_SIGNAL: LazyLock<Arc<AtomicUsize>> = LazyLock::new(|| Arc::new(AtomicUsize::new(0)));

/// The signals that stop a run: Ctrl-C, what `timeout`, CI runners and
/// systemd send, and a closed terminal.
const STOP_SIGNALS: [i32; 3] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
];

/// Routes every stop signal to the cancel flag (the handlers only set
/// atomics; the stages look at the flag).
fn install_signal_handlers() {
    for sig in STOP_SIGNALS {
        let _ = signal_hook::flag::register(sig, Arc::clone(&INTERRUPTED));
        let _ = signal_hook::flag::register_usize(sig, Arc::clone(&STOP_SIGNAL), sig as usize);
    }
}

/// The exit code of a run stopped by a signal: 128 + its number (130 for
/// Ctrl-C, 143 for SIGTERM, 129 for SIGHUP).
fn stopped_exit_code() -> u8 {
    let sig = STOP_SIGNAL.load(Ordering::SeqCst);
    let sig = if sig == 0 { 2 } else { sig };
    u8::try_from(128 + sig).unwrap_or(130)
}

/// blackout: crash-consistency testing for storage code.
///
/// Records every file-system operation a program makes, builds every disk
/// state a power failure could leave, and runs your checker on each.
#[derive(Parser)]
#[command(name = "blackout", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
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
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(after_long_help = COMPLETIONS_EXAMPLES)]
    Completions(CompletionsArgs),
    /// Print the manual page (roff), of blackout or of one command.
    #[command(after_long_help = MAN_EXAMPLES)]
    Man(ManArgs),
}

const RUN_EXAMPLES: &str = "\
Examples:
  Check the bundled save example under every model, keeping the trace:
    blackout run -o run.trace --setup 'echo \"version 1\" > doc.txt' \\
        --checker \"sh $PWD/examples/save/check.sh\" -- examples/save/save.sh no-dir-fsync

  Check that recording again under posix only, with reports for CI:
    blackout run --trace run.trace --model posix --checker \"sh $PWD/examples/save/check.sh\" \\
        --junit blackout.xml --markdown summary.md --html report.html";

const MERGE_EXAMPLES: &str = "\
Examples:
  Split the checking of a recording in three (each command on its own machine), then merge:
    blackout run --trace run.trace --checker \"sh $PWD/check.sh\" --shard 1/3 --part part1.json
    blackout run --trace run.trace --checker \"sh $PWD/check.sh\" --shard 2/3 --part part2.json
    blackout run --trace run.trace --checker \"sh $PWD/check.sh\" --shard 3/3 --part part3.json
    blackout merge part1.json part2.json part3.json

  Merge parts whose trace now lives elsewhere, with the reports for CI:
    blackout merge --trace artifacts/run.trace --junit blackout.xml --markdown summary.md parts/*.json";

const RECORD_EXAMPLES: &str = "\
Examples:
  Record the save example into a trace:
    blackout record -o run.trace --setup 'echo \"version 1\" > doc.txt' -- examples/save/save.sh full

  Record a program on a copy of a seed tree, naming the source line of each op:
    blackout record -o db.trace --init seed/ --stacks -- ./mydb insert 42";

const OPS_EXAMPLES: &str = "\
Examples:
  Print the op log of a trace, with (never synced) marks:
    blackout ops run.trace

  Read a raw strace log instead (what `strace -f -xx -y` wrote), as JSON:
    blackout ops --strace run.log --dir /srv/test-dir --json";

const STATES_EXAMPLES: &str = "\
Examples:
  List every distinct crash state of a trace, per model:
    blackout states run.trace

  Only posix, as JSON, with a larger sample past the exhaustive limit:
    blackout states run.trace --model posix --budget 256 --json";

const STATE_EXAMPLES: &str = "\
Examples:
  Write the state a report names into a directory:
    blackout state run.trace c5.lost3 state-c5.lost3

  Also print the command that runs the checker on it by hand:
    blackout state run.trace c5.lost3 state-c5.lost3 --checker \"sh $PWD/examples/save/check.sh\"";

const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  Install bash completion for your user:
    blackout completions bash > ~/.local/share/bash-completion/completions/blackout

  Install fish completion:
    blackout completions fish > ~/.config/fish/completions/blackout.fish";

const MAN_EXAMPLES: &str = "\
Examples:
  Read the manual page of blackout:
    blackout man | man -l -

  Install the page of the run command:
    blackout man run > ~/.local/share/man/man1/blackout-run.1";

#[derive(Args)]
struct CompletionsArgs {
    /// The shell.
    #[arg(value_name = "SHELL")]
    shell: clap_complete::Shell,
}

#[derive(Args)]
struct ManArgs {
    /// A command (run, record, ...): its page instead of blackout's.
    #[arg(value_name = "COMMAND")]
    command: Option<String>,
}

/// When the text report is coloured.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ColorWhen {
    /// On a terminal, unless NO_COLOR is set (or CLICOLOR=0, TERM=dumb).
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

#[derive(Args)]
struct RunArgs {
    /// The checker: a shell command run in each crash state's directory
    /// (`{dir}` is replaced by its path). Exit 0 accepts the state.
    #[arg(long, value_name = "CMD", required_unless_present = "checker_server")]
    checker: Option<String>,
    /// A checker server instead: a shell command started once per worker
    /// that reads one JSON request line per state and answers `ok` or
    /// `fail REASON` (docs/CHECKER.md).
    #[arg(long, value_name = "CMD", conflicts_with = "checker")]
    checker_server: Option<String>,
    /// Re-explore this trace instead of recording.
    #[arg(long, value_name = "TRACE", conflicts_with_all = ["output", "init", "setup", "keep_log", "no_seccomp", "stacks", "volatile", "command"])]
    trace: Option<PathBuf>,
    /// Also write the trace here (needed to reproduce a state later).
    #[arg(short = 'o', long = "output", value_name = "TRACE")]
    output: Option<PathBuf>,
    #[command(flatten)]
    recording: RecordingArgs,
    #[command(flatten)]
    explore: ExploreArgs,
    /// Checkers run at once (default: the number of CPUs).
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    jobs: Option<u64>,
    /// Seconds one checker run may take; then it is killed with its process
    /// group and the state counts as an error.
    #[arg(long, value_name = "SECS", default_value_t = CHECKER_TIMEOUT_SECONDS_DEFAULT as f64)]
    timeout: f64,
    /// The checker tests consistency alone: run even if nothing was promised,
    /// and skip the pre-check.
    #[arg(long)]
    consistency_only: bool,
    /// How long checking may go on past the representatives: their states
    /// are always checked, then the rest of the trace is explored in full
    /// and checked, the states most unlike those checked first, until
    /// every distinct state is checked (the verdict is then exact) or this
    /// is spent (a PASS then says it is a sample). Seconds, or with a unit
    /// (90s, 5m, 1h); 0 checks the representatives alone. --exhaustive
    /// checks every state, without a budget.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_budget, conflicts_with = "exhaustive")]
    check_budget: std::time::Duration,
    /// A PASS on a sample (not every distinct state checked) is
    /// INCONCLUSIVE, exit 2: for gates that must not accept a sample.
    #[arg(long)]
    require_exact: bool,
    /// Distinct fixes verified per model (each re-explores the trace with
    /// one added fsync); 0 verifies none. Verification takes at most as long
    /// as the run took to explore and check (at least 5 s): a fix still
    /// being verified then is reported as not verified to the end.
    #[arg(long, value_name = "N", default_value_t = FIX_VERIFICATIONS_MAX)]
    verify_fixes: usize,
    #[command(flatten)]
    report: ReportArgs,
    /// Check only shard K of N of the distinct states (with --trace and
    /// --part); `blackout merge` makes the report from every shard's part.
    #[arg(long, value_name = "K/N", conflicts_with_all = ["json", "junit", "markdown", "html"])]
    shard: Option<String>,
    /// With --shard: write what the shard found to FILE (JSON).
    #[arg(long, value_name = "FILE")]
    part: Option<PathBuf>,
    /// Compare the result with a baseline of verdicts and cause kinds
    /// (docs/BASELINE.md): exit 1 if anything is worse than recorded, else
    /// 0 (a recorded FAIL too). Only this case's rows are compared.
    /// BLACKOUT_UPDATE_BASELINE=1 records them instead (not when CI is set).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["shard", "part"])]
    baseline: Option<PathBuf>,
    /// The case's name in the baseline (default: the workload's command
    /// line, joined by spaces; with --trace, the trace file's name).
    #[arg(long, value_name = "NAME", requires = "baseline", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    case: Option<String>,
    #[command(flatten)]
    block: BlockArgs,
    /// The workload and its arguments (with --trace: none).
    #[arg(
        last = true,
        value_name = "WORKLOAD",
        required_unless_present = "trace"
    )]
    command: Vec<OsString>,
}

/// Where crash states come from.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Backend {
    /// The persistence models over the recorded system calls.
    Model,
    /// A real file system on a recorded block device (root).
    Block,
}

/// The real-file-system backend (`--backend block`).
#[derive(Args, Clone)]
struct BlockArgs {
    /// Where crash states come from: `model` (the persistence models over
    /// the recorded system calls) or `block` (the workload runs on a real
    /// file system on a recorded block device; every crash point's device
    /// is mounted so the file system's recovery runs, then checked, beside
    /// the posix model's verdict; needs root, /dev/fuse and a loop device).
    #[arg(long, value_enum, value_name = "BACKEND", default_value_t = Backend::Model)]
    backend: Backend,
    /// With --backend block: the file system (ext4, xfs, btrfs).
    #[arg(long = "fs", value_name = "FS", default_value = "ext4", value_parser = parse_fs)]
    fs: String,
    /// With --backend block: the device size, in bytes or with K, M, G
    /// (default 128M, at least what the file system needs).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    fs_size: Option<u64>,
    /// With --backend block: options for mkfs, split at spaces.
    #[arg(long, value_name = "OPTS", allow_hyphen_values = true)]
    mkfs_opts: Option<String>,
    /// With --backend block: mount options (`commit=1,data=journal`),
    /// used when recording and for every crash state.
    #[arg(long, value_name = "OPTS")]
    mount_opts: Option<String>,
    /// With --backend block: subsets of the writes in flight since the last
    /// flush tried per crash point (every subset when they fit, else every
    /// prefix, each single write lost, and seeded random ones).
    #[arg(long, value_name = "N", default_value_t = blackout::block::SUBSETS_MAX_DEFAULT as u64, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    max_subsets: u64,
    /// With --backend block: keep the file system up SECS after the
    /// workload and check only crash points at least SECS after the last
    /// promise: would the promises hold if the machine stayed up that long?
    #[arg(long, value_name = "SECS", value_parser = positive_seconds)]
    settle: Option<f64>,
    /// With --backend block: also run the file system's own checker
    /// (e2fsck -fn, xfs_repair -n, btrfs check --readonly) on each state
    /// after it was mounted and checked, and report its complaints.
    #[arg(long)]
    fsck: bool,
    /// With --backend block: run the whole thing N times (a fresh file
    /// system each time) and say whether the verdict held; the worst run
    /// is shown and sets the exit code.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeat: u32,
}

fn parse_fs(s: &str) -> Result<String, String> {
    s.parse::<FsKind>()
        .map(|_| s.to_string())
        .map_err(|e| e.to_string())
}

/// A size in bytes: a number, optionally followed by K, M or G (powers of
/// 1024).
fn parse_size(s: &str) -> Result<u64, String> {
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
fn positive_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() && v < 1e9 => Ok(v),
        _ => Err(format!("`{s}` is not a positive number of seconds")),
    }
}

/// The models a `--model` value names, in the order process, ordered, posix.
fn models_of(spec: &str) -> Result<Vec<Model>, String> {
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
fn parse_budget(spec: &str) -> Result<std::time::Duration, String> {
    let spec = spec.trim();
    if let Ok(secs) = spec.parse::<f64>() {
        return std::time::Duration::try_from_secs_f64(secs)
            .map_err(|_| format!("`{spec}` is not a duration of zero seconds or more"));
    }
    humantime::parse_duration(spec)
        .map_err(|e| format!("`{spec}` is not a duration (90, 90s, 5m, 1h): {e}"))
}

fn parse_models(spec: &str) -> Result<String, String> {
    models_of(spec).map(|_| spec.to_string())
}

/// How crash states are enumerated.
#[derive(Args, Clone)]
struct ExploreArgs {
    /// The persistence models: process, ordered, posix, all, or a
    /// comma-separated list (process,posix).
    #[arg(long, value_name = "MODEL", default_value = "all", value_parser = parse_models)]
    model: String,
    /// Under posix, enumerate every subset of the pending ops at a crash
    /// point when there are at most this many.
    #[arg(long, value_name = "N", default_value_t = EXHAUSTIVE_LIMIT_DEFAULT as u64, value_parser = clap::value_parser!(u64).range(0..=EXHAUSTIVE_LIMIT_MAX as u64))]
    exhaustive_limit: u64,
    /// Beyond the limit: random subsets sampled per crash point, besides the
    /// structured families.
    #[arg(long, value_name = "N", default_value_t = BUDGET_DEFAULT)]
    budget: usize,
    /// Seed of the sample.
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,
    /// Explore N crash points of each class of crash points whose pending
    /// work has the same shape (the same calls from the same lines on files
    /// of the same role, the same promise status), and count the rest; at
    /// each, under posix, a few of each set of alike pending ops stand for
    /// the rest. The default above 500 ops or 8 MiB written, with 3 per
    /// class.
    #[arg(long, value_name = "N", conflicts_with = "exhaustive", value_parser = clap::value_parser!(u64).range(1..))]
    representatives: Option<u64>,
    /// Explore every crash point, however long the trace.
    #[arg(long)]
    exhaustive: bool,
    /// Sector size, in bytes: storage writes a sector whole or not at all,
    /// so writes tear only at its boundaries.
    #[arg(long, visible_alias = "sector-size", value_name = "BYTES", default_value_t = SECTOR_BYTES_DEFAULT, value_parser = clap::value_parser!(u64).range(1..))]
    sector: u64,
    /// Only lines of output starting with this are promises.
    #[arg(long, value_name = "PREFIX")]
    ack_prefix: Option<String>,
}

impl ExploreArgs {
    fn models(&self) -> Vec<Model> {
        models_of(&self.model).unwrap_or_default()
    }

    fn config(&self) -> ExploreConfig {
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
    fn state_flags(&self) -> String {
        state_flags_of(self.ack_prefix.as_deref(), self.sector)
    }
}

/// The flags `blackout state` needs to rebuild the states of a run with
/// this promise prefix and sector size.
fn state_flags_of(ack_prefix: Option<&str>, sector: u64) -> String {
    let mut s = String::new();
    if let Some(p) = ack_prefix {
        s.push_str(&format!(" --ack-prefix {}", shell_quote(p)));
    }
    if sector != SECTOR_BYTES_DEFAULT {
        s.push_str(&format!(" --sector {}", sector));
    }
    s
}

#[derive(Args)]
struct StatesArgs {
    /// A trace written by `blackout record` or `blackout run -o`.
    #[arg(value_name = "TRACE")]
    trace: PathBuf,
    #[command(flatten)]
    explore: ExploreArgs,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct StateArgs {
    /// The trace.
    #[arg(value_name = "TRACE")]
    trace: PathBuf,
    /// The state's id, as `blackout run` or `blackout states` prints it
    /// (`c9.lost6`).
    #[arg(value_name = "ID")]
    id: String,
    /// Where to write the state (created; must not exist or be empty). Its
    /// promises go to OUTDIR.acks and what was printed to OUTDIR.output.
    #[arg(value_name = "OUTDIR")]
    out: PathBuf,
    /// Only lines of output starting with this are promises.
    #[arg(long, value_name = "PREFIX")]
    ack_prefix: Option<String>,
    /// Sector size at which writes tear.
    #[arg(long, value_name = "BYTES", default_value_t = SECTOR_BYTES_DEFAULT, value_parser = clap::value_parser!(u64).range(1..))]
    sector: u64,
    /// The checker, to print the command that checks the state by hand.
    #[arg(long, value_name = "CMD")]
    checker: Option<String>,
    /// A checker server, to print the request that checks the state by
    /// hand.
    #[arg(long, value_name = "CMD", conflicts_with = "checker")]
    checker_server: Option<String>,
    /// The content id of the recording the state was found in (from a
    /// `reproduce:` line): a trace with another id is refused.
    #[arg(long, value_name = "ID")]
    trace_id: Option<String>,
}

/// How a workload is recorded (`record` and a live `run`).
#[derive(Args, Clone)]
struct RecordingArgs {
    /// Copy this tree into the directory under test first (durable).
    #[arg(long, value_name = "DIR")]
    init: Option<PathBuf>,
    /// Run this shell command in the directory under test first, unrecorded
    /// (durable). `{dir}` is replaced by its path.
    #[arg(long, value_name = "CMD")]
    setup: Option<String>,
    /// Keep the raw strace log here.
    #[arg(long, value_name = "LOG")]
    keep_log: Option<PathBuf>,
    /// Do not use strace's --seccomp-bpf filtering.
    #[arg(long)]
    no_seccomp: bool,
    /// Record each call's stack (strace -k) and name the function and source
    /// line (where debug info exists) that issued each op.
    #[arg(long)]
    stacks: bool,
    /// A file the program rebuilds on restart (a glob on its path in the
    /// directory under test, e.g. SQLite's '*-shm'): shared writable mmaps of
    /// it are allowed and what is written through memory is not modelled.
    #[arg(long, value_name = "GLOB")]
    volatile: Vec<String>,
    /// Seconds the workload may run under the recorder; then it is killed
    /// with everything it started and the recording fails.
    #[arg(long, value_name = "SECS", default_value_t = WORKLOAD_TIMEOUT_SECONDS_DEFAULT as f64, value_parser = positive_seconds)]
    workload_timeout: f64,
}

impl RecordingArgs {
    fn config(self, command: Vec<OsString>) -> RecordConfig {
        let mut cfg = RecordConfig::new(command);
        cfg.init = self.init;
        cfg.setup = self.setup;
        cfg.keep_log = self.keep_log;
        cfg.seccomp = !self.no_seccomp;
        cfg.stacks = self.stacks;
        cfg.volatile = self.volatile;
        cfg.timeout = std::time::Duration::from_secs_f64(self.workload_timeout);
        cfg.cancel = Some(Arc::clone(&INTERRUPTED));
        cfg
    }
}

#[derive(Args)]
struct RecordArgs {
    /// Where to write the trace.
    #[arg(short = 'o', long = "output", value_name = "TRACE")]
    output: PathBuf,
    #[command(flatten)]
    recording: RecordingArgs,
    /// The workload and its arguments; `{dir}` is replaced by the directory
    /// under test, which is also its working directory.
    #[arg(last = true, required = true, value_name = "WORKLOAD")]
    command: Vec<OsString>,
}

#[derive(Args)]
struct OpsArgs {
    /// A trace written by `blackout record`.
    #[arg(
        value_name = "TRACE",
        required_unless_present = "strace",
        conflicts_with = "strace"
    )]
    trace: Option<PathBuf>,
    /// Read a raw log of `strace -f -xx -y` instead of a trace.
    #[arg(long, value_name = "LOG", requires = "dir")]
    strace: Option<PathBuf>,
    /// With --strace: the absolute path the directory under test had.
    #[arg(long, value_name = "PATH")]
    dir: Option<PathBuf>,
    /// With --strace: what the directory held before the workload ran.
    #[arg(long, value_name = "DIR", requires = "strace")]
    init: Option<PathBuf>,
    /// With --strace: a file the program rebuilds on restart (see `run`).
    #[arg(long, value_name = "GLOB", requires = "strace")]
    volatile: Vec<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    install_signal_handlers();
    // What a workload or checker leaves running is reparented to us, so its
    // process group can be reaped and waited out (best effort).
    let _ = blackout::sys::proc::become_subreaper();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let json = cli.command.json();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::from(0);
            }
            let (message, code) = if INTERRUPTED.load(Ordering::SeqCst) {
                eprintln!("blackout: interrupted");
                ("interrupted".to_string(), stopped_exit_code())
            } else {
                let message = escape_controls(&format!("{e:#}"));
                eprintln!("error: {message}");
                (message, 2)
            };
            if json {
                // A machine reading --json gets the error as JSON too.
                println!(
                    "{}",
                    serde_json::json!({ "schema": JSON_SCHEMA, "error": message, "exit_code": code })
                );
            }
            ExitCode::from(code)
        }
    }
}

impl Cmd {
    /// Whether the command was asked for JSON.
    fn json(&self) -> bool {
        match self {
            Cmd::Run(a) => a.report.json,
            Cmd::Merge(a) => a.report.json,
            Cmd::Ops(a) => a.json,
            Cmd::States(a) => a.json,
            Cmd::Record(_) | Cmd::State(_) | Cmd::Completions(_) | Cmd::Man(_) => false,
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn run(cli: Cli) -> Result<u8> {
    match cli.command {
        Cmd::Run(a) => cmd_run(*a),
        Cmd::Merge(a) => cmd_merge(a),
        Cmd::Record(a) => cmd_record(a),
        Cmd::Ops(a) => cmd_ops(a),
        Cmd::States(a) => cmd_states(a),
        Cmd::State(a) => cmd_state(a),
        Cmd::Completions(a) => cmd_completions(a),
        Cmd::Man(a) => cmd_man(a),
    }
}

fn cmd_completions(a: CompletionsArgs) -> Result<u8> {
    let mut out = std::io::stdout().lock();
    clap_complete::generate(a.shell, &mut Cli::command(), "blackout", &mut out);
    out.flush()?;
    Ok(0)
}

fn cmd_man(a: ManArgs) -> Result<u8> {
    let mut top = Cli::command();
    top.build();
    let page = match &a.command {
        None => top,
        Some(name) => {
            let sub = top
                .get_subcommands()
                .find(|c| c.get_name() == name)
                .ok_or_else(|| {
                    let names: Vec<&str> = top.get_subcommands().map(|c| c.get_name()).collect();
                    anyhow!("`{name}` is not a command ({})", names.join(", "))
                })?;
            sub.clone()
        }
    };
    let mut out = std::io::stdout().lock();
    clap_mangen::Man::new(page)
        .source(format!("blackout {}", env!("CARGO_PKG_VERSION")))
        .render(&mut out)?;
    out.flush()?;
    Ok(0)
}

/// Fails unless `path` can be written, without changing it: an existing
/// file is opened for writing, else a temporary file is made beside it.
fn check_writable(path: &std::path::Path) -> std::io::Result<()> {
    if path.exists() {
        return std::fs::OpenOptions::new().write(true).open(path).map(drop);
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    tempfile::Builder::new()
        .prefix(".blackout-out-")
        .tempfile_in(parent)
        .map(drop)
}

/// A report file: the flag, the path, the exporter.
type ReportFile<'a> = (&'static str, &'a std::path::Path, &'static dyn Exporter);

/// How a report is given (`run` and `merge`).
#[derive(Args)]
struct ReportArgs {
    /// Print every cause (the report prints the first 10 per model, most
    /// serious first).
    #[arg(long)]
    all_causes: bool,
    /// Print the whole result as JSON.
    #[arg(long)]
    json: bool,
    /// Also write the result as JUnit XML (one test case per model, one
    /// failure per cause) to FILE.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Also write a Markdown summary (for a CI job summary or a pull-request
    /// comment) to FILE.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Also write a self-contained HTML page (the op timeline, each cause's
    /// simplest state) to FILE.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Colour the verdicts and cause headings of the text report: auto (on
    /// a terminal, unless NO_COLOR is set), always, never. JSON and the
    /// files written are never coloured.
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = ColorWhen::Auto)]
    color: ColorWhen,
}

impl ReportArgs {
    /// The report files asked for (`--junit`, `--markdown`, `--html`).
    fn files(&self) -> Vec<ReportFile<'_>> {
        let mut files: Vec<ReportFile<'_>> = Vec::new();
        if let Some(p) = &self.junit {
            files.push(("--junit", p, &JunitExporter));
        }
        if let Some(p) = &self.markdown {
            files.push(("--markdown", p, &MarkdownExporter));
        }
        if let Some(p) = &self.html {
            files.push(("--html", p, &HtmlExporter));
        }
        files
    }

    /// Writes a report: the files asked for, then the text (or JSON) on
    /// standard output. Returns the verdict's exit code.
    fn emit(&self, report: &RunReport, ctx: &ExportContext<'_>) -> Result<u8> {
        for (flag, path, exporter) in self.files() {
            let write = || -> std::io::Result<()> {
                let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
                exporter.write_to(report, ctx, &mut file)?;
                file.flush()
            };
            write().with_context(|| format!("cannot write {flag} {}", path.display()))?;
        }
        let text = TextExporter {
            color: use_color(self.color),
        };
        let exporter: &dyn Exporter = if self.json { &JsonExporter } else { &text };
        let mut out = std::io::stdout().lock();
        exporter.write_to(report, ctx, &mut out)?;
        out.flush()?;
        Ok(report.verdict.exit_code())
    }
}

/// Whether the text report on standard output is coloured.
fn use_color(when: ColorWhen) -> bool {
    match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => {
            anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never
        }
    }
}

/// Records a workload into a trace, saved at `output` if given.
fn record_trace(cfg: RecordConfig, output: Option<&std::path::Path>) -> Result<Trace> {
    // Fail on a bad output path before running anything, without touching
    // the path itself (another run may be using a trace there): the trace
    // is written beside it and renamed into place at the end.
    if let Some(out) = output {
        let parent = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => std::path::Path::new("."),
        };
        tempfile::Builder::new()
            .prefix(".blackout-trace-")
            .tempfile_in(parent)
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    let result = StraceRecorder.record(&cfg);
    if INTERRUPTED.load(Ordering::SeqCst) {
        return Err(anyhow!("interrupted"));
    }
    let rec = result?;
    if let Some(out) = output {
        rec.trace
            .save(out)
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    if rec.orphans_killed > 0 {
        eprintln!(
            "note: the workload left {} background process(es) running outside its process group; killed",
            rec.orphans_killed
        );
    }
    let t = &rec.trace;
    let outputs = t
        .ops
        .iter()
        .filter(|o| matches!(o.kind, blackout::oplog::ops::OpKind::Output { .. }))
        .count();
    eprintln!(
        "recorded {} ops ({} outputs) from {} system calls{}; workload {}",
        t.ops.len(),
        outputs,
        t.stats.calls,
        output
            .map(|o| format!(" into {}", o.display()))
            .unwrap_or_default(),
        match (&t.exit.code, &t.exit.signal) {
            (Some(0), _) => "exited 0".to_string(),
            (Some(c), _) => format!("exited {c} (non-zero)"),
            (None, Some(s)) => format!("killed by {s}"),
            _ => "ended".to_string(),
        }
    );
    Ok(rec.trace)
}

fn cmd_record(a: RecordArgs) -> Result<u8> {
    let cfg = a.recording.config(a.command);
    record_trace(cfg, Some(&a.output))?;
    Ok(0)
}

fn load_trace(path: &std::path::Path) -> Result<Trace> {
    Trace::load(path).with_context(|| format!("{}", path.display()))
}

fn cmd_run(a: RunArgs) -> Result<u8> {
    if !(a.timeout > 0.0 && a.timeout.is_finite()) {
        return Err(anyhow!("--timeout must be a positive number of seconds"));
    }
    if a.block.backend == Backend::Block {
        return cmd_run_block(a);
    }
    let shard = shard_of(&a)?;
    // A report file that cannot be written fails the run before it starts.
    for (flag, path, _) in a.report.files() {
        check_writable(path).with_context(|| format!("cannot write {flag} {}", path.display()))?;
    }
    // So does a baseline that cannot be read (or, to record, written).
    let mode = match a.baseline {
        Some(_) => baseline::Mode::from_env(),
        None => baseline::Mode::default(),
    };
    if let Some(path) = &a.baseline {
        if mode.rewrites() {
            check_writable(path)
                .with_context(|| format!("cannot write --baseline {}", path.display()))?;
        } else {
            baseline::Baseline::load(path)?;
        }
    }
    let (trace, trace_path) = match &a.trace {
        Some(path) => (load_trace(path)?, Some(path.clone())),
        None => {
            let cfg = a.recording.clone().config(a.command.clone());
            (record_trace(cfg, a.output.as_deref())?, a.output.clone())
        }
    };
    if let Some(code) = trace.exit.code.filter(|&c| c != 0) {
        eprintln!("warning: the workload exited {code}; checking what it did anyway");
    }
    let (mut cfg, checker_flag) = run_config(&a)?;
    let checker_command = cfg.checker.command().to_string();
    let bars = Bars::attach(&mut cfg);
    if let Some((shard, part)) = shard {
        let result = check_shard(&trace, &cfg, shard);
        bars.clear();
        return write_part(result, &part, trace_path.as_deref());
    }
    let result = check_trace(&trace, &cfg);
    bars.clear();
    let report = match result {
        Ok(r) => r,
        Err(RunError::Interrupted) => return Err(anyhow!("interrupted")),
        Err(e) => return Err(e).context("checking crash states"),
    };
    let shown = trace_path.as_ref().map(|p| p.display().to_string());
    let trace_id = trace.content_id();
    let ctx = ExportContext {
        trace: &trace,
        trace_path: shown.as_deref(),
        trace_id: &trace_id,
        checker: &checker_command,
        checker_flag,
        state_flags: &a.explore.state_flags(),
        all_causes: a.report.all_causes,
        promise_prefix: a.explore.ack_prefix.as_ref().map(|p| p.as_bytes()),
    };
    let code = a.report.emit(&report, &ctx)?;
    match &a.baseline {
        None => Ok(code),
        Some(path) => {
            let case = a
                .case
                .clone()
                .unwrap_or_else(|| baseline::case_of_run(a.trace.as_deref(), &a.command));
            ratchet_exit(path, &case, &report, mode, a.report.json)
        }
    }
}

/// The run's settings from its flags, and the flag that named the checker.
fn run_config(a: &RunArgs) -> Result<(RunConfig, &'static str)> {
    let timeout = std::time::Duration::from_secs_f64(a.timeout);
    let (checker, checker_flag): (Box<dyn Checker>, _) = match (&a.checker, &a.checker_server) {
        (_, Some(server)) => (
            Box::new(ServerChecker::new(server.clone(), timeout)),
            "--checker-server",
        ),
        (Some(command), None) => (
            Box::new(ShellChecker {
                command: command.clone(),
                timeout,
            }),
            "--checker",
        ),
        (None, None) => return Err(anyhow!("give --checker CMD or --checker-server CMD")),
    };
    let mut cfg = RunConfig::with_checker(checker);
    cfg.models = a.explore.models();
    if let Some(j) = a.jobs {
        cfg.jobs = usize::try_from(j).unwrap_or(usize::MAX);
    }
    cfg.explore = a.explore.config();
    cfg.sector = a.explore.sector;
    cfg.promise_prefix = a.explore.ack_prefix.as_ref().map(|p| p.as_bytes().to_vec());
    cfg.consistency_only = a.consistency_only;
    cfg.fix_verifications = a.verify_fixes;
    cfg.check_budget = (!a.explore.exhaustive).then_some(a.check_budget);
    cfg.require_exact = a.require_exact;
    cfg.cancel = Some(Arc::clone(&INTERRUPTED));
    Ok((cfg, checker_flag))
}

/// The block backend's settings from the run's flags.
fn block_config(a: &RunArgs) -> Result<BlockConfig> {
    let fs: FsKind = a.block.fs.parse().map_err(|e| anyhow!("--fs: {e}"))?;
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

/// `run --backend block`: the workload recorded on a real file system, the
/// posix model checked on its trace, then every crash state of the device
/// mounted and checked.
fn cmd_run_block(a: RunArgs) -> Result<u8> {
    let unsupported = [
        ("--trace", a.trace.is_some()),
        ("--shard", a.shard.is_some()),
        ("--baseline", a.baseline.is_some()),
        ("--junit", a.report.junit.is_some()),
        ("--markdown", a.report.markdown.is_some()),
        ("--html", a.report.html.is_some()),
        ("--checker-server", a.checker_server.is_some()),
    ];
    if let Some((flag, _)) = unsupported.iter().find(|(_, set)| *set) {
        return Err(anyhow!("{flag} does not work with --backend block"));
    }
    let bcfg = block_config(&a)?;
    let (mut cfg, _) = run_config(&a)?;
    cfg.models = vec![Model::Posix];
    let repeat = a.block.repeat;
    // Every run's verdict and failing states; the worst run is kept.
    let mut runs: Vec<(Verdict, usize)> = Vec::new();
    let mut worst: Option<BlockRun> = None;
    for i in 0..repeat {
        let run = block_run_once(&a, &bcfg, &cfg)?;
        let seen = run.outcome();
        if repeat > 1 {
            eprintln!(
                "run {} of {repeat}: {} ({} failing states)",
                i + 1,
                seen.0.name(),
                seen.1
            );
        }
        runs.push(seen);
        if worst.as_ref().is_none_or(|w| seen > w.outcome()) {
            worst = Some(run);
        }
    }
    let run = worst.ok_or_else(|| anyhow!("--repeat must be at least 1"))?;
    let repeat_line = (repeat > 1).then(|| repeat_summary(&runs));
    emit_block_run(&a, &cfg, &run, repeat_line.as_deref(), &runs)
}

/// One recording on the real file system, the posix model checked on its
/// trace, and the device's states checked.
struct BlockRun {
    rec: blackout::block::BlockRecording,
    posix: RunReport,
    block: Option<blackout::block::BlockReport>,
}

impl BlockRun {
    /// The run's verdict and failing states, for finding the worst run.
    fn outcome(&self) -> (Verdict, usize) {
        match &self.block {
            Some(b) => (b.verdict, b.failing.len()),
            None => (self.posix.verdict, 0),
        }
    }
}

fn block_run_once(a: &RunArgs, bcfg: &BlockConfig, cfg: &RunConfig) -> Result<BlockRun> {
    let rcfg = a.recording.clone().config(a.command.clone());
    let recorded = record_block(bcfg, &rcfg);
    if INTERRUPTED.load(Ordering::SeqCst) {
        return Err(anyhow!("interrupted"));
    }
    let rec = recorded?;
    if let Some(out) = &a.output {
        rec.trace
            .save(out)
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    eprintln!(
        "recorded {} ops and {} block records on {} (base at record {})",
        rec.trace.ops.len(),
        rec.device.log().records.len(),
        bcfg.session.fs,
        rec.device.base()
    );
    let posix = match check_trace(&rec.trace, cfg) {
        Ok(r) => r,
        Err(RunError::Interrupted) => return Err(anyhow!("interrupted")),
        Err(e) => return Err(e).context("checking the posix model's crash states"),
    };
    let block = if matches!(posix.verdict, Verdict::Pass | Verdict::Fail) {
        let how = BlockCheck {
            config: bcfg,
            checker: cfg.checker.as_ref(),
            promise_prefix: a.explore.ack_prefix.as_ref().map(|p| p.as_bytes()),
            scratch_parent: blackout::sys::scratch::default_scratch_parent(),
            cancel: Some(&INTERRUPTED),
            posix: Some(&posix),
            budget: cfg.check_budget,
        };
        match check_block(&rec, &how) {
            Ok(r) => Some(r),
            Err(BlockError::Interrupted) => return Err(anyhow!("interrupted")),
            Err(e) => return Err(e).context("checking the block device's crash states"),
        }
    } else {
        None
    };
    Ok(BlockRun { rec, posix, block })
}

/// `--repeat`'s line: whether every run gave the same verdict.
fn repeat_summary(runs: &[(Verdict, usize)]) -> String {
    let counts: Vec<String> = runs.iter().map(|r| r.1.to_string()).collect();
    if runs.iter().all(|r| r.0 == runs[0].0) {
        format!(
            "the verdict held over {} runs: {} each time (failing states per run: {}); the worst run is shown",
            runs.len(),
            runs[0].0.name(),
            counts.join(", ")
        )
    } else {
        let verdicts: Vec<&str> = runs.iter().map(|r| r.0.name()).collect();
        format!(
            "THE VERDICT VARIED over {} runs: {} (failing states per run: {}); the worst run is shown",
            runs.len(),
            verdicts.join(", "),
            counts.join(", ")
        )
    }
}

/// Prints a block run: the posix report, then the block report (or both
/// as one JSON document), then `--repeat`'s line.
fn emit_block_run(
    a: &RunArgs,
    cfg: &RunConfig,
    run: &BlockRun,
    repeat_line: Option<&str>,
    runs: &[(Verdict, usize)],
) -> Result<u8> {
    let trace_id = run.rec.trace.content_id();
    let shown = a.output.as_ref().map(|p| p.display().to_string());
    let ctx = ExportContext {
        trace: &run.rec.trace,
        trace_path: shown.as_deref(),
        trace_id: &trace_id,
        checker: cfg.checker.command(),
        checker_flag: "--checker",
        state_flags: &a.explore.state_flags(),
        all_causes: a.report.all_causes,
        promise_prefix: a.explore.ack_prefix.as_ref().map(|p| p.as_bytes()),
    };
    let mut out = std::io::stdout().lock();
    if a.report.json {
        let posix_json: serde_json::Value =
            serde_json::from_slice(&JsonExporter.export(&run.posix, &ctx))?;
        let mut doc = serde_json::json!({ "posix": posix_json, "block": run.block });
        if repeat_line.is_some() {
            let verdicts: Vec<&str> = runs.iter().map(|r| r.0.name()).collect();
            let failing: Vec<usize> = runs.iter().map(|r| r.1).collect();
            doc["repeat"] = serde_json::json!({
                "verdicts": verdicts,
                "failing": failing,
                "varied": runs.iter().any(|r| r.0 != runs[0].0),
            });
        }
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        let text = TextExporter {
            color: use_color(a.report.color),
        };
        out.write_all(&text.export(&run.posix, &ctx))?;
        match &run.block {
            Some(b) => write!(out, "\n{}", b.text())?,
            None => writeln!(
                out,
                "\n{}: not checked: the posix run says {} (fix the checker first)",
                run.rec.fs,
                run.posix.verdict.name()
            )?,
        }
        if let Some(line) = repeat_line {
            writeln!(out, "{line}")?;
        }
    }
    out.flush()?;
    Ok(run.outcome().0.exit_code())
}

/// The ratchet after a run: compares it with the baseline (or records it)
/// and prints the violations after the report (on stderr with --json).
/// Exit 0 when no rule is broken, 1 when one is, 2 when the run could not
/// check its states (verdict ERROR).
fn ratchet_exit(
    path: &std::path::Path,
    case: &str,
    report: &RunReport,
    mode: baseline::Mode,
    json: bool,
) -> Result<u8> {
    let code = match baseline::check_run(path, case, report, mode)? {
        baseline::Ratchet::Updated { rows } => {
            eprintln!(
                "baseline {}: case `{case}` recorded ({rows} rows in the file)",
                path.display()
            );
            0
        }
        baseline::Ratchet::Compared(c) => {
            eprint!("{}", c.better_text(path));
            let rerun = format!("blackout run ... --baseline {}", path.display());
            let mut said = c.violations_text(path, &rerun);
            if c.passed() {
                said = format!(
                    "baseline {}: case `{case}` is no worse than recorded (only its rows compared)\n",
                    path.display()
                );
            }
            if json {
                eprint!("{said}");
            } else {
                print!("{said}");
            }
            u8::from(!c.passed())
        }
    };
    Ok(if report.verdict == Verdict::Error {
        2
    } else {
        code
    })
}

fn cmd_states(a: StatesArgs) -> Result<u8> {
    let trace = load_trace(&a.trace)?;
    let prefix = a.explore.ack_prefix.as_ref().map(|p| p.as_bytes());
    let outputs = Outputs::new(&trace, prefix);
    let explored = distinct_states(
        &trace,
        &outputs,
        &a.explore.models(),
        &a.explore.config(),
        a.explore.sector,
    )?;
    let mut out = std::io::stdout().lock();
    if a.json {
        let models: Vec<serde_json::Value> = explored
            .models
            .iter()
            .map(|m| {
                serde_json::json!({
                    "model": m.model,
                    "states": m.states,
                    "distinct": m.reach.len(),
                    "ids": m.reach.iter().map(|(_, d)| d.id()).collect::<Vec<_>>(),
                    "coverage": m.coverage,
                })
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &serde_json::json!({ "models": models }))?;
        writeln!(out)?;
    } else {
        for m in &explored.models {
            writeln!(
                out,
                "# {}: {} states, {} distinct by content; {}",
                m.model.name(),
                for_people(m.states as u128),
                for_people(m.reach.len() as u128),
                explored_text(m.model, &m.coverage, &a.explore.config())
            )?;
            for (_, d) in &m.reach {
                writeln!(out, "{}", d.id())?;
            }
        }
    }
    out.flush()?;
    Ok(0)
}

fn cmd_state(a: StateArgs) -> Result<u8> {
    let trace = load_trace(&a.trace)?;
    if let Some(want) = &a.trace_id {
        let have = trace.content_id();
        if &have != want {
            return Err(anyhow!(
                "{} is not the recording that state was found in (its id is {have}, the reproduce line names {want}): it was overwritten, or is another run's",
                a.trace.display()
            ));
        }
    }
    let desc = StateDesc::parse(&a.id).ok_or_else(|| {
        anyhow!(
            "`{}` is not a state id (expected e.g. c9, c9.lost6, c9.lost3+6s, c9.torn4h)",
            a.id
        )
    })?;
    desc.validate(&trace.ops)
        .map_err(|e| anyhow!("state {}: {e}", a.id))?;
    let (acks, output) = write_state(
        &trace,
        &desc,
        a.ack_prefix.as_ref().map(|p| p.as_bytes()),
        a.sector,
        &a.out,
    )
    .with_context(|| format!("cannot write state into {}", a.out.display()))?;
    let dir = std::fs::canonicalize(&a.out)?;
    let acks = std::fs::canonicalize(acks)?;
    let output = std::fs::canonicalize(output)?;
    let q = |p: &std::path::Path| shell_quote(&p.display().to_string());
    println!("wrote state {} into {}", desc.id(), dir.display());
    println!(
        "promises in {}, output in {}",
        acks.display(),
        output.display()
    );
    if let Some(server) = &a.checker_server {
        let promises = std::fs::read(&acks)?;
        let id = desc.id();
        let request = request_line(&StateFiles {
            dir: dir.clone(),
            acks_file: acks.clone(),
            output_file: output.clone(),
            id: &id,
            promises: &promises,
        });
        println!(
            "check it by hand (the server answers ok or fail REASON):\n  cd {} && printf '%s\\n' {} | {}=1 sh -c {}",
            q(dir.parent().unwrap_or(&dir)),
            shell_quote(String::from_utf8_lossy(&request).trim_end()),
            env::CHECKER_SERVER,
            shell_quote(server)
        );
        return Ok(0);
    }
    let checker = a
        .checker
        .as_deref()
        .map(|c| substitute(std::ffi::OsStr::new(c), &dir))
        .map(|c| shell_quote(&c.to_string_lossy()))
        .unwrap_or_else(|| "'CHECKER'".into());
    // As a run hands them over: in BLACKOUT_ACKED when they fit, else in
    // the file alone.
    let (unset, acked) = if acked_env_value(&std::fs::read(&acks)?).is_some() {
        (
            String::new(),
            format!("{}=\"$(cat {})\"", env::ACKED, q(&acks)),
        )
    } else {
        println!(
            "the promises exceed what {} may hold ({} KiB): the checker must read {}",
            env::ACKED,
            ACKED_ENV_BYTES_MAX / 1024,
            env::ACKS_FILE
        );
        (
            format!("env -u {} ", env::ACKED),
            format!("{}=1", env::ACKED_IN_FILE),
        )
    };
    println!(
        "check it by hand:\n  cd {} && {unset}{}={} {acked} {}={} {}={} sh -c {checker}",
        q(&dir),
        env::STATE,
        desc.id(),
        env::ACKS_FILE,
        q(&acks),
        env::OUTPUT_FILE,
        q(&output),
    );
    Ok(0)
}

fn cmd_ops(a: OpsArgs) -> Result<u8> {
    let trace = match (&a.trace, &a.strace) {
        (Some(path), _) => Trace::load(path).with_context(|| format!("{}", path.display()))?,
        (None, Some(log_path)) => {
            let log = std::fs::read(log_path)
                .with_context(|| format!("cannot read {}", log_path.display()))?;
            let dir = a
                .dir
                .as_ref()
                .ok_or_else(|| anyhow!("--strace needs --dir"))?;
            let tree = match &a.init {
                Some(init) => {
                    snapshot(init).with_context(|| format!("--init {}", init.display()))?
                }
                None => Tree::default(),
            };
            let dir_bytes = std::os::unix::ffi::OsStrExt::as_bytes(dir.as_os_str()).to_vec();
            let opts = ReplayOptions {
                volatile: a.volatile.clone(),
            };
            opts.validate().map_err(|e| anyhow!(e))?;
            let replayed = replay_with(&log, &tree, &dir_bytes, &opts)
                .map_err(|e| anyhow!("{}:{e}", log_path.display()))?;
            Trace::new(
                &tree,
                replayed,
                TraceMeta {
                    dir: dir_bytes,
                    volatile: a.volatile.clone(),
                    ..TraceMeta::default()
                },
            )
        }
        (None, None) => return Err(anyhow!("give a trace, or --strace LOG --dir PATH")),
    };
    let mut out = std::io::stdout().lock();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &trace.op_log_json())?;
        writeln!(out)?;
    } else {
        out.write_all(trace.op_log_text().as_bytes())?;
    }
    out.flush()?;
    Ok(0)
}

/// The progress shown on standard error while states are built and
/// checked.
struct Bars {
    checking: indicatif::ProgressBar,
    building: indicatif::ProgressBar,
}

impl Bars {
    /// Bars fed by `cfg`'s progress callbacks.
    fn attach(cfg: &mut RunConfig) -> Bars {
        let checking =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        checking.set_style(
            indicatif::ProgressStyle::with_template("checking {pos}/{len} states {wide_bar} {eta}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        let building =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        building.set_style(
            indicatif::ProgressStyle::with_template("building crash states: {pos} {spinner}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        let building_bar = building.clone();
        cfg.explore_progress = Some(Box::new(move |n| building_bar.set_position(n as u64)));
        let progress_bar = checking.clone();
        let building_bar = building.clone();
        cfg.progress = Some(Box::new(move |done, total| {
            building_bar.finish_and_clear();
            progress_bar.set_length(total as u64);
            progress_bar.set_position(done as u64);
        }));
        Bars { checking, building }
    }

    fn clear(&self) {
        self.building.finish_and_clear();
        self.checking.finish_and_clear();
    }
}

/// `--shard K/N` and `--part FILE`, checked together: the shard and where
/// its part goes (writable), or `None` for a whole run.
fn shard_of(a: &RunArgs) -> Result<Option<(Shard, PathBuf)>> {
    let (spec, part) = match (&a.shard, &a.part) {
        (None, None) => return Ok(None),
        (None, Some(_)) => return Err(anyhow!("--part needs --shard K/N")),
        (Some(_), None) => {
            return Err(anyhow!(
            "--shard needs --part FILE: where the shard writes what it found, for `blackout merge`"
        ))
        }
        (Some(spec), Some(part)) => (spec, part),
    };
    let shard = Shard::parse(spec).map_err(|e| anyhow!("--shard: {e}"))?;
    if a.trace.is_none() {
        return Err(anyhow!(
            "--shard needs --trace: every shard must check the same recording (make it once with `blackout record -o run.trace`)"
        ));
    }
    check_writable(part).with_context(|| format!("cannot write --part {}", part.display()))?;
    Ok(Some((shard, part.clone())))
}

/// Writes a shard's part and says what it holds.
fn write_part(
    result: Result<Part, RunError>,
    path: &std::path::Path,
    trace_path: Option<&std::path::Path>,
) -> Result<u8> {
    let mut part = match result {
        Ok(p) => p,
        Err(RunError::Interrupted) => return Err(anyhow!("interrupted")),
        Err(e) => return Err(e).context("checking crash states"),
    };
    part.trace = trace_path.map(|p| p.display().to_string());
    part.save(path)
        .with_context(|| format!("cannot write --part {}", path.display()))?;
    let mut out = std::io::stdout().lock();
    match &part.stop {
        Some(stop) => writeln!(
            out,
            "shard {}: the run stops before checking the states ({stop}); wrote {}",
            part.shard,
            path.display()
        )?,
        None => writeln!(
            out,
            "shard {}: checked {} of the {} distinct states (the rest are the other shards'); wrote {}",
            part.shard,
            for_people(part.states.len() as u128),
            for_people(part.distinct as u128),
            path.display()
        )?,
    }
    writeln!(
        out,
        "the verdict comes from `blackout merge` with the parts of all {} shards",
        part.shard.count
    )?;
    out.flush()?;
    Ok(0)
}

#[derive(Args)]
struct MergeArgs {
    /// The part file of every shard (`blackout run --shard K/N --part FILE`).
    #[arg(value_name = "PART", required = true)]
    parts: Vec<PathBuf>,
    /// The trace the shards checked (default: the path the parts name).
    #[arg(long, value_name = "TRACE")]
    trace: Option<PathBuf>,
    /// Checkers run at once by the fix verifications (default: the number
    /// of CPUs).
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    jobs: Option<u64>,
    #[command(flatten)]
    report: ReportArgs,
}

fn cmd_merge(a: MergeArgs) -> Result<u8> {
    for (flag, path, _) in a.report.files() {
        check_writable(path).with_context(|| format!("cannot write {flag} {}", path.display()))?;
    }
    let mut parts = Vec::with_capacity(a.parts.len());
    for path in &a.parts {
        parts.push(Part::load(path)?);
    }
    let trace_path = match (&a.trace, parts[0].trace.as_ref()) {
        (Some(p), _) => p.clone(),
        (None, Some(p)) => PathBuf::from(p),
        (None, None) => {
            return Err(anyhow!(
                "{} names no trace file: pass --trace",
                a.parts[0].display()
            ))
        }
    };
    let trace = match &a.trace {
        Some(_) => load_trace(&trace_path)?,
        None => load_trace(&trace_path).with_context(|| {
            format!(
                "the trace {} names (pass --trace if it is elsewhere)",
                a.parts[0].display()
            )
        })?,
    };
    let settings = parts[0].settings.clone();
    let mut cfg = RunConfig::from_settings(&settings)
        .map_err(|e| anyhow!("{}: {e}", a.parts[0].display()))?;
    if let Some(j) = a.jobs {
        cfg.jobs = usize::try_from(j).unwrap_or(usize::MAX);
    }
    cfg.cancel = Some(Arc::clone(&INTERRUPTED));
    let bars = Bars::attach(&mut cfg);
    let result = merge_parts(&trace, &cfg, &parts);
    bars.clear();
    let report = match result {
        Ok(r) => r,
        Err(MergeError::Run(RunError::Interrupted)) => return Err(anyhow!("interrupted")),
        Err(MergeError::Part(e)) => return Err(e.into()),
        Err(e) => return Err(e).context("merging the parts"),
    };
    let shown = trace_path.display().to_string();
    let trace_id = trace.content_id();
    let prefix = settings.ack_prefix.as_ref().map(|p| p.display());
    let ctx = ExportContext {
        trace: &trace,
        trace_path: Some(&shown),
        trace_id: &trace_id,
        checker: &settings.checker,
        checker_flag: settings.checker_kind.flag().unwrap_or_default(),
        state_flags: &state_flags_of(prefix.as_deref(), settings.sector),
        all_causes: a.report.all_causes,
        promise_prefix: settings.ack_prefix.as_ref().map(|p| p.0.as_slice()),
    };
    a.report.emit(&report, &ctx)
}
