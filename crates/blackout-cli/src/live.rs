//! `blackout fs`: the live file system's daemon (`mount`) and the
//! commands sent to it over its control socket (`crash`, `fail-sync`,
//! `pending`, `sync`, `unmount`).

use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use blackout::live::control::{self, Forked, Request};
use blackout::live::faults::{CrashReport, CrashSpec, PendingReport, SyncFailure, When};
use blackout::live::mount::LiveMount;
use blackout::live::pending::Keep;
use blackout::sys::scratch::default_scratch_parent;

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::args::KeepArg;
use crate::report::print_out;
use crate::{stopped_exit_code, INTERRUPTED};

pub(crate) const FS_EXAMPLES: &str = "\
Examples:
  Serve DIR at /mnt/live in the background; a crash loses what was never synced:
    blackout fs mount /mnt/live --backing DIR --background
    (cd /mnt/live && my-server &)
    blackout fs pending /mnt/live
    blackout fs crash /mnt/live --pgid $SERVER_PGID
  Crash right after the next rename of a .wal file, keeping a seeded subset:
    blackout fs crash /mnt/live --at 'rename:*.wal' --keep random --seed 7
  Make the next fsync of a file under data/ fail with EIO; what it covered
  is never durable (a retried fsync returns 0, as on Linux):
    blackout fs fail-sync /mnt/live --at 'fsync:data/*'
  Make everything durable, unmount, stop the daemon:
    blackout fs unmount /mnt/live
";

/// `blackout fs`: a live mount and the commands sent to it.
#[derive(Subcommand)]
pub(crate) enum FsCmd {
    /// Mount a live file system over DIR; serve until `fs unmount`, Ctrl-C or SIGTERM.
    Mount(FsMountArgs),
    /// Make everything durable, unmount and stop the daemon.
    Unmount(FsTarget),
    /// Lose what is pending (or keep what the model allows of it), kill the
    /// program first, and show the durable state again.
    Crash(FsCrashArgs),
    /// Make the next fsync or fdatasync matching CALL:GLOB fail with EIO: what
    /// was pending on its file is never made durable (the programs still read it).
    FailSync(FsFailSyncArgs),
    /// What a crash now would lose, per file, and which sync would save it.
    Pending(FsPendingArgs),
    /// Make everything pending durable (what sync(2) does: FUSE is not told of it).
    Sync(FsTarget),
}

/// `blackout fs mount`.
#[derive(Args)]
pub(crate) struct FsMountArgs {
    /// Where to mount (an existing directory).
    #[arg(value_name = "MOUNTPOINT")]
    pub(crate) mountpoint: PathBuf,
    /// The durable state: what a crash leaves, changed only by syncs.
    #[arg(long, value_name = "DIR")]
    pub(crate) backing: PathBuf,
    /// Return once the mount is up; the daemon serves on in the background.
    #[arg(long)]
    pub(crate) background: bool,
    /// Where the view (the page cache) is kept (default: $TMPDIR, else
    /// /dev/shm).
    #[arg(long, value_name = "DIR")]
    pub(crate) scratch: Option<PathBuf>,
}

/// A live mount.
#[derive(Args)]
pub(crate) struct FsTarget {
    /// The mount point of a live file system.
    #[arg(value_name = "MOUNTPOINT")]
    pub(crate) mountpoint: PathBuf,
}

/// `blackout fs pending`.
#[derive(Args)]
pub(crate) struct FsPendingArgs {
    /// The mount point of a live file system.
    #[arg(value_name = "MOUNTPOINT")]
    pub(crate) mountpoint: PathBuf,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `blackout fs crash`.
#[derive(Args)]
pub(crate) struct FsCrashArgs {
    /// The mount point of a live file system.
    #[arg(value_name = "MOUNTPOINT")]
    pub(crate) mountpoint: PathBuf,
    /// What reaches the disk of what is pending.
    #[arg(long, value_enum, default_value = "none")]
    pub(crate) keep: KeepArg,
    /// The seed of the random choices (subset, prefix, tears).
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Writes that reach the disk may be torn at 512-byte sector boundaries
    /// (with --keep none: each pending write reaches it torn, nothing else).
    #[arg(long)]
    pub(crate) tear: bool,
    /// Wait for the next op matching CALL:GLOB (`rename:*.wal`) and crash
    /// right after it.
    #[arg(long, value_name = "CALL:GLOB")]
    pub(crate) at: Option<String>,
    /// With --at: crash just before the op (it is refused) instead of after.
    #[arg(long, requires = "at")]
    pub(crate) before: bool,
    /// Kill this process group first, and every process descending from it.
    #[arg(long, value_name = "PGID", conflicts_with = "cgroup")]
    pub(crate) pgid: Option<i32>,
    /// Kill every process of this cgroup (v2 directory) first.
    #[arg(long, value_name = "DIR")]
    pub(crate) cgroup: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `blackout fs fail-sync`.
#[derive(Args)]
pub(crate) struct FsFailSyncArgs {
    /// The mount point of a live file system.
    #[arg(value_name = "MOUNTPOINT")]
    pub(crate) mountpoint: PathBuf,
    /// Wait for the next sync matching CALL:GLOB (`fsync:*.db`; the call
    /// fsync, fdatasync, fsyncdir or *) and make it fail with EIO.
    #[arg(long, value_name = "CALL:GLOB")]
    pub(crate) at: String,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// How long a command waits for a daemon still mounting.
const DAEMON_PATIENCE: Duration = Duration::from_secs(10);

pub(crate) fn cmd_fs(cmd: FsCmd) -> Result<u8> {
    match cmd {
        FsCmd::Mount(a) => mount(a),
        FsCmd::Unmount(a) => {
            control::request(
                &a.mountpoint,
                &Request::Unmount,
                DAEMON_PATIENCE,
                &INTERRUPTED,
            )?;
            Ok(0)
        }
        FsCmd::Sync(a) => {
            let v = control::request(&a.mountpoint, &Request::Sync, DAEMON_PATIENCE, &INTERRUPTED)?;
            print_out(&format!("synced {} ops\n", v["synced"]))?;
            Ok(0)
        }
        FsCmd::Pending(a) => answer(&a.mountpoint, &Request::Pending, a.json, |v| {
            Ok(serde_json::from_value::<PendingReport>(v)?.text())
        }),
        FsCmd::Crash(a) => crash(a),
        FsCmd::FailSync(a) => fail_sync(a),
    }
}

fn mount(a: FsMountArgs) -> Result<u8> {
    if !a.mountpoint.is_dir() {
        bail!("{}: not a directory to mount on", a.mountpoint.display());
    }
    if !a.backing.is_dir() {
        bail!("--backing {}: not a directory", a.backing.display());
    }
    let ready = if a.background {
        match control::background().context("starting the daemon")? {
            Forked::Parent(Ok(())) => return Ok(0),
            Forked::Parent(Err(m)) => bail!("{m}"),
            Forked::Daemon(r) => Some(r),
        }
    } else {
        None
    };
    let scratch = a.scratch.unwrap_or_else(default_scratch_parent);
    let mounted = control::bind(&a.mountpoint)
        .map_err(anyhow::Error::from)
        .and_then(|listener| {
            let m = LiveMount::mount(&a.mountpoint, &a.backing, &scratch)?;
            Ok((listener, m))
        })
        .with_context(|| {
            format!(
                "mounting the live file system of {} at {}",
                a.backing.display(),
                a.mountpoint.display()
            )
        });
    let (listener, m) = match (mounted, ready) {
        (Ok(m), Some(r)) => {
            r.mounted();
            m
        }
        (Ok(m), None) => {
            eprintln!(
                "blackout: {} serves {} until `blackout fs unmount`, Ctrl-C or SIGTERM; a crash loses what was never synced",
                a.mountpoint.display(),
                a.backing.display()
            );
            m
        }
        (Err(e), Some(r)) => {
            r.failed(&format!("{e:#}"));
            return Err(e);
        }
        (Err(e), None) => return Err(e),
    };
    control::serve(listener, m, &INTERRUPTED).context("serving the live file system")?;
    if INTERRUPTED.load(Ordering::SeqCst) {
        return Ok(stopped_exit_code());
    }
    Ok(0)
}

fn crash(a: FsCrashArgs) -> Result<u8> {
    if let Some(at) = &a.at {
        // Refused here, in one line, before the daemon is asked.
        blackout::live::faults::Trigger::parse(at, When::After).map_err(anyhow::Error::msg)?;
    }
    let keep = Keep::from(a.keep);
    let req = Request::Crash {
        spec: CrashSpec {
            keep,
            seed: a.seed,
            tear: a.tear,
        },
        at: a.at,
        when: if a.before { When::Before } else { When::After },
        pgid: a.pgid,
        cgroup: a.cgroup,
    };
    // An armed crash waits for its op as long as it takes.
    answer(&a.mountpoint, &req, a.json, |v| {
        Ok(serde_json::from_value::<CrashReport>(v)?.text())
    })
}

/// Asks the daemon at `mountpoint` for `req` and prints its answer: as
/// JSON with `--json`, else as `text` makes it of the report.
fn answer(
    mountpoint: &std::path::Path,
    req: &Request,
    json: bool,
    text: impl Fn(serde_json::Value) -> Result<String>,
) -> Result<u8> {
    let v = control::request(mountpoint, req, DAEMON_PATIENCE, &INTERRUPTED)?;
    if json {
        print_out(&format!("{v}\n"))?;
    } else {
        print_out(&text(v)?)?;
    }
    Ok(0)
}

fn fail_sync(a: FsFailSyncArgs) -> Result<u8> {
    // Refused here, in one line, before the daemon is asked.
    blackout::live::faults::Trigger::parse_sync(&a.at).map_err(anyhow::Error::msg)?;
    // It waits for its sync as long as it takes.
    let req = Request::FailSync { at: a.at };
    answer(&a.mountpoint, &req, a.json, |v| {
        Ok(serde_json::from_value::<SyncFailure>(v)?.text())
    })
}
