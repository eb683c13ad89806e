//! What one checker run said about a state.

use serde::{Deserialize, Serialize};

/// What one checker run said about a state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Exit 0: the state is acceptable.
    Pass,
    /// The checker rejected the state.
    Fail {
        /// How it ended: `exit code 1`, `killed by SIGSEGV`.
        status: String,
        /// The last line it wrote to stderr, else to stdout.
        reason: String,
    },
    /// The checker did not finish within the timeout; its group was killed.
    TimedOut {
        /// The timeout, in seconds.
        seconds: f64,
    },
    /// A checker server answered neither `ok` nor `fail REASON`, or ended
    /// without answering; it was restarted for the next state.
    BadAnswer {
        /// What it answered (or that it ended), on one line.
        answer: String,
    },
    /// The checker could not be run at all (the shell said 126 or 127: not
    /// found, not executable).
    CannotRun {
        /// What the shell said.
        reason: String,
    },
}

impl Outcome {
    /// Whether the checker rejected the state.
    pub fn is_fail(&self) -> bool {
        matches!(self, Outcome::Fail { .. })
    }

    /// One line for a report.
    pub fn describe(&self) -> String {
        match self {
            Outcome::Pass => "accepted".into(),
            Outcome::Fail { status, reason } if reason.is_empty() => {
                format!("rejected ({status}, nothing on stderr)")
            }
            Outcome::Fail { status, reason } => format!("rejected ({status}): {reason}"),
            Outcome::TimedOut { seconds } => {
                format!("did not finish within {seconds} s; killed with its process group")
            }
            Outcome::BadAnswer { answer } => format!("gave no usable answer: {answer}"),
            Outcome::CannotRun { reason } => format!("could not be run: {reason}"),
        }
    }
}

/// Seconds a real file system's states spent on each step, summed over
/// the workers (with `-j 2` they can add up to twice the wall time): what
/// checking them measures, a shard's part carries and a report shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    /// Writing each state's image (the cursor copied, the writes applied).
    pub build: f64,
    /// Setting up the loop device and mounting (the file system's
    /// recovery).
    pub mount: f64,
    /// Reading the mounted files (to deduplicate).
    pub read: f64,
    /// Running the checker on distinct states.
    pub check: f64,
    /// Unmounting.
    pub unmount: f64,
    /// The file system's checker (`--fsck`).
    pub fsck: f64,
}

impl Timings {
    /// Adds another worker's times.
    pub fn add(&mut self, o: &Timings) {
        self.build += o.build;
        self.mount += o.mount;
        self.read += o.read;
        self.check += o.check;
        self.unmount += o.unmount;
        self.fsck += o.fsck;
    }
}

/// The message a panic carried (`panicked` when it was not text).
///
/// ```
/// use blackout_oplog::outcome::panic_message;
///
/// let payload = std::panic::catch_unwind(|| panic!("bad {}", "header")).unwrap_err();
/// assert_eq!(panic_message(payload.as_ref()), "bad header");
/// ```
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panicked".into()
    }
}
