//! Exporters: a run's [`RunReport`] rendered for a reader.
//!
//! Each output format is one [`Exporter`]: [`text::TextExporter`] for people
//! (the verdict per model, each cause with its simplest state, the verified
//! fix, a `reproduce:` line and the coverage statement),
//! [`json::JsonExporter`] for machines (its layout is versioned by
//! [`json::JSON_SCHEMA`]), and three for the places engineers already look:
//! [`junit::JunitExporter`] for CI test reports, [`markdown::MarkdownExporter`]
//! for a job summary or a pull-request comment, and [`html::HtmlExporter`],
//! one self-contained page with the op timeline. An exporter reads only the
//! report and the [`ExportContext`] (the trace, for op names, and how the
//! run was invoked); it never explores, checks or analyses.
//!
//! The text report holds the wording: the other exporters take each cause's
//! details from [`text::cause_details`], so a cause reads the same in every
//! format. What comes from the trace or the checker (paths, promises,
//! reasons) is hostile input to every format but plain text and JSON: each
//! exporter escapes it for its own syntax (XML, Markdown, HTML).
//!
//! ```
//! use blackout_export::text::shell_quote;
//!
//! assert_eq!(shell_quote("sh /opt/check.sh"), "'sh /opt/check.sh'");
//! assert_eq!(shell_quote("trace.bo"), "trace.bo");
//! ```
#![deny(missing_docs)]

pub mod block;
pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod scenario;
pub mod syncs;
pub mod text;

use blackout_analysis::report::RunReport;
use blackout_oplog::trace::Trace;

/// What an exporter needs besides the report.
pub struct ExportContext<'a> {
    /// The trace the run explored (ops are named from it).
    pub trace: &'a Trace,
    /// The trace file, if there is one (for the `reproduce:` line).
    pub trace_path: Option<&'a str>,
    /// The trace's content id ([`Trace::content_id`]), which `reproduce:`
    /// lines carry.
    pub trace_id: &'a str,
    /// The checker command.
    pub checker: &'a str,
    /// The flag that passes it to `blackout state` on a `reproduce:` line:
    /// `--checker` or `--checker-server`; empty when the checker is not a
    /// command (a closure in a test), and the line only writes the state
    /// out.
    pub checker_flag: &'a str,
    /// Extra flags `blackout state` needs to rebuild the same state
    /// (`--ack-prefix`, `--sector`), already quoted.
    pub state_flags: &'a str,
    /// Show every cause, not the first [`text::CAUSES_SHOWN`] per model.
    pub all_causes: bool,
    /// Only lines of output starting with this are promises (`--ack-prefix`):
    /// where the timeline puts its promise marks.
    pub ack_prefix: Option<&'a [u8]>,
}

/// One output format of a run's report.
pub trait Exporter {
    /// The report in this format.
    fn export(&self, report: &RunReport, cx: &ExportContext<'_>) -> Vec<u8>;

    /// Writes the report in this format to `out`: the bytes of
    /// [`Exporter::export`]. A format whose report can be large streams it
    /// instead (the JSON of a long run lists tens of thousands of failing
    /// states: hundreds of megabytes never held at once).
    fn write_to(
        &self,
        report: &RunReport,
        cx: &ExportContext<'_>,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        out.write_all(&self.export(report, cx))
    }
}
