//! The Markdown summary: a run's result where a CI job summary or a
//! pull-request comment shows it (GitHub-flavoured Markdown).
//!
//! A heading with the verdict and its reason, a table of the models (model,
//! verdict, states checked, causes), then each cause: its sentence, its
//! simplest state, the details the text report gives (the checker's
//! reason, the verified fix) and the `reproduce:` command in a code block;
//! the set of syncs that fixes every cause, if one was searched for; the
//! coverage of each model. As in the text report, the first
//! [`CAUSES_SHOWN`] causes per model are shown unless every cause was asked
//! for. Nothing run-specific but the reproduce line's paths: no timings.
//!
//! A block run (`--backend block`) adds a section for the real file system
//! after the posix report: its verdict and reason, a table of the failing
//! distinct states after recovery (when power was lost and after what, the
//! checker's reason, the last calls, the posix state holding the same
//! files and its cause), the states that could not be judged, the
//! coverage, fsck's summary, the differential check and `--repeat`'s line
//! (or, when the file system was not checked, why).
//!
//! Text from the trace and the checker is escaped ([`md_escape`]): a file
//! named `*bold*`, `<img>` or `$x$` reads as itself. Code blocks are
//! fenced with more backticks than their content holds in a row.

use std::fmt::Write as _;

use blackout_analysis::block::{BlockReport, BlockSide};
use blackout_analysis::failsyncs::FailSyncsReport;
use blackout_analysis::report::{ModelReport, RunReport, Verdict};
use blackout_analysis::syncs::SyncsReport;
use blackout_explore::model::for_people;
use blackout_oplog::ops::escape_controls;

use crate::block::{
    coverage_text as block_coverage_text, fsck_text, misses_text, not_checked_text, state_words,
};
use crate::syncs::{
    failed_sync_words, sync_words, syncs_heading, syncs_summary, FAILED_SYNCS_HEADING,
};
use crate::text::{
    all_applied_text, cause_details, coverage_text, crash_text, fix_set_text, precheck_text,
    reproduce_command, workload_name, Detail, CAUSES_SHOWN,
};
use crate::{ExportContext, Exporter};

/// The Markdown summary ([`render`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct MarkdownExporter;

impl Exporter for MarkdownExporter {
    fn export(&self, report: &RunReport, cx: &ExportContext<'_>) -> Vec<u8> {
        render(report, cx).into_bytes()
    }
}

/// Text that reads as itself in Markdown: control characters escaped, and
/// a backslash before every character that Markdown (or GitHub's
/// extensions: tables, strikethrough, math) could take for syntax inside a
/// line, and before one that could start a block at the start of the text.
/// (`(` needs none: a link needs the `]` before it, which is escaped.)
///
/// ```
/// use blackout_export::markdown::md_escape;
/// assert_eq!(md_escape("a*b* <i>|$x$ -> y"), r"a\*b\* \<i>\|\$x\$ -> y");
/// ```
pub fn md_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, c) in escape_controls(s).chars().enumerate() {
        if "\\`*_[]<|~&$".contains(c) || (i == 0 && "#-+=>".contains(c)) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A fenced code block holding `code`, its fence longer than any run of
/// backticks in it.
pub fn code_block(code: &str, lang: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in code.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    format!("{fence}{lang}\n{code}\n{fence}\n")
}

fn verdict_cell(v: Verdict) -> String {
    match v {
        Verdict::Pass => "PASS".into(),
        other => format!("**{}**", other.name()),
    }
}

fn model_table(out: &mut String, report: &RunReport) {
    if report.models.is_empty() {
        return;
    }
    out.push_str("| model | verdict | states checked | causes |\n");
    out.push_str("|---|---|---:|---:|\n");
    for m in &report.models {
        let _ = writeln!(
            out,
            "| {} | {} | {} of {} distinct{} | {} |",
            m.model.name(),
            verdict_cell(m.verdict),
            for_people(m.states_checked as u128),
            for_people(m.distinct as u128),
            if m.exact { ", exact" } else { ", a sample" },
            m.causes.len()
        );
    }
    out.push('\n');
}

fn preamble(out: &mut String, report: &RunReport, ctx: &ExportContext<'_>) {
    let promises = report.promises.len();
    let _ = writeln!(
        out,
        "- workload `{}`: {} ops, {} promise{}",
        md_code_span_text(&workload_name(&ctx.trace.command)),
        ctx.trace.ops.len(),
        promises,
        if promises == 1 { "" } else { "s" }
    );
    if let Some(pre) = &report.precheck {
        let _ = writeln!(out, "- pre-check: {}", md_escape(&precheck_text(pre)));
    }
    if let Some(all) = &report.all_applied {
        let _ = writeln!(out, "- nothing lost {}", md_escape(&all_applied_text(all)));
    }
    out.push('\n');
}

/// Text for inside a code span: control characters escaped, backticks
/// (which would end the span) replaced by a look-alike quote.
fn md_code_span_text(s: &str) -> String {
    escape_controls(s).replace('`', "'")
}

fn render_causes(out: &mut String, m: &ModelReport, ctx: &ExportContext<'_>) {
    let shown = if ctx.all_causes {
        m.causes.len()
    } else {
        m.causes.len().min(CAUSES_SHOWN)
    };
    for (n, g) in m.causes.iter().take(shown).enumerate() {
        let _ = writeln!(
            out,
            "### {}: cause {} of {}\n",
            m.model.name(),
            n + 1,
            m.causes.len()
        );
        for (detail, text) in cause_details(ctx.trace, m, g, ctx) {
            match detail {
                Detail::Sentence => {
                    let _ = writeln!(out, "{}\n", md_escape(&text));
                    let _ = writeln!(
                        out,
                        "- **simplest state**: `{}` ({}), of {} failing state{} with this cause",
                        md_code_span_text(&g.simplest.id),
                        md_escape(&crash_text(&g.simplest)),
                        g.states,
                        if g.states == 1 { "" } else { "s" }
                    );
                }
                Detail::Reproduce => {}
                other => {
                    let _ = writeln!(out, "- **{}**: {}", other.label(), md_escape(&text));
                }
            }
        }
        let first = if ctx.trace_path.is_none() {
            " (record with `-o run.trace` first)"
        } else {
            ""
        };
        let command = reproduce_command(ctx, &g.simplest.id);
        let _ = writeln!(out, "\nReproduce{first}:\n\n{}", code_block(&command, "sh"));
    }
    if m.causes.len() > shown {
        let _ = writeln!(
            out,
            "And {} more causes under {}, not shown (`--all-causes` or `--json` shows them).\n",
            m.causes.len() - shown,
            m.model.name()
        );
    }
    if let Some(set) = &m.fix_set {
        let _ = writeln!(
            out,
            "**{}**: {}\n",
            m.model.name(),
            md_escape(&fix_set_text(set, m.model))
        );
    }
}

fn render_errors(out: &mut String, m: &ModelReport) {
    if m.errors.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "{} state{} could not be checked under {}:\n",
        m.errors.len(),
        if m.errors.len() == 1 { "" } else { "s" },
        m.model.name()
    );
    for c in m.errors.iter().take(5) {
        let _ = writeln!(
            out,
            "- `{}`: the checker {}",
            c.id,
            md_escape(&c.outcome.describe())
        );
    }
    if m.errors.len() > 5 {
        let _ = writeln!(out, "- and {} more", m.errors.len() - 5);
    }
    out.push('\n');
}

/// The run's result as a Markdown summary.
pub fn render(report: &RunReport, ctx: &ExportContext<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## blackout: {}\n\n{}\n",
        report.verdict.name(),
        md_escape(&report.reason)
    );
    preamble(&mut out, report, ctx);
    model_table(&mut out, report);
    for m in &report.models {
        render_causes(&mut out, m, ctx);
        render_errors(&mut out, m);
    }
    if !report.models.is_empty() {
        out.push_str("### Coverage\n\n");
        for m in &report.models {
            let _ = writeln!(
                out,
                "- **{}**: {}",
                m.model.name(),
                md_escape(&coverage_text(m, &report.explore))
            );
        }
    }
    if let Some(syncs) = &report.syncs {
        render_syncs(&mut out, syncs);
    }
    if let Some(failed) = &report.failed_syncs {
        render_failed_syncs(&mut out, failed);
    }
    if let Some(side) = &report.block {
        render_block(&mut out, side, report.verdict);
    }
    out
}

/// The `--fail-syncs` section: a row per call site made to fail.
fn render_failed_syncs(out: &mut String, r: &FailSyncsReport) {
    let _ = writeln!(
        out,
        "### Failed syncs\n\n{}\n",
        md_escape(FAILED_SYNCS_HEADING)
    );
    out.push_str("| call site | the call that failed | what the program did |\n|---|---|---|\n");
    for c in &r.sites {
        let (call, failed, line) = failed_sync_words(c);
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            md_escape(&call),
            md_escape(&failed),
            md_escape(&line)
        );
    }
    out.push('\n');
}

/// The `--syncs` section: a row per call site, then the checker's lines.
fn render_syncs(out: &mut String, r: &SyncsReport) {
    let _ = writeln!(
        out,
        "### Syncs

{}
",
        md_escape(&syncs_heading(r))
    );
    out.push_str("| call site | calls | verdict |\n|---|---|---|\n");
    for c in &r.sites {
        let (call, calls, line) = sync_words(c);
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            md_escape(&call),
            md_escape(&calls),
            md_escape(&line)
        );
    }
    out.push('\n');
    for line in syncs_summary(r) {
        let _ = writeln!(out, "- {}", md_escape(&line));
    }
    out.push('\n');
}

/// A table cell: escaped, and `-` when empty.
fn cell(s: Option<&str>) -> String {
    match s {
        Some(s) if !s.is_empty() => md_escape(s),
        _ => "-".into(),
    }
}

/// The failing states' table: one row per distinct state after recovery.
fn block_failing_table(out: &mut String, r: &BlockReport) {
    if r.failing.is_empty() {
        return;
    }
    out.push_str("| state | power lost | checker | last calls | posix state | posix cause |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    for c in &r.failing {
        let w = state_words(r, c);
        let mut when = format!("{}; {}", w.when, w.promised);
        if let Some(lost) = &w.writes_lost {
            let _ = write!(when, "; {lost}");
        }
        let posix = w
            .posix_state
            .as_ref()
            .map(|(s, lost)| format!("{s} ({lost})"));
        let cause = w.posix_cause.as_ref().map(|(n, s)| format!("{n}: {s}"));
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} |",
            md_code_span_text(&w.id),
            md_escape(&when),
            md_escape(&w.checker),
            cell(w.last_calls.as_deref()),
            posix.map_or_else(|| "none holds the same files".into(), |p| md_escape(&p)),
            cell(cause.as_deref()),
        );
    }
    out.push('\n');
}

/// The real file system's section after the posix report: its verdict
/// and why, the failing states, the states not judged, coverage, fsck,
/// the differential check and `--repeat`'s line.
fn render_block(out: &mut String, side: &BlockSide, posix: Verdict) {
    let Some(r) = &side.report else {
        let _ = writeln!(
            out,
            "\n### {} (real file system)\n\n{}\n",
            md_escape(&side.fs),
            md_escape(&not_checked_text(posix.name()))
        );
        render_repeat(out, side);
        return;
    };
    let _ = writeln!(
        out,
        "\n### {} (real file system): {}\n\n{}\n",
        md_escape(&r.fs),
        verdict_cell(r.verdict),
        md_escape(&r.reason)
    );
    block_failing_table(out, r);
    if !r.errors.is_empty() {
        let _ = writeln!(out, "{} state(s) could not be judged:\n", r.errors.len());
        for c in &r.errors {
            let w = state_words(r, c);
            let _ = writeln!(
                out,
                "- `{}` (power lost {}): the checker {}",
                md_code_span_text(&w.id),
                md_escape(&w.when),
                md_escape(&w.checker)
            );
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "- **coverage**: {}",
        md_escape(&block_coverage_text(r))
    );
    if let Some(said) = fsck_text(r) {
        let _ = writeln!(out, "- **fsck**: {}", md_escape(&said));
    }
    if let Some(line) = misses_text(r) {
        let _ = writeln!(out, "- **differential check**: {}", md_escape(&line));
    }
    render_repeat(out, side);
}

/// `--repeat`'s line, when the run was repeated.
fn render_repeat(out: &mut String, side: &BlockSide) {
    if let Some(line) = side.repeat_line() {
        let _ = writeln!(out, "- **repeat**: {}", md_escape(&line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::block::fixture;

    #[test]
    fn a_block_run_has_the_file_systems_section_with_hostile_text_escaped() {
        let trace = fixture::trace();
        let cx = fixture::context(&trace);
        let md = render(&fixture::run(Verdict::Fail, Some(fixture::ext4())), &cx);
        let section = &md[md.find("### ext4 (real file system): **FAIL**").expect(&md)..];
        assert!(section.contains("1 of 3 distinct states after ext4's recovery failed"));
        let header = "| state | power lost | checker | last calls | posix state | posix cause |";
        assert!(section.contains(header), "{section}");
        let row = section
            .lines()
            .find(|l| l.starts_with("| `b1.lost0` |"))
            .expect(section);
        // Six cells: every `|` in the hostile text is escaped.
        assert_eq!(row.matches(" | ").count(), 5, "{row}");
        assert!(
            row.contains("0.500 s in, just after the mark \"saved\""),
            "{row}"
        );
        assert!(row.contains(r"\</failure>\<script>alert(1)\</script> \*b\* \| \`c\`"));
        assert!(!row.contains('\u{1b}'));
        assert!(row.contains("none holds the same files"));
        assert!(
            section.contains("- `b1` (power lost 0.500 s in"),
            "{section}"
        );
        assert!(section.contains("- **coverage**: 2 crash points"));
        assert!(section.contains("- **differential check**: THE POSIX MODEL MISSES 1"));
        assert!(section.contains("- **repeat**: the verdict held over 2 runs: FAIL each time"));
        let md = render(&fixture::run(Verdict::HarnessBroken, None), &cx);
        assert!(md.contains(
            "### ext4 (real file system)\n\nnot checked: the posix run says HARNESS BROKEN"
        ));
    }

    #[test]
    fn a_fence_is_longer_than_any_backtick_run_inside() {
        assert_eq!(code_block("ls", "sh"), "```sh\nls\n```\n");
        let block = code_block("echo ````", "");
        assert!(block.starts_with("`````\n") && block.ends_with("\n`````\n"));
    }

    #[test]
    fn escaped_text_has_no_markup_left() {
        let e = md_escape("[x](javascript:alert(1)) `code` ~~s~~ <b>\n");
        assert!(!e.contains('\n'));
        for c in ['[', ']', '`', '~', '<'] {
            assert!(
                e.match_indices(c).all(|(i, _)| e[..i].ends_with('\\')),
                "{c} unescaped in {e}"
            );
        }
        assert_eq!(md_escape("# x"), r"\# x");
        assert_eq!(md_escape("> x"), r"\> x");
        assert_eq!(md_escape("a # x"), "a # x");
    }
}
