//! The real-file-system backend's report: plain data, rendered by every
//! exporter beside the posix model's report on the same trace.
//!
//! A block run records the workload on a real ext4, xfs or btrfs, rebuilds
//! the device at every crash point with each subset of the writes in
//! flight, mounts it (the file system's own recovery runs) and checks it.
//! [`BlockReport`] says what that found: the distinct states after
//! recovery, the failing ones blamed in the posix model's terms
//! ([`Blame`]), what was left out, where the time went. [`BlockSide`] is
//! what a run report carries of it (with `--repeat`'s runs).
//!
//! ```
//! use blackout_analysis::block::block_verdict;
//! use blackout_analysis::report::Verdict;
//!
//! let (v, why) = block_verdict("ext4", None, (1, 0, 9), (20, 20));
//! assert_eq!(v, Verdict::Fail);
//! assert_eq!(why, "1 of 9 distinct states after ext4's recovery failed");
//! ```

use std::time::Duration;

use blackout_explore::model::for_people;
use blackout_oplog::outcome::Outcome;
pub use blackout_oplog::outcome::Timings;

use crate::verdict::Verdict;

/// One crash point as reported.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct PointInfo {
    /// Its index (the `7` of `b7`).
    pub index: usize,
    /// What it is just after (`flush`, `mark "saved"`, `base`, `end`).
    pub after: String,
    /// Seconds since the workload started.
    pub seconds: f64,
    /// The block log position.
    pub position: usize,
    /// Writes in flight.
    pub in_flight: usize,
}

/// A distinct state after recovery and what the checker said.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct BlockChecked {
    /// The first state that recovered to these files (`b7.lost2`).
    pub id: String,
    /// Its crash point.
    pub point: usize,
    /// Its writes in flight that were lost (0-based).
    pub lost: Vec<usize>,
    /// The promises made before its crash point.
    pub promises: Vec<String>,
    /// How many states recovered to the same files and promises.
    pub states: usize,
    /// The checker's outcome.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The blame, for a failing state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blame: Option<Blame>,
}

/// Why a failing state fails, in the model backend's terms.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Blame {
    /// Ops completed when power failed (the op-level crash point).
    pub ops_done: usize,
    /// The last calls completed before the crash, latest last
    /// (`rename doc.txt.tmp -> doc.txt (log line 31)`).
    pub last_calls: Vec<String>,
    /// The posix model's failing state holding the same files, if any.
    pub posix_state: Option<String>,
    /// What that state lost, in the op log's terms.
    pub posix_lost: Vec<String>,
    /// The posix report's cause that state falls under: its number
    /// (from 1) and sentence.
    pub posix_cause: Option<(usize, String)>,
}

/// The block backend's report for one file system.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct BlockReport {
    /// The file system.
    pub fs: String,
    /// The verdict.
    pub verdict: Verdict,
    /// One line saying why.
    pub reason: String,
    /// The crash points explored.
    pub points: Vec<PointInfo>,
    /// States enumerated.
    pub states: usize,
    /// Of them, built, mounted and checked (all of them unless the check
    /// budget ended the rest).
    pub states_checked: usize,
    /// Whether every state was checked.
    pub exact: bool,
    /// Distinct states after recovery (files and promises), each checked
    /// once.
    pub distinct: usize,
    /// The distinct states that failed, first found first.
    pub failing: Vec<BlockChecked>,
    /// States the checker could not judge, or the file system not mount.
    pub errors: Vec<BlockChecked>,
    /// Subsets left out (exact, as a string: it can exceed 2^64).
    pub subsets_left_out: String,
    /// The deepest window: most writes in flight at one crash point.
    pub deepest_window: usize,
    /// Failing states no failing posix state holds the same files as
    /// (the differential check: should be none).
    pub posix_misses: Vec<String>,
    /// Seconds spent checking, and states per second.
    pub seconds: f64,
    /// States built, mounted, checked and unmounted per second.
    pub states_per_second: f64,
    /// Where the time went.
    pub time: Timings,
    /// With `--fsck`: the states the file system's checker complained
    /// about (none is the file system consistent after every crash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fsck: Option<Vec<FsckComplaint>>,
}

/// What the file system's own checker said about a state.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct FsckComplaint {
    /// The state (`b7.lost2`).
    pub id: String,
    /// How the checker exited.
    pub status: String,
    /// Its first line that is not progress.
    pub line: String,
}

/// What a run report carries of the real file system: its report (none
/// when the posix run could not judge, so the device was not checked) and
/// `--repeat`'s runs.
#[derive(Debug, Clone)]
pub struct BlockSide {
    /// The file system's name.
    pub fs: String,
    /// Its report; `None`: not checked (the posix run's verdict was
    /// neither PASS nor FAIL).
    pub report: Option<BlockReport>,
    /// With `--repeat N` (N > 1): each run's verdict and failing states,
    /// in order (the reports are the worst run's).
    pub repeat: Vec<(Verdict, usize)>,
}

impl BlockSide {
    /// Whether the repeated runs' verdicts differ.
    pub fn varied(&self) -> bool {
        self.repeat.iter().any(|r| r.0 != self.repeat[0].0)
    }

    /// `--repeat`'s line: whether every run gave the same verdict; `None`
    /// for one run.
    pub fn repeat_line(&self) -> Option<String> {
        let runs = &self.repeat;
        if runs.len() < 2 {
            return None;
        }
        let counts: Vec<String> = runs.iter().map(|r| r.1.to_string()).collect();
        Some(if !self.varied() {
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
        })
    }
}

/// The verdict on file system `fs` and its sentence, from how many
/// distinct states failed, could not be judged and were checked in all,
/// and how many of the states were visited before the check `budget`
/// ended.
pub fn block_verdict(
    fs: &str,
    budget: Option<Duration>,
    (failing, errors, count): (usize, usize, usize),
    (visited, states): (usize, usize),
) -> (Verdict, String) {
    if failing > 0 {
        (
            Verdict::Fail,
            format!("{failing} of {count} distinct states after {fs}'s recovery failed"),
        )
    } else if errors > 0 {
        (
            Verdict::Inconclusive,
            format!("{errors} states could not be judged"),
        )
    } else if visited < states {
        (
            Verdict::Pass,
            format!(
                "{count} distinct states after {fs}'s recovery passed, from {} of {} states: the check budget{} ended the rest, a sample, not every crash state",
                for_people(visited as u128),
                for_people(states as u128),
                budget
                    .map(|b| format!(" of {} s", b.as_secs_f64()))
                    .unwrap_or_default()
            ),
        )
    } else {
        (
            Verdict::Pass,
            format!("every one of {count} distinct states after {fs}'s recovery passed"),
        )
    }
}
