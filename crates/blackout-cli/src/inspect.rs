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
use blackout::explore::state::{write_state, SECTOR_BYTES_DEFAULT};
use blackout::export::text::{explored_text, shell_quote};
use blackout::oplog::promises::Outputs;
use blackout::oplog::protocol as env;
use blackout::oplog::trace::{Trace, TraceMeta};
use blackout::oplog::tree::Tree;
use blackout::record::replay::{replay_with, ReplayOptions};
use blackout::record::snapshot::snapshot;
use blackout::sys::command::substitute;

use clap::Args;

use crate::args::ExploreArgs;
use crate::record::load_trace;

pub(crate) const OPS_EXAMPLES: &str = "\
Examples:
  Print the op log of a trace, with (never synced) marks:
    blackout ops run.trace

  Read a raw strace log instead (what `strace -f -xx -y` wrote), as JSON:
    blackout ops --strace run.log --dir /srv/test-dir --json";

pub(crate) const STATES_EXAMPLES: &str = "\
Examples:
  List every distinct crash state of a trace, per model:
    blackout states run.trace

  Only posix, as JSON, with a larger sample past the exhaustive limit:
    blackout states run.trace --model posix --budget 256 --json";

pub(crate) const STATE_EXAMPLES: &str = "\
Examples:
  Write the state a report names into a directory:
    blackout state run.trace c5.lost3 state-c5.lost3

  Also print the command that runs the checker on it by hand:
    blackout state run.trace c5.lost3 state-c5.lost3 --checker \"sh $PWD/examples/save/check.sh\"";

#[derive(Args)]
pub(crate) struct OpsArgs {
    /// A trace written by `blackout record`.
    #[arg(
        value_name = "TRACE",
        required_unless_present = "strace",
        conflicts_with = "strace"
    )]
    pub(crate) trace: Option<PathBuf>,
    /// Read a raw log of `strace -f -xx -y` instead of a trace.
    #[arg(long, value_name = "LOG", requires = "dir")]
    pub(crate) strace: Option<PathBuf>,
    /// With --strace: the absolute path the directory under test had.
    #[arg(long, value_name = "PATH")]
    pub(crate) dir: Option<PathBuf>,
    /// With --strace: what the directory held before the workload ran.
    #[arg(long, value_name = "DIR", requires = "strace")]
    pub(crate) init: Option<PathBuf>,
    /// With --strace: a file the program rebuilds on restart (see `run`).
    #[arg(long, value_name = "GLOB", requires = "strace")]
    pub(crate) volatile: Vec<String>,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Args)]
pub(crate) struct StatesArgs {
    /// A trace written by `blackout record` or `blackout run -o`.
    #[arg(value_name = "TRACE")]
    pub(crate) trace: PathBuf,
    #[command(flatten)]
    pub(crate) explore: ExploreArgs,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Args)]
pub(crate) struct StateArgs {
    /// The trace.
    #[arg(value_name = "TRACE")]
    pub(crate) trace: PathBuf,
    /// The state's id, as `blackout run` or `blackout states` prints it
    /// (`c9.lost6`).
    #[arg(value_name = "ID")]
    pub(crate) id: String,
    /// Where to write the state (created; must not exist or be empty). Its
    /// promises go to OUTDIR.acks and what was printed to OUTDIR.output.
    #[arg(value_name = "OUTDIR")]
    pub(crate) out: PathBuf,
    /// Only lines of output starting with this are promises.
    #[arg(long, value_name = "PREFIX")]
    pub(crate) ack_prefix: Option<String>,
    /// Sector size at which writes tear.
    #[arg(long, value_name = "BYTES", default_value_t = SECTOR_BYTES_DEFAULT, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) sector: u64,
    /// The checker, to print the command that checks the state by hand.
    #[arg(long, value_name = "CMD")]
    pub(crate) checker: Option<String>,
    /// A checker server, to print the request that checks the state by
    /// hand.
    #[arg(long, value_name = "CMD", conflicts_with = "checker")]
    pub(crate) checker_server: Option<String>,
    /// The content id of the recording the state was found in (from a
    /// `reproduce:` line): a trace with another id is refused.
    #[arg(long, value_name = "ID")]
    pub(crate) trace_id: Option<String>,
}

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
