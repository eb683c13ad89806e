//! `run --baseline FILE`: the file checked before the run starts, and the
//! ratchet after its report, for a model run and a block run alike.

use anyhow::{Context, Result};

use blackout::analysis::report::{RunReport, Verdict};
use blackout::baseline;

use super::flags::RunArgs;
use crate::report::check_writable;

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
