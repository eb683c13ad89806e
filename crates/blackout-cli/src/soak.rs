//! `blackout soak`: flags → `blackout::soak::soak` → the verdict (exit 0
//! every promise held, 1 one broke).

use anyhow::{bail, Result};

use blackout::export::text::shell_quote;
use blackout::live::faults::CrashSpec;
use blackout::live::pending::Keep;
use blackout::soak::{dropped_lines, soak, SoakConfig, SoakError};
use blackout::sys::scratch::default_scratch_parent;

use crate::args::SoakArgs;
use crate::report::print_out;
use crate::{stopped_exit_code, INTERRUPTED};

fn soak_config(a: SoakArgs) -> Result<SoakConfig> {
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
        client: a.client,
        checker: a.checker,
        setup: a.setup,
        ready: a.ready,
        backing: a.backing,
        crashes: a.crashes,
        seed: a.seed,
        spec: CrashSpec {
            keep: Keep::from(a.keep),
            seed: a.seed,
            tear: a.tear,
        },
        run_min: a.run_min,
        run_max: a.run_max,
        ack_prefix: a.ack_prefix,
        timeout: a.timeout,
        scratch_parent: default_scratch_parent(),
    })
}

pub(crate) fn cmd_soak(a: SoakArgs) -> Result<u8> {
    let cfg = soak_config(a)?;
    let report = match soak(&cfg, &INTERRUPTED, &mut |line| eprintln!("{line}")) {
        Ok(r) => r,
        Err(SoakError::Interrupted) => {
            eprintln!("blackout: interrupted");
            return Ok(stopped_exit_code());
        }
        Err(e) => bail!("{e}"),
    };
    let how = format!(
        "seed {}, keep {}{}",
        cfg.seed,
        cfg.spec.keep.name(),
        if cfg.spec.tear { ", torn writes" } else { "" }
    );
    let Some(v) = &report.violation else {
        print_out(&format!(
            "PASS: {} crashes ({how}): all {} promises held; {} pending ops dropped in all\n",
            report.crashes, report.promises, report.dropped
        ))?;
        return Ok(0);
    };
    let mut text = format!(
        "FAIL: after crash {} of {} ({how}), a promise broke: {}\n",
        v.crash, cfg.crashes, v.reason
    );
    text.push_str(&format!(
        "the crash dropped {} ops ({} torn):\n",
        v.report.dropped.len(),
        v.report.torn.len()
    ));
    for l in dropped_lines(v) {
        text.push_str(&format!("  {l}\n"));
    }
    text.push_str(
        "the same --seed repeats the crash moments and what each crash keeps; what is pending at a moment depends on timing\n",
    );
    print_out(&text)?;
    Ok(1)
}
