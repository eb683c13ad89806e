//! `blackout soak --node`: flags → `blackout::live::cluster::soak_cluster` →
//! the verdict (exit 0 every promise held, 1 one broke or the cluster did
//! not recover).

use anyhow::{bail, Result};

use blackout::live::cluster::{
    node_dropped_lines, soak_cluster, ClusterConfig, ClusterReport, Fault, Node,
};
use blackout::live::soak::SoakError;

use crate::args::SoakArgs;
use crate::report::print_out;
use crate::{stopped_exit_code, INTERRUPTED};

/// The cluster's configuration, refused in one line when a flag is wrong.
pub(crate) fn cluster_config(a: SoakArgs) -> Result<ClusterConfig> {
    let mut nodes: Vec<Node> = Vec::new();
    for spec in &a.node {
        let node = Node::parse(spec).map_err(|e| anyhow::anyhow!("{e}"))?;
        if let Some(same) = nodes
            .iter()
            .find(|n| n.name.eq_ignore_ascii_case(&node.name))
        {
            bail!(
                "--node `{spec}`: a node is named {} already (names are told apart upper-cased)",
                same.name
            );
        }
        nodes.push(node);
    }
    let faults = Fault::parse_list(a.faults.as_deref().unwrap_or("all,one"))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(ClusterConfig {
        nodes,
        faults,
        soaking: a.soaking(),
    })
}

/// Runs the cluster soak and prints the verdict.
pub(crate) fn cmd_cluster(cfg: ClusterConfig) -> Result<u8> {
    let report = match soak_cluster(&cfg, &INTERRUPTED, &mut |line| eprintln!("{line}")) {
        Ok(r) => r,
        Err(SoakError::Interrupted) => {
            eprintln!("blackout: interrupted");
            return Ok(stopped_exit_code());
        }
        Err(e) => bail!("{e}"),
    };
    let faults: Vec<&str> = cfg.faults.iter().map(|f| f.name()).collect();
    let how = format!(
        "{} nodes, seed {}, keep {}{}, faults {}",
        cfg.nodes.len(),
        cfg.soaking.seed,
        cfg.soaking.spec.keep.name(),
        if cfg.soaking.spec.tear {
            ", torn writes"
        } else {
            ""
        },
        faults.join(",")
    );
    let Some(v) = &report.violation else {
        print_out(&format!(
            "PASS: {} crashes ({how}): all {} promises held; {} pending ops dropped in all; {}\n",
            report.crashes,
            report.promises,
            report.dropped,
            counts(&report)
        ))?;
        return Ok(0);
    };
    let mut text = if v.came_back {
        format!(
            "FAIL: after crash {} of {} ({how}), a promise broke: {}\n",
            v.crash, cfg.soaking.crashes, v.reason
        )
    } else {
        format!(
            "FAIL: after crash {} of {} ({how}): {}\n",
            v.crash, cfg.soaking.crashes, v.reason
        )
    };
    text.push_str(&format!(
        "crash {} after {} ms: {}\n",
        v.crash,
        v.struck.after.as_millis(),
        v.struck.words()
    ));
    for c in &v.struck.lost_power {
        text.push_str(&format!(
            "  {}: the crash dropped {} ops ({} torn){}\n",
            c.node,
            c.report.dropped.len(),
            c.report.torn.len(),
            if c.report.dropped.is_empty() && c.report.torn.is_empty() {
                ""
            } else {
                ":"
            }
        ));
        for l in node_dropped_lines(c) {
            text.push_str(&format!("    {l}\n"));
        }
    }
    if !v.log_tail.is_empty() {
        text.push_str("its log ends:\n");
        for l in v.log_tail.lines() {
            text.push_str(&format!("  {l}\n"));
        }
    }
    text.push_str(
        "the same --seed repeats the crash moments, the faults, the nodes they strike and what each crash keeps; what is pending at a moment depends on timing\n",
    );
    print_out(&text)?;
    Ok(1)
}

/// `faults: 9 all, 11 one`.
fn counts(report: &ClusterReport) -> String {
    let parts: Vec<String> = Fault::ALL
        .iter()
        .zip(report.counts)
        .filter(|(_, n)| *n > 0)
        .map(|(f, n)| format!("{n} {}", f.name()))
        .collect();
    format!("faults: {}", parts.join(", "))
}
