//! The verdict of a run in one sentence that says how much was checked:
//! "every crash state was accepted" only when every distinct state of every
//! crash point was (what it covered); with `require_exact`, a PASS on a sample
//! is INCONCLUSIVE.

use std::time::Duration;

pub use crate::sweep::RunError;
use blackout_analysis::report::{ModelReport, Verdict};
use blackout_explore::model::with_commas;
use blackout_explore::rest::REST_BOUND;

/// How much of a run's exploration was checked: what its verdict may
/// claim.
pub(crate) struct Covered {
    /// Distinct states checked.
    pub(crate) checked: usize,
    /// Distinct states explored.
    pub(crate) distinct: usize,
    /// Every crash point explored in full and every distinct state checked.
    pub(crate) exact: bool,
    /// Every crash point explored in full.
    pub(crate) in_full: bool,
    /// With representatives: how many classes.
    pub(crate) classes: Option<usize>,
    /// The check budget past the representatives.
    pub(crate) budget: Option<Duration>,
    /// The check budget ended the rest before all of it was explored.
    pub(crate) rest_cut: bool,
    /// The enumeration sampled subsets past the exhaustive limit.
    pub(crate) subsets_left_out: bool,
    /// The exhaustive limit.
    pub(crate) limit: usize,
}

impl Covered {
    /// What was checked, for people: `2,449 of 2,449 distinct states
    /// checked`; when the rest of the trace was not explored, how many
    /// distinct states there are is not known: `1,369 distinct states
    /// checked`.
    pub(crate) fn counts(&self) -> String {
        if self.in_full {
            format!(
                "{} of {} distinct states checked",
                with_commas(self.checked),
                with_commas(self.distinct)
            )
        } else {
            format!("{} distinct states checked", with_commas(self.checked))
        }
    }

    /// Why a run checked a sample: `representatives of all 43 classes; the
    /// check budget of 60 s ended the rest`.
    pub(crate) fn why(&self) -> String {
        let mut parts = Vec::new();
        if let Some(n) = self.classes {
            parts.push(format!("representatives of all {} classes", with_commas(n)));
        }
        if self.budget == Some(Duration::ZERO) {
            parts.push("--check-budget 0 checked no more".to_string());
        } else {
            if !self.in_full && !self.rest_cut {
                parts.push(format!(
                    "the rest explored only at the crash points that fit in {} states ({} ops lost or torn)",
                    with_commas(usize::try_from(REST_BOUND.states).unwrap_or(usize::MAX)),
                    with_commas(usize::try_from(REST_BOUND.units).unwrap_or(usize::MAX))
                ));
            }
            if let (Some(b), true) = (self.budget, self.checked < self.distinct || self.rest_cut) {
                parts.push(format!(
                    "the check budget of {} s ended the rest",
                    b.as_secs_f64()
                ));
            }
        }
        parts.join("; ")
    }
}

/// The run's verdict from its models' and why, in one sentence that says
/// how much was checked: "every crash state was accepted" only when every
/// distinct state of every crash point was. With `require_exact`, a PASS
/// on a sample is INCONCLUSIVE.
pub(crate) fn verdict_of(
    models: &[ModelReport],
    covered: &Covered,
    require_exact: bool,
) -> (Verdict, String) {
    let verdict = if models.iter().any(|m| m.verdict == Verdict::Fail) {
        Verdict::Fail
    } else if models.iter().any(|m| m.verdict == Verdict::Error) {
        Verdict::Error
    } else {
        Verdict::Pass
    };
    let names = |v: Verdict| {
        models
            .iter()
            .filter(|m| m.verdict == v)
            .map(|m| m.model.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let sample = |text: String| {
        if covered.exact {
            text
        } else {
            format!("{text} ({}, {})", covered.counts(), covered.why())
        }
    };
    match verdict {
        Verdict::Fail => (
            verdict,
            sample(format!(
                "a crash state violates the checker under {}",
                names(Verdict::Fail)
            )),
        ),
        Verdict::Error => (
            verdict,
            sample(format!(
                "some states could not be checked (the checker timed out) under {}",
                names(Verdict::Error)
            )),
        ),
        _ if covered.exact && covered.subsets_left_out => (
            verdict,
            format!(
                "every crash state explored was accepted ({}; past {} pending ops the subsets were sampled: see not covered)",
                covered.counts(),
                covered.limit
            ),
        ),
        _ if covered.exact => (
            verdict,
            format!("every crash state was accepted ({})", covered.counts()),
        ),
        _ if require_exact => (
            Verdict::Inconclusive,
            format!(
                "a PASS on a sample, and --require-exact accepts none: {} ({}), all accepted",
                covered.counts(),
                covered.why()
            ),
        ),
        _ => (
            verdict,
            format!(
                "{}, all accepted ({}): a sample, not every crash state",
                covered.counts(),
                covered.why()
            ),
        ),
    }
}
