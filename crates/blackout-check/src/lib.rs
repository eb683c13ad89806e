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
pub mod outcome;
pub mod pool;
pub mod server;
pub mod shell;
pub mod slot;

use std::io;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use outcome::Outcome;
use slot::Slot;

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

    /// How the command is run: `shell` (a process per state, the default),
    /// `server` (one long-lived process per worker) or `closure` (in the
    /// process). Recorded with a sharded run's settings, so a merge checks
    /// the way its shards did (only `shell` and `server` can be sharded).
    fn kind(&self) -> &'static str {
        "shell"
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
