//! A live mount's life: made over a backing directory (its view and
//! orphans in a scratch directory of its own), crashed and remounted as a
//! reboot would, unmounted with everything made durable, and nothing left
//! behind on any of these paths.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use blackout_sys::fuse::{lock, tree_options, Served};
use fuser::MountOption;

use crate::faults::{CrashReport, CrashSpec, PendingReport, SyncFailure, Trigger};
use crate::fs::LiveFs;
use crate::state::Live;

/// Who runs on the mount and is killed before a crash, so nothing it does
/// reaches the state after it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Victims {
    /// Nobody (the program is stopped by other means).
    #[default]
    Nobody,
    /// A process group, and every process descending from it (in any
    /// group).
    Group(i32),
    /// A cgroup (v2), by its directory.
    Cgroup(PathBuf),
}

/// How long the processes killed before a crash may take to die.
const KILL_WAIT: Duration = Duration::from_secs(10);

/// When process `pid` started (clock ticks since boot, `/proc/PID/stat`'s
/// 22nd field): with its pid, it names one process (pids are reused).
fn started(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

/// The processes of group `pgid` that have not exited (zombies are dead),
/// with every process descending from one of them or from a process in
/// `known` whatever group it is in (a server's children may each make a
/// group of their own: PostgreSQL's call setsid), all added to `known`
/// with when each started (so a child whose parent died first is still
/// found, and a pid used again is not taken for the process it was).
fn group_tree(pgid: i32, known: &mut HashMap<u32, u64>) -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let alive: Vec<(u32, u32, bool, u64)> = rd
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let s = blackout_sys::proc::stat_of(pid)?;
            let in_group = i64::from(s.pgrp) == i64::from(pgid);
            (!matches!(s.state, 'Z' | 'X')).then_some((pid, s.ppid, in_group, started(pid)?))
        })
        .collect();
    let start_of: HashMap<u32, u64> = alive.iter().map(|&(p, _, _, t)| (p, t)).collect();
    let is_known = |known: &HashMap<u32, u64>, pid: u32| {
        known
            .get(&pid)
            .is_some_and(|t| start_of.get(&pid) == Some(t))
    };
    loop {
        let before = known.len();
        for &(pid, ppid, in_group, t) in &alive {
            if in_group || is_known(known, ppid) {
                known.insert(pid, t);
            }
        }
        if known.len() == before {
            break;
        }
    }
    alive
        .iter()
        .map(|&(pid, ..)| pid)
        .filter(|&pid| is_known(known, pid))
        .collect()
}

impl Victims {
    /// Kills them all (SIGKILL) and waits until they are gone; returns how
    /// many there were.
    ///
    /// # Errors
    ///
    /// A group or cgroup that outlives the wait, or a cgroup that cannot be
    /// killed.
    pub fn kill(&self) -> io::Result<usize> {
        let deadline = Instant::now() + KILL_WAIT;
        match self {
            Victims::Nobody => Ok(0),
            Victims::Group(pgid) => {
                let mut known = HashMap::new();
                let first = group_tree(*pgid, &mut known).len();
                loop {
                    let alive = group_tree(*pgid, &mut known);
                    if alive.is_empty() {
                        return Ok(first);
                    }
                    for pid in alive {
                        // SAFETY: kill(2) of one process.
                        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                    }
                    // SAFETY: kill(2) with a negative pid signals a group.
                    unsafe { libc::kill(-pgid, libc::SIGKILL) };
                    if Instant::now() > deadline {
                        return Err(io::Error::other(format!(
                            "process group {pgid} still runs {} s after SIGKILL",
                            KILL_WAIT.as_secs()
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            Victims::Cgroup(dir) => {
                let procs = |d: &Path| {
                    std::fs::read_to_string(d.join("cgroup.procs"))
                        .map(|s| s.lines().filter(|l| !l.trim().is_empty()).count())
                };
                let first = procs(dir).map_err(|e| {
                    io::Error::new(e.kind(), format!("{}: not a cgroup: {e}", dir.display()))
                })?;
                std::fs::write(dir.join("cgroup.kill"), "1").map_err(|e| {
                    io::Error::new(e.kind(), format!("{}/cgroup.kill: {e}", dir.display()))
                })?;
                while procs(dir)? > 0 {
                    if Instant::now() > deadline {
                        return Err(io::Error::other(format!(
                            "cgroup {} still has processes {} s after cgroup.kill",
                            dir.display(),
                            KILL_WAIT.as_secs()
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Ok(first)
            }
        }
    }
}

/// A live file system mounted over a backing directory.
#[derive(Debug)]
pub struct LiveMount {
    live: Arc<Mutex<Live>>,
    served: Option<Served>,
    mountpoint: PathBuf,
    scratch: PathBuf,
}

impl LiveMount {
    /// Mounts the live file system of `backing` at `mountpoint` (an
    /// existing directory), its view and orphans in a new scratch directory
    /// under `scratch_parent`.
    ///
    /// # Errors
    ///
    /// A backing directory the live file system cannot hold (named by
    /// path), the scratch, or the mount (no `/dev/fuse`, no right to
    /// mount).
    pub fn mount(
        mountpoint: &Path,
        backing: &Path,
        scratch_parent: &Path,
    ) -> io::Result<LiveMount> {
        let scratch = make_scratch(scratch_parent)?;
        let made = (|| {
            let orphans = scratch.join("orphans");
            std::fs::create_dir(&orphans)?;
            let live = Live::new(backing, &scratch.join("view"), &orphans)?;
            Ok::<_, io::Error>(Arc::new(Mutex::new(live)))
        })();
        let live = match made {
            Ok(l) => l,
            Err(e) => {
                let _ = blackout_sys::scratch::remove_tree(&scratch);
                return Err(e);
            }
        };
        let mut m = LiveMount {
            live,
            served: None,
            mountpoint: mountpoint.to_path_buf(),
            scratch,
        };
        m.serve()?;
        Ok(m)
    }

    fn serve(&mut self) -> io::Result<()> {
        let mut options = tree_options("blackout-live");
        if rustix::process::geteuid().is_root() {
            // A server under test may run as its own user.
            options.push(MountOption::AllowOther);
        }
        let mut served = Served::start(
            LiveFs::new(self.live.clone()),
            &self.mountpoint,
            &options,
            false,
        )?;
        // Only killed processes can hold the mount when it is taken down
        // for a crash: a busy mount is detached at once.
        served.set_patience(Duration::from_millis(500));
        self.served = Some(served);
        Ok(())
    }

    /// Where it is mounted.
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// Has the kernel write back the pages it holds for the mount (what
    /// programs wrote and it has not passed on yet), so they are pending
    /// writes here; never while the state is locked (this process serves
    /// the writeback).
    fn drain(&self) {
        if let Ok(d) = std::fs::File::open(&self.mountpoint) {
            let _ = rustix::fs::syncfs(&d);
        }
    }

    /// What is pending now (the kernel's cached writes included).
    pub fn pending(&self) -> PendingReport {
        self.drain();
        lock(&self.live).pending_report()
    }

    /// Makes everything pending durable (what `sync(2)` does; a FUSE file
    /// system is not told of it). Returns how many ops.
    ///
    /// # Errors
    ///
    /// Changing the backing directory.
    pub fn sync(&self) -> io::Result<usize> {
        self.drain();
        let mut live = lock(&self.live);
        live.sync_all().map_err(|e| {
            io::Error::other(
                live.refused_text()
                    .unwrap_or_else(|| io::Error::from_raw_os_error(e).to_string()),
            )
        })
    }

    /// Arms a crash at the next op `trigger` matches; the receiver hears
    /// when it went off (the power is off from then: every request fails
    /// with `EIO`), and [`LiveMount::crash`] finishes it.
    pub fn arm(&self, trigger: Trigger) -> mpsc::Receiver<()> {
        let (tx, rx) = mpsc::channel();
        lock(&self.live).arm(trigger, tx);
        rx
    }

    /// Takes an armed trigger away.
    pub fn disarm(&self) {
        lock(&self.live).disarm();
    }

    /// Arms a sync failure at the next sync `trigger` matches (from
    /// [`Trigger::parse_sync`]): it returns `EIO` and what it covered is
    /// never made durable; the receiver hears what it dropped. A crash
    /// takes an armed failure away (the receiver then hears nothing).
    pub fn arm_sync_failure(&self, trigger: Trigger) -> mpsc::Receiver<SyncFailure> {
        let (tx, rx) = mpsc::channel();
        lock(&self.live).arm_sync_failure(trigger, tx);
        rx
    }

    /// Takes an armed sync failure away.
    pub fn disarm_sync_failure(&self) {
        lock(&self.live).disarm_sync_failure();
    }

    /// The power fails now: every request fails with `EIO` until
    /// [`LiveMount::crash`] brings the mount back. Several mounts powered
    /// off one after another lose power together (a correlated crash),
    /// each crashed after.
    pub fn power_off(&self) {
        lock(&self.live).freeze();
    }

    /// The crash: the power goes off (every request fails with `EIO`), the
    /// victims are killed, what `spec` keeps of the pending ops reaches the
    /// backing directory, and the mount comes back showing it, as after a
    /// reboot.
    ///
    /// # Errors
    ///
    /// Killing the victims, changing the backing directory, or mounting
    /// again.
    pub fn crash(&mut self, spec: &CrashSpec, victims: &Victims) -> io::Result<CrashReport> {
        lock(&self.live).freeze();
        let killed = victims.kill()?;
        // What the kernel still held of the programs' writes is lost too:
        // drained into the pending writes, the crash lists it.
        self.drain();
        let mut report = lock(&self.live).crash(spec)?;
        report.killed = killed;
        if let Some(mut s) = self.served.take() {
            let _ = s.stop();
        }
        lock(&self.live).reset()?;
        self.serve()?;
        Ok(report)
    }

    /// Unmounts: everything pending is made durable first (a clean
    /// shutdown syncs) when `flush`, and the scratch is removed.
    ///
    /// # Errors
    ///
    /// The sync, the unmount, or removing the scratch (each tried all the
    /// same).
    pub fn unmount(mut self, flush: bool) -> io::Result<()> {
        self.take_down(flush)
    }

    fn take_down(&mut self, flush: bool) -> io::Result<()> {
        let synced = if flush {
            self.sync().map(|_| ())
        } else {
            Ok(())
        };
        let stopped = match self.served.take() {
            Some(mut s) => s.stop(),
            None => Ok(()),
        };
        let removed = if self.scratch.as_os_str().is_empty() {
            Ok(())
        } else {
            let r = blackout_sys::scratch::remove_tree(&self.scratch);
            self.scratch = PathBuf::new();
            r
        };
        synced.and(stopped).and(removed)
    }
}

impl Drop for LiveMount {
    fn drop(&mut self) {
        let _ = self.take_down(false);
    }
}

/// A new scratch directory `blackout-live-*` under `parent`, marked as
/// this process's.
fn make_scratch(parent: &Path) -> io::Result<PathBuf> {
    let dir = tempfile::Builder::new()
        .prefix("blackout-live-")
        .tempdir_in(parent)
        .map_err(|e| {
            io::Error::new(e.kind(), format!("scratch under {}: {e}", parent.display()))
        })?;
    blackout_sys::scratch::mark_owned(dir.path())?;
    Ok(dir.keep())
}
