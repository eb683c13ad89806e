//! The block report for people: the verdict, each failing state (when
//! power was lost, what was lost, the checker's word, the calls before it,
//! the posix state with the same files), coverage, time and fsck.

use blackout_explore::model::for_people;

use super::{BlockChecked, BlockReport};

/// Where a crash point is, for people.
fn place(after: &str) -> String {
    match after {
        "base" => "at the base (before the workload wrote)".to_string(),
        "end" => "at the end of what was recorded".to_string(),
        other => format!("just after the {other}"),
    }
}

impl BlockReport {
    /// A failing (or unjudged) state's lines: when power was lost, what
    /// was lost, the checker's word, the calls before it and the posix
    /// state that holds the same files.
    fn state_text(&self, c: &BlockChecked, out: &mut String) {
        let p = &self.points[c.point];
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
    pub fn text(&self) -> String {
        let mut out = format!("{}: {} — {}\n", self.fs, self.verdict.name(), self.reason);
        for c in self.failing.iter().chain(&self.errors) {
            self.state_text(c, &mut out);
        }
        out.push_str(&format!(
            "  coverage: {} crash points (the base, each flush, each promise, the end); {} states from the subsets of the writes in flight (deepest window {} writes; {} subsets left out){}; {} distinct after recovery; {:.1} s, {:.0} states/s\n",
            self.points.len(),
            for_people(self.states as u128),
            self.deepest_window,
            self.subsets_left_out
                .parse::<u128>()
                .map_or_else(|_| self.subsets_left_out.clone(), for_people),
            if self.exact {
                String::new()
            } else {
                format!(
                    ", {} of them checked before the check budget ended",
                    for_people(self.states_checked as u128)
                )
            },
            for_people(self.distinct as u128),
            self.seconds,
            self.states_per_second
        ));
        let t = &self.time;
        out.push_str(&format!(
            "  time: images {:.2} s, mount and recovery {:.2} s, reading files {:.2} s, checker {:.2} s, unmount {:.2} s, fsck {:.2} s\n",
            t.build, t.mount, t.read, t.check, t.unmount, t.fsck
        ));
        if let Some(list) = &self.fsck {
            match list.len() {
                0 => out.push_str(&format!(
                    "  fsck: {} found nothing wrong in any state\n",
                    self.fs
                )),
                n => {
                    out.push_str(&format!(
                        "  fsck: {}'s checker complained about {n} of {} states:\n",
                        self.fs, self.states
                    ));
                    for c in list.iter().take(5) {
                        out.push_str(&format!("    {} ({}): {}\n", c.id, c.status, c.line));
                    }
                }
            }
        }
        if !self.posix_misses.is_empty() {
            out.push_str(&format!(
                "  THE POSIX MODEL MISSES {} FAILING STATE(S) OF {}: {} — no failing posix state holds the same files\n",
                self.posix_misses.len(),
                self.fs.to_uppercase(),
                self.posix_misses.join(", ")
            ));
        }
        out
    }
}
