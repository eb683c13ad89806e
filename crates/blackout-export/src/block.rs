//! The block report for people: the verdict on the real file system, each
//! failing state (when power was lost, what was lost, the checker's word,
//! the calls before it, the posix state with the same files), coverage,
//! time and fsck; and `--repeat`'s line. The text report prints it after
//! the posix model's.
//!
//! The wording every format shares lives here too: a state's parts
//! ([`state_words`]), the coverage sentence ([`coverage_text`]), why a file
//! system was not checked ([`not_checked_text`]), fsck's summary and the
//! differential check's line. The JUnit, Markdown and HTML exporters put
//! them in their own layouts, escaped for their own syntax.

use blackout_analysis::block::{BlockChecked, BlockReport, BlockSide};
use blackout_explore::model::for_people;

/// The real file system's side of a run for people: its report (or why it
/// was not checked) and `--repeat`'s line, after the posix report.
pub fn side_text(side: &BlockSide, posix_verdict: &str) -> String {
    let mut out = match &side.report {
        Some(b) => format!("\n{}", block_text(b)),
        None => format!("\n{}: {}\n", side.fs, not_checked_text(posix_verdict)),
    };
    if let Some(line) = side.repeat_line() {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Why a file system's states were not checked, after the posix run's
/// verdict `posix_verdict` (neither PASS nor FAIL).
///
/// ```
/// use blackout_export::block::not_checked_text;
/// assert_eq!(
///     not_checked_text("INCONCLUSIVE"),
///     "not checked: the posix run says INCONCLUSIVE (fix the checker first)"
/// );
/// ```
pub fn not_checked_text(posix_verdict: &str) -> String {
    format!("not checked: the posix run says {posix_verdict} (fix the checker first)")
}

/// Where a crash point is, for people.
fn place(after: &str) -> String {
    match after {
        "base" => "at the base (before the workload wrote)".to_string(),
        "end" => "at the end of what was recorded".to_string(),
        other => format!("just after the {other}"),
    }
}

/// A failing (or unjudged) state in words, part by part, for every format
/// to lay out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateWords {
    /// The state (`b3`, `b7.lost1+3`).
    pub id: String,
    /// When power was lost: `0.008 s in, just after the mark "saved"`.
    pub when: String,
    /// The latest promise before it: `promised: saved`, or `nothing
    /// promised yet`.
    pub promised: String,
    /// How many of the writes in flight were lost, when any were.
    pub writes_lost: Option<String>,
    /// What the checker said (`rejected (exit code 1): ...`).
    pub checker: String,
    /// The calls that had returned when power failed, latest last, joined
    /// by `; ` (`none (before the workload's first)`); `None` for a state
    /// not blamed (one the checker could not judge).
    pub last_calls: Option<String>,
    /// The posix model's failing state holding the same files, and what it
    /// lost there (`lost there: op 3: rename ...`, or `nothing lost`).
    pub posix_state: Option<(String, String)>,
    /// The posix report's cause that state falls under: its number (from
    /// 1) and sentence.
    pub posix_cause: Option<(usize, String)>,
}

/// A failing or unjudged state's parts: when power was lost, what was
/// lost, the checker's word, the calls before it and the posix state (and
/// cause) that holds the same files.
pub fn state_words(r: &BlockReport, c: &BlockChecked) -> StateWords {
    let p = &r.points[c.point];
    let mut words = StateWords {
        id: c.id.clone(),
        when: format!("{:.3} s in, {}", p.seconds, place(&p.after)),
        promised: match c.promises.last() {
            Some(l) => format!("promised: {l}"),
            None => "nothing promised yet".to_string(),
        },
        writes_lost: (!c.lost.is_empty()).then(|| {
            format!(
                "{} of the {} writes since the last flush did not reach the disk",
                c.lost.len(),
                p.in_flight
            )
        }),
        checker: c.outcome.describe(),
        last_calls: None,
        posix_state: None,
        posix_cause: None,
    };
    if let Some(b) = &c.blame {
        words.last_calls = Some(if b.last_calls.is_empty() {
            "none (before the workload's first)".to_string()
        } else {
            b.last_calls.join("; ")
        });
        if let Some(s) = &b.posix_state {
            let lost = if b.posix_lost.is_empty() {
                "nothing lost".to_string()
            } else {
                format!("lost there: {}", b.posix_lost.join("; "))
            };
            words.posix_state = Some((s.clone(), lost));
            words.posix_cause = b.posix_cause.clone();
        }
    }
    words
}

/// A failing (or unjudged) state's lines: when power was lost, what
/// was lost, the checker's word, the calls before it and the posix
/// state that holds the same files.
fn state_text(r: &BlockReport, c: &BlockChecked, out: &mut String) {
    let w = state_words(r, c);
    out.push_str(&format!(
        "  {}: power lost {}; {}\n",
        w.id, w.when, w.promised
    ));
    if let Some(lost) = &w.writes_lost {
        out.push_str(&format!("    {lost}\n"));
    }
    out.push_str(&format!("    checker: {}\n", w.checker));
    if let Some(calls) = &w.last_calls {
        out.push_str(&format!("    the last calls before it: {calls}\n"));
    }
    if let Some((s, lost)) = &w.posix_state {
        out.push_str(&format!(
            "    posix finds it too: its failing state {s} holds the same files; {lost}\n"
        ));
        if let Some((n, sentence)) = &w.posix_cause {
            out.push_str(&format!("    posix cause {n}: {sentence}\n"));
        }
    }
}

/// What was explored and checked on the device, without timings: crash
/// points, states, the deepest window, subsets left out, how many were
/// checked when the budget ended, distinct states after recovery.
pub fn coverage_text(r: &BlockReport) -> String {
    format!(
        "{} crash points (the base, each flush, each promise, the end); {} states from the subsets of the writes in flight (deepest window {} writes; {} subsets left out){}; {} distinct after recovery",
        r.points.len(),
        for_people(r.states as u128),
        r.deepest_window,
        r.subsets_left_out
            .parse::<u128>()
            .map_or_else(|_| r.subsets_left_out.clone(), for_people),
        if r.exact {
            String::new()
        } else {
            format!(
                ", {} of them checked before the check budget ended",
                for_people(r.states_checked as u128)
            )
        },
        for_people(r.distinct as u128),
    )
}

/// With `--fsck`, what the file system's checker said over every state:
/// `ext4 found nothing wrong in any state`, or `ext4's checker complained
/// about 2 of 8 states`.
pub fn fsck_text(r: &BlockReport) -> Option<String> {
    let list = r.fsck.as_ref()?;
    Some(match list.len() {
        0 => format!("{} found nothing wrong in any state", r.fs),
        n => format!(
            "{}'s checker complained about {n} of {} states",
            r.fs, r.states
        ),
    })
}

/// The differential check's finding, when it found anything: the failing
/// states no failing posix state holds the same files as.
pub fn misses_text(r: &BlockReport) -> Option<String> {
    (!r.posix_misses.is_empty()).then(|| {
        format!(
            "THE POSIX MODEL MISSES {} FAILING STATE(S) OF {}: {} — no failing posix state holds the same files",
            r.posix_misses.len(),
            r.fs.to_uppercase(),
            r.posix_misses.join(", ")
        )
    })
}

/// The report for people.
pub fn block_text(r: &BlockReport) -> String {
    let mut out = format!("{}: {} — {}\n", r.fs, r.verdict.name(), r.reason);
    for c in r.failing.iter().chain(&r.errors) {
        state_text(r, c, &mut out);
    }
    out.push_str(&format!(
        "  coverage: {}; {:.1} s, {:.0} states/s\n",
        coverage_text(r),
        r.seconds,
        r.states_per_second
    ));
    let t = &r.time;
    out.push_str(&format!(
        "  time: images {:.2} s, mount and recovery {:.2} s, reading files {:.2} s, checker {:.2} s, unmount {:.2} s, fsck {:.2} s\n",
        t.build, t.mount, t.read, t.check, t.unmount, t.fsck
    ));
    if let Some(said) = fsck_text(r) {
        let list = r.fsck.as_deref().unwrap_or_default();
        if list.is_empty() {
            out.push_str(&format!("  fsck: {said}\n"));
        } else {
            out.push_str(&format!("  fsck: {said}:\n"));
            for c in list.iter().take(5) {
                out.push_str(&format!("    {} ({}): {}\n", c.id, c.status, c.line));
            }
        }
    }
    if let Some(line) = misses_text(r) {
        out.push_str(&format!("  {line}\n"));
    }
    out
}

#[cfg(test)]
pub(crate) mod fixture {
    //! A block run's report for the exporters' tests: no trace, one
    //! failing state and one the checker timed out on, hostile text in
    //! both.

    use blackout_analysis::block::{Blame, BlockChecked, BlockReport, BlockSide, PointInfo};
    use blackout_analysis::report::{RunReport, Verdict};
    use blackout_oplog::ops::InodeKind;
    use blackout_oplog::outcome::Outcome;
    use blackout_oplog::trace::{Replayed, Trace, TraceMeta};
    use blackout_oplog::tree::Tree;

    use crate::ExportContext;

    /// Markup and a control character in a checker's reason and a call.
    pub(crate) const HOSTILE: &str = "</failure><script>alert(1)</script> *b* | `c` \u{1b}[31m";

    /// An empty trace of `sh save.sh`.
    pub(crate) fn trace() -> Trace {
        let replayed = Replayed {
            inodes: vec![InodeKind::Dir],
            ..Replayed::default()
        };
        let meta = TraceMeta {
            command: vec!["sh".into(), "save.sh".into()],
            ..TraceMeta::default()
        };
        Trace::new(&Tree::default(), replayed, meta)
    }

    /// What the exporters need besides the report.
    pub(crate) fn context(trace: &Trace) -> ExportContext<'_> {
        ExportContext {
            trace,
            trace_path: None,
            trace_id: "0",
            checker: "check",
            checker_flag: "--checker",
            state_flags: "",
            all_causes: false,
            ack_prefix: None,
        }
    }

    fn state(id: &str, outcome: Outcome, blame: Option<Blame>) -> BlockChecked {
        BlockChecked {
            id: id.into(),
            point: 1,
            lost: vec![0],
            promises: vec!["saved".into()],
            states: 1,
            outcome,
            blame,
        }
    }

    /// ext4's report: `b1.lost0` failing (blamed on no posix state),
    /// `b1` timed out.
    pub(crate) fn ext4() -> BlockReport {
        let point = |index, after: &str| PointInfo {
            index,
            after: after.into(),
            seconds: 0.5,
            position: index,
            in_flight: 2,
        };
        let failing = state(
            "b1.lost0",
            Outcome::Fail {
                status: "exit code 1".into(),
                reason: HOSTILE.into(),
            },
            Some(Blame {
                last_calls: vec![format!("op 3: rename {HOSTILE}")],
                ..Blame::default()
            }),
        );
        BlockReport {
            fs: "ext4".into(),
            verdict: Verdict::Fail,
            reason: "1 of 3 distinct states after ext4's recovery failed".into(),
            points: vec![point(0, "base"), point(1, "mark \"saved\"")],
            states: 4,
            states_checked: 4,
            exact: true,
            distinct: 3,
            failing: vec![failing],
            errors: vec![state("b1", Outcome::TimedOut { seconds: 1.0 }, None)],
            subsets_left_out: "0".into(),
            deepest_window: 2,
            posix_misses: vec!["b1.lost0".into()],
            seconds: 0.25,
            states_per_second: 16.0,
            time: Default::default(),
            fsck: None,
        }
    }

    /// A run report whose posix side says `posix` and whose block side
    /// holds `report`, repeated twice.
    pub(crate) fn run(posix: Verdict, report: Option<BlockReport>) -> RunReport {
        let mut run = RunReport::early((posix, "the posix run".into()), Vec::new(), None, None);
        let verdict = report.as_ref().map_or(posix, |r| r.verdict);
        run.block = Some(BlockSide {
            fs: "ext4".into(),
            report,
            repeat: vec![(verdict, 1), (verdict, 1)],
        });
        run
    }
}
