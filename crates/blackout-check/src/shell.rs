//! The shell checker: the user's command, run by `sh -c` with the state
//! directory as its working directory, `{dir}` replaced by that directory's
//! path, and these variables set:
//!
//! - `BLACKOUT_ACKED`: the promises, one per line;
//! - `BLACKOUT_ACKS_FILE`: a file holding the same;
//! - `BLACKOUT_OUTPUT_FILE`: a file holding everything the workload printed
//!   before the crash;
//! - `BLACKOUT_STATE`: the state's id (`c5.lost3`).
//!
//! Exit 0 accepts the state; anything else is a violation, and the last line
//! the checker wrote to stderr (else stdout) is its reason. The checker runs
//! in its own process group, which is killed when it exits, times out or the
//! run is cancelled. Where mount namespaces are allowed, a checker started
//! by a pool worker sees no other worker's slot ([`blackout_sys::isolate`]).

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use blackout_oplog::ops::escape_controls;
use blackout_sys::command::{signal_name, substitute};
use blackout_sys::proc::{wait_group, Waited};

use crate::outcome::Outcome;
use crate::slot::Slot;
use crate::{Checker, StateFiles};

/// The checker timeout when none is given, in seconds.
pub const CHECKER_TIMEOUT_SECONDS_DEFAULT: u64 = 60;

/// A shell command as the checker, and how long one run may take.
#[derive(Debug, Clone)]
pub struct ShellChecker {
    /// The shell command (`{dir}` is substituted).
    pub command: String,
    /// How long one run may take before its process group is killed.
    pub timeout: Duration,
}

impl ShellChecker {
    /// A shell checker with the default timeout.
    pub fn new(command: impl Into<String>) -> ShellChecker {
        ShellChecker {
            command: command.into(),
            timeout: Duration::from_secs(CHECKER_TIMEOUT_SECONDS_DEFAULT),
        }
    }
}

impl Checker for ShellChecker {
    fn check(
        &self,
        slot: &Slot,
        state: &StateFiles<'_>,
        cancel: Option<&AtomicBool>,
    ) -> io::Result<Option<Outcome>> {
        run_shell(self, slot, state, cancel)
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    fn command(&self) -> &str {
        &self.command
    }
}

/// Runs the shell checker on the state a slot holds.
fn run_shell(
    checker: &ShellChecker,
    slot: &Slot,
    state: &StateFiles<'_>,
    cancel: Option<&AtomicBool>,
) -> io::Result<Option<Outcome>> {
    let (fs_dir, promises, id) = (&state.dir, state.promises, state.id);
    let command = substitute(std::ffi::OsStr::new(&checker.command), fs_dir);
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(fs_dir)
        .env(
            "BLACKOUT_ACKED",
            std::ffi::OsStr::from_bytes(promises.strip_suffix(b"\n").unwrap_or(promises)),
        )
        .env("BLACKOUT_ACKS_FILE", &state.acks_file)
        .env("BLACKOUT_OUTPUT_FILE", &state.output_file)
        .env("BLACKOUT_STATE", id)
        .stdin(Stdio::null())
        .stdout(Slot::fresh(&slot.stdout)?)
        .stderr(Slot::fresh(&slot.stderr)?)
        .process_group(0);
    let mut child = blackout_sys::proc::spawn(&mut cmd)?;
    let outcome = match wait_group(&mut child, Some(checker.timeout), cancel)? {
        Waited::Cancelled => return Ok(None),
        Waited::TimedOut => Outcome::TimedOut {
            seconds: checker.timeout.as_secs_f64(),
        },
        Waited::Exited(status) if status.success() => Outcome::Pass,
        Waited::Exited(status) => {
            let reason = last_line(&Slot::read_back(&slot.stderr)?)
                .or_else(|| last_line(&Slot::read_back(&slot.stdout).unwrap_or_default()))
                .unwrap_or_default();
            match (status.code(), status.signal()) {
                (Some(c @ (126 | 127)), _) => Outcome::CannotRun {
                    reason: if reason.is_empty() {
                        format!("the shell exited {c}")
                    } else {
                        reason
                    },
                },
                (Some(c), _) => Outcome::Fail {
                    status: format!("exit code {c}"),
                    reason,
                },
                (None, Some(sig)) => Outcome::Fail {
                    status: format!("killed by {}", signal_name(sig)),
                    reason,
                },
                _ => Outcome::Fail {
                    status: "ended".into(),
                    reason,
                },
            }
        }
    };
    Ok(Some(outcome))
}

/// The last non-blank line of a checker's output, on one line, at most 300
/// characters.
fn last_line(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let line = text.lines().rev().find(|l| !l.trim().is_empty())?;
    let line = escape_controls(line.trim());
    Some(if line.chars().count() > 300 {
        let cut: String = line.chars().take(300).collect();
        format!("{cut}...")
    } else {
        line
    })
}
