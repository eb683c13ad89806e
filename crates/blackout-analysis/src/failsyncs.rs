//! `run --fail-syncs`: what the program does when a sync fails. For each
//! sync call site the workload is recorded again with the site's first
//! call failing with EIO, and the crash states of that run are checked
//! with what the failed sync covered never durable (docs/MODELS.md, "When
//! a sync fails"). This module holds the verdicts and their words, and
//! which call a site's failure is aimed at ([`aim`], [`landed`]); what a
//! failure run says of the program is `failrun`'s.
//!
//! ```
//! use blackout_analysis::failsyncs::{FailSyncOutcome, Trust};
//!
//! let o = FailSyncOutcome::Trusted {
//!     trust: Trust::Retried,
//!     state: "f1:c4.lost1".into(),
//!     reason: "doc.txt is empty".into(),
//! };
//! assert!(o.fails());
//! assert!(o.sentence().starts_with("FAIL: it trusted a retried fsync"));
//! ```

use serde::Serialize;

use blackout_oplog::ops::OpKind;
use blackout_oplog::trace::Trace;

use crate::syncs::SyncSite;

/// How a program that went on promising treated the failed sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// It synced the file again, got 0, and promised: after a failed
    /// writeback the kernel does not write the pages again.
    Retried,
    /// It went on without syncing the file again.
    Ignored,
}

/// What a run with one sync failing found.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum FailSyncOutcome {
    /// Every crash state of the run passes: the program stopped promising
    /// what the failed sync covered (it exited with an error, or reported
    /// it).
    Handled {
        /// The workload's exit code, when it exited.
        exit: Option<i32>,
        /// What it printed on standard error last, one line (its own report
        /// of the error), if anything.
        said: Option<String>,
        /// It promised something, and every crash state was checked and
        /// passed; `false`: it promised nothing, so nothing was at stake.
        promised: bool,
    },
    /// A crash state fails: the program promised after the failed sync and
    /// the promised data can be gone.
    Trusted {
        /// Retried the sync, or ignored the error.
        trust: Trust,
        /// The simplest failing state, in the failure run's op numbers,
        /// prefixed with the site's number (`f1:c4.lost1`).
        state: String,
        /// What the checker said of it.
        reason: String,
    },
    /// States of the failure run fail, but none because the sync failed:
    /// none loses an op a sync would have made durable by its crash had
    /// the failed one succeeded (the program fails without the failure).
    NotWorse {
        /// The failure run's failing states.
        failing: usize,
    },
    /// Not measured, and why (the failure could not be aimed at the call,
    /// the run's check did not finish).
    NotMeasured {
        /// Why, one clause.
        why: String,
    },
}

impl FailSyncOutcome {
    /// Whether the program lost promised data with the sync failing.
    pub fn fails(&self) -> bool {
        matches!(self, FailSyncOutcome::Trusted { .. })
    }

    /// The outcome in words, for every report format.
    pub fn sentence(&self) -> String {
        match self {
            FailSyncOutcome::Handled {
                exit,
                said,
                promised,
            } => {
                let how = match exit {
                    Some(0) | None => "it went on".to_string(),
                    Some(code) => format!("it exited with code {code}"),
                };
                let said = match said {
                    Some(line) => format!(" (it said: {line})"),
                    None => String::new(),
                };
                let end = if *promised {
                    "and every state of the promises it made passes"
                } else {
                    "before promising anything"
                };
                format!("PASS: {how}{said} {end}")
            }
            FailSyncOutcome::Trusted {
                trust,
                state,
                reason,
            } => {
                let how = match trust {
                    Trust::Retried => {
                        "it trusted a retried fsync (the retry returned 0, but after a failed writeback the kernel does not write the pages again)"
                    }
                    Trust::Ignored => "it ignored the error and went on",
                };
                format!("FAIL: {how}; {state} fails: {reason}")
            }
            FailSyncOutcome::NotWorse { failing } => format!(
                "no worse: {failing} of its states fail, none because the sync failed (each loses only what it would have lost had the sync succeeded)"
            ),
            FailSyncOutcome::NotMeasured { why } => format!("not measured: {why}"),
        }
    }
}

/// One call site with its first call failing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailSyncCheck {
    /// The site, in the recorded trace.
    pub site: SyncSite,
    /// The call made to fail, as the failure run recorded it (`fsync of
    /// doc.txt.tmp (log line 231) failed with EIO`), when it landed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// What the program then did.
    #[serde(flatten)]
    pub outcome: FailSyncOutcome,
    /// Every distinct state of the failure run was checked.
    pub exact: bool,
}

/// Every sync call site of a run made to fail in turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailSyncsReport {
    /// Each site, in the order of its first call.
    pub sites: Vec<FailSyncCheck>,
    /// Seconds spent on the failure runs.
    pub seconds: f64,
}

impl FailSyncsReport {
    /// Whether some site's failure loses promised data.
    pub fn fails(&self) -> bool {
        self.sites.iter().any(|c| c.outcome.fails())
    }
}

/// The call a site's failure is aimed at: its first sync, as strace counts
/// it ([`aim`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aim {
    /// The system call (`fsync`).
    pub call: String,
    /// Which of its thread's calls of that name, from 1.
    pub nth: u32,
}

/// The call to fail for `site` of `trace`: its first sync, counted among
/// its thread's calls of the same name as strace counts them (syncs of
/// files outside the directory under test are not in the trace: a failure
/// landing elsewhere is caught by [`landed`]). Why not, when only an
/// fsync or fdatasync the program made itself can be made to fail.
pub fn aim(trace: &Trace, site: &SyncSite) -> Result<Aim, String> {
    let first = &trace.ops[site.ops[0]];
    if !matches!(
        first.kind,
        OpKind::Fsync { implied: false, .. } | OpKind::Fdatasync { implied: false, .. }
    ) {
        return Err(format!(
            "only an fsync or fdatasync is made to fail, not {}",
            first.syscall
        ));
    }
    let nth = trace.ops[..site.ops[0]]
        .iter()
        .filter(|o| o.pid == first.pid && o.syscall == first.syscall)
        .count()
        + 1;
    let nth = u32::try_from(nth).map_err(|_| "the call is too far into the run".to_string())?;
    Ok(Aim {
        call: first.syscall.clone(),
        nth,
    })
}

/// Where the failure aimed at `site`'s first sync (`aim`) landed in the
/// failure run (`run`, in which strace injected `injected` failures): the
/// failed sync of the same file, the one failure. Why not, in words.
pub fn landed(
    trace: &Trace,
    site: &SyncSite,
    aim: &Aim,
    run: &Trace,
    injected: usize,
) -> Result<usize, String> {
    let path = trace.show_path(&trace.ops[site.ops[0]].path);
    let failed = run.ops.iter().position(|o| {
        matches!(o.kind, OpKind::FailedSync { .. }) && run.show_path(&o.path) == path
    });
    match (failed, injected) {
        (Some(at), 1) => Ok(at),
        _ => Err(format!(
            "the failure meant for call {} of its thread's {} calls landed on {injected} call{} (strace counts each thread's calls)",
            aim.nth,
            aim.call,
            if injected == 1 { " of another file" } else { "s" }
        )),
    }
}

impl FailSyncCheck {
    /// A site not measured, and why.
    pub fn not_measured(site: SyncSite, why: String) -> FailSyncCheck {
        FailSyncCheck {
            site,
            failed: None,
            outcome: FailSyncOutcome::NotMeasured { why },
            exact: false,
        }
    }
}
