//! Where a report goes: the files `--junit`, `--markdown` and `--html` name
//! (checked writable before anything runs), then text or JSON on standard
//! output; `--color`; and `--baseline`'s ratchet after it (the file
//! checked before anything runs too), for a model run and a block run
//! alike.

use std::io::Write;

use anyhow::{Context, Result};

use blackout::analysis::report::{RunReport, Verdict};
use blackout::baseline;
use blackout::export::html::HtmlExporter;
use blackout::export::json::JsonExporter;
use blackout::export::junit::JunitExporter;
use blackout::export::markdown::MarkdownExporter;
use blackout::export::text::TextExporter;
use blackout::export::{ExportContext, Exporter};

use crate::args::{ColorWhen, ReportArgs, RunArgs};

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

/// `--baseline`'s mode, from the environment, with the file checked before
/// the run starts: a baseline that cannot be read (or, to record, written)
/// fails the run first.
pub(crate) fn baseline_mode(a: &RunArgs) -> Result<baseline::Mode> {
    let Some(path) = &a.baseline else {
        return Ok(baseline::Mode::default());
    };
    let mode = baseline::Mode::from_env();
    if mode.rewrites() {
        check_writable(path)
            .with_context(|| format!("cannot write --baseline {}", path.display()))?;
    } else {
        baseline::Baseline::load(path)?;
    }
    Ok(mode)
}

/// The exit code after the report was emitted with `code`: `code` without
/// `--baseline`, else the ratchet's ([`ratchet_exit`]) on the case `--case`
/// names (else the trace's file name, else the command line).
pub(crate) fn ratchet_after(
    a: &RunArgs,
    report: &RunReport,
    mode: baseline::Mode,
    code: u8,
) -> Result<u8> {
    let Some(path) = &a.baseline else {
        return Ok(code);
    };
    let case = a
        .case
        .clone()
        .unwrap_or_else(|| baseline::case_of_run(a.trace.as_deref(), &a.command));
    ratchet_exit(path, &case, report, mode, a.report.json)
}

/// The ratchet after a run: compares it with the baseline (or records it)
/// and prints the violations after the report (on stderr with --json).
/// Exit 0 when no rule is broken, 1 when one is, 2 when the run could not
/// check its states (its final verdict ERROR: a block run's file system's
/// when it was checked).
fn ratchet_exit(
    path: &std::path::Path,
    case: &str,
    report: &RunReport,
    mode: baseline::Mode,
    json: bool,
) -> Result<u8> {
    let code = match baseline::check_run(path, case, report, mode)? {
        baseline::Ratchet::Updated { rows } => {
            eprintln!(
                "baseline {}: case `{case}` recorded ({rows} rows in the file)",
                path.display()
            );
            0
        }
        baseline::Ratchet::Compared(c) => {
            eprint!("{}", c.better_text(path));
            let rerun = format!("blackout run ... --baseline {}", path.display());
            let mut said = c.violations_text(path, &rerun);
            if c.passed() {
                said = format!(
                    "baseline {}: case `{case}` is no worse than recorded (only its rows compared)\n",
                    path.display()
                );
            }
            if json {
                eprint!("{said}");
            } else {
                print!("{said}");
            }
            u8::from(!c.passed())
        }
    };
    Ok(if report.final_verdict() == Verdict::Error {
        2
    } else {
        code
    })
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
