//! The JSON report: the layout's version, the verdict, its exit code, what
//! ran, and the whole [`RunReport`] under `result`; for a block run, that
//! document under `posix` with the file system's report beside it. docs/JSON.md documents
//! every field.

use std::io::{self, BufWriter, Write};

use blackout_analysis::block::BlockReport;
use blackout_analysis::report::RunReport;

use crate::{ExportContext, Exporter};

/// The version of the JSON report's layout (its top-level `schema`). It
/// changes when a field is removed, renamed or changes meaning or type; new
/// fields may appear without a change.
pub const JSON_SCHEMA: u32 = 2;

/// The JSON report, pretty-printed, with a final newline.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonExporter;

/// The document, serialized straight from the report (no copy of it as a
/// JSON value tree: a report of a long run is large).
#[derive(serde::Serialize)]
struct Document<'a> {
    schema: u32,
    verdict: &'static str,
    exit_code: u8,
    trace: Option<&'a str>,
    command: &'a [String],
    ops: usize,
    checker: &'a str,
    result: &'a RunReport,
}

/// A block run's document (docs/JSON.md, "The block backend"): the posix
/// model's document and the real file system's report beside it.
#[derive(serde::Serialize)]
struct BlockDocument<'a> {
    posix: Document<'a>,
    block: Option<&'a BlockReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    repeat: Option<Repeat>,
}

/// `--repeat`'s runs: each one's verdict and failing states.
#[derive(serde::Serialize)]
struct Repeat {
    verdicts: Vec<&'static str>,
    failing: Vec<usize>,
    varied: bool,
}

impl JsonExporter {
    fn document<'a>(report: &'a RunReport, cx: &'a ExportContext<'_>) -> Document<'a> {
        Document {
            schema: JSON_SCHEMA,
            verdict: report.verdict.name(),
            exit_code: report.verdict.exit_code(),
            trace: cx.trace_path,
            command: &cx.trace.command,
            ops: cx.trace.ops.len(),
            checker: cx.checker,
            result: report,
        }
    }
}

impl Exporter for JsonExporter {
    fn export(&self, report: &RunReport, cx: &ExportContext<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        // Writing to memory fails only if serializing does, and the
        // report's types always serialize.
        let _ = self.write_to(report, cx, &mut out);
        out
    }

    /// Streams the document: a long run's report is never held whole.
    fn write_to(
        &self,
        report: &RunReport,
        cx: &ExportContext<'_>,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        let mut out = BufWriter::new(out);
        match &report.block {
            None => serde_json::to_writer_pretty(&mut out, &Self::document(report, cx))?,
            Some(side) => serde_json::to_writer_pretty(
                &mut out,
                &BlockDocument {
                    posix: Self::document(report, cx),
                    block: side.report.as_ref(),
                    repeat: (side.repeat.len() > 1).then(|| Repeat {
                        verdicts: side.repeat.iter().map(|r| r.0.name()).collect(),
                        failing: side.repeat.iter().map(|r| r.1).collect(),
                        varied: side.varied(),
                    }),
                },
            )?,
        }
        out.write_all(b"\n")?;
        out.flush()
    }
}
