//! A scenario's result (`blackout::Scenario`, durability assertions
//! inside `cargo test`): the report `blackout run` prints, as data, as text
//! and as JSON, with the assertions a test makes on it.

use std::path::Path;

use blackout_analysis::baseline::{ratchet, BaselineError, Mode, Ratchet, Row, Scope, UPDATE_ENV};
use blackout_analysis::block::BlockReport;
use blackout_analysis::report::{CauseGroup, ModelReport, RunReport, Verdict};
use blackout_analysis::syncs::{SyncVerdict, SyncsReport};
use blackout_oplog::trace::Trace;

use crate::json::JsonExporter;
use crate::text::TextExporter;
use crate::{ExportContext, Exporter};

/// A scenario's result: the report `blackout run` prints, as data and as
/// text or JSON.
pub struct Report {
    label: String,
    verdict: Verdict,
    report: Option<RunReport>,
    trace: Option<Trace>,
    text: String,
    json: String,
}

impl Report {
    /// The report of scenario `label` whose check is named `checker`:
    /// `report` rendered as text and JSON, with the trace it was made from
    /// (saved at `trace_path`, if it was).
    pub fn new(
        label: &str,
        checker: &str,
        trace_path: Option<&str>,
        trace: Trace,
        report: RunReport,
    ) -> Report {
        let trace_id = trace.content_id();
        let cx = ExportContext {
            trace: &trace,
            trace_path,
            trace_id: &trace_id,
            checker,
            checker_flag: "",
            state_flags: "",
            all_causes: true,
            ack_prefix: None,
        };
        let text = String::from_utf8_lossy(&TextExporter { color: false }.export(&report, &cx))
            .replace(
                "record with -o run.trace, then: ",
                "keep the trace with .keep_trace(\"run.trace\"), then: ",
            );
        let json = String::from_utf8_lossy(&JsonExporter.export(&report, &cx)).into_owned();
        Report {
            label: label.into(),
            verdict: report.final_verdict(),
            report: Some(report),
            trace: Some(trace),
            text,
            json,
        }
    }

    /// The report of a scenario not run here: in the recorded copy of a
    /// test, another scenario's workload is the one recorded.
    pub fn skipped(label: &str) -> Report {
        Report {
            label: label.into(),
            verdict: Verdict::Pass,
            report: None,
            trace: None,
            text: format!("scenario `{label}` not run: another scenario's workload is recorded"),
            json: "null".into(),
        }
    }

    /// Adds a line to the text report (a note on how it was made).
    pub fn note(&mut self, line: &str) {
        self.text.push_str(line);
    }

    /// Whether this is the report of a scenario not run here (in the
    /// recorded copy of a test, another scenario's workload is the one
    /// recorded): it has no run report.
    pub fn skipped_here(&self) -> bool {
        self.report.is_none()
    }

    /// The scenario's label: its case in a baseline.
    ///
    /// ```no_run
    /// # let report: blackout_export::scenario::Report = unimplemented!();
    /// println!("{}: {}", report.label(), report.verdict().name());
    /// ```
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The overall verdict (on a real file system: the file
    /// system's).
    ///
    /// ```no_run
    /// # let report: blackout_export::scenario::Report = unimplemented!();
    /// use blackout_analysis::report::Verdict;
    /// assert_eq!(report.verdict(), Verdict::Pass);
    /// ```
    pub fn verdict(&self) -> Verdict {
        self.verdict
    }

    /// Each model's report (its verdict, failing states, causes).
    ///
    /// ```no_run
    /// # let report: blackout_export::scenario::Report = unimplemented!();
    /// for m in report.models() {
    ///     println!("{}: {}", m.model.name(), m.verdict.name());
    /// }
    /// ```
    pub fn models(&self) -> &[ModelReport] {
        self.report.as_ref().map_or(&[], |r| &r.models)
    }

    /// Every model's causes, weakest model first.
    ///
    /// ```no_run
    /// # let report: blackout_export::scenario::Report = unimplemented!();
    /// for cause in report.causes() {
    ///     println!("{} states", cause.states);
    /// }
    /// ```
    pub fn causes(&self) -> Vec<&CauseGroup> {
        self.models().iter().flat_map(|m| &m.causes).collect()
    }

    /// The whole run's data.
    ///
    /// ```no_run
    /// # let report: blackout_export::scenario::Report = unimplemented!();
    /// let promises = &report.run_report().unwrap().promises;
    /// ```
    pub fn run_report(&self) -> Option<&RunReport> {
        self.report.as_ref()
    }

    /// On a real file system: the file system's
    /// report (its crash points, distinct states after recovery, failing
    /// ones blamed in the posix model's terms); `None` when it was not
    /// checked (the posix run could not judge) or the scenario ran on the
    /// models alone.
    ///
    /// ```no_run
    /// # let report: blackout_export::scenario::Report = unimplemented!();
    /// if let Some(ext4) = report.block() {
    ///     println!("{}: {}", ext4.fs, ext4.verdict.name());
    /// }
    /// ```
    pub fn block(&self) -> Option<&BlockReport> {
        self.report.as_ref()?.block.as_ref()?.report.as_ref()
    }

    /// The recorded trace: the workload's ops, as `blackout ops` lists
    /// them (`trace.op_log_text()`).
    ///
    /// ```no_run
    /// # let report: blackout_export::scenario::Report = unimplemented!();
    /// print!("{}", report.trace().unwrap().op_log_text());
    /// ```
    pub fn trace(&self) -> Option<&Trace> {
        self.trace.as_ref()
    }

    /// The report as `blackout run` prints it.
    ///
    /// ```no_run
    /// # let report: blackout_export::scenario::Report = unimplemented!();
    /// println!("{}", report.text());
    /// ```
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The report as `blackout run --json` prints it (docs/JSON.md).
    ///
    /// ```no_run
    /// # let report: blackout_export::scenario::Report = unimplemented!();
    /// let v: serde_json::Value = serde_json::from_str(report.json()).unwrap();
    /// ```
    pub fn json(&self) -> &str {
        &self.json
    }

    /// With the scenario's syncs judged: every sync call site.
    ///
    /// ```no_run
    /// # let report: blackout_export::scenario::Report = unimplemented!();
    /// for c in &report.syncs().unwrap().sites {
    ///     println!("{}: {:?}", c.site.call, c.verdict);
    /// }
    /// ```
    pub fn syncs(&self) -> Option<&SyncsReport> {
        self.report.as_ref()?.syncs.as_ref()
    }

    /// Panics with the whole report unless a sync call site whose call
    /// contains `call` (`fsync(data.db)`, or the source line with stacks:
    /// `src/store.rs:88`) is needed: removing its syncs lets some state
    /// break a promise. Keeps a durability sync from turning into dead
    /// code unnoticed.
    ///
    /// ```no_run
    /// # let report: blackout_export::scenario::Report = unimplemented!();
    /// report.assert_sync_needed("fsync(data.db)");
    /// ```
    pub fn assert_sync_needed(&self, call: &str) {
        let sites = self.syncs().map_or(&[][..], |s| &s.sites[..]);
        let site = sites.iter().find(|c| c.site.call.contains(call));
        assert!(
            site.is_some_and(|c| matches!(c.verdict, SyncVerdict::Needed { .. })),
            "scenario `{}`: no needed sync at `{call}` (judge them with .syncs(true)): {}\n{}",
            self.label,
            site.map_or("no such call site".to_string(), |c| format!(
                "{:?}",
                c.verdict
            )),
            self.text
        );
    }

    /// Panics with the whole report unless the verdict is an exact PASS:
    /// every distinct crash state checked and accepted (a PASS on a sample,
    /// when the check budget ended the rest of a long trace, is not one).
    ///
    /// ```no_run
    /// # let report: blackout_export::scenario::Report = unimplemented!();
    /// report.assert_pass();
    /// ```
    pub fn assert_pass(&self) {
        assert!(
            self.verdict == Verdict::Pass,
            "scenario `{}`: {}\n{}",
            self.label,
            self.verdict.name(),
            self.text
        );
        let exact =
            self.report.as_ref().is_none_or(|r| r.exact) && self.block().is_none_or(|b| b.exact);
        assert!(
            exact,
            "scenario `{}`: PASS on a sample, not on every crash state (raise .check_budget(...), or None for no bound)\n{}",
            self.label,
            self.text
        );
    }
}

/// The rows of scenario reports, each under its label.
fn rows_of_reports<'a>(reports: impl IntoIterator<Item = &'a Report>) -> Vec<Row> {
    reports
        .into_iter()
        .filter_map(|r| Some(Row::of_run(r.label(), r.run_report()?)))
        .flatten()
        .collect()
}

/// The ratchet on scenario reports, without panicking: every report's
/// rows under its label ([`Scope::All`]: a recorded label missing from
/// `reports` has vanished), compared with the baseline at `path` or
/// written to it as `mode` says. A report of a scenario not run (inside
/// another's recording) has no rows.
///
/// ```no_run
/// use blackout_analysis::baseline::{Mode, Ratchet};
/// use blackout_export::scenario::{check_reports, Report};
/// # let (a, b): (Report, Report) = unimplemented!();
/// let done = check_reports([&a, &b], "tests/durability.tsv", Mode::default()).unwrap();
/// if let Ratchet::Compared(c) = done {
///     for v in &c.violations {
///         println!("{v}");
///     }
/// }
/// ```
pub fn check_reports<'a>(
    reports: impl IntoIterator<Item = &'a Report>,
    path: impl AsRef<Path>,
    mode: Mode,
) -> Result<Ratchet, BaselineError> {
    ratchet(path.as_ref(), &rows_of_reports(reports), Scope::All, mode)
}

/// Asserts that scenario reports are no worse than the baseline at `path`
/// (relative to the package's directory under `cargo test`): panics with
/// every violation, one per line. Give every scenario the baseline
/// covers: a recorded label not among `reports` has vanished.
///
/// With `BLACKOUT_UPDATE_BASELINE=1` (and `CI` unset) it writes the file
/// from the reports instead. Better results pass with a note on stderr
/// that the baseline can be tightened. A missing file panics saying how to
/// record it; a malformed one naming the line. In the recorded copy of a
/// test (where another scenario's report is skipped) it does nothing.
///
/// ```no_run
/// use blackout_export::scenario::{assert_no_worse_than, Report};
/// # let (save, load): (Report, Report) = unimplemented!();
/// assert_no_worse_than([&save, &load], "tests/durability.tsv");
/// ```
pub fn assert_no_worse_than<'a>(
    reports: impl IntoIterator<Item = &'a Report>,
    path: impl AsRef<Path>,
) {
    let reports: Vec<&Report> = reports.into_iter().collect();
    if reports.iter().any(|r| r.skipped_here()) {
        return;
    }
    let path = path.as_ref();
    match check_reports(reports, path, Mode::from_env()) {
        Err(BaselineError::Missing(_)) => panic!(
            "blackout: no baseline at {}: record it with `{UPDATE_ENV}=1 cargo test`, review it and commit it",
            path.display()
        ),
        Err(e) => panic!("blackout: {e}"),
        Ok(Ratchet::Updated { rows }) => {
            eprintln!("blackout: baseline {} written ({rows} rows)", path.display());
        }
        Ok(Ratchet::Compared(c)) => {
            eprint!("{}", c.better_text(path));
            assert!(
                c.passed(),
                "blackout: {}",
                c.violations_text(path, "cargo test")
            );
        }
    }
}
