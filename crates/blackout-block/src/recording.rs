//! A finished recording: the block log, the bytes of its writes and the
//! base image, kept after the device is gone, so crash states can be
//! rebuilt with no daemon, loop device or mount left running.

use std::io;
use std::path::{Path, PathBuf};

use crate::crash::{crash_points, LogPoint};
use crate::image::{Cursor, Replay};
use crate::log::BlockLog;

/// The data file's name in a recording's directory.
pub const DATA_FILE: &str = "writes.data";

/// The base image's name in a recording's directory.
pub const BASE_FILE: &str = "base.img";

/// A block log with what replaying it needs, in a directory it owns and
/// removes when dropped.
///
/// # Examples
///
/// ```no_run
/// use blackout_block::session::{DeviceSession, FsKind, SessionConfig};
/// let session = DeviceSession::start(&SessionConfig::new(FsKind::Ext4))?;
/// std::fs::write(session.mount_path().join("f"), b"x").unwrap();
/// let recording = session.finish()?;
/// for point in recording.crash_points() {
///     recording.replay_to(point.position, std::path::Path::new("/tmp/state.img")).unwrap();
///     # break;
/// }
/// # Ok::<(), blackout_block::session::SessionError>(())
/// ```
#[derive(Debug)]
pub struct DeviceRecording {
    dir: PathBuf,
    data: PathBuf,
    base_image: PathBuf,
    log: BlockLog,
    base: usize,
    size: u64,
}

impl DeviceRecording {
    /// A recording of `log` whose directory `dir` holds [`DATA_FILE`] and
    /// [`BASE_FILE`] (the device of `size` bytes at position `base`). The
    /// recording owns `dir` from now on.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use blackout_block::log::BlockLog;
    /// use blackout_block::recording::DeviceRecording;
    /// let r = DeviceRecording::new("/scratch/rec".into(), BlockLog::default(), 0, 1 << 20);
    /// assert_eq!(r.base(), 0);
    /// ```
    pub fn new(dir: PathBuf, log: BlockLog, base: usize, size: u64) -> DeviceRecording {
        DeviceRecording {
            data: dir.join(DATA_FILE),
            base_image: dir.join(BASE_FILE),
            dir,
            log,
            base,
            size,
        }
    }

    /// The whole log.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(r: &blackout_block::recording::DeviceRecording) {
    /// println!("{}", r.log().to_text());
    /// # }
    /// ```
    pub fn log(&self) -> &BlockLog {
        &self.log
    }

    /// The log position of the base (after mkfs, mount and sync).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(r: &blackout_block::recording::DeviceRecording) {
    /// assert!(r.base() <= r.log().records.len());
    /// # }
    /// ```
    pub fn base(&self) -> usize {
        self.base
    }

    /// The device size in bytes.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(r: &blackout_block::recording::DeviceRecording) {
    /// assert!(r.size() > 0);
    /// # }
    /// ```
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The directory holding the data file and the base image.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(r: &blackout_block::recording::DeviceRecording) {
    /// assert!(r.dir().join("base.img").exists());
    /// # }
    /// ```
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The crash points from the base (see [`crash_points`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(r: &blackout_block::recording::DeviceRecording) {
    /// assert_eq!(r.crash_points()[0].position, r.base());
    /// # }
    /// ```
    pub fn crash_points(&self) -> Vec<LogPoint> {
        crash_points(&self.log, self.base)
    }

    /// Writes the device as of log position `position` to the new sparse
    /// file `out`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(r: &blackout_block::recording::DeviceRecording) -> std::io::Result<()> {
    /// r.replay_to(r.log().records.len(), std::path::Path::new("/tmp/end.img"))?;
    /// # Ok(()) }
    /// ```
    pub fn replay_to(&self, position: usize, out: &Path) -> io::Result<()> {
        self.replay().write_image(position, out)
    }

    /// What replaying needs, starting from the base image. With `base:
    /// None` it rebuilds from the first write instead (the slow, paranoid
    /// path).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::image::Replay;
    /// # fn f(r: &blackout_block::recording::DeviceRecording) -> std::io::Result<()> {
    /// let from_start = Replay { base: None, ..r.replay() };
    /// from_start.write_image(r.base(), std::path::Path::new("/tmp/base.img"))?;
    /// # Ok(()) }
    /// ```
    pub fn replay(&self) -> Replay<'_> {
        Replay {
            records: &self.log.records,
            data: &self.data,
            size: self.size,
            base: Some((self.base, &self.base_image)),
        }
    }

    /// A cursor at the base whose working image is the new file `work`
    /// (the fast path for writing many states in log order).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(r: &blackout_block::recording::DeviceRecording) -> std::io::Result<()> {
    /// let mut cursor = r.cursor(std::path::Path::new("/tmp/work.img"))?;
    /// for point in r.crash_points() {
    ///     cursor.advance(point.position)?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn cursor(&self, work: &Path) -> io::Result<Cursor<'_>> {
        Cursor::new(self.replay(), work)
    }
}

impl Drop for DeviceRecording {
    fn drop(&mut self) {
        let _ = blackout_sys::scratch::remove_tree(&self.dir);
    }
}
