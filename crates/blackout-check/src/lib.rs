//! Checking: the user's recovery and checker run on each crash state.
//!
//! A [`Checker`] looks at one crash state written into a worker's
//! [`slot::Slot`] and says whether it is acceptable ([`outcome::Outcome`]).
//! [`shell::ShellChecker`] runs the user's shell command once per state, in
//! the state's directory, with the promises in a file and, when they fit,
//! in its environment; [`server::ServerChecker`] keeps one long-lived
//! checker process per worker and asks it about state after state (one
//! JSON line out, `ok` or `fail REASON` back). The [`pool::Pool`] checks many distinct states in parallel
//! (`-j` workers, each reusing one slot), under a scratch directory that is
//! always removed, with cancellation and progress.
//!
//! Checking knows states only as built [`blackout_explore::state::FsState`]s
//! and their ids; it never enumerates, and it draws no verdict.
//!
//! ```
//! use blackout_check::shell::ShellChecker;
//! use blackout_check::Checker;
//!
//! let checker = ShellChecker::new("test -s doc.txt");
//! assert_eq!(checker.command(), "test -s doc.txt");
//! assert_eq!(checker.timeout().as_secs(), 60);
//! ```
#![deny(missing_docs)]

pub mod closure;
mod forked;
pub mod image;
pub mod materialize;
pub mod outcome;
pub mod pool;
pub mod saved;
pub mod server;
pub mod shard;
pub mod shell;
pub mod slot;
pub mod view;
pub mod workers;

use std::io;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use outcome::Outcome;
use slot::Slot;

/// How a [`Checker`] runs its command; in a sharded run's settings as
/// `shell`, `server` or `closure`.
///
/// ```
/// use blackout_check::CheckerKind;
///
/// assert_eq!(CheckerKind::Server.name(), "server");
/// assert_eq!(CheckerKind::Server.flag(), Some("--checker-server"));
/// assert_eq!(CheckerKind::Closure.flag(), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckerKind {
    /// A shell command per state (`--checker`).
    Shell,
    /// One long-lived process per worker, asked state after state
    /// (`--checker-server`).
    Server,
    /// A Rust closure called in the process (`blackout::Scenario`): no
    /// command to rerun by hand, and not shardable.
    Closure,
}

impl CheckerKind {
    /// The kind's name in settings and reports.
    pub fn name(self) -> &'static str {
        match self {
            CheckerKind::Shell => "shell",
            CheckerKind::Server => "server",
            CheckerKind::Closure => "closure",
        }
    }

    /// The flag that passes such a command to `blackout`; `None` for a
    /// closure.
    pub fn flag(self) -> Option<&'static str> {
        match self {
            CheckerKind::Shell => Some("--checker"),
            CheckerKind::Server => Some("--checker-server"),
            CheckerKind::Closure => None,
        }
    }

    /// The checker of this kind that runs `command`, each state's check
    /// (or each answer) given `timeout`; `None` for a closure, which no
    /// command makes.
    pub fn checker(self, command: String, timeout: Duration) -> Option<Box<dyn Checker>> {
        match self {
            CheckerKind::Shell => Some(Box::new(shell::ShellChecker { command, timeout })),
            CheckerKind::Server => Some(Box::new(server::ServerChecker::new(command, timeout))),
            CheckerKind::Closure => None,
        }
    }
}

/// What a checker gets for one state.
#[derive(Debug, Clone)]
pub struct StateFiles<'a> {
    /// The state's directory (the checker's working directory).
    pub dir: PathBuf,
    /// A file holding the promises made before the crash, one per line.
    pub acks_file: PathBuf,
    /// A file holding everything printed before the crash.
    pub output_file: PathBuf,
    /// The state's id (`c5.lost3`).
    pub id: &'a str,
    /// The promises, one per line.
    pub promises: &'a [u8],
}

/// A way of judging one crash state.
///
/// Implementations must be safe to call from several worker threads at
/// once, honour the cancel flag (return `Ok(None)` when it is set), and
/// never take longer than [`Checker::timeout`] (then the outcome is
/// [`Outcome::TimedOut`]).
pub trait Checker: Send + Sync {
    /// Judges the state in `state.dir`. `slot` is the worker's own
    /// directory, for files the checker needs beside the state.
    fn check(
        &self,
        slot: &Slot,
        state: &StateFiles<'_>,
        cancel: Option<&AtomicBool>,
    ) -> io::Result<Option<Outcome>>;

    /// How long one state may take.
    fn timeout(&self) -> Duration;

    /// The command that checks a state by hand (for `reproduce:` lines).
    fn command(&self) -> &str;

    /// How the command is run. Recorded with a sharded run's settings, so a
    /// merge checks the way its shards did (only [`CheckerKind::Shell`] and
    /// [`CheckerKind::Server`] can be sharded).
    fn kind(&self) -> CheckerKind {
        CheckerKind::Shell
    }

    /// Whether this checker gets these promises (one per line) only in a
    /// file, too long for where it looks first (the shell checker's
    /// `BLACKOUT_ACKED`, see [`shell::ACKED_ENV_BYTES_MAX`]); a run says so
    /// once.
    fn promises_in_file_only(&self, _promises: &[u8]) -> bool {
        false
    }

    /// Whether the checker reads the promises and the output from the
    /// slot's `acks` and `output` files (a command does; a closure is handed
    /// the promises): when not, they are not written for each state.
    fn reads_slot_files(&self) -> bool {
        true
    }

    /// The worker that owns `slot` is done checking: end whatever the
    /// checker keeps running for it (a checker server). Called once per
    /// slot, from the worker's thread.
    fn release(&self, _slot: &Slot) {}
}

/// Locks a mutex; a worker that panicked while holding it left the data
/// consistent (every critical section here is one push, insert or remove).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
