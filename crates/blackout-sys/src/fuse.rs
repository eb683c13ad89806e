//! FUSE file systems served by a thread of this process: [`Served`]
//! mounts one and stops it on every path, so its thread always ends (the
//! block recorder's daemon, the checking stage's view of crash states and
//! the live file system all run this way), and what their adapters share:
//! the largest write asked for, the options a tree of files is mounted
//! with, the lock on what the thread shares, a request's offset, a
//! directory listing answered from an offset.

use std::ffi::OsStr;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use fuser::{FileType, Filesystem, MountOption, ReplyDirectory, Session};

/// How long a busy mount is retried before it is given up on (a FUSE mount
/// is then detached lazily and its connection aborted).
const UNMOUNT_PATIENCE: Duration = Duration::from_secs(30);

/// The largest write the kernel is asked to send in one request (it may
/// send less): every file system served here asks for it in `init`.
///
/// # Examples
///
/// ```
/// assert_eq!(blackout_sys::fuse::MAX_WRITE_BYTES, 1 << 20);
/// ```
pub const MAX_WRITE_BYTES: u32 = 1 << 20;

/// An errno a request is answered with.
pub type Errno = i32;

/// The options a tree of files is mounted with (the checking stage's view
/// of crash states, the live file system): named `fs_name`, read-write,
/// permissions checked by the kernel, no device files, set-ID bits not
/// honoured.
pub fn tree_options(fs_name: &str) -> Vec<MountOption> {
    vec![
        MountOption::FSName(fs_name.into()),
        MountOption::RW,
        MountOption::DefaultPermissions,
        MountOption::NoDev,
        MountOption::NoSuid,
    ]
}

/// Locks what a file system's thread shares with its owner, even after a
/// holder panicked (a panicked holder leaves it as it was), so the mount
/// goes on being answered instead of failing every later request.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A request's file offset or length, `EINVAL` when negative.
///
/// # Examples
///
/// ```
/// use blackout_sys::fuse::offset;
///
/// assert_eq!(offset(4096), Ok(4096));
/// assert_eq!(offset(-1), Err(libc::EINVAL));
/// ```
pub fn offset(off: i64) -> Result<u64, Errno> {
    u64::try_from(off).map_err(|_| libc::EINVAL)
}

/// Answers a READDIR with `entries` (node id, type, name; `.` and `..`
/// included) from the one at `offset` on, as many as fit; each entry's
/// offset is the place of the next one, so the kernel's next request goes
/// on where this one stopped.
pub fn list<N: AsRef<OsStr>>(
    mut reply: ReplyDirectory,
    offset: i64,
    entries: impl IntoIterator<Item = (u64, FileType, N)>,
) {
    let start = usize::try_from(offset).unwrap_or(0);
    for (i, (node, kind, name)) in entries.into_iter().enumerate().skip(start) {
        if reply.add(node, i as i64 + 1, kind, name) {
            break;
        }
    }
    reply.ok();
}

/// A FUSE file system mounted at a directory and answered by a thread of
/// this process (named `bofuse-N`), stopped on every path: unmounted when
/// it can be, else detached and its connection aborted, so the thread
/// always ends. The block recorder's daemon is one; the checking stage's
/// view of crash states and the live file system are others.
#[derive(Debug)]
pub struct Served {
    mountpoint: PathBuf,
    connection: u32,
    thread_name: String,
    thread: Option<JoinHandle<io::Result<()>>>,
    patience: Duration,
}

static DAEMONS: AtomicUsize = AtomicUsize::new(0);

impl Served {
    /// Mounts `fs` at `mountpoint` (an existing directory) with `options`
    /// (in the calling thread's mount namespace) and starts the thread that
    /// answers it; `io_flusher` asks the kernel to let that thread allocate
    /// while writeback waits on it (best effort).
    ///
    /// # Errors
    ///
    /// The mount (no `/dev/fuse`, no right to mount) or the thread.
    pub fn start<F: Filesystem + Send + 'static>(
        fs: F,
        mountpoint: &Path,
        options: &[MountOption],
        io_flusher: bool,
    ) -> io::Result<Served> {
        let mut session = Session::new(fs, mountpoint, options)?;
        let thread_name = format!("bofuse-{}", DAEMONS.fetch_add(1, Ordering::Relaxed));
        let spawned = std::thread::Builder::new()
            .name(thread_name.clone())
            .spawn(move || {
                if io_flusher {
                    let _ = rustix::process::configure_io_flusher_behavior(true);
                }
                session.run()
            });
        let thread = match spawned {
            Ok(t) => t,
            Err(e) => {
                let _ = rustix::mount::unmount(mountpoint, rustix::mount::UnmountFlags::DETACH);
                return Err(e);
            }
        };
        let mut served = Served {
            mountpoint: mountpoint.to_path_buf(),
            connection: 0,
            thread_name,
            thread: Some(thread),
            patience: UNMOUNT_PATIENCE,
        };
        // Only now: a stat of the mount waits for the thread to answer it.
        served.connection = rustix::fs::minor(std::fs::metadata(mountpoint)?.dev());
        Ok(served)
    }

    /// The name of the thread answering requests (unique in the process).
    pub fn thread_name(&self) -> &str {
        &self.thread_name
    }

    /// How long [`Served::stop`] retries a busy unmount before it detaches
    /// the mount (30 s unless set).
    pub fn set_patience(&mut self, patience: Duration) {
        self.patience = patience;
    }

    /// Unmounts the file system (from the mount namespace it was mounted
    /// in) and waits for the thread to end. A mount still busy after the
    /// patience is detached lazily and its connection aborted; where the
    /// connection cannot be aborted (no `fusectl` mounted), the connection
    /// ends when the last process holding the mount lets go (a checker's
    /// leftover process, which the run kills), and the thread is left to
    /// end then if it has not within a second.
    ///
    /// # Errors
    ///
    /// The unmount failed (the mount was detached all the same), or the
    /// thread failed.
    pub fn stop(&mut self) -> io::Result<()> {
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        let unmounted = unmount_within(&self.mountpoint, self.patience);
        if unmounted.is_err() {
            let _ = rustix::mount::unmount(&self.mountpoint, rustix::mount::UnmountFlags::DETACH);
            let abort = format!("/sys/fs/fuse/connections/{}/abort", self.connection);
            if std::fs::write(abort, "1").is_err() {
                let deadline = Instant::now() + Duration::from_secs(1);
                while !thread.is_finished() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                if !thread.is_finished() {
                    return unmounted;
                }
            }
        }
        let ran = thread
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the FUSE daemon panicked")));
        unmounted.and(ran)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// Unmounts `path`, retrying while it is busy (a loop device lets go of its
/// backing file a moment after it is detached).
pub fn unmount_patiently(path: &Path) -> io::Result<()> {
    unmount_within(path, UNMOUNT_PATIENCE)
}

/// Unmounts `path`, retrying while it is busy for at most `patience`.
fn unmount_within(path: &Path, patience: Duration) -> io::Result<()> {
    let deadline = Instant::now() + patience;
    loop {
        match rustix::mount::unmount(path, rustix::mount::UnmountFlags::empty()) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::BUSY) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(io::Error::from(e)),
        }
    }
}
