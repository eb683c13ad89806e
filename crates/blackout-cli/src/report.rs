//! Where a report goes (`run` and `merge`): the files `--junit`,
//! `--markdown` and `--html` name (checked writable before anything runs),
//! then text or JSON on standard output; `--color`.

use std::io::Write;

use anyhow::{Context, Result};

use blackout::analysis::report::RunReport;
use blackout::export::html::HtmlExporter;
use blackout::export::json::JsonExporter;
use blackout::export::junit::JunitExporter;
use blackout::export::markdown::MarkdownExporter;
use blackout::export::text::TextExporter;
use blackout::export::{ExportContext, Exporter};

use crate::args::{ColorWhen, ReportArgs};

/// Fails unless `path` can be written, without changing it: an existing
/// file is opened for writing, else a temporary file is made beside it.
pub(crate) fn check_writable(path: &std::path::Path) -> std::io::Result<()> {
    if path.exists() {
        return std::fs::OpenOptions::new().write(true).open(path).map(drop);
    }
    tempfile::Builder::new()
        .prefix(".blackout-out-")
        .tempfile_in(blackout::sys::durable::dir_of(path))
        .map(drop)
}

/// A report file: the flag, the path, the exporter.
pub(crate) type ReportFile<'a> = (&'static str, &'a std::path::Path, &'static dyn Exporter);

impl ReportArgs {
    /// The report files asked for (`--junit`, `--markdown`, `--html`).
    pub(crate) fn files(&self) -> Vec<ReportFile<'_>> {
        let mut files: Vec<ReportFile<'_>> = Vec::new();
        if let Some(p) = &self.junit {
            files.push(("--junit", p, &JunitExporter));
        }
        if let Some(p) = &self.markdown {
            files.push(("--markdown", p, &MarkdownExporter));
        }
        if let Some(p) = &self.html {
            files.push(("--html", p, &HtmlExporter));
        }
        files
    }

    /// Writes a report: the files asked for, then the text (or JSON) on
    /// standard output. Returns the verdict's exit code.
    pub(crate) fn emit(&self, report: &RunReport, ctx: &ExportContext<'_>) -> Result<u8> {
        for (flag, path, exporter) in self.files() {
            let write = || -> std::io::Result<()> {
                let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
                exporter.write_to(report, ctx, &mut file)?;
                file.flush()
            };
            write().with_context(|| format!("cannot write {flag} {}", path.display()))?;
        }
        let text = TextExporter {
            color: use_color(self.color),
        };
        let exporter: &dyn Exporter = if self.json { &JsonExporter } else { &text };
        let mut out = std::io::stdout().lock();
        exporter.write_to(report, ctx, &mut out)?;
        out.flush()?;
        shown_lines(report);
        Ok(report.final_verdict().exit_code())
    }
}

/// How the states were shown and what it cost, on standard error (with
/// the reason the FUSE view was not used, when it was not).
pub(crate) fn shown_lines(report: &RunReport) {
    if let Some(note) = &report.shown_note {
        eprintln!("note: {note}");
    }
    if let Some(line) = report.shown.as_ref().and_then(|c| c.line()) {
        eprintln!("{line}");
    }
}

/// Whether the text report on standard output is coloured.
pub(crate) fn use_color(when: ColorWhen) -> bool {
    match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => {
            anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never
        }
    }
}

/// Writes a merged run's report: the reproduce lines name the trace the
/// parts checked and the settings they were made with.
pub(crate) fn emit_merged(
    args: &ReportArgs,
    report: &RunReport,
    trace: &blackout::oplog::trace::Trace,
    trace_path: &std::path::Path,
    settings: &blackout::shard::Settings,
) -> Result<u8> {
    let shown = trace_path.display().to_string();
    let trace_id = trace.content_id();
    let prefix = settings.ack_prefix.as_ref().map(|p| p.display());
    let ctx = ExportContext {
        trace,
        trace_path: Some(&shown),
        trace_id: &trace_id,
        checker: &settings.checker,
        checker_flag: settings.checker_kind.flag().unwrap_or_default(),
        state_flags: &crate::args::state_flags_of(prefix.as_deref(), settings.sector),
        all_causes: args.all_causes,
        ack_prefix: settings.ack_prefix.as_ref().map(|p| p.0.as_slice()),
    };
    args.emit(report, &ctx)
}

/// Writes `text` to standard output: a reader that stops early (`| head`)
/// ends the command quietly (a broken pipe is an error `main` exits on
/// without a word), never a panic.
pub(crate) fn print_out(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}
