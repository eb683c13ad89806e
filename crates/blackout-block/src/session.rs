//! A device session: a sparse image served by the daemon, a loop device on
//! it, a file system made and mounted — and all of it taken down again on
//! every path.
//!
//! The scratch directory (`blackout-block-PID-N` under the chosen parent)
//! holds `backing.img` (the live image), `writes.data` (the bytes of every
//! logged write), `base.img` (the device at the base), `fuse/` (the
//! daemon's mount point, holding `disk.img`) and `mnt/` (the file system).

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};

use blackout_sys::fuse::unmount_patiently;

use crate::crash::{crash_points, LogPoint};
use crate::daemon::{Daemon, IMAGE_NAME, OUTPUT_NAME};
use crate::image::{create_sparse, Replay};
use crate::log::{BlockLog, LiveLog};
use crate::recording::{DeviceRecording, BASE_FILE, DATA_FILE};

/// Where tools are looked for besides `$PATH` (root's tools live in sbin).
const TOOL_DIRS: &[&str] = &["/usr/local/sbin", "/usr/sbin", "/sbin"];

/// The default device size: 128 MiB (enough for ext4 and btrfs; xfs needs
/// at least [`FsKind::min_size`]).
///
/// # Examples
///
/// ```
/// use blackout_block::session::{FsKind, DEVICE_BYTES_DEFAULT};
/// assert!(DEVICE_BYTES_DEFAULT >= FsKind::Btrfs.min_size());
/// ```
pub const DEVICE_BYTES_DEFAULT: u64 = 128 << 20;

/// A file system the session can make.
///
/// # Examples
///
/// ```
/// use blackout_block::session::FsKind;
/// let fs: FsKind = "xfs".parse().unwrap();
/// assert_eq!(fs, FsKind::Xfs);
/// assert_eq!(fs.mkfs(), "mkfs.xfs");
/// assert!("ntfs".parse::<FsKind>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FsKind {
    /// ext4 (e2fsprogs).
    Ext4,
    /// XFS (xfsprogs).
    Xfs,
    /// Btrfs (btrfs-progs).
    Btrfs,
}

impl FsKind {
    /// Every kind, in the order they are tried.
    ///
    /// # Examples
    ///
    /// ```
    /// use blackout_block::session::FsKind;
    /// assert_eq!(FsKind::ALL.len(), 3);
    /// ```
    pub const ALL: [FsKind; 3] = [FsKind::Ext4, FsKind::Xfs, FsKind::Btrfs];

    /// The name `mount -t` and the command line use.
    ///
    /// # Examples
    ///
    /// ```
    /// use blackout_block::session::FsKind;
    /// assert_eq!(FsKind::Btrfs.name(), "btrfs");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            FsKind::Ext4 => "ext4",
            FsKind::Xfs => "xfs",
            FsKind::Btrfs => "btrfs",
        }
    }

    /// The mkfs command.
    ///
    /// # Examples
    ///
    /// ```
    /// use blackout_block::session::FsKind;
    /// assert_eq!(FsKind::Ext4.mkfs(), "mkfs.ext4");
    /// ```
    pub fn mkfs(self) -> &'static str {
        match self {
            FsKind::Ext4 => "mkfs.ext4",
            FsKind::Xfs => "mkfs.xfs",
            FsKind::Btrfs => "mkfs.btrfs",
        }
    }

    /// The Debian package that has the mkfs command.
    ///
    /// # Examples
    ///
    /// ```
    /// use blackout_block::session::FsKind;
    /// assert_eq!(FsKind::Xfs.package(), "xfsprogs");
    /// ```
    pub fn package(self) -> &'static str {
        match self {
            FsKind::Ext4 => "e2fsprogs",
            FsKind::Xfs => "xfsprogs",
            FsKind::Btrfs => "btrfs-progs",
        }
    }

    /// The file system's own checker, read-only, on an image: the program
    /// and its arguments before the image's path. It exits 0 when it finds
    /// nothing wrong (from the same package as mkfs).
    ///
    /// # Examples
    ///
    /// ```
    /// use blackout_block::session::FsKind;
    /// assert_eq!(FsKind::Ext4.fsck(), ("e2fsck", &["-f", "-n"][..]));
    /// ```
    pub fn fsck(self) -> (&'static str, &'static [&'static str]) {
        match self {
            FsKind::Ext4 => ("e2fsck", &["-f", "-n"]),
            FsKind::Xfs => ("xfs_repair", &["-n"]),
            FsKind::Btrfs => ("btrfs", &["check", "--readonly"]),
        }
    }

    /// The smallest device mkfs accepts, in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use blackout_block::session::FsKind;
    /// assert!(FsKind::Xfs.min_size() > FsKind::Ext4.min_size());
    /// ```
    pub fn min_size(self) -> u64 {
        match self {
            FsKind::Ext4 => 8 << 20,
            FsKind::Xfs => 300 << 20,
            FsKind::Btrfs => 128 << 20,
        }
    }

    /// What mkfs is always given before the caller's options: quiet, force,
    /// and for ext4 the inode tables and journal zeroed now — else the
    /// kernel zeroes them in the background after mount, writes no workload
    /// asked for.
    fn mkfs_args(self) -> &'static [&'static str] {
        match self {
            FsKind::Ext4 => &["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
            FsKind::Xfs => &["-q", "-f"],
            FsKind::Btrfs => &["-q", "-f"],
        }
    }
}

impl fmt::Display for FsKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FsKind {
    type Err = String;

    fn from_str(s: &str) -> Result<FsKind, String> {
        FsKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown file system {s:?} (ext4, xfs or btrfs)"))
    }
}

/// Why a device session could not start or stop: one line saying which
/// requirement is missing or which step failed.
///
/// # Examples
///
/// ```
/// use blackout_block::session::{FsKind, SessionError};
/// let e = SessionError::MkfsMissing { fs: FsKind::Xfs };
/// assert_eq!(e.to_string(), "mkfs.xfs not found: the block backend needs it for xfs (Debian package xfsprogs)");
/// ```
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// Not running as root.
    #[error("the block backend needs root (running as uid {uid})")]
    NotRoot {
        /// The effective uid.
        uid: u32,
    },
    /// `/dev/fuse` is missing or cannot be opened.
    #[error("the block backend needs FUSE: cannot open /dev/fuse: {reason}")]
    NoFuse {
        /// Why it could not be opened.
        reason: String,
    },
    /// No loop device could be set up.
    #[error("the block backend needs a free loop device: {reason}")]
    NoLoopDevice {
        /// What losetup said.
        reason: String,
    },
    /// The file system's mkfs is not installed.
    #[error("{} not found: the block backend needs it for {fs} (Debian package {})", fs.mkfs(), fs.package())]
    MkfsMissing {
        /// The file system asked for.
        fs: FsKind,
    },
    /// Another tool the session runs is not installed.
    #[error("{tool} not found: the block backend needs it (Debian package {package})")]
    ToolMissing {
        /// The command.
        tool: &'static str,
        /// Where it comes from.
        package: &'static str,
    },
    /// The device is too small for the file system.
    #[error("{fs} needs a device of at least {} MiB, not {} MiB", fs.min_size() >> 20, size >> 20)]
    TooSmall {
        /// The file system.
        fs: FsKind,
        /// The size asked for, in bytes.
        size: u64,
    },
    /// A step ran and failed.
    #[error("{step} failed: {detail}")]
    Step {
        /// What was being done (`mkfs.ext4 /dev/loop3`, `mount`, ...).
        step: String,
        /// Its error or its standard error's last line.
        detail: String,
    },
}

impl SessionError {
    fn step(step: impl Into<String>, detail: impl fmt::Display) -> SessionError {
        SessionError::Step {
            step: step.into(),
            detail: detail.to_string(),
        }
    }
}

/// What a device session makes.
///
/// # Examples
///
/// ```
/// use blackout_block::session::{FsKind, SessionConfig};
/// let mut config = SessionConfig::new(FsKind::Ext4);
/// config.mount_opts = vec!["data=ordered".into()];
/// assert_eq!(config.size, 128 << 20);
/// ```
#[derive(Clone, Debug)]
pub struct SessionConfig {
    /// The file system.
    pub fs: FsKind,
    /// The device size in bytes.
    pub size: u64,
    /// Extra mkfs arguments.
    pub mkfs_opts: Vec<String>,
    /// Mount options (`-o`), joined with commas.
    pub mount_opts: Vec<String>,
    /// Where the scratch directory is made (not on the device, of course;
    /// memory by default: `/dev/shm` unless `$TMPDIR` says otherwise).
    pub scratch_parent: PathBuf,
}

impl SessionConfig {
    /// A session of `fs` with the default size, no extra options, and the
    /// default scratch parent.
    ///
    /// # Examples
    ///
    /// ```
    /// use blackout_block::session::{FsKind, SessionConfig};
    /// assert!(SessionConfig::new(FsKind::Btrfs).mkfs_opts.is_empty());
    /// ```
    pub fn new(fs: FsKind) -> SessionConfig {
        SessionConfig {
            fs,
            size: DEVICE_BYTES_DEFAULT,
            mkfs_opts: Vec::new(),
            mount_opts: Vec::new(),
            scratch_parent: blackout_sys::scratch::default_scratch_parent(),
        }
    }
}

/// A recorded block device with a file system on it, mounted.
///
/// Dropping it (or [`DeviceSession::close`]) unmounts the file system,
/// detaches the loop device, stops the daemon, unmounts FUSE and removes
/// the scratch directory — whatever state it is in, a failed start
/// included.
///
/// # Examples
///
/// ```no_run
/// use blackout_block::session::{DeviceSession, FsKind, SessionConfig};
/// let mut session = DeviceSession::start(&SessionConfig::new(FsKind::Ext4))?;
/// std::fs::write(session.mount_path().join("f"), b"data").unwrap();
/// session.mark("written");
/// session.close()?;
/// # Ok::<(), blackout_block::session::SessionError>(())
/// ```
#[derive(Debug)]
pub struct DeviceSession {
    fs: FsKind,
    size: u64,
    scratch: PathBuf,
    log: LiveLog,
    daemon: Option<Daemon>,
    loop_device: Option<PathBuf>,
    mounted: bool,
    base: usize,
    closed: bool,
}

static SESSIONS: AtomicUsize = AtomicUsize::new(0);

impl DeviceSession {
    /// Checks the requirements, then makes the image, starts the daemon,
    /// sets up the loop device, runs mkfs, mounts, syncs, and takes the
    /// base (the log position and image after mkfs + mount + sync: crash
    /// points inside mkfs never count).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use blackout_block::session::{DeviceSession, FsKind, SessionConfig};
    /// let session = DeviceSession::start(&SessionConfig::new(FsKind::Ext4))?;
    /// assert!(session.base() > 0);
    /// # Ok::<(), blackout_block::session::SessionError>(())
    /// ```
    pub fn start(config: &SessionConfig) -> Result<DeviceSession, SessionError> {
        preflight(config, &search_path())?;
        let n = SESSIONS.fetch_add(1, Ordering::Relaxed);
        let scratch = config
            .scratch_parent
            .join(format!("blackout-block-{}-{n}", std::process::id()));
        fs::create_dir(&scratch)
            .map_err(|e| SessionError::step(format!("creating {}", scratch.display()), e))?;
        blackout_sys::scratch::mark_owned(&scratch)
            .map_err(|e| SessionError::step(format!("marking {}", scratch.display()), e))?;
        let mut session = DeviceSession {
            fs: config.fs,
            size: config.size,
            log: LiveLog::create(&scratch.join(DATA_FILE))
                .map_err(|e| SessionError::step("creating the data file", e))?,
            scratch,
            daemon: None,
            loop_device: None,
            mounted: false,
            base: 0,
            closed: false,
        };
        // From here on, an early return drops the session, which cleans up.
        session.bring_up(config)?;
        Ok(session)
    }

    fn bring_up(&mut self, config: &SessionConfig) -> Result<(), SessionError> {
        let io = |what: &str| {
            let what = what.to_string();
            move |e: io::Error| SessionError::step(what, e)
        };
        create_sparse(&self.image_path(), self.size).map_err(io("creating the image"))?;
        fs::create_dir(self.fuse_dir()).map_err(io("creating the FUSE mount point"))?;
        fs::create_dir(self.mount_path()).map_err(io("creating the mount point"))?;
        let daemon = Daemon::start(&self.image_path(), self.log.clone(), &self.fuse_dir())
            .map_err(io("starting the FUSE daemon"))?;
        self.daemon = Some(daemon);
        self.loop_device = Some(attach_loop(&self.fuse_dir().join(IMAGE_NAME))?);
        let dev = self.loop_device.clone().unwrap_or_default();
        let mut mkfs = Command::new(self.fs.mkfs());
        mkfs.args(self.fs.mkfs_args())
            .args(&config.mkfs_opts)
            .arg(&dev);
        run(&format!("{} {}", self.fs.mkfs(), dev.display()), &mut mkfs)?;
        let mut mount = Command::new("mount");
        mount.args(["-t", self.fs.name()]);
        if !config.mount_opts.is_empty() {
            mount.args(["-o", &config.mount_opts.join(",")]);
        }
        mount.arg(&dev).arg(self.mount_path());
        run("mount", &mut mount)?;
        self.mounted = true;
        self.rebase()
    }

    /// Syncs the file system and makes this moment the base: crash points
    /// before it never count (what a workload's setup wrote is there
    /// before it starts), and the base image is written again.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::session::DeviceSession;
    /// # fn f(mut session: DeviceSession) -> Result<(), blackout_block::session::SessionError> {
    /// std::fs::write(session.mount_path().join("doc.txt"), "version 1\n").unwrap();
    /// session.rebase()?;
    /// assert_eq!(session.crash_points().len(), 1);
    /// # Ok(()) }
    /// ```
    pub fn rebase(&mut self) -> Result<(), SessionError> {
        let io = |what: &str| {
            let what = what.to_string();
            move |e: io::Error| SessionError::step(what, e)
        };
        self.sync()?;
        self.base = self.log.position();
        let records = self.log.snapshot().records;
        let replay = Replay {
            records: &records,
            data: &self.data_path(),
            size: self.size,
            base: None,
        };
        match fs::remove_file(self.base_path()) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(io("removing the old base image")(e))
            }
            _ => {}
        }
        replay
            .write_image(self.base, &self.base_path())
            .map_err(io("writing the base image"))?;
        Ok(())
    }

    /// When the block log began, in seconds since the epoch
    /// ([`LiveLog::started_unix`]).
    pub fn log_started_unix(&self) -> f64 {
        self.log.started_unix()
    }

    /// Where the file system is mounted.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::session::DeviceSession;
    /// # fn f(session: &DeviceSession) {
    /// std::fs::write(session.mount_path().join("hello"), b"hi").unwrap();
    /// # }
    /// ```
    pub fn mount_path(&self) -> PathBuf {
        self.scratch.join("mnt")
    }

    fn fuse_dir(&self) -> PathBuf {
        self.scratch.join("fuse")
    }

    fn data_path(&self) -> PathBuf {
        self.scratch.join(DATA_FILE)
    }

    fn base_path(&self) -> PathBuf {
        self.scratch.join(BASE_FILE)
    }

    /// The file to give a workload as its standard output: every line
    /// printed to it is logged as a mark at the moment it is written (the
    /// writer waits for the daemon, which answers block requests in the
    /// same order).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::session::DeviceSession;
    /// # fn f(session: &DeviceSession) -> std::io::Result<()> {
    /// let stdout = std::fs::OpenOptions::new().write(true).open(session.output_path())?;
    /// std::process::Command::new("echo").arg("saved").stdout(stdout).status()?;
    /// assert_eq!(session.output(), b"saved\n");
    /// # Ok(()) }
    /// ```
    pub fn output_path(&self) -> PathBuf {
        self.fuse_dir().join(OUTPUT_NAME)
    }

    /// Everything written to [`DeviceSession::output_path`] so far.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::session::DeviceSession;
    /// # fn f(session: &DeviceSession) {
    /// println!("{}", String::from_utf8_lossy(&session.output()));
    /// # }
    /// ```
    pub fn output(&self) -> Vec<u8> {
        self.daemon.as_ref().map(Daemon::output).unwrap_or_default()
    }

    /// The live image file the daemon serves (equal to the whole log
    /// replayed whenever no request is in flight).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::session::DeviceSession;
    /// # fn f(session: &DeviceSession) {
    /// assert!(session.image_path().ends_with("backing.img"));
    /// # }
    /// ```
    pub fn image_path(&self) -> PathBuf {
        self.scratch.join("backing.img")
    }

    /// The scratch directory holding everything the session made.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::session::DeviceSession;
    /// # fn f(session: &DeviceSession) {
    /// assert!(session.mount_path().starts_with(session.scratch()));
    /// # }
    /// ```
    pub fn scratch(&self) -> &Path {
        &self.scratch
    }

    /// The loop device (`/dev/loopN`), once set up.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::session::DeviceSession;
    /// # fn f(session: &DeviceSession) {
    /// println!("{:?}", session.loop_device());
    /// # }
    /// ```
    pub fn loop_device(&self) -> Option<&Path> {
        self.loop_device.as_deref()
    }

    /// The name of the daemon's thread while it runs.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::session::DeviceSession;
    /// # fn f(session: &DeviceSession) {
    /// assert!(session.daemon_thread().is_some());
    /// # }
    /// ```
    pub fn daemon_thread(&self) -> Option<&str> {
        self.daemon.as_ref().map(|d| d.thread_name())
    }

    /// The file system on the device.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::session::{DeviceSession, FsKind};
    /// # fn f(session: &DeviceSession) {
    /// assert_eq!(session.fs(), FsKind::Ext4);
    /// # }
    /// ```
    pub fn fs(&self) -> FsKind {
        self.fs
    }

    /// The log position of the base: after mkfs, mount and a sync.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::session::DeviceSession;
    /// # fn f(session: &DeviceSession) {
    /// assert!(session.base() <= session.position());
    /// # }
    /// ```
    pub fn base(&self) -> usize {
        self.base
    }

    /// The current log position (records so far).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::session::DeviceSession;
    /// # fn f(session: &DeviceSession) {
    /// let before = session.position();
    /// # }
    /// ```
    pub fn position(&self) -> usize {
        self.log.position()
    }

    /// Appends a mark named `name` to the log now; returns the position
    /// just after it.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::session::DeviceSession;
    /// # fn f(session: &DeviceSession) {
    /// let at = session.mark("saved");
    /// assert_eq!(session.log().records[at - 1].kind.label(), "mark");
    /// # }
    /// ```
    pub fn mark(&self, name: &str) -> usize {
        self.log.mark(name)
    }

    /// A copy of the log so far.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::session::DeviceSession;
    /// # fn f(session: &DeviceSession) {
    /// println!("{}", session.log().to_text());
    /// # }
    /// ```
    pub fn log(&self) -> BlockLog {
        self.log.snapshot()
    }

    /// The crash points so far: the base, then just after each flush and
    /// each mark (see [`crash_points`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::session::DeviceSession;
    /// # fn f(session: &DeviceSession) {
    /// for point in session.crash_points() {
    ///     println!("{} after {} ({} writes in flight)", point.position, point.barrier, point.in_flight);
    /// }
    /// # }
    /// ```
    pub fn crash_points(&self) -> Vec<LogPoint> {
        crash_points(&self.log.snapshot(), self.base)
    }

    /// `syncfs` on the mounted file system: everything written so far
    /// reaches the device, followed by a flush.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::session::DeviceSession;
    /// # fn f(session: &DeviceSession) -> Result<(), blackout_block::session::SessionError> {
    /// session.sync()?;
    /// # Ok(()) }
    /// ```
    pub fn sync(&self) -> Result<(), SessionError> {
        let dir = fs::File::open(self.mount_path()).map_err(|e| SessionError::step("sync", e))?;
        rustix::fs::syncfs(&dir).map_err(|e| SessionError::step("sync", e))
    }

    /// Writes the device as of log position `position` to the new file
    /// `out` (sparse): the base image plus the writes after it, or, before
    /// the base, the writes from the start.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::session::DeviceSession;
    /// # use std::path::Path;
    /// # fn f(session: &DeviceSession) -> Result<(), blackout_block::session::SessionError> {
    /// session.replay_to(session.base(), Path::new("/tmp/base-copy.img"))?;
    /// # Ok(()) }
    /// ```
    pub fn replay_to(&self, position: usize, out: &Path) -> Result<(), SessionError> {
        let records = self.log.snapshot().records;
        let base_path = self.base_path();
        let replay = Replay {
            records: &records,
            data: &self.data_path(),
            size: self.size,
            base: Some((self.base, &base_path)),
        };
        replay
            .write_image(position, out)
            .map_err(|e| SessionError::step(format!("replaying to position {position}"), e))
    }

    /// Unmounts the file system (its last writes and flushes are logged by
    /// the time this returns); the daemon and loop device stay, so the log
    /// can still be replayed and compared with [`DeviceSession::image_path`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::session::DeviceSession;
    /// # fn f(mut session: DeviceSession) -> Result<(), blackout_block::session::SessionError> {
    /// session.unmount()?;
    /// # Ok(()) }
    /// ```
    pub fn unmount(&mut self) -> Result<(), SessionError> {
        if self.mounted {
            unmount_patiently(&self.mount_path())
                .map_err(|e| SessionError::step(format!("umount {}", self.fs), e))?;
            self.mounted = false;
        }
        Ok(())
    }

    /// Takes everything down in order — unmount, detach the loop device,
    /// stop the daemon (unmounting FUSE), remove the scratch directory —
    /// trying every step even when one fails, and returns the first
    /// failure (or the daemon's, if it could not keep the log).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::session::DeviceSession;
    /// # fn f(session: DeviceSession) -> Result<(), blackout_block::session::SessionError> {
    /// session.close()?;
    /// # Ok(()) }
    /// ```
    pub fn close(mut self) -> Result<(), SessionError> {
        self.take_down()
    }

    /// Takes the device down — unmount, detach the loop device, stop the
    /// daemon — and keeps the log, its data and the base image as a
    /// [`DeviceRecording`] (the live image and mount points are removed). On a
    /// failure everything is removed, as by [`DeviceSession::close`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::session::DeviceSession;
    /// # fn f(session: DeviceSession) -> Result<(), blackout_block::session::SessionError> {
    /// let recording = session.finish()?;
    /// println!("{} crash points", recording.crash_points().len());
    /// # Ok(()) }
    /// ```
    pub fn finish(mut self) -> Result<DeviceRecording, SessionError> {
        self.release_device()?;
        let remove =
            |r: io::Result<()>| r.map_err(|e| SessionError::step("removing the live image", e));
        remove(fs::remove_file(self.image_path()))?;
        remove(fs::remove_dir(self.fuse_dir()))?;
        remove(fs::remove_dir(self.mount_path()))?;
        self.closed = true;
        let log = self.log.snapshot();
        Ok(DeviceRecording::new(
            self.scratch.clone(),
            log,
            self.base,
            self.size,
        ))
    }

    fn take_down(&mut self) -> Result<(), SessionError> {
        if self.closed {
            return Ok(());
        }
        let released = self.release_device();
        self.closed = true;
        let removed = blackout_sys::scratch::remove_tree(&self.scratch)
            .map_err(|e| SessionError::step("removing the scratch directory", e));
        released.and(removed)
    }

    /// Unmounts, detaches the loop device and stops the daemon, trying
    /// every step even when one fails; the first failure is returned.
    fn release_device(&mut self) -> Result<(), SessionError> {
        let mut first: Option<SessionError> = None;
        let mut note = |r: Result<(), SessionError>| {
            if let Err(e) = r {
                first.get_or_insert(e);
            }
        };
        note(self.unmount());
        if let Some(dev) = self.loop_device.take() {
            let step = format!("losetup -d {}", dev.display());
            note(run(&step, Command::new("losetup").arg("-d").arg(&dev)));
            // The kernel lets the device go from a work queue: until it
            // has, the device holds the FUSE file and FUSE cannot unmount.
            wait_detached(&dev, DETACH_PATIENCE);
        }
        if let Some(mut daemon) = self.daemon.take() {
            note(match daemon.failure() {
                Some(f) => Err(SessionError::step("the FUSE daemon", f)),
                None => Ok(()),
            });
            note(
                daemon
                    .stop()
                    .map_err(|e| SessionError::step("unmounting FUSE", e)),
            );
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for DeviceSession {
    fn drop(&mut self) {
        let _ = self.take_down();
    }
}

/// How long a loop device may take to let its file go after `losetup -d`
/// (a loaded machine's work queue; normally at once).
const DETACH_PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);

/// Waits until loop device `dev` has no backing file (or `patience` has
/// passed: the FUSE unmount after it then says what is still busy).
fn wait_detached(dev: &Path, patience: std::time::Duration) {
    let Some(name) = dev.file_name() else { return };
    let backing = Path::new("/sys/block").join(name).join("loop/backing_file");
    let deadline = std::time::Instant::now() + patience;
    while backing.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `$PATH` and the sbin directories, in order.
fn search_path() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(TOOL_DIRS.iter().map(PathBuf::from));
    dirs
}

fn has_tool(name: &str, dirs: &[PathBuf]) -> bool {
    dirs.iter().any(|d| d.join(name).is_file())
}

/// Whether `name` is installed: on `$PATH` or in an sbin directory, where
/// the session looks for its tools.
///
/// # Examples
///
/// ```
/// use blackout_block::session::tool_installed;
/// assert!(tool_installed("sh"));
/// assert!(!tool_installed("no-such-tool-anywhere"));
/// ```
pub fn tool_installed(name: &str) -> bool {
    has_tool(name, &search_path())
}

/// Whether this machine can run a session of `fs`: what a session checks
/// of the machine before it makes anything (root, `/dev/fuse`, `losetup`,
/// `mount`, the mkfs tool; not the device's size, which is the caller's),
/// the first that is missing as the error the session would give.
///
/// # Errors
///
/// The first requirement missing.
pub fn can_start(fs: FsKind) -> Result<(), SessionError> {
    machine_ready(fs, &search_path())
}

/// Every requirement checked before anything is made, so a missing one is
/// one clear line and nothing to clean up.
fn preflight(config: &SessionConfig, dirs: &[PathBuf]) -> Result<(), SessionError> {
    machine_ready(config.fs, dirs)?;
    if config.size < config.fs.min_size() {
        return Err(SessionError::TooSmall {
            fs: config.fs,
            size: config.size,
        });
    }
    Ok(())
}

/// What this machine must have for a session of `fs`, whatever its size.
fn machine_ready(fs: FsKind, dirs: &[PathBuf]) -> Result<(), SessionError> {
    let uid = rustix::process::geteuid();
    if !uid.is_root() {
        return Err(SessionError::NotRoot { uid: uid.as_raw() });
    }
    if let Err(e) = fs::File::options().read(true).write(true).open("/dev/fuse") {
        return Err(SessionError::NoFuse {
            reason: e.to_string(),
        });
    }
    tools_present(fs, dirs)
}

fn tools_present(fs: FsKind, dirs: &[PathBuf]) -> Result<(), SessionError> {
    for (tool, package) in [("losetup", "mount"), ("mount", "mount")] {
        if !has_tool(tool, dirs) {
            return Err(SessionError::ToolMissing { tool, package });
        }
    }
    if !has_tool(fs.mkfs(), dirs) {
        return Err(SessionError::MkfsMissing { fs });
    }
    Ok(())
}

/// `losetup --find --show FILE`: the loop device now backed by `file`.
fn attach_loop(file: &Path) -> Result<PathBuf, SessionError> {
    let out = Command::new("losetup")
        .args(["--find", "--show"])
        .arg(file)
        .output()
        .map_err(|e| SessionError::step("losetup", e))?;
    if !out.status.success() {
        return Err(SessionError::NoLoopDevice {
            reason: last_line(&out.stderr),
        });
    }
    let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !dev.starts_with("/dev/") {
        return Err(SessionError::NoLoopDevice {
            reason: format!("losetup printed {dev:?}"),
        });
    }
    Ok(PathBuf::from(dev))
}

/// Runs `cmd` to completion; a failure names `step` and what it printed on
/// standard error, on one line.
fn run(step: &str, cmd: &mut Command) -> Result<(), SessionError> {
    let out = cmd.output().map_err(|e| SessionError::step(step, e))?;
    if out.status.success() {
        Ok(())
    } else {
        let detail = match one_line(&out.stderr) {
            l if l.is_empty() => out.status.to_string(),
            l => l,
        };
        Err(SessionError::step(step, detail))
    }
}

/// Standard error's lines, trimmed and joined, without mount's hint to read
/// dmesg.
fn one_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("dmesg(1) may have more"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn last_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_mkfs_is_named_with_its_package() {
        let tools = tempfile::tempdir().unwrap();
        for t in ["losetup", "mount"] {
            fs::write(tools.path().join(t), "").unwrap();
        }
        let dirs = vec![tools.path().to_path_buf()];
        let err = tools_present(FsKind::Btrfs, &dirs).unwrap_err();
        assert_eq!(
            err.to_string(),
            "mkfs.btrfs not found: the block backend needs it for btrfs (Debian package btrfs-progs)"
        );
        fs::write(tools.path().join("mkfs.btrfs"), "").unwrap();
        assert!(tools_present(FsKind::Btrfs, &dirs).is_ok());
        let err = tools_present(FsKind::Ext4, &[]).unwrap_err();
        assert!(err.to_string().starts_with("losetup not found"), "{err}");
    }

    #[test]
    fn every_requirement_is_one_line() {
        let errors = [
            SessionError::NotRoot { uid: 1000 },
            SessionError::NoFuse {
                reason: "No such file or directory (os error 2)".into(),
            },
            SessionError::NoLoopDevice {
                reason: "losetup: cannot find an unused loop device".into(),
            },
            SessionError::TooSmall {
                fs: FsKind::Xfs,
                size: 64 << 20,
            },
        ];
        let lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            lines[0],
            "the block backend needs root (running as uid 1000)"
        );
        assert!(lines[1].starts_with("the block backend needs FUSE"));
        assert!(lines[2].starts_with("the block backend needs a free loop device"));
        assert_eq!(
            lines[3],
            "xfs needs a device of at least 300 MiB, not 64 MiB"
        );
        assert!(lines.iter().all(|l| !l.contains('\n')));
    }

    #[test]
    fn file_system_names_round_trip() {
        for k in FsKind::ALL {
            assert_eq!(k.name().parse::<FsKind>(), Ok(k));
            assert_eq!(k.to_string(), k.name());
        }
    }
}
