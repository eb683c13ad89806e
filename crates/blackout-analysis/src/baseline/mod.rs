//! A ratchet on durability verdicts for CI: a baseline file records the
//! verdict and cause kinds each case had under each model, and a later run
//! fails when anything is worse, so a known failure can be accepted while
//! no new one slips in.
//!
//! The file is tab-separated text, one row per case and model, sorted, with
//! a `#` header (docs/BASELINE.md); the cells are case, model, verdict and
//! the cause kinds (comma-separated, or `-`):
//!
//! ```
//! # use blackout_analysis::report::Verdict;
//! # use blackout_analysis::baseline::Row;
//! let row = Row::new("create", "posix", Verdict::Fail, ["entry_not_synced"]);
//! assert_eq!(row.to_string(), "create\tposix\tFAIL\tentry_not_synced");
//! ```
//!
//! A *case* is a scenario's label or, on the command line, the name
//! `--case` gives ([`case_of_run`] when it gives none). A run that stopped before exploring any
//! model (INCONCLUSIVE, HARNESS BROKEN) has one row whose model is `-`. A
//! block run (`--backend block`) adds a row for its file system, model
//! `block:ext4` ([`BLOCK_MODEL`]): the file system's verdict, and the
//! kinds of the posix causes its failing states were blamed on.
//!
//! The rules ([`compare`]): for each case and model, a verdict worse than
//! the recorded one (PASS < FAIL; any verdict other than PASS that differs
//! from the recorded one), a cause kind the row did not have, a case that
//! became INCONCLUSIVE, a case (or model) the baseline does not have, and,
//! when every case is given ([`Scope::All`]), a recorded case no longer
//! among the results, are violations. Better results are not: they are
//! returned as notes that the baseline can be tightened.
//!
//! `BLACKOUT_UPDATE_BASELINE=1` rewrites the file from the results instead
//! of comparing ([`Mode::from_env`]), unless `CI` is set: CI always
//! compares.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use blackout_explore::model::Model;

use crate::report::{RunReport, Verdict};

mod rules;

pub use rules::{compare, Comparison, Rule, Scope, Violation};

/// The environment variable that makes a ratchet rewrite its baseline
/// instead of comparing with it (any non-empty value).
///
/// ```
/// assert_eq!(blackout_analysis::baseline::UPDATE_ENV, "BLACKOUT_UPDATE_BASELINE");
/// ```
pub const UPDATE_ENV: &str = "BLACKOUT_UPDATE_BASELINE";

/// The model column of a run that stopped before exploring any model.
///
/// ```
/// assert_eq!(blackout_analysis::baseline::NO_MODEL, "-");
/// ```
pub const NO_MODEL: &str = "-";

/// How the model column of a block run's file system starts: `block:ext4`.
///
/// ```
/// assert_eq!(blackout_analysis::baseline::BLOCK_MODEL, "block:");
/// ```
pub const BLOCK_MODEL: &str = "block:";

/// The cause-kinds column of a row without causes.
const NO_KINDS: &str = "-";

/// The header every baseline file is written with.
const HEADER: &str = "\
# blackout baseline (docs/BASELINE.md): the verdict and cause kinds each case
# had under each model. A run compared with it fails on a worse verdict, a new
# cause kind, a case that became INCONCLUSIVE, and a new or vanished case.
# Written by a run with BLACKOUT_UPDATE_BASELINE=1 (`cargo test`, or
# `blackout run --baseline FILE`); update it the same way and review the diff.
# case\tmodel\tverdict\tcause kinds (sorted; - for none)
";

/// The last line of every baseline file: a file without it was cut short.
///
/// ```
/// assert_eq!(blackout_analysis::baseline::END_LINE, "# end of baseline");
/// ```
pub const END_LINE: &str = "# end of baseline";

/// One row: what a case got under one model.
///
/// ```
/// use blackout_analysis::report::Verdict;
/// use blackout_analysis::baseline::Row;
/// let row = Row::new("save", "posix", Verdict::Fail, ["entry_not_synced"]);
/// assert_eq!(row.to_string(), "save\tposix\tFAIL\tentry_not_synced");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The case: a scenario's label, or the command line's `--case`.
    pub case: String,
    /// The model's name, or [`NO_MODEL`].
    pub model: String,
    /// The verdict.
    pub verdict: Verdict,
    /// The kinds of its causes (`entry_not_synced`), sorted, each once.
    pub kinds: Vec<String>,
}

impl Row {
    /// A row; the kinds are sorted and deduplicated.
    ///
    /// ```
    /// use blackout_analysis::report::Verdict;
    /// let row = blackout_analysis::baseline::Row::new("c", "posix", Verdict::Fail, ["b", "a", "b"]);
    /// assert_eq!(row.kinds, ["a", "b"]);
    /// ```
    pub fn new<K: Into<String>>(
        case: impl Into<String>,
        model: impl Into<String>,
        verdict: Verdict,
        kinds: impl IntoIterator<Item = K>,
    ) -> Row {
        let kinds: BTreeSet<String> = kinds.into_iter().map(Into::into).collect();
        Row {
            case: case.into(),
            model: model.into(),
            verdict,
            kinds: kinds.into_iter().collect(),
        }
    }

    /// The rows of a run's report under the name `case`: one per model
    /// explored, and for a block run one for its file system
    /// ([`BLOCK_MODEL`]); or one [`NO_MODEL`] row when it stopped before
    /// exploring (standing for every model, the file system's too).
    ///
    /// ```
    /// use blackout_analysis::report::{RunReport, Verdict};
    /// let early = RunReport::early((Verdict::Inconclusive, "nothing promised".into()), vec![], None, None);
    /// let rows = blackout_analysis::baseline::Row::of_run("save", &early);
    /// assert_eq!(rows[0].to_string(), "save\t-\tINCONCLUSIVE\t-");
    /// ```
    pub fn of_run(case: &str, report: &RunReport) -> Vec<Row> {
        if report.models.is_empty() {
            return vec![Row::new(
                case,
                NO_MODEL,
                report.verdict,
                Vec::<String>::new(),
            )];
        }
        let models = report.models.iter().map(|m| {
            let kinds = m.causes.iter().map(|c| c.cause.kind.name());
            Row::new(case, m.model.name(), m.verdict, kinds)
        });
        models.chain(Row::of_block(case, report)).collect()
    }

    /// A block run's row for its file system: its verdict (the posix
    /// run's when it was not checked) and the kinds of the posix causes
    /// its failing states were blamed on.
    fn of_block(case: &str, report: &RunReport) -> Option<Row> {
        let side = report.block.as_ref()?;
        let posix = report.models.iter().find(|m| m.model == Model::Posix);
        let failing = side.report.iter().flat_map(|r| &r.failing);
        let kinds = failing.filter_map(|c| {
            let n = c.blame.as_ref()?.posix_cause.as_ref()?.0;
            Some(posix?.causes.get(n.checked_sub(1)?)?.cause.kind.name())
        });
        let model = format!("{BLOCK_MODEL}{}", side.fs);
        Some(Row::new(case, model, report.final_verdict(), kinds))
    }

    /// The verdict and kinds as a violation names them: `FAIL
    /// (entry_not_synced)`, `PASS`.
    fn result(&self) -> String {
        if self.kinds.is_empty() {
            self.verdict.name().to_string()
        } else {
            format!("{} ({})", self.verdict.name(), self.kinds.join(", "))
        }
    }

    /// Where the model sorts: [`NO_MODEL`], then weakest first, then the
    /// file systems ([`BLOCK_MODEL`]) by name.
    fn model_rank(&self) -> (usize, &str) {
        let rank = Model::ALL
            .iter()
            .position(|m| m.name() == self.model)
            .map_or(Model::ALL.len() + 1, |i| i + 1);
        (if self.model == NO_MODEL { 0 } else { rank }, &self.model)
    }
}

impl fmt::Display for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kinds = if self.kinds.is_empty() {
            NO_KINDS.to_string()
        } else {
            self.kinds.join(",")
        };
        write!(
            f,
            "{}\t{}\t{}\t{kinds}",
            escape(&self.case),
            self.model,
            self.verdict.name()
        )
    }
}

/// A case name in the file: tabs, newlines and backslashes escaped, and a
/// leading `#` (which would make the row a comment).
fn escape(case: &str) -> String {
    let mut out = String::new();
    for (i, c) in case.chars().enumerate() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '#' if i == 0 => out.push_str("\\#"),
            c => out.push(c),
        }
    }
    out
}

/// The case name an escaped cell holds; `None` on a bad escape.
fn unescape(cell: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = cell.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            '\\' => '\\',
            't' => '\t',
            'n' => '\n',
            'r' => '\r',
            '#' => '#',
            _ => return None,
        });
    }
    Some(out)
}

/// Why a baseline could not be read, written or used.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// There is no file: it must be recorded first.
    #[error("no baseline at {}: record it with {UPDATE_ENV}=1, review it and commit it", .0.display())]
    Missing(PathBuf),
    /// A line is not a row.
    #[error("{}:{line}: {message}", .path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// The file cannot be read or written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A result with an empty case name (a scenario labelled `""`).
    #[error("a result with an empty case name: give each scenario a label")]
    EmptyCase,
    /// Two results name the same case and model.
    #[error("two results for case `{case}`, model {model}: give each scenario its own label")]
    DuplicateCase {
        /// The case.
        case: String,
        /// The model.
        model: String,
    },
}

/// A baseline: rows keyed by case and model.
///
/// ```
/// use blackout_analysis::baseline::Baseline;
/// let text = "save\tposix\tFAIL\tentry_not_synced\n# end of baseline\n";
/// let b = Baseline::parse(text, "b.tsv".as_ref()).unwrap();
/// assert_eq!(b.rows().len(), 1);
/// assert!(b.render().ends_with(text));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Baseline {
    rows: Vec<Row>,
}

impl Baseline {
    /// A baseline of these rows (sorted by case, then model weakest
    /// first); a case and model twice, or an empty case, is refused.
    ///
    /// ```
    /// use blackout_analysis::report::Verdict;
    /// use blackout_analysis::baseline::{Baseline, Row};
    /// let b = Baseline::of_rows(vec![Row::new("a", "posix", Verdict::Pass, Vec::<String>::new())]).unwrap();
    /// ```
    pub fn of_rows(rows: Vec<Row>) -> Result<Baseline, BaselineError> {
        let mut seen = BTreeSet::new();
        for r in &rows {
            if r.case.is_empty() {
                return Err(BaselineError::EmptyCase);
            }
            if !seen.insert((r.case.as_str(), r.model.as_str())) {
                return Err(BaselineError::DuplicateCase {
                    case: r.case.clone(),
                    model: r.model.clone(),
                });
            }
        }
        let mut b = Baseline { rows };
        b.sort();
        Ok(b)
    }

    fn sort(&mut self) {
        self.rows
            .sort_by(|a, b| (&a.case, a.model_rank()).cmp(&(&b.case, b.model_rank())));
    }

    /// Reads the file at `path`: [`BaselineError::Missing`] when there is
    /// none, [`BaselineError::Malformed`] naming the first bad line.
    ///
    /// ```no_run
    /// let b = blackout_analysis::baseline::Baseline::load("durability.tsv".as_ref()).unwrap();
    /// ```
    pub fn load(path: &Path) -> Result<Baseline, BaselineError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Baseline::parse(&text, path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(BaselineError::Missing(path.to_path_buf()))
            }
            Err(source) => Err(BaselineError::Io {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// Parses a baseline's text; `path` names it in errors. Its last line
    /// must be [`END_LINE`] (a file without it was cut short, and is never
    /// read as a shorter baseline); blank lines and lines starting with `#`
    /// are skipped.
    ///
    /// ```
    /// use blackout_analysis::baseline::Baseline;
    /// let err = Baseline::parse("# head\nsave\tposix\tMAYBE\t-\n# end of baseline\n", "b.tsv".as_ref())
    ///     .unwrap_err();
    /// assert_eq!(err.to_string(), "b.tsv:2: `MAYBE` is not a verdict (PASS, FAIL, INCONCLUSIVE, HARNESS BROKEN, ERROR)");
    /// let cut = Baseline::parse("# head\nsave\tposix\tFA", "b.tsv".as_ref()).unwrap_err();
    /// assert!(cut.to_string().starts_with("b.tsv:2: the file ends inside this line"));
    /// ```
    pub fn parse(text: &str, path: &Path) -> Result<Baseline, BaselineError> {
        check_whole(text, path)?;
        let mut rows = Vec::new();
        let mut seen = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |message: String| BaselineError::Malformed {
                path: path.to_path_buf(),
                line: i + 1,
                message,
            };
            let row = parse_row(line).map_err(bad)?;
            if let Some(first) = seen.insert((row.case.clone(), row.model.clone()), i + 1) {
                return Err(bad(format!(
                    "case `{}`, model {} again (first on line {first})",
                    row.case, row.model
                )));
            }
            rows.push(row);
        }
        Baseline::of_rows(rows)
    }

    /// The rows, sorted.
    ///
    /// ```
    /// let b = blackout_analysis::baseline::Baseline::default();
    /// assert!(b.rows().is_empty());
    /// ```
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// The file's text: the header, then one line per row.
    ///
    /// ```
    /// assert!(blackout_analysis::baseline::Baseline::default().render().starts_with("# blackout baseline"));
    /// ```
    pub fn render(&self) -> String {
        let mut out = HEADER.to_string();
        for r in &self.rows {
            out.push_str(&r.to_string());
            out.push('\n');
        }
        out.push_str(END_LINE);
        out.push('\n');
        out
    }

    /// Writes the file durably ([`blackout_sys::durable::write_durably`]): a
    /// power cut leaves the old baseline or the new one whole, and once this
    /// returns, the new one.
    ///
    /// ```no_run
    /// blackout_analysis::baseline::Baseline::default().save("durability.tsv".as_ref()).unwrap();
    /// ```
    pub fn save(&self, path: &Path) -> Result<(), BaselineError> {
        blackout_sys::durable::write_durably(path, 0o644, |w| {
            std::io::Write::write_all(w, self.render().as_bytes())
        })
        .map_err(|source| BaselineError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Replaces every row of the cases `rows` name by `rows`, keeping the
    /// other cases' rows.
    ///
    /// ```
    /// use blackout_analysis::report::Verdict;
    /// use blackout_analysis::baseline::{Baseline, Row};
    /// let none = Vec::<String>::new();
    /// let mut b = Baseline::of_rows(vec![
    ///     Row::new("a", "posix", Verdict::Fail, ["entry_not_synced"]),
    ///     Row::new("b", "posix", Verdict::Pass, none.clone()),
    /// ]).unwrap();
    /// b.replace_cases(vec![Row::new("a", "posix", Verdict::Pass, none)]).unwrap();
    /// assert!(b.rows().iter().all(|r| r.verdict == Verdict::Pass));
    /// ```
    pub fn replace_cases(&mut self, rows: Vec<Row>) -> Result<(), BaselineError> {
        let cases: BTreeSet<&str> = rows.iter().map(|r| r.case.as_str()).collect();
        let mut kept: Vec<Row> = self
            .rows
            .iter()
            .filter(|r| !cases.contains(r.case.as_str()))
            .cloned()
            .collect();
        kept.extend(rows);
        *self = Baseline::of_rows(kept)?;
        Ok(())
    }

    /// The rows of `case`.
    fn case(&self, case: &str) -> Vec<&Row> {
        self.rows.iter().filter(|r| r.case == case).collect()
    }
}

/// One line of a baseline as a row, or what is wrong with it.
/// Refuses a baseline's text that was cut short: its last line unfinished,
/// or not [`END_LINE`].
fn check_whole(text: &str, path: &Path) -> Result<(), BaselineError> {
    let lines = text.lines().count().max(1);
    let cut = |line: usize, what: &str| {
        BaselineError::Malformed {
        path: path.to_path_buf(),
        line,
        message: format!(
            "{what}: it was cut short; record it again with {UPDATE_ENV}=1 (or restore it from version control)"
        ),
    }
    };
    if !text.is_empty() && !text.ends_with('\n') {
        return Err(cut(lines, "the file ends inside this line"));
    }
    if text.lines().last() != Some(END_LINE) {
        return Err(cut(
            lines,
            &format!("the file ends without its last line `{END_LINE}`"),
        ));
    }
    Ok(())
}

fn parse_row(line: &str) -> Result<Row, String> {
    let cells: Vec<&str> = line.split('\t').collect();
    let [case, model, verdict, kinds] = cells[..] else {
        return Err(format!(
            "{} tab-separated cells, want 4: case, model, verdict, cause kinds",
            cells.len()
        ));
    };
    let case = unescape(case).ok_or("a bad escape in the case (\\\\, \\t, \\n, \\r, \\#)")?;
    if case.is_empty() {
        return Err("an empty case".into());
    }
    let fs = model.strip_prefix(BLOCK_MODEL).unwrap_or_default();
    let block = !fs.is_empty() && fs.bytes().all(|b| b.is_ascii_alphanumeric());
    if model != NO_MODEL && !block && !Model::ALL.iter().any(|m| m.name() == model) {
        let names: Vec<&str> = Model::ALL.iter().map(|m| m.name()).collect();
        return Err(format!(
            "`{model}` is not a model ({}, {BLOCK_MODEL}FS, or {NO_MODEL})",
            names.join(", ")
        ));
    }
    let verdict = Verdict::named(verdict).ok_or_else(|| {
        format!("`{verdict}` is not a verdict (PASS, FAIL, INCONCLUSIVE, HARNESS BROKEN, ERROR)")
    })?;
    let kinds: Vec<&str> = if kinds == NO_KINDS {
        Vec::new()
    } else {
        kinds.split(',').collect()
    };
    if let Some(k) = kinds
        .iter()
        .find(|k| k.is_empty() || !k.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
    {
        return Err(format!(
            "`{k}` is not a cause kind (comma-separated kinds like entry_not_synced, or -)"
        ));
    }
    Ok(Row::new(case, model, verdict, kinds))
}

/// Whether a ratchet compares or rewrites its baseline.
///
/// ```
/// use blackout_analysis::baseline::Mode;
/// // CI never rewrites.
/// assert!(!Mode { update: true, ci: true }.rewrites());
/// assert!(Mode { update: true, ci: false }.rewrites());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mode {
    /// Asked to rewrite the baseline ([`UPDATE_ENV`]).
    pub update: bool,
    /// Running under CI (`CI` set): the update is ignored.
    pub ci: bool,
}

impl Mode {
    /// From the environment: [`UPDATE_ENV`] and `CI`, each set when
    /// non-empty. Says on stderr, in one line, when `CI` overrides the
    /// update.
    ///
    /// ```
    /// let mode = blackout_analysis::baseline::Mode::from_env();
    /// ```
    pub fn from_env() -> Mode {
        let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
        let mode = Mode {
            update: set(UPDATE_ENV),
            ci: set("CI"),
        };
        if let Some(w) = mode.warning() {
            eprintln!("{w}");
        }
        mode
    }

    /// Whether the baseline is rewritten rather than compared with.
    ///
    /// ```
    /// assert!(!blackout_analysis::baseline::Mode::default().rewrites());
    /// ```
    pub fn rewrites(self) -> bool {
        self.update && !self.ci
    }

    /// The warning when `CI` overrides an update.
    ///
    /// ```
    /// use blackout_analysis::baseline::Mode;
    /// assert!(Mode { update: true, ci: true }.warning().unwrap().starts_with("warning: BLACKOUT_UPDATE_BASELINE is ignored when CI is set"));
    /// ```
    pub fn warning(self) -> Option<String> {
        (self.update && self.ci).then(|| {
            format!(
                "warning: {UPDATE_ENV} is ignored when CI is set: the baseline is compared with, not rewritten"
            )
        })
    }
}

/// What a ratchet did.
///
/// ```
/// let done = blackout_analysis::baseline::Ratchet::Updated { rows: 3 };
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ratchet {
    /// The baseline was rewritten; it now has this many rows.
    Updated {
        /// Rows in the file.
        rows: usize,
    },
    /// The results were compared with it.
    Compared(Comparison),
}

/// The ratchet on rows: rewrites the baseline at `path` from `results`
/// when `mode` says so (with [`Scope::All`] the file holds only them; with
/// [`Scope::Given`] their cases' rows are replaced and the others kept),
/// else compares them with it.
///
/// ```no_run
/// use blackout_analysis::baseline::{ratchet, Mode, Ratchet, Scope};
/// match ratchet("durability.tsv".as_ref(), &[], Scope::Given, Mode::from_env()).unwrap() {
///     Ratchet::Updated { rows } => println!("{rows} rows recorded"),
///     Ratchet::Compared(c) => assert!(c.passed()),
/// }
/// ```
pub fn ratchet(
    path: &Path,
    results: &[Row],
    scope: Scope,
    mode: Mode,
) -> Result<Ratchet, BaselineError> {
    let fresh = Baseline::of_rows(results.to_vec())?;
    if !mode.rewrites() {
        return Ok(Ratchet::Compared(compare(
            &Baseline::load(path)?,
            results,
            scope,
        )));
    }
    let baseline = match scope {
        Scope::All => fresh,
        Scope::Given => {
            let mut b = match Baseline::load(path) {
                Ok(b) => b,
                Err(BaselineError::Missing(_)) => Baseline::default(),
                Err(e) => return Err(e),
            };
            b.replace_cases(fresh.rows)?;
            b
        }
    };
    baseline.save(path)?;
    Ok(Ratchet::Updated {
        rows: baseline.rows.len(),
    })
}

/// The case a command-line run is recorded under when `--case` does not
/// name one: with a trace, the trace file's name; else the workload's
/// command line, its words joined by spaces.
///
/// ```
/// use blackout_analysis::baseline::case_of_run;
/// assert_eq!(case_of_run(Some("traces/save.trace".as_ref()), &[]), "save.trace");
/// assert_eq!(case_of_run(None, &["sh".into(), "save.sh".into(), "full".into()]), "sh save.sh full");
/// ```
pub fn case_of_run(trace: Option<&Path>, command: &[std::ffi::OsString]) -> String {
    if let Some(name) = trace.and_then(Path::file_name) {
        return name.to_string_lossy().into_owned();
    }
    let words: Vec<_> = command.iter().map(|w| w.to_string_lossy()).collect();
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: [&str; 0] = [];

    fn row(case: &str, model: &str, verdict: Verdict, kinds: &[&str]) -> Row {
        Row::new(case, model, verdict, kinds.iter().copied())
    }

    fn base(rows: &[Row]) -> Baseline {
        Baseline::of_rows(rows.to_vec()).unwrap()
    }

    fn rules(c: &Comparison) -> Vec<Rule> {
        c.violations.iter().map(|v| v.rule).collect()
    }

    #[test]
    fn the_same_results_pass_a_recorded_fail_included() {
        let rows = [
            row("a", "process", Verdict::Pass, &NONE),
            row("a", "posix", Verdict::Fail, &["entry_not_synced"]),
        ];
        let c = compare(&base(&rows), &rows, Scope::All);
        assert!(c.passed() && c.better.is_empty(), "{c:?}");
    }

    #[test]
    fn rule_1_a_worse_verdict_is_a_violation() {
        let old = base(&[row("a", "posix", Verdict::Pass, &NONE)]);
        for v in [Verdict::Fail, Verdict::HarnessBroken, Verdict::Error] {
            let c = compare(&old, &[row("a", "posix", v, &[])], Scope::All);
            assert_eq!(rules(&c), [Rule::WorseVerdict], "{v:?}");
        }
        // A FAIL where INCONCLUSIVE was recorded is no improvement either.
        let old = base(&[row("a", "posix", Verdict::Inconclusive, &NONE)]);
        let c = compare(
            &old,
            &[row("a", "posix", Verdict::Fail, &["x"])],
            Scope::All,
        );
        assert_eq!(rules(&c), [Rule::WorseVerdict]);
        // Exactly the recorded non-pass verdict is accepted.
        let old = base(&[row("a", "-", Verdict::HarnessBroken, &NONE)]);
        let c = compare(
            &old,
            &[row("a", "-", Verdict::HarnessBroken, &[])],
            Scope::All,
        );
        assert!(c.passed());
    }

    #[test]
    fn rule_2_a_new_cause_kind_at_the_same_verdict_is_a_violation() {
        let old = base(&[row("a", "posix", Verdict::Fail, &["entry_not_synced"])]);
        let new = [row(
            "a",
            "posix",
            Verdict::Fail,
            &["entry_not_synced", "data_not_synced"],
        )];
        let c = compare(&old, &new, Scope::All);
        assert_eq!(rules(&c), [Rule::NewCauseKind]);
        assert_eq!(
            c.violations[0].to_string(),
            "case `a`, model posix: new cause kind data_not_synced: baseline FAIL \
             (entry_not_synced), now FAIL (data_not_synced, entry_not_synced)"
        );
    }

    #[test]
    fn rule_3_a_vanished_case_is_a_violation_only_when_all_are_given() {
        let old = base(&[
            row("a", "posix", Verdict::Pass, &NONE),
            row("b", "posix", Verdict::Fail, &["entry_not_synced"]),
        ]);
        let new = [row("a", "posix", Verdict::Pass, &NONE)];
        let c = compare(&old, &new, Scope::All);
        assert_eq!(rules(&c), [Rule::Vanished]);
        assert_eq!(
            c.violations[0].to_string(),
            "case `b`, model posix: vanished: baseline FAIL (entry_not_synced), now not run"
        );
        assert!(compare(&old, &new, Scope::Given).passed());
        // A model no longer explored vanishes too, whatever the scope.
        let old = base(&[
            row("a", "process", Verdict::Pass, &NONE),
            row("a", "posix", Verdict::Pass, &NONE),
        ]);
        let c = compare(&old, &new, Scope::Given);
        assert_eq!(rules(&c), [Rule::Vanished]);
        assert_eq!(c.violations[0].model, "process");
    }

    #[test]
    fn rule_4_becoming_inconclusive_is_a_violation() {
        let old = base(&[
            row("a", "process", Verdict::Pass, &NONE),
            row("a", "posix", Verdict::Fail, &["entry_not_synced"]),
        ]);
        // The run stopped before exploring: one row stands for every model.
        let c = compare(
            &old,
            &[row("a", "-", Verdict::Inconclusive, &[])],
            Scope::All,
        );
        assert_eq!(
            rules(&c),
            [Rule::BecameInconclusive, Rule::BecameInconclusive]
        );
        assert_eq!(
            c.violations[1].to_string(),
            "case `a`, model posix: became INCONCLUSIVE: baseline FAIL (entry_not_synced), now INCONCLUSIVE"
        );
        // Recorded as INCONCLUSIVE, it stays accepted.
        let old = base(&[row("a", "-", Verdict::Inconclusive, &NONE)]);
        let c = compare(
            &old,
            &[row("a", "-", Verdict::Inconclusive, &[])],
            Scope::All,
        );
        assert!(c.passed());
    }

    #[test]
    fn rule_5_an_unrecorded_case_or_model_is_a_violation() {
        let old = base(&[row("a", "posix", Verdict::Pass, &NONE)]);
        let new = [
            row("a", "posix", Verdict::Pass, &NONE),
            row("a", "ordered", Verdict::Pass, &NONE),
            row("b", "posix", Verdict::Pass, &NONE),
        ];
        for scope in [Scope::All, Scope::Given] {
            let c = compare(&old, &new, scope);
            assert_eq!(rules(&c), [Rule::Unrecorded, Rule::Unrecorded]);
            assert_eq!(
                c.violations[1].to_string(),
                "case `b`, model posix: not in the baseline: baseline none, now PASS"
            );
        }
    }

    #[test]
    fn better_results_are_notes_not_violations() {
        let old = base(&[
            row(
                "a",
                "posix",
                Verdict::Fail,
                &["entry_not_synced", "data_not_synced"],
            ),
            row("b", "posix", Verdict::Fail, &["entry_not_synced"]),
            row("c", "-", Verdict::Inconclusive, &NONE),
        ]);
        let new = [
            row("a", "posix", Verdict::Fail, &["entry_not_synced"]),
            row("b", "posix", Verdict::Pass, &NONE),
            row("c", "process", Verdict::Pass, &NONE),
            row("c", "posix", Verdict::Pass, &NONE),
        ];
        let c = compare(&old, &new, Scope::All);
        assert!(c.passed(), "{c:?}");
        assert_eq!(c.better.len(), 4, "{:?}", c.better);
        assert!(c.better[0].contains("cause kinds gone"));
        assert!(c.better_text("b.tsv".as_ref()).contains("can be tightened"));
    }

    #[test]
    fn the_file_round_trips_and_sorts() {
        let b = base(&[
            row("z", "posix", Verdict::Fail, &["b", "a"]),
            row("#odd\tcase\\", "posix", Verdict::Pass, &NONE),
            row("z", "process", Verdict::Pass, &NONE),
            row("z", "-", Verdict::HarnessBroken, &NONE),
        ]);
        let text = b.render();
        let body: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            body,
            [
                "\\#odd\\tcase\\\\\tposix\tPASS\t-",
                "z\t-\tHARNESS BROKEN\t-",
                "z\tprocess\tPASS\t-",
                "z\tposix\tFAIL\ta,b",
            ]
        );
        assert_eq!(Baseline::parse(&text, "b".as_ref()).unwrap(), b);
    }

    #[test]
    fn block_rows_sort_after_the_models_and_round_trip() {
        let b = base(&[
            row("a", "block:xfs", Verdict::Pass, &NONE),
            row("a", "posix", Verdict::Fail, &["entry_not_synced"]),
            row("a", "block:ext4", Verdict::Fail, &["entry_not_synced"]),
        ]);
        let models: Vec<&str> = b.rows().iter().map(|r| r.model.as_str()).collect();
        assert_eq!(models, ["posix", "block:ext4", "block:xfs"]);
        assert_eq!(Baseline::parse(&b.render(), "b".as_ref()).unwrap(), b);
        for bad in ["block:", "block:ext 4", "blocks:ext4"] {
            let line = format!("a\t{bad}\tPASS\t-\n{END_LINE}\n");
            let e = Baseline::parse(&line, "b".as_ref())
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("is not a model (process, ordered, posix, block:FS, or -)"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_malformed_line_is_named() {
        let p = Path::new("b.tsv");
        let cases = [
            ("a\tposix\tPASS\n", "b.tsv:1: 3 tab-separated cells, want 4"),
            (
                "# x\n\na\tfast\tPASS\t-\n",
                "b.tsv:3: `fast` is not a model",
            ),
            (
                "a\tposix\tPASS\tNot-A-Kind\n",
                "b.tsv:1: `Not-A-Kind` is not a cause kind",
            ),
            ("a\\q\tposix\tPASS\t-\n", "b.tsv:1: a bad escape"),
            ("\tposix\tPASS\t-\n", "b.tsv:1: an empty case"),
            (
                "a\tposix\tPASS\t-\na\tposix\tFAIL\tx\n",
                "b.tsv:2: case `a`, model posix again (first on line 1)",
            ),
        ];
        for (text, want) in cases {
            let text = format!("{text}{END_LINE}\n");
            let e = Baseline::parse(&text, p).unwrap_err().to_string();
            assert!(e.starts_with(want), "{e:?} for {text:?}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn a_file_cut_anywhere_is_refused_in_one_line_never_read_shorter() {
        let b = base(&[
            row("a", "process", Verdict::Pass, &NONE),
            row("a", "posix", Verdict::Fail, &["entry_not_synced"]),
            row("b", "posix", Verdict::Pass, &NONE),
        ]);
        let text = b.render();
        let p = Path::new("b.tsv");
        assert_eq!(Baseline::parse(&text, p).unwrap(), b);
        // Every proper prefix: at a row's end, inside a row, inside the
        // header, nothing at all.
        for len in 0..text.len() {
            let e = Baseline::parse(&text[..len], p).unwrap_err().to_string();
            assert!(e.contains("it was cut short"), "{len}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let mid_row = text.find("a\tposix\tFA").unwrap() + "a\tposix\tFA".len();
        let e = Baseline::parse(&text[..mid_row], p)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("b.tsv:8: the file ends inside this line"),
            "{e}"
        );
        let at_row_end = text.find("b\tposix").unwrap();
        let e = Baseline::parse(&text[..at_row_end], p)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("b.tsv:8: the file ends without its last line `# end of baseline`"),
            "{e}"
        );
    }

    #[test]
    fn a_missing_file_says_how_to_record_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("none.tsv");
        let e = ratchet(&p, &[], Scope::All, Mode::default()).unwrap_err();
        assert!(matches!(e, BaselineError::Missing(_)));
        assert!(e.to_string().contains("BLACKOUT_UPDATE_BASELINE=1"), "{e}");
    }

    #[test]
    fn an_update_writes_and_ci_compares_instead() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.tsv");
        let a = [row("a", "posix", Verdict::Pass, &NONE)];
        let b = [row("b", "posix", Verdict::Fail, &["entry_not_synced"])];
        let update = Mode {
            update: true,
            ci: false,
        };
        assert_eq!(
            ratchet(&p, &a, Scope::Given, update).unwrap(),
            Ratchet::Updated { rows: 1 }
        );
        // Given cases: the other rows are kept.
        assert_eq!(
            ratchet(&p, &b, Scope::Given, update).unwrap(),
            Ratchet::Updated { rows: 2 }
        );
        // All: the file is the results.
        assert_eq!(
            ratchet(&p, &b, Scope::All, update).unwrap(),
            Ratchet::Updated { rows: 1 }
        );
        let ci = Mode {
            update: true,
            ci: true,
        };
        let Ratchet::Compared(c) = ratchet(&p, &a, Scope::All, ci).unwrap() else {
            panic!("CI rewrote the baseline");
        };
        assert_eq!(rules(&c), [Rule::Unrecorded, Rule::Vanished]);
        assert_eq!(Baseline::load(&p).unwrap().rows(), b);
    }

    #[test]
    fn results_that_cannot_make_a_file_are_refused() {
        let twice = [
            row("a", "posix", Verdict::Pass, &NONE),
            row("a", "posix", Verdict::Fail, &["x"]),
        ];
        let e = Baseline::of_rows(twice.to_vec()).unwrap_err();
        assert!(matches!(e, BaselineError::DuplicateCase { .. }), "{e}");
        let e = Baseline::of_rows(vec![row("", "posix", Verdict::Pass, &NONE)]).unwrap_err();
        assert!(matches!(e, BaselineError::EmptyCase), "{e}");
    }
}
