//! The JUnit XML report, for the test-report views of CI systems (Jenkins,
//! GitLab, GitHub actions that read JUnit files).
//!
//! One `<testsuite>` for the run (named after the workload), one
//! `<testcase>` per model, and in it one `<failure>` per cause of that
//! model: its message is the cause's sentence, its type the cause's kind,
//! its text what the text report says of the cause (the simplest state, the
//! checker's reason, the verified fix, the `reproduce:` line). States whose
//! check did not finish are one `<error>`; a run that stopped before
//! exploring (INCONCLUSIVE, HARNESS BROKEN) is one test case, `run`, with
//! an `<error>`. Every cause is listed, as in JSON.
//!
//! A block run (`--backend block`) adds a second `<testsuite>`, named after
//! the file system (`block ext4`): one test case per failing distinct
//! state after recovery, named by its id (`b3`), with a `<failure>` whose
//! message is the checker's word, whose type is the kind of the posix
//! cause it was blamed on (`rejected` when none is known) and whose text
//! says when power was lost, the last calls before it and the posix state
//! and cause holding the same files; one per state that could not be
//! judged, with an `<error>`; a passing `verdict` case when none failed or
//! errored; a skipped `verdict` case, saying why, when the file system was
//! not checked. Its properties hold the verdict, the reason, the counts
//! and `--repeat`'s line (`repeat`), its `<system-out>` the coverage, and
//! the counts on `<testsuites>` are the sums over both suites.
//!
//! The layout is the common Ant/Jenkins one, whose schema allows several
//! failures in one test case. quick-junit's data model holds one outcome per
//! test case, so the document is written with quick-xml (the XML writer
//! quick-junit itself uses), which escapes every text and attribute.
//! Characters XML 1.0 cannot hold at all (most control characters) are
//! shown as escapes first.

use std::fmt::Write as _;

use blackout_analysis::block::{BlockChecked, BlockReport, BlockSide};
use blackout_analysis::report::{ModelReport, RunReport, Verdict};
use blackout_explore::model::{for_people, Model};
use blackout_oplog::ops::escape_controls;
use quick_xml::events::{BytesDecl, BytesText, Event};
use quick_xml::Writer;

use crate::block::{
    coverage_text as block_coverage_text, fsck_text, misses_text, not_checked_text, state_words,
};
use crate::text::{cause_text, coverage_text, distinct_text, fix_set_text, workload_name};
use crate::{ExportContext, Exporter};

/// The JUnit XML report ([`render`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct JunitExporter;

impl Exporter for JunitExporter {
    fn export(&self, report: &RunReport, cx: &ExportContext<'_>) -> Vec<u8> {
        render(report, cx).into_bytes()
    }
}

/// A `<failure>` or `<error>` of a test case.
struct Problem {
    message: String,
    kind: String,
    text: String,
}

/// One test case: a model, or the run when it stopped before exploring.
struct Case {
    name: String,
    failures: Vec<Problem>,
    errors: Vec<Problem>,
    /// Why it was skipped, for a `<skipped>`.
    skipped: Option<String>,
    out: String,
}

/// Text XML 1.0 can hold: tabs and line breaks kept, other control
/// characters (and the two non-characters U+FFFE, U+FFFF) escaped.
pub fn xml_safe(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\t' | '\n' | '\r' => out.push(c),
            '\u{fffe}' | '\u{ffff}' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c if c.is_control() => out.push_str(&escape_controls(&c.to_string())),
            c => out.push(c),
        }
    }
    out
}

fn model_case(m: &ModelReport, ctx: &ExportContext<'_>, report: &RunReport) -> Case {
    let failures = m
        .causes
        .iter()
        .enumerate()
        .map(|(n, g)| Problem {
            message: g.cause.sentence.clone(),
            kind: serde_json::to_value(g.cause.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| "cause".into()),
            text: cause_text(m, g, n, ctx),
        })
        .collect();
    let mut errors = Vec::new();
    if !m.errors.is_empty() {
        let mut text = String::new();
        for c in &m.errors {
            let _ = writeln!(text, "state {}: the checker {}", c.id, c.outcome.describe());
        }
        errors.push(Problem {
            message: format!(
                "{} state{} could not be checked",
                m.errors.len(),
                if m.errors.len() == 1 { "" } else { "s" }
            ),
            kind: "unchecked".into(),
            text,
        });
    }
    let mut out = format!(
        "{} states, {}; {}\n",
        for_people(m.states as u128),
        distinct_text(m),
        coverage_text(m, &report.explore)
    );
    if let Some(set) = &m.fix_set {
        let _ = writeln!(out, "{}", fix_set_text(set, m.model));
    }
    Case {
        name: m.model.name().to_string(),
        failures,
        errors,
        skipped: None,
        out,
    }
}

fn cases(report: &RunReport, ctx: &ExportContext<'_>) -> Vec<Case> {
    let mut cases: Vec<Case> = report
        .models
        .iter()
        .map(|m| model_case(m, ctx, report))
        .collect();
    if cases.is_empty() && report.verdict != Verdict::Pass {
        cases.push(Case {
            name: "run".into(),
            failures: Vec::new(),
            errors: vec![Problem {
                message: report.reason.clone(),
                kind: report.verdict.name().to_lowercase().replace(' ', "_"),
                text: format!("verdict: {} — {}\n", report.verdict.name(), report.reason),
            }],
            skipped: None,
            out: String::new(),
        });
    }
    // Each sync call site made to fail is a case: one that loses promised
    // data fails.
    for c in report.failed_syncs.iter().flat_map(|f| &f.sites) {
        let (call, failed, line) = crate::syncs::failed_sync_words(c);
        let failures = match c.outcome.fails() {
            true => vec![Problem {
                message: line.clone(),
                kind: "failed_sync".into(),
                text: format!("{failed}; {line}\n"),
            }],
            false => Vec::new(),
        };
        cases.push(Case {
            name: xml_safe(&format!("{call} failing")),
            failures,
            errors: Vec::new(),
            skipped: None,
            out: xml_safe(&format!("{failed}; {line}\n")),
        });
    }
    cases
}

/// One `<testsuite>`: the run's, or a file system's.
struct Suite {
    name: String,
    properties: Vec<(&'static str, String)>,
    cases: Vec<Case>,
    /// Its `<system-out>`, if not empty.
    out: String,
    seconds: f64,
}

/// The counts on `<testsuites>` and each `<testsuite>`: tests, failures,
/// errors (a case with a failure is counted as failed only), skipped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    tests: usize,
    failures: usize,
    errors: usize,
    skipped: usize,
}

impl Counts {
    fn of(cases: &[Case]) -> Counts {
        let failed = |c: &&Case| !c.failures.is_empty();
        let errored = |c: &&Case| c.failures.is_empty() && !c.errors.is_empty();
        Counts {
            tests: cases.len(),
            failures: cases.iter().filter(failed).count(),
            errors: cases.iter().filter(errored).count(),
            skipped: cases.iter().filter(|c| c.skipped.is_some()).count(),
        }
    }

    fn add(self, o: Counts) -> Counts {
        Counts {
            tests: self.tests + o.tests,
            failures: self.failures + o.failures,
            errors: self.errors + o.errors,
            skipped: self.skipped + o.skipped,
        }
    }

    /// The attributes: tests, failures, errors, skipped and `time`.
    fn attributes(self, seconds: f64) -> [(&'static str, String); 5] {
        [
            ("tests", self.tests.to_string()),
            ("failures", self.failures.to_string()),
            ("errors", self.errors.to_string()),
            ("skipped", self.skipped.to_string()),
            ("time", format!("{seconds:.3}")),
        ]
    }
}

/// The run's own suite: named after the workload, one case per model.
fn run_suite(report: &RunReport, ctx: &ExportContext<'_>) -> Suite {
    Suite {
        name: xml_safe(&workload_name(&ctx.trace.command)),
        properties: run_properties(report, ctx),
        cases: cases(report, ctx),
        out: xml_safe(&format!(
            "{}{}",
            report
                .syncs
                .as_ref()
                .map(crate::syncs::syncs_text)
                .unwrap_or_default(),
            report
                .failed_syncs
                .as_ref()
                .map(crate::syncs::failed_syncs_text)
                .unwrap_or_default()
        )),
        seconds: report.explore_seconds + report.check_seconds,
    }
}

/// The run's result as JUnit XML: the run's suite, and for a block run
/// the file system's after it.
pub fn render(report: &RunReport, ctx: &ExportContext<'_>) -> String {
    let mut suites = vec![run_suite(report, ctx)];
    if let Some(side) = &report.block {
        suites.push(block_suite(side, report));
    }
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    // Writing into memory cannot fail.
    let _ = write_document(&mut w, &suites);
    let mut out = String::from_utf8_lossy(&w.into_inner()).into_owned();
    out.push('\n');
    out
}

fn write_document(w: &mut Writer<Vec<u8>>, suites: &[Suite]) -> std::io::Result<()> {
    let total = suites
        .iter()
        .fold(Counts::default(), |t, s| t.add(Counts::of(&s.cases)));
    let seconds = suites.iter().map(|s| s.seconds).sum();
    let attributes = total.attributes(seconds);
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    w.create_element("testsuites")
        .with_attribute(("name", "blackout"))
        .with_attributes(attributes.iter().map(|(k, v)| (*k, v.as_str())))
        .write_inner_content(|w| {
            for suite in suites {
                write_suite(w, suite)?;
            }
            Ok(())
        })?;
    Ok(())
}

fn write_suite(w: &mut Writer<Vec<u8>>, suite: &Suite) -> std::io::Result<()> {
    let attributes = Counts::of(&suite.cases).attributes(suite.seconds);
    w.create_element("testsuite")
        .with_attribute(("name", suite.name.as_str()))
        .with_attributes(attributes.iter().map(|(k, v)| (*k, v.as_str())))
        .write_inner_content(|w| {
            write_properties(w, &suite.properties)?;
            for case in &suite.cases {
                write_case(w, &suite.name, case)?;
            }
            if !suite.out.is_empty() {
                w.create_element("system-out")
                    .write_text_content(BytesText::new(&xml_safe(&suite.out)))?;
            }
            Ok(())
        })?;
    Ok(())
}

/// The run suite's properties: the verdict and why, the checker, the
/// command, the trace, the counts.
fn run_properties(report: &RunReport, ctx: &ExportContext<'_>) -> Vec<(&'static str, String)> {
    let mut props = vec![
        ("verdict", report.verdict.name().to_string()),
        ("reason", report.reason.clone()),
        ("checker", ctx.checker.to_string()),
        ("command", ctx.trace.command.join(" ")),
        ("ops", ctx.trace.ops.len().to_string()),
        ("trace_id", ctx.trace_id.to_string()),
        ("states_checked", report.states_checked.to_string()),
        ("states_distinct", report.states_distinct.to_string()),
        ("exact", report.exact.to_string()),
    ];
    if let Some(t) = ctx.trace_path {
        props.push(("trace", t.to_string()));
    }
    props
}

fn write_properties(
    w: &mut Writer<Vec<u8>>,
    props: &[(&'static str, String)],
) -> std::io::Result<()> {
    w.create_element("properties").write_inner_content(|w| {
        for (name, value) in props {
            w.create_element("property")
                .with_attributes([("name", *name), ("value", xml_safe(value).as_str())])
                .write_empty()?;
        }
        Ok(())
    })?;
    Ok(())
}

/// The kind of the posix cause a block failure was blamed on (its number
/// from 1 in the posix model's causes).
fn posix_kind(report: &RunReport, n: usize) -> Option<String> {
    let posix = report.models.iter().find(|m| m.model == Model::Posix)?;
    let g = posix.causes.get(n.checked_sub(1)?)?;
    Some(g.cause.kind.name().to_string())
}

/// A failing or unjudged block state as a test case: a `<failure>` whose
/// message is the checker's word and whose type is the posix cause's kind
/// (`rejected` when none is known), or an `<error>` typed by the outcome.
fn state_case(r: &BlockReport, c: &BlockChecked, report: &RunReport, failed: bool) -> Case {
    let w = state_words(r, c);
    let mut text = format!("power lost {}; {}\n", w.when, w.promised);
    if let Some(lost) = &w.writes_lost {
        let _ = writeln!(text, "{lost}");
    }
    let _ = writeln!(text, "checker: {}", w.checker);
    if let Some(calls) = &w.last_calls {
        let _ = writeln!(text, "the last calls before it: {calls}");
    }
    match &w.posix_state {
        Some((s, lost)) => {
            let _ = writeln!(text, "posix state: {s} holds the same files; {lost}");
        }
        None if failed => text.push_str("posix state: none holds the same files\n"),
        None => {}
    }
    if let Some((n, sentence)) = &w.posix_cause {
        let _ = writeln!(text, "posix cause {n}: {sentence}");
    }
    let kind = match (&w.posix_cause, failed) {
        (Some((n, _)), true) => posix_kind(report, *n).unwrap_or_else(|| "rejected".into()),
        (_, true) => "rejected".into(),
        (_, false) => serde_json::to_value(&c.outcome)
            .ok()
            .and_then(|v| v["outcome"].as_str().map(str::to_string))
            .unwrap_or_else(|| "unchecked".into()),
    };
    let problem = Problem {
        message: w.checker,
        kind,
        text,
    };
    let (failures, errors) = if failed {
        (vec![problem], Vec::new())
    } else {
        (Vec::new(), vec![problem])
    };
    Case {
        name: w.id,
        failures,
        errors,
        skipped: None,
        out: String::new(),
    }
}

/// The file system's suite (`block ext4`): one case per failing distinct
/// state, one per state that could not be judged, a passing `verdict`
/// case when there are none, or a skipped one when the file system was
/// not checked; `--repeat`'s line as a property and in its output.
fn block_suite(side: &BlockSide, report: &RunReport) -> Suite {
    let mut suite = Suite {
        name: xml_safe(&format!("block {}", side.fs)),
        properties: vec![("fs", side.fs.clone())],
        cases: Vec::new(),
        out: String::new(),
        seconds: 0.0,
    };
    let verdict_case = |skipped: Option<String>, out: String| Case {
        name: "verdict".into(),
        failures: Vec::new(),
        errors: Vec::new(),
        skipped,
        out,
    };
    match &side.report {
        None => {
            let why = not_checked_text(report.verdict.name());
            suite.properties.push(("verdict", "not checked".into()));
            suite.properties.push(("reason", why.clone()));
            suite.cases.push(verdict_case(Some(why), String::new()));
        }
        Some(r) => {
            suite.properties.extend([
                ("verdict", r.verdict.name().to_string()),
                ("reason", r.reason.clone()),
                ("states", r.states.to_string()),
                ("states_checked", r.states_checked.to_string()),
                ("states_distinct", r.distinct.to_string()),
                ("exact", r.exact.to_string()),
            ]);
            suite.seconds = r.seconds;
            for c in &r.failing {
                suite.cases.push(state_case(r, c, report, true));
            }
            for c in &r.errors {
                suite.cases.push(state_case(r, c, report, false));
            }
            if suite.cases.is_empty() {
                let said = format!("{}: {} — {}\n", r.fs, r.verdict.name(), r.reason);
                suite.cases.push(verdict_case(None, said));
            }
            let _ = writeln!(suite.out, "coverage: {}", block_coverage_text(r));
            for line in fsck_text(r).into_iter().chain(misses_text(r)) {
                let _ = writeln!(suite.out, "{line}");
            }
        }
    }
    if let Some(line) = side.repeat_line() {
        suite.properties.push(("repeat", line.clone()));
        let _ = writeln!(suite.out, "{line}");
    }
    suite
}

fn write_case(w: &mut Writer<Vec<u8>>, suite: &str, case: &Case) -> std::io::Result<()> {
    let element = w
        .create_element("testcase")
        .with_attributes([("name", case.name.as_str()), ("classname", suite)]);
    let empty = case.failures.is_empty() && case.errors.is_empty();
    if empty && case.skipped.is_none() && case.out.is_empty() {
        element.write_empty()?;
        return Ok(());
    }
    element.write_inner_content(|w| {
        if let Some(why) = &case.skipped {
            w.create_element("skipped")
                .with_attribute(("message", xml_safe(why).as_str()))
                .write_empty()?;
        }
        for (tag, problems) in [("error", &case.errors), ("failure", &case.failures)] {
            for p in problems {
                w.create_element(tag)
                    .with_attributes([
                        ("message", xml_safe(&p.message).as_str()),
                        ("type", xml_safe(&p.kind).as_str()),
                    ])
                    .write_text_content(BytesText::new(&xml_safe(&p.text)))?;
            }
        }
        if !case.out.is_empty() {
            w.create_element("system-out")
                .write_text_content(BytesText::new(&xml_safe(&case.out)))?;
        }
        Ok(())
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::block::fixture;
    use quick_xml::events::Event as XmlEvent;

    /// Each `<testsuites>`, `<testsuite>` and `<testcase>` in `xml` with its
    /// attributes, and the names of the elements each test case holds
    /// (parsing the whole document: it is well-formed).
    /// An element's name, its attributes and the elements a test case holds.
    type Element = (String, Vec<(String, String)>, Vec<String>);

    fn elements(xml: &str) -> Vec<Element> {
        let mut reader = quick_xml::Reader::from_str(xml);
        let mut out: Vec<Element> = Vec::new();
        let mut in_case = false;
        loop {
            let (e, start) = match reader.read_event().expect("well-formed XML") {
                XmlEvent::Start(e) => (e, true),
                XmlEvent::Empty(e) => (e, false),
                XmlEvent::End(e) if e.name().as_ref() == b"testcase" => {
                    in_case = false;
                    continue;
                }
                XmlEvent::Eof => return out,
                _ => continue,
            };
            let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
            if name.starts_with("testsuite") || name == "testcase" {
                let attrs = e
                    .attributes()
                    .map(|a| {
                        let a = a.unwrap();
                        let key = String::from_utf8(a.key.as_ref().to_vec()).unwrap();
                        (
                            key,
                            a.normalized_value(quick_xml::XmlVersion::default())
                                .unwrap()
                                .into_owned(),
                        )
                    })
                    .collect();
                out.push((name.clone(), attrs, Vec::new()));
                in_case = start && name == "testcase";
            } else if in_case {
                out.last_mut().unwrap().2.push(name);
            }
        }
    }

    fn attr<'a>(attrs: &'a [(String, String)], key: &str) -> &'a str {
        &attrs.iter().find(|(k, _)| k == key).unwrap().1
    }

    /// The counts (tests, failures, errors, skipped) of each suite and of
    /// `<testsuites>`, which must be their sums.
    fn counts(xml: &str) -> Vec<[usize; 4]> {
        let all = elements(xml);
        let of = |attrs: &[(String, String)]| {
            ["tests", "failures", "errors", "skipped"].map(|k| attr(attrs, k).parse().unwrap())
        };
        let suites: Vec<[usize; 4]> = all
            .iter()
            .filter(|e| e.0 == "testsuite")
            .map(|e| of(&e.1))
            .collect();
        let total = of(&all[0].1);
        let sum = suites
            .iter()
            .fold([0; 4], |t, s| [0, 1, 2, 3].map(|i| t[i] + s[i]));
        assert_eq!(total, sum, "{xml}");
        suites
    }

    #[test]
    fn a_block_run_adds_the_file_systems_suite_and_the_counts_add_up() {
        let trace = fixture::trace();
        let cx = fixture::context(&trace);
        let xml = render(&fixture::run(Verdict::Fail, Some(fixture::ext4())), &cx);
        // The run's suite (stopped early: one `run` error), then ext4's: a
        // failing state and one the checker timed out on.
        assert_eq!(counts(&xml), [[1, 0, 1, 0], [2, 1, 1, 0]]);
        let cases: Vec<_> = elements(&xml)
            .into_iter()
            .filter(|e| e.0 == "testcase")
            .collect();
        assert_eq!(attr(&cases[1].1, "name"), "b1.lost0");
        assert_eq!(attr(&cases[1].1, "classname"), "block ext4");
        assert_eq!(cases[1].2, ["failure"]);
        assert_eq!(attr(&cases[2].1, "name"), "b1");
        assert_eq!(cases[2].2, ["error"]);
        assert!(xml.contains("type=\"rejected\"") && xml.contains("type=\"timed_out\""));
        // The checker's reason, the calls and the repeat line, escaped.
        assert!(
            !xml.contains("<script>") && !xml.contains('\u{1b}'),
            "{xml}"
        );
        assert!(xml.contains("message=\"rejected (exit code 1): &lt;/failure&gt;&lt;script&gt;"));
        assert!(xml.contains("the last calls before it: op 3: rename &lt;/failure&gt;"));
        assert!(xml.contains("posix state: none holds the same files"));
        assert!(xml.contains("<property name=\"repeat\" value=\"the verdict held over 2 runs"));
        assert!(xml.contains("THE POSIX MODEL MISSES 1 FAILING STATE(S) OF EXT4"));
    }

    #[test]
    fn a_passing_file_system_is_one_passing_case_and_one_not_checked_is_skipped() {
        let trace = fixture::trace();
        let cx = fixture::context(&trace);
        let mut ext4 = fixture::ext4();
        ext4.failing.clear();
        ext4.errors.clear();
        ext4.verdict = Verdict::Pass;
        let xml = render(&fixture::run(Verdict::Pass, Some(ext4)), &cx);
        assert_eq!(counts(&xml), [[0, 0, 0, 0], [1, 0, 0, 0]]);
        assert!(xml.contains("<testcase name=\"verdict\" classname=\"block ext4\">"));
        let xml = render(&fixture::run(Verdict::Inconclusive, None), &cx);
        assert_eq!(counts(&xml), [[1, 0, 1, 0], [1, 0, 0, 1]]);
        assert!(xml.contains(
            "<skipped message=\"not checked: the posix run says INCONCLUSIVE (fix the checker first)\"/>"
        ));
    }

    #[test]
    fn xml_safe_keeps_line_breaks_and_escapes_what_xml_cannot_hold() {
        assert_eq!(xml_safe("a\tb\nc"), "a\tb\nc");
        assert!(!xml_safe("a\u{1b}[31mb\u{0}").contains(['\u{1b}', '\u{0}']));
        assert!(!xml_safe("\u{fffe}").contains('\u{fffe}'));
    }
}
