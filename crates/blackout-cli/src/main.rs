//! The `blackout` command: a thin shell over the `blackout` engine crate.
//!
//! `main` → `run` → one function per subcommand, each in its module:
//! `args` (the clap structs), `run` and `block` (`blackout run` with a
//! model or on a real file system), `record`, `inspect` (`ops`, `states`,
//! `state`), `merge`, `help` (`completions`, `man`); `report` sends a
//! report where the flags say. Exit codes: 0 success, 1 a violation was
//! found, 2 could not run (errors print one `error:` line); a stop signal
//! 128 + its number.

mod args;
mod clean;
mod cluster;
mod help;
mod inspect;
mod live;
mod merge;
mod record;
mod report;
mod run;
mod soak;

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};

use anyhow::Result;
use clap::Parser;

use clap::{CommandFactory, Subcommand};

use args::{SoakArgs, SOAK_EXAMPLES};
use blackout::export::json::JSON_SCHEMA;
use blackout::oplog::ops::escape_controls;
use clean::{CleanArgs, CLEAN_EXAMPLES};
use help::{cmd_completions, cmd_man};
use help::{CompletionsArgs, ManArgs, COMPLETIONS_EXAMPLES, MAN_EXAMPLES};
use inspect::{cmd_ops, cmd_state, cmd_states};
use inspect::{OpsArgs, StateArgs, StatesArgs, OPS_EXAMPLES, STATES_EXAMPLES, STATE_EXAMPLES};
use live::{FsCmd, FS_EXAMPLES};
use merge::cmd_merge;
use merge::{MergeArgs, MERGE_EXAMPLES};
use record::cmd_record;
use record::{RecordArgs, RECORD_EXAMPLES};
use run::cmd_run;
use run::flags::{RunArgs, RUN_EXAMPLES};

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

/// Set when SIGINT (Ctrl-C), SIGTERM or SIGHUP arrives: every stage stops,
/// kills its children's process groups and removes its scratch directories.
pub(crate) static INTERRUPTED: LazyLock<Arc<AtomicBool>> =
    LazyLock::new(|| Arc::new(AtomicBool::new(false)));

/// The number of the signal that stopped the run (0: none), for the exit
/// code 128 + N.
pub(crate) static STOP_SIGNAL: LazyLock<Arc<AtomicUsize>> =
    LazyLock::new(|| Arc::new(AtomicUsize::new(0)));

/// The signals that stop a run: Ctrl-C, what `timeout`, CI runners and
/// systemd send, and a closed terminal.
pub(crate) const STOP_SIGNALS: [i32; 3] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
];

/// Routes every stop signal to the cancel flag (the handlers only set
/// atomics; the stages look at the flag).
pub(crate) fn install_signal_handlers() {
    for sig in STOP_SIGNALS {
        let _ = signal_hook::flag::register(sig, Arc::clone(&INTERRUPTED));
        let _ = signal_hook::flag::register_usize(sig, Arc::clone(&STOP_SIGNAL), sig as usize);
    }
}

/// The exit code of a run stopped by a signal: 128 + its number (130 for
/// Ctrl-C, 143 for SIGTERM, 129 for SIGHUP).
pub(crate) fn stopped_exit_code() -> u8 {
    let sig = STOP_SIGNAL.load(Ordering::SeqCst);
    let sig = if sig == 0 { 2 } else { sig };
    u8::try_from(128 + sig).unwrap_or(130)
}

fn main() -> ExitCode {
    // Before any thread: what exploration frees goes back to the system.
    blackout::sys::memory::map_large_allocations();
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

pub(crate) fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

pub(crate) fn run(cli: Cli) -> Result<u8> {
    if matches!(cli.command, Cmd::Run(_) | Cmd::Record(_) | Cmd::Merge(_)) {
        clean::before_run();
    }
    match cli.command {
        Cmd::Run(a) => cmd_run(*a),
        Cmd::Merge(a) => cmd_merge(a),
        Cmd::Record(a) => cmd_record(a),
        Cmd::Ops(a) => cmd_ops(a),
        Cmd::States(a) => cmd_states(a),
        Cmd::State(a) => cmd_state(a),
        Cmd::Fs(c) => live::cmd_fs(c),
        Cmd::Soak(a) => soak::cmd_soak(*a),
        Cmd::Clean(a) => clean::cmd_clean(a),
        Cmd::Completions(a) => cmd_completions(a, Cli::command()),
        Cmd::Man(a) => cmd_man(a, Cli::command()),
    }
}
