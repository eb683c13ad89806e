//! The control socket of a live mount: `blackout fs crash`, `fail-sync`,
//! `pending`, `sync` and `unmount` find the daemon by its mount point (an abstract
//! Unix socket named from the mount point's canonical path, so nothing is
//! written anywhere) and send it one JSON request a line; only the
//! daemon's own user (or root) is answered.

use std::io::{self, BufRead, BufReader, Write};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::faults::{CrashSpec, Trigger, When};
use crate::mount::{LiveMount, Victims};

/// A request to a live mount's daemon.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    /// What is pending now.
    Pending,
    /// Make everything durable.
    Sync,
    /// Crash now, or at the next op `at` matches.
    Crash {
        /// What the crash keeps.
        spec: CrashSpec,
        /// `CALL:GLOB`: wait for a matching op.
        at: Option<String>,
        /// Before or after the matching op.
        when: When,
        /// A process group to kill first.
        pgid: Option<i32>,
        /// A cgroup to kill first.
        cgroup: Option<PathBuf>,
    },
    /// Make the next sync `at` matches fail with `EIO`, dropping what it
    /// covers for good; answered once it did.
    FailSync {
        /// `CALL:GLOB` (the call a sync: `fsync`, `fdatasync`, `fsyncdir`,
        /// or `*`).
        at: String,
    },
    /// Sync, unmount and stop.
    Unmount,
}

/// The address of the control socket of the mount at `mountpoint`.
///
/// # Errors
///
/// The mount point cannot be resolved.
pub fn address(mountpoint: &Path) -> io::Result<SocketAddr> {
    let canonical = std::fs::canonicalize(mountpoint)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", mountpoint.display())))?;
    let hash = blake3::hash(canonical.as_os_str().as_encoded_bytes());
    let name = format!("blackout-live/{}", &hash.to_hex()[..32]);
    SocketAddr::from_abstract_name(name.as_bytes())
}

/// Whether the peer on `s` is this process's user or root.
fn trusted(s: &UnixStream) -> bool {
    match rustix::net::sockopt::socket_peercred(s) {
        Ok(c) => c.uid.is_root() || c.uid == rustix::process::geteuid(),
        Err(_) => false,
    }
}

/// The control socket of a mount to be made at `mountpoint`, bound before
/// it is mounted: a second daemon for one mount point stops here, before
/// it mounts anything.
///
/// # Errors
///
/// Another daemon serves this mount point, or the path cannot be resolved.
pub fn bind(mountpoint: &Path) -> io::Result<UnixListener> {
    let listener = UnixListener::bind_addr(&address(mountpoint)?).map_err(|e| {
        let why = if e.kind() == io::ErrorKind::AddrInUse {
            "a live file system is already served there".to_string()
        } else {
            e.to_string()
        };
        io::Error::new(
            e.kind(),
            format!("the control socket of {}: {why}", mountpoint.display()),
        )
    })?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// Serves requests for `mount` on `listener` (from [`bind`]) until `stop`
/// is set (a stop signal) or an `Unmount` request; then unmounts (syncing
/// first) and returns.
///
/// # Errors
///
/// Accepting, or the unmount.
pub fn serve(listener: UnixListener, mount: LiveMount, stop: &AtomicBool) -> io::Result<()> {
    let mount = Arc::new(Mutex::new(Some(mount)));
    let done = Arc::new(AtomicBool::new(false));
    while !stop.load(Ordering::SeqCst) && !done.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((s, _)) => {
                if !trusted(&s) {
                    continue;
                }
                let (m, d) = (mount.clone(), done.clone());
                std::thread::spawn(move || {
                    let _ = handle(s, &m, &d);
                });
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    }
    let taken = mount.lock().unwrap_or_else(|p| p.into_inner()).take();
    match taken {
        Some(m) => m.unmount(true),
        None => Ok(()),
    }
}

type Shared = Arc<Mutex<Option<LiveMount>>>;

fn handle(s: UnixStream, mount: &Shared, done: &AtomicBool) -> io::Result<()> {
    s.set_nonblocking(false)?;
    let mut line = String::new();
    BufReader::new(&s).read_line(&mut line)?;
    let request = serde_json::from_str::<Request>(&line);
    let stops = matches!(request, Ok(Request::Unmount));
    let reply = match request {
        Ok(r) => answer(r, mount, &|| client_gone(&s)),
        Err(e) => Err(format!("a request that does not parse: {e}")),
    };
    let json = match reply {
        Ok(v) => serde_json::json!({ "ok": v }),
        Err(e) => serde_json::json!({ "error": e }),
    };
    let mut w = &s;
    let written = writeln!(w, "{json}").and_then(|()| w.flush());
    if stops {
        // Only now: the daemon exits once the loop sees it.
        done.store(true, Ordering::SeqCst);
    }
    written
}

/// Whether the client hung up (a `fs crash --at` stopped with Ctrl-C).
fn client_gone(s: &UnixStream) -> bool {
    let mut byte = [0u8; 1];
    let flags = rustix::net::RecvFlags::PEEK | rustix::net::RecvFlags::DONTWAIT;
    match rustix::net::recv(s, &mut byte[..], flags) {
        Ok((0, _)) => true,
        Ok(_) => false,
        Err(e) => e != rustix::io::Errno::AGAIN,
    }
}

fn with<T>(mount: &Shared, f: impl FnOnce(&mut LiveMount) -> io::Result<T>) -> Result<T, String> {
    let mut guard = mount.lock().unwrap_or_else(|p| p.into_inner());
    match guard.as_mut() {
        Some(m) => f(m).map_err(|e| e.to_string()),
        None => Err("the mount is being taken down".to_string()),
    }
}

/// How often an armed crash's handler looks whether its client is still
/// there.
const CLIENT_CHECK: Duration = Duration::from_millis(100);

fn answer(
    r: Request,
    mount: &Shared,
    gone: &dyn Fn() -> bool,
) -> Result<serde_json::Value, String> {
    match r {
        Request::Pending => with(mount, |m| Ok(json(&m.pending()))),
        Request::Sync => with(mount, |m| {
            m.sync().map(|n| serde_json::json!({ "synced": n }))
        }),
        Request::Crash {
            spec,
            at,
            when,
            pgid,
            cgroup,
        } => {
            let victims = match (pgid, cgroup) {
                (Some(g), _) => Victims::Group(g),
                (None, Some(c)) => Victims::Cgroup(c),
                (None, None) => Victims::Nobody,
            };
            if let Some(at) = at {
                let trigger = Trigger::parse(&at, when)?;
                let rx = with(mount, |m| Ok(m.arm(trigger)))?;
                wait_armed(&rx, mount, gone, LiveMount::disarm, "crash")?;
            }
            with(mount, |m| m.crash(&spec, &victims).map(|r| json(&r)))
        }
        Request::FailSync { at } => {
            let trigger = Trigger::parse_sync(&at)?;
            let rx = with(mount, |m| Ok(m.arm_sync_failure(trigger)))?;
            let failure = wait_armed(
                &rx,
                mount,
                gone,
                LiveMount::disarm_sync_failure,
                "sync failure",
            )?;
            Ok(json(&failure))
        }
        Request::Unmount => {
            let taken = mount.lock().unwrap_or_else(|p| p.into_inner()).take();
            match taken {
                Some(m) => m
                    .unmount(true)
                    .map(|()| serde_json::json!({}))
                    .map_err(|e| e.to_string()),
                None => Err("the mount is being taken down".to_string()),
            }
        }
    }
}

/// Waits for an armed fault to go off, without holding the mount:
/// requests go on. A client that hung up takes its armed fault with it
/// (`disarm`).
fn wait_armed<T>(
    rx: &std::sync::mpsc::Receiver<T>,
    mount: &Shared,
    gone: &dyn Fn() -> bool,
    disarm: fn(&LiveMount),
    what: &str,
) -> Result<T, String> {
    use std::sync::mpsc::RecvTimeoutError;
    loop {
        match rx.recv_timeout(CLIENT_CHECK) {
            Ok(v) => return Ok(v),
            Err(RecvTimeoutError::Timeout) if !gone() => {}
            Err(RecvTimeoutError::Timeout) => {
                with(mount, |m| {
                    disarm(m);
                    Ok(())
                })?;
                // It may have gone off just before: then it is done.
                if let Ok(v) = rx.try_recv() {
                    return Ok(v);
                }
                return Err(format!("the armed {what} was called off"));
            }
            Err(RecvTimeoutError::Disconnected) => {
                // Another armed in its place, or (a sync failure) a crash.
                return Err(format!("the armed {what} was taken away"));
            }
        }
    }
}

fn json<T: Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

/// Sends `request` to the daemon of the mount at `mountpoint` and returns
/// its answer; waits up to `patience` for a daemon still starting, and
/// stops waiting (`Interrupted`) when `cancel` is set.
///
/// # Errors
///
/// No daemon serves that mount point, or it answered with an error (its
/// message).
pub fn request(
    mountpoint: &Path,
    request: &Request,
    patience: Duration,
    cancel: &AtomicBool,
) -> io::Result<serde_json::Value> {
    let addr = address(mountpoint)?;
    let deadline = Instant::now() + patience;
    let interrupted = || io::Error::new(io::ErrorKind::Interrupted, "interrupted");
    let s = loop {
        if cancel.load(Ordering::SeqCst) {
            return Err(interrupted());
        }
        match UnixStream::connect_addr(&addr) {
            Ok(s) => break s,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!(
                        "no live file system is mounted at {} (blackout fs mount): {e}",
                        mountpoint.display()
                    ),
                ))
            }
        }
    };
    let mut w = &s;
    writeln!(
        w,
        "{}",
        serde_json::to_string(request).map_err(io::Error::other)?
    )?;
    // An armed crash may wait long: the wait ends with a stop signal (the
    // daemon then calls the crash off).
    s.set_read_timeout(Some(CLIENT_CHECK))?;
    let mut reader = BufReader::new(&s);
    let mut line = String::new();
    loop {
        match reader.read_line(&mut line) {
            Ok(_) => break,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                if cancel.load(Ordering::SeqCst) {
                    return Err(interrupted());
                }
            }
            Err(e) => return Err(e),
        }
    }
    let v: serde_json::Value = serde_json::from_str(&line)
        .map_err(|e| io::Error::other(format!("the daemon's answer does not parse: {e}")))?;
    if let Some(e) = v.get("error") {
        return Err(io::Error::other(e.as_str().unwrap_or("failed").to_string()));
    }
    Ok(v.get("ok").cloned().unwrap_or(serde_json::Value::Null))
}

/// Which side of [`background`] this is.
#[derive(Debug)]
pub enum Forked {
    /// The caller: the daemon mounted (`Ok`) or failed (its message).
    Parent(Result<(), String>),
    /// The daemon, in a session of its own: it says how the mount went
    /// through [`Ready`].
    Daemon(Ready),
}

/// The daemon's word to the caller that waits for it.
#[derive(Debug)]
pub struct Ready(std::os::fd::OwnedFd);

impl Ready {
    /// The mount is up: the caller returns, and the daemon's standard
    /// streams go to `/dev/null` (nothing holds the caller's pipes).
    pub fn mounted(self) {
        let _ = rustix::io::write(&self.0, b"ok\n");
        if let Ok(null) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
        {
            for fd in 0..3 {
                // SAFETY: dup2 onto the standard descriptors.
                unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), fd) };
            }
        }
    }

    /// The mount failed: the caller prints `message`.
    pub fn failed(self, message: &str) {
        let _ = rustix::io::write(&self.0, message.as_bytes());
    }
}

/// Forks the daemon of a background mount: call it before any thread is
/// started.
///
/// # Errors
///
/// The pipe or the fork.
pub fn background() -> io::Result<Forked> {
    use std::io::Read;
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    // SAFETY: no other thread runs yet (the caller's contract); the child
    // goes on as a single-threaded copy of this process.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            drop(r);
            let _ = rustix::process::setsid();
            Ok(Forked::Daemon(Ready(w)))
        }
        _ => {
            drop(w);
            let mut said = String::new();
            let _ = std::fs::File::from(r).read_to_string(&mut said);
            Ok(Forked::Parent(match said.as_str() {
                "ok\n" => Ok(()),
                "" => Err("the daemon ended before the mount was up".to_string()),
                m => Err(m.to_string()),
            }))
        }
    }
}
