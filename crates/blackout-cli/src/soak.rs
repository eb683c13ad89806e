//! `blackout soak`: flags → `blackout::live::soak::soak` → the verdict (exit 0
//! every promise held, 1 one broke).

use anyhow::{bail, Result};

use blackout::export::text::shell_quote;
use blackout::live::soak::{dropped_lines, failure_lines, soak, SoakConfig, SoakError, SoakReport};

use crate::args::SoakArgs;
use crate::report::print_out;
use crate::{stopped_exit_code, INTERRUPTED};

/// The refusals a soak of one service and of a cluster share.
fn check_common(a: &SoakArgs) -> Result<()> {
    if a.run_max < a.run_min {
        bail!(
            "--run-max {:?} is shorter than --run-min {:?}",
            a.run_max,
            a.run_min
        );
    }
    if let Some(b) = &a.backing {
        if !b.is_dir() {
            bail!("--backing {}: not a directory", b.display());
        }
    }
    Ok(())
}

fn soak_config(a: SoakArgs) -> Result<SoakConfig> {
    check_common(&a)?;
    if a.fail_syncs {
        // Refused here, in one line, before anything is mounted.
        blackout::live::faults::Trigger::parse_sync(&a.fail_at)
            .map_err(|e| anyhow::anyhow!("{}", e.replacen("--at ", "--fail-at ", 1)))?;
    }
    let service = if a.service.len() == 1 {
        a.service[0].clone()
    } else {
        a.service
            .iter()
            .map(|s| shell_quote(s))
            .collect::<Vec<_>>()
            .join(" ")
    };
    Ok(SoakConfig {
        service,
        fail_syncs: a.fail_syncs.then(|| a.fail_at.clone()),
        soaking: a.soaking(),
    })
}

pub(crate) fn cmd_soak(a: SoakArgs) -> Result<u8> {
    if a.faults.is_some() && a.node.is_empty() {
        bail!("--faults strikes the nodes of a cluster: give them with --node NAME=SERVICE");
    }
    if !a.node.is_empty() {
        check_common(&a)?;
        return crate::cluster::cmd_cluster(crate::cluster::cluster_config(a)?);
    }
    let cfg = soak_config(a)?;
    let report = match soak(&cfg, &INTERRUPTED, &mut |line| eprintln!("{line}")) {
        Ok(r) => r,
        Err(SoakError::Interrupted) => {
            eprintln!("blackout: interrupted");
            return Ok(stopped_exit_code());
        }
        Err(e) => bail!("{e}"),
    };
    let mut how = format!(
        "seed {}, keep {}{}",
        cfg.soaking.seed,
        cfg.soaking.spec.keep.name(),
        if cfg.soaking.spec.tear {
            ", torn writes"
        } else {
            ""
        }
    );
    if let Some(at) = &cfg.fail_syncs {
        how.push_str(&format!(", syncs failing at `{at}`"));
    }
    let Some(v) = &report.violation else {
        let mut text = format!(
            "PASS: {} crashes ({how}): all {} promises held; {} pending ops dropped in all\n",
            report.crashes, report.promises, report.dropped
        );
        text.push_str(&failures_text(&cfg, &report));
        print_out(&text)?;
        return Ok(0);
    };
    let mut text = format!(
        "FAIL: after crash {} of {} ({how}), a promise broke: {}\n",
        v.crash, cfg.soaking.crashes, v.reason
    );
    text.push_str(&format!(
        "the crash dropped {} ops ({} torn):\n",
        v.report.dropped.len(),
        v.report.torn.len()
    ));
    for l in dropped_lines(v) {
        text.push_str(&format!("  {l}\n"));
    }
    text.push_str(&failures_text(&cfg, &report));
    text.push_str(
        "the same --seed repeats the crash moments and what each crash keeps; what is pending at a moment depends on timing\n",
    );
    print_out(&text)?;
    Ok(1)
}

/// With --fail-syncs: how many crashes had a sync failure armed first and
/// how many went off, then each (what failed, what it dropped, and whether
/// the promises held after the crash).
fn failures_text(cfg: &SoakConfig, report: &SoakReport) -> String {
    if cfg.fail_syncs.is_none() {
        return String::new();
    }
    let went_off: Vec<_> = report
        .sync_failures
        .iter()
        .filter_map(|a| a.failure.as_ref())
        .collect();
    let dropped: usize = went_off.iter().map(|f| f.dropped.len()).sum();
    let mut text = format!(
        "sync failures: armed before {} of {} crashes, {} went off ({dropped} ops dropped, never durable){}\n",
        report.sync_failures.len(),
        report.crashes,
        went_off.len(),
        if report.sync_failures.is_empty() { "" } else { ":" }
    );
    for l in failure_lines(report) {
        text.push_str(&format!("  {l}\n"));
    }
    text
}
