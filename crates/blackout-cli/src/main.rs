//! The `blackout` command: a thin shell over the `blackout` engine crate.
//!
//! `main` → `run` → one function per subcommand. Exit codes: 0 success,
//! 1 a violation was found, 2 could not run (errors print one `error:` line).

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

use anyhow::{anyhow, Context, Result};
use clap::{Args, Parser, Subcommand};

use blackout::ops::escape_controls;
use blackout::record::{record, RecordConfig};
use blackout::replay::replay;
use blackout::trace::{Trace, TraceMeta};
use blackout::tree::Tree;

/// Set by the Ctrl-C handler; checked after each stage.
static INTERRUPTED: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));

/// blackout: crash-consistency testing for storage code.
///
/// Records every file-system operation a program makes, and (in later
/// stages) builds every disk state a power failure could leave.
#[derive(Parser)]
#[command(name = "blackout", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a workload under strace in a fresh directory and write a trace.
    Record(RecordArgs),
    /// Print the op log of a trace, or of a raw strace log.
    Ops(OpsArgs),
}

#[derive(Args)]
struct RecordArgs {
    /// Where to write the trace.
    #[arg(short = 'o', long = "output", value_name = "TRACE")]
    output: PathBuf,
    /// Copy this tree into the directory under test first (durable).
    #[arg(long, value_name = "DIR")]
    init: Option<PathBuf>,
    /// Run this shell command in the directory under test first, unrecorded
    /// (durable). `{dir}` is replaced by its path.
    #[arg(long, value_name = "CMD")]
    setup: Option<String>,
    /// Keep the raw strace log here.
    #[arg(long, value_name = "LOG")]
    keep_log: Option<PathBuf>,
    /// Do not use strace's --seccomp-bpf filtering.
    #[arg(long)]
    no_seccomp: bool,
    /// The workload and its arguments; `{dir}` is replaced by the directory
    /// under test, which is also its working directory.
    #[arg(last = true, required = true, value_name = "WORKLOAD")]
    command: Vec<OsString>,
}

#[derive(Args)]
struct OpsArgs {
    /// A trace written by `blackout record`.
    #[arg(
        value_name = "TRACE",
        required_unless_present = "strace",
        conflicts_with = "strace"
    )]
    trace: Option<PathBuf>,
    /// Read a raw log of `strace -f -xx -y` instead of a trace.
    #[arg(long, value_name = "LOG", requires = "dir")]
    strace: Option<PathBuf>,
    /// With --strace: the absolute path the directory under test had.
    #[arg(long, value_name = "PATH")]
    dir: Option<PathBuf>,
    /// With --strace: what the directory held before the workload ran.
    #[arg(long, value_name = "DIR", requires = "strace")]
    init: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let _ = ctrlc::set_handler(|| INTERRUPTED.store(true, Ordering::SeqCst));
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if INTERRUPTED.load(Ordering::SeqCst) {
                eprintln!("blackout: interrupted");
                return ExitCode::from(130);
            }
            if is_broken_pipe(&e) {
                return ExitCode::from(0);
            }
            eprintln!("error: {}", escape_controls(&format!("{e:#}")));
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn run(cli: Cli) -> Result<u8> {
    match cli.command {
        Cmd::Record(a) => cmd_record(a),
        Cmd::Ops(a) => cmd_ops(a),
    }
}

fn cmd_record(a: RecordArgs) -> Result<u8> {
    let mut cfg = RecordConfig::new(a.command);
    cfg.init = a.init;
    cfg.setup = a.setup;
    cfg.keep_log = a.keep_log;
    cfg.seccomp = !a.no_seccomp;
    cfg.cancel = Some(Arc::clone(&INTERRUPTED));
    // Fail on a bad output path before running anything.
    std::fs::write(&a.output, b"")
        .with_context(|| format!("cannot write {}", a.output.display()))?;
    let result = record(&cfg);
    if INTERRUPTED.load(Ordering::SeqCst) {
        let _ = std::fs::remove_file(&a.output);
        return Err(anyhow!("interrupted"));
    }
    let rec = match result {
        Ok(r) => r,
        Err(e) => {
            let _ = std::fs::remove_file(&a.output);
            return Err(e.into());
        }
    };
    rec.trace
        .save(&a.output)
        .with_context(|| format!("cannot write {}", a.output.display()))?;
    let t = &rec.trace;
    let outputs = t
        .ops
        .iter()
        .filter(|o| matches!(o.kind, blackout::ops::OpKind::Output { .. }))
        .count();
    eprintln!(
        "recorded {} ops ({} outputs) from {} system calls into {}; workload {}",
        t.ops.len(),
        outputs,
        t.stats.calls,
        a.output.display(),
        match (&t.exit.code, &t.exit.signal) {
            (Some(0), _) => "exited 0".to_string(),
            (Some(c), _) => format!("exited {c} (non-zero)"),
            (None, Some(s)) => format!("killed by {s}"),
            _ => "ended".to_string(),
        }
    );
    Ok(0)
}

fn cmd_ops(a: OpsArgs) -> Result<u8> {
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
                    Tree::snapshot(init).with_context(|| format!("--init {}", init.display()))?
                }
                None => Tree::default(),
            };
            let dir_bytes = std::os::unix::ffi::OsStrExt::as_bytes(dir.as_os_str()).to_vec();
            let replayed = replay(&log, &tree, &dir_bytes)
                .map_err(|e| anyhow!("{}:{e}", log_path.display()))?;
            Trace::new(
                &tree,
                replayed,
                TraceMeta {
                    dir: dir_bytes,
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
