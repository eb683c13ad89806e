//! The `--syncs` section's words, as every format shows them: each call
//! site's line ([`sync_words`]), the heading and the closing lines (time in
//! syncs, the checker's score, where it is weak), and the section whole as
//! text ([`syncs_text`]).

use std::fmt::Write as _;

use blackout_analysis::failsyncs::{FailSyncCheck, FailSyncsReport};
use blackout_analysis::syncs::{SyncCheck, SyncVerdict, SyncsReport};
use blackout_explore::model::with_commas;
use blackout_oplog::ops::escape_controls;

/// A duration for people: `0.004 s`, `1.9 s`, `312 s`.
pub fn seconds_text(secs: f64) -> String {
    if secs <= 0.0 {
        "0 s".into()
    } else if secs < 0.1 {
        format!("{secs:.4} s")
    } else if secs < 10.0 {
        format!("{secs:.2} s")
    } else {
        format!("{secs:.0} s")
    }
}

/// One call site's words, as every format shows them: its call, how many
/// calls and how long they took while recording, and its verdict.
pub fn sync_words(c: &SyncCheck) -> (String, String, String) {
    let n = c.site.ops.len();
    let mut calls = format!("{} call{}", with_commas(n), if n == 1 { "" } else { "s" });
    if let Some(secs) = c.seconds {
        let _ = write!(calls, ", {}", seconds_text(secs));
    }
    let sample = if c.exact {
        String::new()
    } else if c.states_checked < c.states {
        format!(
            " (on a sample: {} of {} states checked)",
            with_commas(c.states_checked),
            with_commas(c.states)
        )
    } else {
        // Every state explored was checked, but not every crash point was
        // explored in full: the trace without them was explored by its
        // representatives, as the run's own sample was.
        format!(
            " (on a sample: the {} states of its representatives, every one checked)",
            with_commas(c.states)
        )
    };
    let them = if n == 1 { "it" } else { "them" };
    let line = match &c.verdict {
        SyncVerdict::Needed { state, reason, why } => {
            let said = match reason.trim() {
                "" => String::new(),
                r => format!(": {}", escape_controls(r)),
            };
            format!(
                "needed: without {them} {state} fails{said}; {}{sample}",
                escape_controls(why)
            )
        }
        SyncVerdict::NotNeeded => match &c.accepted_loss {
            Some((state, promise)) => format!(
                "not needed by this checker, which accepts {state} without {them} though it lacks data synced before `{}` was printed{sample}",
                escape_controls(promise)
            ),
            None => format!(
                "not needed: every state without {them} passes or fails as with {them}{sample}"
            ),
        },
        SyncVerdict::NotKnown => {
            "not known: the bound ended it before a state was checked (raise --fix-time)".into()
        }
    };
    let line = match &c.on_fs {
        Some(fs) => format!("{line}; {}", escape_controls(&fs.sentence(them))),
        None => line,
    };
    (escape_controls(&c.site.call), calls, line)
}

/// The `--syncs` section as text (JUnit's run suite carries it too).
pub fn syncs_text(r: &SyncsReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}:", syncs_heading(r));
    for c in &r.sites {
        let (call, calls, line) = sync_words(c);
        let _ = writeln!(out, "  {call}: {calls}, {line}");
    }
    for line in syncs_summary(r) {
        let _ = writeln!(out, "  {line}");
    }
    out
}

/// The `--syncs` section's heading, as every format shows it.
pub fn syncs_heading(r: &SyncsReport) -> String {
    let fs = match r.sites.iter().find_map(|c| c.on_fs.as_ref()) {
        Some(on) => format!(
            "; on {}, the program run again without them and the device's states checked",
            on.fs
        ),
        None => String::new(),
    };
    format!(
        "syncs ({}; each call site's syncs taken out and the trace checked again{fs}; for this checker and this run)",
        r.model.name()
    )
}

/// The `--syncs` section's closing lines, as every format shows them: the
/// time in syncs, the checker's score, where it is weak.
pub fn syncs_summary(r: &SyncsReport) -> Vec<String> {
    let mut out = Vec::new();
    if r.sites.iter().any(|c| c.seconds.is_some()) {
        let all: f64 = r.sites.iter().filter_map(|c| c.seconds).sum();
        let unneeded: f64 = r
            .sites
            .iter()
            .filter(|c| c.verdict == SyncVerdict::NotNeeded)
            .filter_map(|c| c.seconds)
            .sum();
        out.push(format!(
            "time in syncs while recording (strace -T): {} in all, {} in syncs not needed",
            seconds_text(all),
            seconds_text(unneeded)
        ));
    }
    let (caught, of) = r.mutation();
    if of > 0 {
        out.push(format!(
            "checker: caught {caught} of the {of} call sites whose removal loses data synced before a promise"
        ));
    }
    if let Some(c) = r.weak() {
        if let Some((state, promise)) = &c.accepted_loss {
            out.push(format!(
                "the checker is weak: without {} it accepted {state}, which lacks data synced before `{}` was printed",
                escape_controls(&c.site.call),
                escape_controls(promise)
            ));
        }
    }
    out
}

/// The `--fail-syncs` section's heading, as every format shows it.
pub const FAILED_SYNCS_HEADING: &str = "failed syncs (each call site's first call made to fail with EIO, the program run again, and its states checked under posix with what the failed sync covered never durable)";

/// One call site made to fail, in words: its call, what failed, and what
/// the program then did.
pub fn failed_sync_words(c: &FailSyncCheck) -> (String, String, String) {
    let failed = c.failed.as_deref().map(escape_controls).unwrap_or_default();
    let mut line = escape_controls(&c.outcome.sentence());
    if !c.exact
        && c.failed.is_some()
        && !matches!(
            c.outcome,
            blackout_analysis::failsyncs::FailSyncOutcome::NotMeasured { .. }
        )
    {
        line.push_str(" (on a sample of its states)");
    }
    (escape_controls(&c.site.call), failed, line)
}

/// The `--fail-syncs` section as text.
pub fn failed_syncs_text(r: &FailSyncsReport) -> String {
    let mut out = format!("{FAILED_SYNCS_HEADING}:\n");
    for c in &r.sites {
        let (call, failed, line) = failed_sync_words(c);
        if failed.is_empty() {
            let _ = writeln!(out, "  {call}: {line}");
        } else {
            let _ = writeln!(out, "  {call}: {failed}; {line}");
        }
    }
    out
}
