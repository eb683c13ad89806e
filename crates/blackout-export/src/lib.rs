//! Exporters: a run's [`RunReport`] rendered for a reader.
//!
//! Each output format is one [`Exporter`]: [`text::TextExporter`] for people
//! (the verdict per model, each cause with its simplest state, the verified
//! fix, a `reproduce:` line and the coverage statement) and
//! [`json::JsonExporter`] for machines. An exporter reads only the report
//! and the [`ExportContext`] (the trace, for op names, and how the run was
//! invoked); it never explores, checks or analyses.
//!
//! ```
//! use blackout_export::text::shell_quote;
//!
//! assert_eq!(shell_quote("sh /opt/check.sh"), "'sh /opt/check.sh'");
//! assert_eq!(shell_quote("trace.bo"), "trace.bo");
//! ```
#![deny(missing_docs)]

pub mod json;
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
    /// Extra flags `blackout state` needs to rebuild the same state
    /// (`--ack-prefix`, `--sector`), already quoted.
    pub state_flags: &'a str,
    /// Show every cause, not the first [`text::CAUSES_SHOWN`] per model.
    pub all_causes: bool,
}

/// One output format of a run's report.
pub trait Exporter {
    /// The report in this format.
    fn export(&self, report: &RunReport, cx: &ExportContext<'_>) -> Vec<u8>;
}
