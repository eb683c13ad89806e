//! The engine alone on a recorded trace: every crash state a model allows,
//! enumerated and keyed (no checker, nothing written), with the time per
//! state and the ops each lost or tore, by decile of the crash points.
//! Prints a Markdown table.
//!
//! ```sh
//! cargo run --release -p blackout-explore --example deciles -- TRACE [MODEL]
//! ```
//!
//! MODEL is `process`, `ordered` or `posix` (the default). Every crash
//! point is explored (`--exhaustive`), on one thread for the table, then
//! once more as a run explores (`distinct_states`: keyed on as many
//! threads as there are cores, the distinct states kept with their
//! descriptions) for its rate.

use std::time::{Duration, Instant};

use blackout_explore::dedup::distinct_states;
use blackout_explore::enumerate::{enumerate_points, ExploreConfig, Representatives, Tearing};
use blackout_explore::keys::Keyer;
use blackout_explore::model::Model;
use blackout_explore::state::SECTOR_BYTES_DEFAULT;
use blackout_oplog::promises::Outputs;
use blackout_oplog::trace::Trace;
use rustc_hash::FxHashSet;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: deciles TRACE [process|ordered|posix]");
        std::process::exit(2);
    };
    let model_name = args.next().unwrap_or_else(|| "posix".into());
    let Some(model) = Model::ALL.into_iter().find(|m| m.name() == model_name) else {
        eprintln!("deciles: no model named {model_name}");
        std::process::exit(2);
    };
    let trace = Trace::load(path.as_ref()).unwrap_or_else(|e| {
        eprintln!("deciles: {path}: {e}");
        std::process::exit(2);
    });
    let outputs = Outputs::new(&trace, None);
    let cfg = ExploreConfig {
        representatives: Representatives::Exhaustive,
        ..ExploreConfig::default()
    };
    let points: Vec<usize> = (0..=trace.ops.len()).collect();
    let tenth = points.len().div_ceil(10);
    // Per decile of crash points: states keyed, the time they took, and
    // the ops they lost or tore.
    let mut deciles = vec![(0usize, Duration::ZERO, 0usize); 10];
    let mut seen: FxHashSet<([u8; 32], usize)> = FxHashSet::default();
    let mut keys = Keyer::new(&trace, SECTOR_BYTES_DEFAULT);
    let started = Instant::now();
    let mut last = started;
    let sizes = trace.sizes_before();
    let tearing = Tearing {
        sizes_before: Some(&sizes),
        sector: SECTOR_BYTES_DEFAULT,
    };
    enumerate_points(
        &trace.ops,
        model.crash_model(),
        &cfg,
        tearing,
        None,
        &points,
        |desc| {
            let hash = keys.hash(&desc);
            seen.insert((*hash.as_bytes(), outputs.printed_len(desc.crash)));
            let now = Instant::now();
            let d = &mut deciles[(desc.crash / tenth).min(9)];
            d.0 += 1;
            d.1 += now - last;
            d.2 += desc.damage();
            last = now;
        },
    )
    .unwrap_or_else(|e| {
        eprintln!("deciles: {e}");
        std::process::exit(2);
    });
    let total = started.elapsed();
    let states: usize = deciles.iter().map(|d| d.0).sum();
    println!(
        "{} ops, {} crash points, {states} {} states, {} distinct, {:.2} s: {:.0} states/s ({} keys rebuilt from the first op)\n",
        trace.ops.len(),
        points.len(),
        model.name(),
        seen.len(),
        total.as_secs_f64(),
        states as f64 / total.as_secs_f64(),
        keys.rebuilt(),
    );
    print_deciles(&deciles, tenth, points.len());
    let started = Instant::now();
    let explored = distinct_states(&trace, &outputs, &[model], &cfg, SECTOR_BYTES_DEFAULT)
        .unwrap_or_else(|e| {
            eprintln!("deciles: {e}");
            std::process::exit(2);
        });
    let wall = started.elapsed().as_secs_f64();
    let n = explored.models[0].states;
    println!(
        "\nAs a run explores ({} threads): {n} states, {} distinct, {wall:.2} s: {:.0} states/s",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        explored.distinct.len(),
        n as f64 / wall,
    );
}

/// The table of states, ops lost or torn and time per tenth of the crash
/// points (`tenth` of them each, `points` in all).
fn print_deciles(deciles: &[(usize, Duration, usize)], tenth: usize, points: usize) {
    println!("| crash points | states | ops lost or torn per state | time | µs per state |");
    println!("|---|---|---|---|---|");
    for (i, (n, t, lost)) in deciles.iter().enumerate() {
        let lo = i * tenth;
        if lo >= points {
            // A trace of fewer than ten crash points has fewer deciles.
            break;
        }
        let hi = ((i + 1) * tenth).min(points) - 1;
        let per = if *n == 0 {
            0.0
        } else {
            t.as_secs_f64() * 1e6 / *n as f64
        };
        println!(
            "| c{lo}–c{hi} | {n} | {:.1} | {:.2} s | {per:.1} |",
            *lost as f64 / (*n).max(1) as f64,
            t.as_secs_f64()
        );
    }
}
