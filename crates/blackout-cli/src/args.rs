//! The flags more than one command shares (clap groups: how a workload is
//! recorded, how crash states are enumerated, how a report is given, what
//! a crash keeps), their parsers, and the flags that rebuild a state by
//! hand. Each command's own flags are beside its handler (`run::flags`,
//! `merge`, `record`, `inspect`, `live`, `clean`, `help`; the soaks' in
//! `args::soak`, which both soak handlers read).

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, ValueEnum};

use blackout::explore::enumerate::{
    ExploreConfig, Representatives, BUDGET_DEFAULT, EXHAUSTIVE_LIMIT_DEFAULT, EXHAUSTIVE_LIMIT_MAX,
};
use blackout::explore::model::Model;
use blackout::explore::state::SECTOR_BYTES_DEFAULT;
use blackout::export::text::shell_quote;
use blackout::record::omit::OmittedSync;
use blackout::record::record::WORKLOAD_TIMEOUT_SECONDS_DEFAULT;
use blackout::record::{RecordConfig, StraceRecorder};

use crate::INTERRUPTED;

mod soak;
pub(crate) use soak::{SoakArgs, SOAK_EXAMPLES};

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
