//! The rules a baseline holds results to ([`compare`]): a worse verdict,
//! a new cause kind, a vanished case or model, a case that became
//! INCONCLUSIVE, an unrecorded case or model are violations; better
//! results are notes that the baseline can be tightened.

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

use crate::report::Verdict;

use super::{Baseline, Row, NO_MODEL, UPDATE_ENV};

/// Which recorded cases a comparison answers for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every case: a recorded case not among the results has vanished
    /// (a test's call with all its scenarios).
    All,
    /// Only the cases among the results; other rows are left alone (the
    /// command line, which runs one case).
    Given,
}

/// Which rule a result breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// A verdict worse than the recorded one.
    WorseVerdict,
    /// A cause kind the recorded row did not have, at the same verdict.
    NewCauseKind,
    /// A recorded case (or model) not among the results.
    Vanished,
    /// A case that became INCONCLUSIVE.
    BecameInconclusive,
    /// A case (or model) the baseline does not have.
    Unrecorded,
}

impl Rule {
    /// The rule in a violation's line.
    fn says(self) -> &'static str {
        match self {
            Rule::WorseVerdict => "worse verdict",
            Rule::NewCauseKind => "new cause kind",
            Rule::Vanished => "vanished",
            Rule::BecameInconclusive => "became INCONCLUSIVE",
            Rule::Unrecorded => "not in the baseline",
        }
    }
}

/// A result that breaks a rule: the case, the model, the recorded row and
/// the new one.
///
/// ```
/// use blackout_analysis::report::Verdict;
/// use blackout_analysis::baseline::{compare, Baseline, Row, Rule, Scope};
/// let none = Vec::<String>::new();
/// let old = Baseline::of_rows(vec![Row::new("save", "posix", Verdict::Pass, none)]).unwrap();
/// let now = [Row::new("save", "posix", Verdict::Fail, ["entry_not_synced"])];
/// let c = compare(&old, &now, Scope::All);
/// assert_eq!(c.violations[0].rule, Rule::WorseVerdict);
/// assert_eq!(
///     c.violations[0].to_string(),
///     "case `save`, model posix: worse verdict: baseline PASS, now FAIL (entry_not_synced)"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The rule.
    pub rule: Rule,
    /// The case.
    pub case: String,
    /// The model (or [`NO_MODEL`]).
    pub model: String,
    /// The recorded row, if any.
    pub old: Option<Row>,
    /// The new one, if any.
    pub new: Option<Row>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let old = self.old.as_ref().map_or("none".into(), Row::result);
        let new = self.new.as_ref().map_or("not run".into(), Row::result);
        let mut rule = self.rule.says().to_string();
        if let (Rule::NewCauseKind, Some(o), Some(n)) = (self.rule, &self.old, &self.new) {
            let added: Vec<&str> = n
                .kinds
                .iter()
                .filter(|k| !o.kinds.contains(k))
                .map(String::as_str)
                .collect();
            rule = format!("{rule} {}", added.join(", "));
        }
        write!(
            f,
            "case `{}`, model {}: {rule}: baseline {old}, now {new}",
            self.case, self.model
        )
    }
}

/// What a comparison found: the violations, and the results better than
/// recorded (the baseline can be tightened).
///
/// ```
/// let c = blackout_analysis::baseline::Comparison::default();
/// assert!(c.passed());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Every violation, in row order.
    pub violations: Vec<Violation>,
    /// One line per result better than recorded.
    pub better: Vec<String>,
}

impl Comparison {
    /// Whether no rule is broken.
    ///
    /// ```
    /// assert!(blackout_analysis::baseline::Comparison::default().passed());
    /// ```
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }

    /// Every violation, one per line, with a heading naming the file and
    /// how to accept the change.
    ///
    /// ```
    /// let c = blackout_analysis::baseline::Comparison::default();
    /// assert_eq!(c.violations_text("b.tsv".as_ref(), "cargo test"), "");
    /// ```
    pub fn violations_text(&self, path: &Path, rerun: &str) -> String {
        if self.violations.is_empty() {
            return String::new();
        }
        let mut out = format!(
            "{} violation(s) of the baseline {}:\n",
            self.violations.len(),
            path.display()
        );
        for v in &self.violations {
            out.push_str(&format!("  {v}\n"));
        }
        out.push_str(&format!(
            "If the change is intended, record it with {UPDATE_ENV}=1 {rerun} and review the diff.\n"
        ));
        out
    }

    /// The notes that the baseline can be tightened, one per line.
    ///
    /// ```
    /// let c = blackout_analysis::baseline::Comparison::default();
    /// assert_eq!(c.better_text("b.tsv".as_ref()), "");
    /// ```
    pub fn better_text(&self, path: &Path) -> String {
        self.better
            .iter()
            .map(|b| {
                format!(
                    "note: {b}: the baseline {} can be tightened ({UPDATE_ENV}=1)\n",
                    path.display()
                )
            })
            .collect()
    }
}

/// Compares results with a baseline: every violation of the rules, and
/// every result better than recorded.
///
/// ```
/// use blackout_analysis::report::Verdict;
/// use blackout_analysis::baseline::{compare, Baseline, Row, Scope};
/// // A recorded FAIL with the same kinds is accepted.
/// let fail = Row::new("create", "posix", Verdict::Fail, ["entry_not_synced"]);
/// let old = Baseline::of_rows(vec![fail.clone()]).unwrap();
/// assert!(compare(&old, &[fail], Scope::All).passed());
/// ```
pub fn compare(baseline: &Baseline, results: &[Row], scope: Scope) -> Comparison {
    let mut c = Comparison::default();
    let cases: BTreeSet<&str> = results.iter().map(|r| r.case.as_str()).collect();
    for case in &cases {
        let new: Vec<&Row> = results.iter().filter(|r| r.case == *case).collect();
        compare_case(&baseline.case(case), &new, &mut c);
    }
    if scope == Scope::All {
        for old in baseline
            .rows
            .iter()
            .filter(|r| !cases.contains(r.case.as_str()))
        {
            c.violations
                .push(violation(Rule::Vanished, Some(old), None));
        }
    }
    c
}

/// One case's rows against its recorded rows. A [`NO_MODEL`] row on one
/// side stands for every model on the other.
fn compare_case(old: &[&Row], new: &[&Row], c: &mut Comparison) {
    if old.is_empty() {
        for n in new {
            c.violations
                .push(violation(Rule::Unrecorded, None, Some(n)));
        }
        return;
    }
    let old_any = old.iter().find(|r| r.model == NO_MODEL);
    if let [n] = new {
        if n.model == NO_MODEL && old_any.is_none() {
            for o in old {
                compare_row(o, n, &o.model, c);
            }
            return;
        }
    }
    for n in new {
        match old.iter().find(|o| o.model == n.model).or(old_any) {
            Some(o) => compare_row(o, n, &n.model, c),
            None => c
                .violations
                .push(violation(Rule::Unrecorded, None, Some(n))),
        }
    }
    let new_any = new.iter().any(|r| r.model == NO_MODEL);
    for o in old {
        let matched = new.iter().any(|n| n.model == o.model);
        if !matched && o.model != NO_MODEL && !new_any {
            c.violations.push(violation(Rule::Vanished, Some(o), None));
        }
    }
}

/// A recorded row against the new one (shown under `model`).
fn compare_row(old: &Row, new: &Row, model: &str, c: &mut Comparison) {
    let at = format!("case `{}`, model {model}", new.case);
    if old.verdict == new.verdict {
        if new.kinds.iter().any(|k| !old.kinds.contains(k)) {
            let mut v = violation(Rule::NewCauseKind, Some(old), Some(new));
            v.model = model.to_string();
            c.violations.push(v);
        } else if old.kinds != new.kinds {
            c.better.push(format!(
                "{at}: cause kinds gone: baseline {}, now {}",
                old.result(),
                new.result()
            ));
        }
        return;
    }
    let rule = match new.verdict {
        Verdict::Pass => {
            c.better.push(format!(
                "{at}: better verdict: baseline {}, now {}",
                old.result(),
                new.result()
            ));
            return;
        }
        Verdict::Inconclusive => Rule::BecameInconclusive,
        _ => Rule::WorseVerdict,
    };
    let mut v = violation(rule, Some(old), Some(new));
    v.model = model.to_string();
    c.violations.push(v);
}

fn violation(rule: Rule, old: Option<&Row>, new: Option<&Row>) -> Violation {
    let row = new.or(old).expect("a row on one side");
    Violation {
        rule,
        case: row.case.clone(),
        model: row.model.clone(),
        old: old.cloned(),
        new: new.cloned(),
    }
}
