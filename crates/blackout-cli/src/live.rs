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

use crate::args::{FsCmd, FsCrashArgs, FsFailSyncArgs, FsMountArgs};
use crate::report::print_out;
use crate::{stopped_exit_code, INTERRUPTED};

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
