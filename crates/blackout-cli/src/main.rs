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
mod block;
mod clean;
mod cluster;
mod help;
mod inspect;
mod live;
mod merge;
mod part;
mod record;
mod report;
mod run;
mod soak;

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};

use anyhow::Result;
use clap::Parser;

use args::{Cli, Cmd};
use blackout::export::json::JSON_SCHEMA;
use blackout::oplog::ops::escape_controls;
use help::{cmd_completions, cmd_man};
use inspect::{cmd_ops, cmd_state, cmd_states};
use merge::cmd_merge;
use record::cmd_record;
use run::cmd_run;

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
        Cmd::Completions(a) => cmd_completions(a),
        Cmd::Man(a) => cmd_man(a),
    }
}
