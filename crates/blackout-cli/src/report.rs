//! Where a report goes: the files `--junit`, `--markdown` and `--html` name
//! (checked writable before anything runs), then text or JSON on standard
//! output; `--color`.

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
        .tempfile_in(dir_of(path))
        .map(drop)
}

/// The directory a file path names its file in (`.` for a bare name).
pub(crate) fn dir_of(path: &std::path::Path) -> &std::path::Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    }
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
        Ok(report.final_verdict().exit_code())
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
