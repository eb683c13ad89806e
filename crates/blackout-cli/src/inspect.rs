//! Looking inside a trace: `blackout ops`, `blackout states` and
//! `blackout state` (one crash state written out, with how to check it by
//! hand).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};

use blackout::check::server::request_line;
use blackout::check::shell::{acked_env_value, ACKED_ENV_BYTES_MAX};
use blackout::check::StateFiles;
use blackout::explore::dedup::distinct_states;
use blackout::explore::enumerate::{StateDesc, Tearing};
use blackout::explore::model::for_people;
use blackout::explore::state::write_state;
use blackout::export::text::{explored_text, shell_quote};
use blackout::oplog::promises::Outputs;
use blackout::oplog::protocol as env;
use blackout::oplog::trace::{Trace, TraceMeta};
use blackout::oplog::tree::Tree;
use blackout::record::replay::{replay_with, ReplayOptions};
use blackout::record::snapshot::snapshot;
use blackout::sys::command::substitute;

use crate::args::{OpsArgs, StateArgs, StatesArgs};
use crate::record::load_trace;

pub(crate) fn cmd_states(a: StatesArgs) -> Result<u8> {
    let trace = load_trace(&a.trace)?;
    let prefix = a.explore.ack_prefix.as_ref().map(|p| p.as_bytes());
    let outputs = Outputs::new(&trace, prefix);
    let explored = distinct_states(
        &trace,
        &outputs,
        &a.explore.models(),
        &a.explore.config(),
        a.explore.sector,
    )?;
    let mut out = std::io::stdout().lock();
    if a.json {
        let models: Vec<serde_json::Value> = explored
            .models
            .iter()
            .map(|m| {
                serde_json::json!({
                    "model": m.model,
                    "states": m.states,
                    "distinct": m.reach.len(),
                    "ids": m.reach.iter().map(|(_, d)| d.id()).collect::<Vec<_>>(),
                    "coverage": m.coverage,
                })
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &serde_json::json!({ "models": models }))?;
        writeln!(out)?;
    } else {
        for m in &explored.models {
            writeln!(
                out,
                "# {}: {} states, {} distinct by content; {}",
                m.model.name(),
                for_people(m.states as u128),
                for_people(m.reach.len() as u128),
                explored_text(m.model, &m.coverage, &a.explore.config())
            )?;
            for (_, d) in &m.reach {
                writeln!(out, "{}", d.id())?;
            }
        }
    }
    out.flush()?;
    Ok(0)
}

pub(crate) fn cmd_state(a: StateArgs) -> Result<u8> {
    let trace = load_trace(&a.trace)?;
    if let Some(want) = &a.trace_id {
        let have = trace.content_id();
        if &have != want {
            return Err(anyhow!(
                "{} is not the recording that state was found in (its id is {have}, the reproduce line names {want}): it was overwritten, or is another run's",
                a.trace.display()
            ));
        }
    }
    let desc = StateDesc::parse(&a.id).ok_or_else(|| {
        anyhow!(
            "`{}` is not a state id (expected e.g. c9, c9.lost6, c9.lost3+6s, c9.torn4h)",
            a.id
        )
    })?;
    let sizes = trace.sizes_before();
    let tearing = Tearing {
        sizes_before: Some(&sizes),
        sector: a.sector,
    };
    desc.validate(&trace.ops)
        .and_then(|()| desc.possible(&trace.ops, tearing))
        .map_err(|e| anyhow!("state {}: {e}", a.id))?;
    let (acks, output) = write_state(
        &trace,
        &desc,
        a.ack_prefix.as_ref().map(|p| p.as_bytes()),
        a.sector,
        &a.out,
    )
    .with_context(|| format!("cannot write state into {}", a.out.display()))?;
    let written = Written {
        id: desc.id(),
        dir: std::fs::canonicalize(&a.out)?,
        acks: std::fs::canonicalize(acks)?,
        output: std::fs::canonicalize(output)?,
    };
    println!("wrote state {} into {}", written.id, written.dir.display());
    println!(
        "promises in {}, output in {}",
        written.acks.display(),
        written.output.display()
    );
    match &a.checker_server {
        Some(server) => by_hand_server(&written, server)?,
        None => by_hand_command(&written, a.checker.as_deref())?,
    }
    Ok(0)
}

/// A state `blackout state` wrote: its id, its directory, its promises and
/// its output.
struct Written {
    id: String,
    dir: PathBuf,
    acks: PathBuf,
    output: PathBuf,
}

fn quoted(p: &Path) -> String {
    shell_quote(&p.display().to_string())
}

/// How to ask a checker server about the state by hand: its request line
/// on its standard input.
fn by_hand_server(w: &Written, server: &str) -> Result<()> {
    let promises = std::fs::read(&w.acks)?;
    let request = request_line(&StateFiles {
        dir: w.dir.clone(),
        acks_file: w.acks.clone(),
        output_file: w.output.clone(),
        id: &w.id,
        promises: &promises,
    });
    println!(
        "check it by hand (the server answers ok or fail REASON):\n  cd {} && printf '%s\\n' {} | {}=1 sh -c {}",
        quoted(w.dir.parent().unwrap_or(&w.dir)),
        shell_quote(String::from_utf8_lossy(&request).trim_end()),
        env::CHECKER_SERVER,
        shell_quote(server)
    );
    Ok(())
}

/// How to run a checker command on the state by hand, with the variables a
/// run sets.
fn by_hand_command(w: &Written, checker: Option<&str>) -> Result<()> {
    let checker = checker
        .map(|c| substitute(std::ffi::OsStr::new(c), &w.dir))
        .map(|c| shell_quote(&c.to_string_lossy()))
        .unwrap_or_else(|| "'CHECKER'".into());
    // As a run hands them over: in BLACKOUT_ACKED when they fit, else in
    // the file alone.
    let (unset, acked) = if acked_env_value(&std::fs::read(&w.acks)?).is_some() {
        (
            String::new(),
            format!("{}=\"$(cat {})\"", env::ACKED, quoted(&w.acks)),
        )
    } else {
        println!(
            "the promises exceed what {} may hold ({} KiB): the checker must read {}",
            env::ACKED,
            ACKED_ENV_BYTES_MAX / 1024,
            env::ACKS_FILE
        );
        (
            format!("env -u {} ", env::ACKED),
            format!("{}=1", env::ACKED_IN_FILE),
        )
    };
    println!(
        "check it by hand:\n  cd {} && {unset}{}={} {acked} {}={} {}={} sh -c {checker}",
        quoted(&w.dir),
        env::STATE,
        w.id,
        env::ACKS_FILE,
        quoted(&w.acks),
        env::OUTPUT_FILE,
        quoted(&w.output),
    );
    Ok(())
}

pub(crate) fn cmd_ops(a: OpsArgs) -> Result<u8> {
    let trace = match (&a.trace, &a.strace) {
        (Some(path), _) => Trace::load(path).with_context(|| format!("{}", path.display()))?,
        (None, Some(log_path)) => {
            let log = std::fs::read(log_path)
                .with_context(|| format!("cannot read {}", log_path.display()))?;
            let dir = a
                .dir
                .as_ref()
                .ok_or_else(|| anyhow!("--strace needs --dir"))?;
            let tree = match &a.init {
                Some(init) => {
                    snapshot(init).with_context(|| format!("--init {}", init.display()))?
                }
                None => Tree::default(),
            };
            let dir_bytes = std::os::unix::ffi::OsStrExt::as_bytes(dir.as_os_str()).to_vec();
            let opts = ReplayOptions {
                volatile: a.volatile.clone(),
            };
            opts.validate().map_err(|e| anyhow!(e))?;
            let replayed = replay_with(&log, &tree, &dir_bytes, &opts)
                .map_err(|e| anyhow!("{}:{e}", log_path.display()))?;
            Trace::new(
                &tree,
                replayed,
                TraceMeta {
                    dir: dir_bytes,
                    volatile: a.volatile.clone(),
                    ..TraceMeta::default()
                },
            )
        }
        (None, None) => return Err(anyhow!("give a trace, or --strace LOG --dir PATH")),
    };
    let mut out = std::io::stdout().lock();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &trace.op_log_json())?;
        writeln!(out)?;
    } else {
        out.write_all(trace.op_log_text().as_bytes())?;
    }
    out.flush()?;
    Ok(0)
}
