//! Disk images: sparse files, sparse copies, and a log's records applied
//! to an image — how the device looked at any position of the log.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use rustix::fs::{FallocateFlags, SeekFrom};

use crate::log::{Record, RecordKind};

/// Bytes copied per read when copying or replaying.
const CHUNK_BYTES: u64 = 1 << 20;

/// Creates `path` (which must not exist) as a sparse file of `size` bytes
/// that reads as zeros.
///
/// # Examples
///
/// ```
/// use blackout_block::image::create_sparse;
/// let path = std::env::temp_dir().join(format!("sparse-doc-{}", std::process::id()));
/// let f = create_sparse(&path, 1 << 30).unwrap();
/// assert_eq!(f.metadata().unwrap().len(), 1 << 30);
/// std::fs::remove_file(&path).unwrap();
/// ```
pub fn create_sparse(path: &Path, size: u64) -> io::Result<File> {
    let f = File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)?;
    f.set_len(size)?;
    Ok(f)
}

/// Copies `from` to a new file `to`, keeping holes as holes: a reflink
/// where the file system has them, else only the data extents
/// (`SEEK_DATA`/`SEEK_HOLE`) are read and written.
///
/// # Examples
///
/// ```
/// use blackout_block::image::{create_sparse, sparse_copy};
/// use std::os::unix::fs::FileExt;
/// let dir = std::env::temp_dir().join(format!("copy-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let a = create_sparse(&dir.join("a"), 1 << 24).unwrap();
/// a.write_all_at(b"data", 1 << 20).unwrap();
/// sparse_copy(&dir.join("a"), &dir.join("b")).unwrap();
/// assert_eq!(std::fs::read(dir.join("a")).unwrap(), std::fs::read(dir.join("b")).unwrap());
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn sparse_copy(from: &Path, to: &Path) -> io::Result<()> {
    let src = File::open(from)?;
    let size = src.metadata()?.len();
    let dst = create_sparse(to, size)?;
    if rustix::fs::ioctl_ficlone(&dst, &src).is_ok() {
        return Ok(());
    }
    for (start, len) in data_extents(&src)? {
        copy_range(&src, start, &dst, start, len)?;
    }
    Ok(())
}

/// The data extents of `file` (`SEEK_DATA`/`SEEK_HOLE`): offset and length
/// of each, in order; the rest reads as zeros.
///
/// # Examples
///
/// ```
/// use blackout_block::image::{create_sparse, data_extents};
/// use std::os::unix::fs::FileExt;
/// let path = std::env::temp_dir().join(format!("extents-doc-{}", std::process::id()));
/// let f = create_sparse(&path, 1 << 24).unwrap();
/// f.write_all_at(b"data", 1 << 20).unwrap();
/// let extents = data_extents(&f).unwrap();
/// assert!(extents.iter().any(|&(at, len)| at <= 1 << 20 && (1 << 20) + 4 <= at + len));
/// std::fs::remove_file(&path).unwrap();
/// ```
pub fn data_extents(file: &File) -> io::Result<Vec<(u64, u64)>> {
    let size = file.metadata()?.len();
    let mut out = Vec::new();
    let mut at = 0;
    while at < size {
        let Some(start) = seek(file, SeekFrom::Data(at))? else {
            break; // only a hole is left
        };
        let end = seek(file, SeekFrom::Hole(start))?.unwrap_or(size);
        out.push((start, end - start));
        at = end;
    }
    Ok(out)
}

/// Where `SEEK_DATA`/`SEEK_HOLE` lands, `None` past the last data (`ENXIO`).
fn seek(f: &File, to: SeekFrom) -> io::Result<Option<u64>> {
    match rustix::fs::seek(f, to) {
        Ok(at) => Ok(Some(at)),
        Err(rustix::io::Errno::NXIO) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn copy_range(src: &File, from: u64, dst: &File, to: u64, len: u64) -> io::Result<()> {
    let mut buf = vec![0; CHUNK_BYTES.min(len) as usize];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(CHUNK_BYTES) as usize;
        src.read_exact_at(&mut buf[..n], from + done)?;
        dst.write_all_at(&buf[..n], to + done)?;
        done += n as u64;
    }
    Ok(())
}

/// Makes `len` bytes at `offset` of `file` read as zeros, as a hole where
/// the file system punches them, else by writing zeros.
///
/// # Examples
///
/// ```
/// use blackout_block::image::{create_sparse, zero_range};
/// use std::os::unix::fs::FileExt;
/// let path = std::env::temp_dir().join(format!("zero-doc-{}", std::process::id()));
/// let f = create_sparse(&path, 8192).unwrap();
/// f.write_all_at(&[7; 8192], 0).unwrap();
/// zero_range(&f, 4096, 4096).unwrap();
/// let mut b = [1u8; 1];
/// f.read_exact_at(&mut b, 5000).unwrap();
/// assert_eq!(b, [0]);
/// std::fs::remove_file(&path).unwrap();
/// ```
pub fn zero_range(file: &File, offset: u64, len: u64) -> io::Result<()> {
    let punch = FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE;
    if rustix::fs::fallocate(file, punch, offset, len).is_ok() {
        return Ok(());
    }
    let zeros = vec![0; CHUNK_BYTES.min(len) as usize];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(CHUNK_BYTES) as usize;
        file.write_all_at(&zeros[..n], offset + done)?;
        done += n as u64;
    }
    Ok(())
}

/// Applies `records` in order to the image `out`: each write's bytes read
/// from the data file `data`, each zeroed range zeroed; flushes and marks
/// change nothing.
///
/// # Examples
///
/// ```
/// use blackout_block::image::{apply, create_sparse};
/// use blackout_block::log::{LiveLog, RecordKind};
/// use std::os::unix::fs::FileExt;
/// let dir = std::env::temp_dir().join(format!("apply-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let log = LiveLog::create(&dir.join("writes.data")).unwrap();
/// log.write(10, b"abc").unwrap();
/// log.flush();
/// let out = create_sparse(&dir.join("img"), 64).unwrap();
/// let data = std::fs::File::open(dir.join("writes.data")).unwrap();
/// apply(&log.snapshot().records, &data, &out).unwrap();
/// let mut b = [0; 3];
/// out.read_exact_at(&mut b, 10).unwrap();
/// assert_eq!(&b, b"abc");
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn apply(records: &[Record], data: &File, out: &File) -> io::Result<()> {
    for r in records {
        match r.kind {
            RecordKind::Write {
                offset,
                len,
                data_at,
            } => copy_range(data, data_at, out, offset, len)?,
            RecordKind::Zero { offset, len } => zero_range(out, offset, len)?,
            RecordKind::Flush | RecordKind::Mark { .. } => {}
        }
    }
    Ok(())
}

/// What rebuilding an image at a log position needs: the records, the data
/// file their writes point into, the device size, and optionally a base —
/// an image already holding the first `base` records — to start from.
///
/// # Examples
///
/// ```
/// use blackout_block::image::Replay;
/// use blackout_block::log::LiveLog;
/// let dir = std::env::temp_dir().join(format!("replay-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let log = LiveLog::create(&dir.join("writes.data")).unwrap();
/// log.write(0, b"one").unwrap();
/// log.write(0, b"two").unwrap();
/// let snapshot = log.snapshot();
/// let replay = Replay {
///     records: &snapshot.records,
///     data: &dir.join("writes.data"),
///     size: 16,
///     base: None,
/// };
/// replay.write_image(1, &dir.join("at1")).unwrap();
/// assert_eq!(&std::fs::read(dir.join("at1")).unwrap()[..3], b"one");
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Replay<'a> {
    /// The log's records.
    pub records: &'a [Record],
    /// The data file write records point into.
    pub data: &'a Path,
    /// The device size in bytes.
    pub size: u64,
    /// `(position, image)`: an image equal to the first `position` records
    /// applied to zeros.
    pub base: Option<(usize, &'a Path)>,
}

impl Replay<'_> {
    /// Writes the device as of `position` (records `0..position` applied)
    /// to the new file `out`: a sparse copy of the base plus the records
    /// after it when `position` is at or past the base, else zeros plus
    /// the records from the start.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use blackout_block::image::Replay;
    /// use std::path::Path;
    /// let replay = Replay { records: &[], data: Path::new("writes.data"), size: 4096, base: None };
    /// replay.write_image(0, Path::new("empty.img")).unwrap();
    /// ```
    pub fn write_image(&self, position: usize, out: &Path) -> io::Result<()> {
        if position > self.records.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "position {position} is past the log's end ({})",
                    self.records.len()
                ),
            ));
        }
        let from = match self.base {
            Some((base, image)) if base <= position => {
                sparse_copy(image, out)?;
                base
            }
            _ => {
                create_sparse(out, self.size)?;
                0
            }
        };
        let out_file = File::options().write(true).open(out)?;
        let data = File::open(self.data)?;
        apply(&self.records[from..position], &data, &out_file)
    }
}

/// The fast replay path: one working image carried forward through the
/// log, copied out at each position asked for — each record applied once
/// however many states are written, where [`Replay::write_image`] applies
/// every record up to each state again.
///
/// # Examples
///
/// ```
/// use blackout_block::image::{Cursor, Replay};
/// use blackout_block::log::LiveLog;
/// let dir = std::env::temp_dir().join(format!("cursor-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let log = LiveLog::create(&dir.join("writes.data")).unwrap();
/// log.write(0, b"one").unwrap();
/// log.write(0, b"two").unwrap();
/// let snapshot = log.snapshot();
/// let replay = Replay { records: &snapshot.records, data: &dir.join("writes.data"), size: 8, base: None };
/// let mut cursor = Cursor::new(replay, &dir.join("work.img")).unwrap();
/// cursor.advance(1).unwrap();
/// cursor.write_image(&dir.join("at1")).unwrap();
/// cursor.advance(2).unwrap();
/// cursor.write_image(&dir.join("at2")).unwrap();
/// assert_eq!(&std::fs::read(dir.join("at1")).unwrap()[..3], b"one");
/// assert_eq!(&std::fs::read(dir.join("at2")).unwrap()[..3], b"two");
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Debug)]
pub struct Cursor<'a> {
    replay: Replay<'a>,
    work: std::path::PathBuf,
    file: File,
    data: File,
    at: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `replay` (its base, or position 0 with no
    /// base), its working image the new file `work`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::image::{Cursor, Replay};
    /// # use std::path::Path;
    /// # let replay = Replay { records: &[], data: Path::new("writes.data"), size: 4096, base: None };
    /// let cursor = Cursor::new(replay, Path::new("work.img"))?;
    /// assert_eq!(cursor.position(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new(replay: Replay<'a>, work: &Path) -> io::Result<Cursor<'a>> {
        let at = match replay.base {
            Some((base, image)) => {
                sparse_copy(image, work)?;
                base
            }
            None => {
                create_sparse(work, replay.size)?;
                0
            }
        };
        Ok(Cursor {
            file: File::options().read(true).write(true).open(work)?,
            data: File::open(replay.data)?,
            work: work.to_path_buf(),
            replay,
            at,
        })
    }

    /// The log position the working image is at.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::image::Cursor;
    /// # fn f(c: &Cursor) {
    /// println!("at {}", c.position());
    /// # }
    /// ```
    pub fn position(&self) -> usize {
        self.at
    }

    /// Applies the records up to `position` (forward only: a position
    /// behind the cursor, or past the log, is refused).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::image::Cursor;
    /// # fn f(c: &mut Cursor) -> std::io::Result<()> {
    /// c.advance(c.position() + 1)?;
    /// # Ok(()) }
    /// ```
    pub fn advance(&mut self, position: usize) -> io::Result<()> {
        if position < self.at || position > self.replay.records.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "cannot move from position {} to {position} (log of {})",
                    self.at,
                    self.replay.records.len()
                ),
            ));
        }
        apply(
            &self.replay.records[self.at..position],
            &self.data,
            &self.file,
        )?;
        self.at = position;
        Ok(())
    }

    /// Writes the working image to the new file `out` (a sparse copy).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use blackout_block::image::Cursor;
    /// # fn f(c: &Cursor) -> std::io::Result<()> {
    /// c.write_image(std::path::Path::new("state.img"))?;
    /// # Ok(()) }
    /// ```
    pub fn write_image(&self, out: &Path) -> io::Result<()> {
        sparse_copy(&self.work, out)
    }
}
