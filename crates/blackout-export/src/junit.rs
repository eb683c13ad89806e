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
//! The layout is the common Ant/Jenkins one, whose schema allows several
//! failures in one test case. quick-junit's data model holds one outcome per
//! test case, so the document is written with quick-xml (the XML writer
//! quick-junit itself uses), which escapes every text and attribute.
//! Characters XML 1.0 cannot hold at all (most control characters) are
//! shown as escapes first.

use std::fmt::Write as _;

use blackout_analysis::report::{ModelReport, RunReport, Verdict};
use blackout_explore::model::for_people;
use blackout_oplog::ops::escape_controls;
use quick_xml::events::{BytesDecl, BytesText, Event};
use quick_xml::Writer;

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
            out: String::new(),
        });
    }
    cases
}

/// The run's result as JUnit XML.
pub fn render(report: &RunReport, ctx: &ExportContext<'_>) -> String {
    let cases = cases(report, ctx);
    let failed = cases.iter().filter(|c| !c.failures.is_empty()).count();
    let errored = cases
        .iter()
        .filter(|c| c.failures.is_empty() && !c.errors.is_empty())
        .count();
    let counts = Counts {
        tests: cases.len().to_string(),
        failures: failed.to_string(),
        errors: errored.to_string(),
        time: format!("{:.3}", report.explore_seconds + report.check_seconds),
    };
    let suite = xml_safe(&workload_name(&ctx.trace.command));
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    // Writing into memory cannot fail.
    let _ = write_document(&mut w, report, ctx, &suite, &counts, &cases);
    let mut out = String::from_utf8_lossy(&w.into_inner()).into_owned();
    out.push('\n');
    out
}

/// The counts on `<testsuites>` and `<testsuite>`.
struct Counts {
    tests: String,
    failures: String,
    errors: String,
    time: String,
}

fn write_document(
    w: &mut Writer<Vec<u8>>,
    report: &RunReport,
    ctx: &ExportContext<'_>,
    suite: &str,
    counts: &Counts,
    cases: &[Case],
) -> std::io::Result<()> {
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    w.create_element("testsuites")
        .with_attributes([
            ("name", "blackout"),
            ("tests", counts.tests.as_str()),
            ("failures", counts.failures.as_str()),
            ("errors", counts.errors.as_str()),
            ("time", counts.time.as_str()),
        ])
        .write_inner_content(|w| {
            w.create_element("testsuite")
                .with_attributes([
                    ("name", suite),
                    ("tests", counts.tests.as_str()),
                    ("failures", counts.failures.as_str()),
                    ("errors", counts.errors.as_str()),
                    ("skipped", "0"),
                    ("time", counts.time.as_str()),
                ])
                .write_inner_content(|w| {
                    write_properties(w, report, ctx)?;
                    for case in cases {
                        write_case(w, suite, case)?;
                    }
                    Ok(())
                })?;
            Ok(())
        })?;
    Ok(())
}

fn write_properties(
    w: &mut Writer<Vec<u8>>,
    report: &RunReport,
    ctx: &ExportContext<'_>,
) -> std::io::Result<()> {
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
    w.create_element("properties").write_inner_content(|w| {
        for (name, value) in &props {
            w.create_element("property")
                .with_attributes([("name", *name), ("value", xml_safe(value).as_str())])
                .write_empty()?;
        }
        Ok(())
    })?;
    Ok(())
}

fn write_case(w: &mut Writer<Vec<u8>>, suite: &str, case: &Case) -> std::io::Result<()> {
    let element = w
        .create_element("testcase")
        .with_attributes([("name", case.name.as_str()), ("classname", suite)]);
    if case.failures.is_empty() && case.errors.is_empty() && case.out.is_empty() {
        element.write_empty()?;
        return Ok(());
    }
    element.write_inner_content(|w| {
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

    #[test]
    fn xml_safe_keeps_line_breaks_and_escapes_what_xml_cannot_hold() {
        assert_eq!(xml_safe("a\tb\nc"), "a\tb\nc");
        assert!(!xml_safe("a\u{1b}[31mb\u{0}").contains(['\u{1b}', '\u{0}']));
        assert!(!xml_safe("\u{fffe}").contains('\u{fffe}'));
    }
}
