//! The block report for people: the verdict on the real file system, each
//! failing state (when power was lost, what was lost, the checker's word,
//! the calls before it, the posix state with the same files), coverage,
//! time and fsck; and `--repeat`'s line. The text report prints it after
//! the posix model's.

use blackout_analysis::block::{BlockChecked, BlockReport, BlockSide};
use blackout_explore::model::for_people;

/// The real file system's side of a run for people: its report (or why it
/// was not checked) and `--repeat`'s line, after the posix report.
pub fn side_text(side: &BlockSide, posix_verdict: &str) -> String {
    let mut out = match &side.report {
        Some(b) => format!("\n{}", block_text(b)),
        None => format!(
            "\n{}: not checked: the posix run says {posix_verdict} (fix the checker first)\n",
            side.fs
        ),
    };
    if let Some(line) = side.repeat_line() {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Where a crash point is, for people.
fn place(after: &str) -> String {
    match after {
        "base" => "at the base (before the workload wrote)".to_string(),
        "end" => "at the end of what was recorded".to_string(),
        other => format!("just after the {other}"),
    }
}

/// A failing (or unjudged) state's lines: when power was lost, what
/// was lost, the checker's word, the calls before it and the posix
/// state that holds the same files.
fn state_text(r: &BlockReport, c: &BlockChecked, out: &mut String) {
    let p = &r.points[c.point];
    let promised = match c.promises.last() {
        Some(l) => format!("; promised: {l}"),
        None => "; nothing promised yet".to_string(),
    };
    out.push_str(&format!(
        "  {}: power lost {:.3} s in, {}{promised}\n",
        c.id,
        p.seconds,
        place(&p.after)
    ));
    if !c.lost.is_empty() {
        out.push_str(&format!(
            "    {} of the {} writes since the last flush did not reach the disk\n",
            c.lost.len(),
            p.in_flight
        ));
    }
    out.push_str(&format!("    checker: {}\n", c.outcome.describe()));
    if let Some(b) = &c.blame {
        out.push_str(&format!(
            "    the last calls before it: {}\n",
            if b.last_calls.is_empty() {
                "none (before the workload's first)".to_string()
            } else {
                b.last_calls.join("; ")
            }
        ));
        if let Some(s) = &b.posix_state {
            let lost = if b.posix_lost.is_empty() {
                "nothing lost".to_string()
            } else {
                format!("lost there: {}", b.posix_lost.join("; "))
            };
            out.push_str(&format!(
                "    posix finds it too: its failing state {s} holds the same files; {lost}\n"
            ));
            if let Some((n, sentence)) = &b.posix_cause {
                out.push_str(&format!("    posix cause {n}: {sentence}\n"));
            }
        }
    }
}

/// The report for people.
pub fn block_text(r: &BlockReport) -> String {
    let mut out = format!("{}: {} — {}\n", r.fs, r.verdict.name(), r.reason);
    for c in r.failing.iter().chain(&r.errors) {
        state_text(r, c, &mut out);
    }
    out.push_str(&format!(
        "  coverage: {} crash points (the base, each flush, each promise, the end); {} states from the subsets of the writes in flight (deepest window {} writes; {} subsets left out){}; {} distinct after recovery; {:.1} s, {:.0} states/s\n",
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
        r.seconds,
        r.states_per_second
    ));
    let t = &r.time;
    out.push_str(&format!(
        "  time: images {:.2} s, mount and recovery {:.2} s, reading files {:.2} s, checker {:.2} s, unmount {:.2} s, fsck {:.2} s\n",
        t.build, t.mount, t.read, t.check, t.unmount, t.fsck
    ));
    if let Some(list) = &r.fsck {
        match list.len() {
            0 => out.push_str(&format!(
                "  fsck: {} found nothing wrong in any state\n",
                r.fs
            )),
            n => {
                out.push_str(&format!(
                    "  fsck: {}'s checker complained about {n} of {} states:\n",
                    r.fs, r.states
                ));
                for c in list.iter().take(5) {
                    out.push_str(&format!("    {} ({}): {}\n", c.id, c.status, c.line));
                }
            }
        }
    }
    if !r.posix_misses.is_empty() {
        out.push_str(&format!(
            "  THE POSIX MODEL MISSES {} FAILING STATE(S) OF {}: {} — no failing posix state holds the same files\n",
            r.posix_misses.len(),
            r.fs.to_uppercase(),
            r.posix_misses.join(", ")
        ));
    }
    out
}
