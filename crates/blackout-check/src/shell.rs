//! The shell checker: the user's command, run by `sh -c` with the state
//! directory as its working directory, `{dir}` replaced by that directory's
//! path, and these variables set:
//!
//! - `BLACKOUT_ACKED`: the promises, one per line, when they fit
//!   ([`ACKED_ENV_BYTES_MAX`]); longer promises are left out of the
//!   environment (Linux refuses to start a program with one variable over
//!   128 KiB), and then `BLACKOUT_ACKED` is unset and
//!   `BLACKOUT_ACKED_IN_FILE` is `1`;
//! - `BLACKOUT_ACKS_FILE`: a file holding every promise, always (a checker
//!   that reads it works whatever the promises' size);
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
use blackout_oplog::protocol as env;
use blackout_sys::command::{signal_name, substitute};
use blackout_sys::proc::{wait_group, Waited};

use crate::outcome::Outcome;
use crate::slot::Slot;
use crate::{Checker, StateFiles};

/// The checker timeout when none is given, in seconds.
pub const CHECKER_TIMEOUT_SECONDS_DEFAULT: u64 = 60;

pub use blackout_oplog::protocol::{acked_env_value, ACKED_ENV_BYTES_MAX};

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

    fn promises_in_file_only(&self, promises: &[u8]) -> bool {
        acked_env_value(promises).is_none()
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
    // Neither variable is inherited from blackout's own environment.
    cmd.env_remove(env::ACKED).env_remove(env::ACKED_IN_FILE);
    match acked_env_value(promises) {
        Some(value) => cmd.env(env::ACKED, std::ffi::OsStr::from_bytes(value)),
        None => cmd.env(env::ACKED_IN_FILE, "1"),
    };
    cmd.arg("-c")
        .arg(command)
        .current_dir(fs_dir)
        .env(env::ACKS_FILE, &state.acks_file)
        .env(env::OUTPUT_FILE, &state.output_file)
        .env(env::STATE, id)
        .stdin(Stdio::null())
        .stdout(Slot::fresh(&slot.stdout)?)
        .stderr(Slot::fresh(&slot.stderr)?)
        .process_group(0);
    let mut child = blackout_sys::proc::spawn(&mut cmd).map_err(|e| spawn_error(fs_dir, e))?;
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

/// Why a checker could not be started in `dir`: when the directory is gone
/// (another worker's checker removed it, where isolation is not
/// available), the error names it like every other slot error.
pub(crate) fn spawn_error(dir: &std::path::Path, e: io::Error) -> io::Error {
    if dir.is_dir() {
        io::Error::new(e.kind(), format!("starting the checker (/bin/sh -c): {e}"))
    } else {
        crate::slot::at("starting the checker in", dir, e)
    }
}

/// The last non-blank line of a checker's output, on one line, at most 300
/// characters.
pub(crate) fn last_line(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let line = text.lines().rev().find(|l| !l.trim().is_empty())?;
    Some(shorten(&escape_controls(line.trim())))
}

/// At most 300 characters of a reason (`...` marks a cut).
pub(crate) fn shorten(text: &str) -> String {
    if text.chars().count() > 300 {
        let cut: String = text.chars().take(300).collect();
        format!("{cut}...")
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `command` as the checker on an empty state with these promises
    /// (written to the slot's acks file, as a run does).
    fn check_with(promises: &[u8], command: &str) -> Outcome {
        let dir = tempfile::tempdir().unwrap();
        let slot = Slot::new(&dir.path().join("w0")).unwrap();
        std::fs::create_dir(slot.fs()).unwrap();
        let files = slot.files("c1", promises);
        std::fs::write(&files.acks_file, promises).unwrap();
        std::fs::write(&files.output_file, promises).unwrap();
        ShellChecker::new(command)
            .check(&slot, &files, None)
            .unwrap()
            .unwrap()
    }

    /// `lines` promise lines of 111 bytes each.
    fn promises(lines: usize) -> Vec<u8> {
        let mut v = Vec::new();
        for i in 0..lines {
            v.extend_from_slice(format!("ack {i:06} {}\n", "x".repeat(99)).as_bytes());
        }
        v
    }

    #[test]
    fn promises_that_fit_are_in_the_environment_and_the_file() {
        let p = promises(10);
        assert_eq!(acked_env_value(&p), Some(&p[..p.len() - 1]));
        let checker = ShellChecker::new("true");
        assert!(!checker.promises_in_file_only(&p));
        let outcome = check_with(
            &p,
            r#"[ "$BLACKOUT_ACKED" = "$(cat "$BLACKOUT_ACKS_FILE")" ] && [ -z "${BLACKOUT_ACKED_IN_FILE+set}" ]"#,
        );
        assert_eq!(outcome, Outcome::Pass);
    }

    #[test]
    fn promises_too_long_for_the_environment_are_in_the_file_only() {
        // 1 MiB of promises: past what one environment string may hold.
        let p = promises(10_000);
        assert!(p.len() > 1 << 20);
        assert_eq!(acked_env_value(&p), None);
        assert!(ShellChecker::new("true").promises_in_file_only(&p));
        let outcome = check_with(
            &p,
            r#"[ -z "${BLACKOUT_ACKED+set}" ] && [ "$BLACKOUT_ACKED_IN_FILE" = 1 ] && [ "$(wc -l < "$BLACKOUT_ACKS_FILE")" -eq 10000 ]"#,
        );
        assert_eq!(outcome, Outcome::Pass);
    }

    #[test]
    fn the_bound_is_on_the_value_without_its_last_newline() {
        let mut p = vec![b'x'; ACKED_ENV_BYTES_MAX];
        p.push(b'\n');
        assert_eq!(
            acked_env_value(&p).map(<[u8]>::len),
            Some(ACKED_ENV_BYTES_MAX)
        );
        p.insert(0, b'x');
        assert_eq!(acked_env_value(&p), None);
        assert_eq!(acked_env_value(b""), Some(&b""[..]));
    }
}
