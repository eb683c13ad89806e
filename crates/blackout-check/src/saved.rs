//! A block recording in one file: written by `run --backend block -o FILE`,
//! checked again by `run --backend block --trace FILE` without running the
//! workload (on another machine, with another checker, in shards).
//!
//! The file is the line `blackout-block-recording 1`, then sections, each a
//! line `NAME LENGTH` followed by that many bytes and a newline, in this
//! order: `meta` (JSON: the file system, the device's size, the base, end
//! and exit positions in the log, `--settle`, when the log began, when each
//! call returned), `trace` (the syscall trace, as a trace file),
//! `output` and `stderr` (what the workload printed), `log` (the block
//! log's text form), `data` (the bytes of its writes); then one `extent
//! OFFSET LENGTH` section per data extent of the base image (the rest of it
//! reads as zeros), and the line `end`.
//!
//! A saved recording is hostile input: every length is checked against
//! what is left of the file before anything is read or allocated, the log
//! against the device and the data ([`BlockLog::validate`]), the positions
//! against the log, the extents against the device, and the trace as any
//! trace file is.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use blackout_block::image::{create_sparse, data_extents};
use blackout_block::log::BlockLog;
use blackout_block::recording::{DeviceRecording, BASE_FILE, DATA_FILE};
use blackout_block::session::FsKind;
use blackout_oplog::trace::Trace;

/// What recording a workload on a real file system left.
#[derive(Debug)]
pub struct BlockRecording {
    /// The file system.
    pub fs: FsKind,
    /// The syscall trace (its directory is where the file system was
    /// mounted).
    pub trace: Trace,
    /// The block log, its data and the base image (removed when dropped).
    pub device: DeviceRecording,
    /// The log position the exploration ends at: the workload's exit, or
    /// the end of `--settle`.
    pub end: usize,
    /// The log position when the workload exited.
    pub exited: usize,
    /// How long the file system was kept up after the workload
    /// (`--settle`): only crash points at least this long after the last
    /// promise are checked.
    pub settle: Option<Duration>,
    /// When the block log began, in seconds since the epoch.
    pub started_unix: f64,
    /// Each op's log line mapped to when its call returned (seconds since
    /// the epoch).
    pub returned: HashMap<u32, f64>,
    /// What the workload printed.
    pub output: Vec<u8>,
    /// What it wrote to its standard output when its promises went to an
    /// fd of their own (`RecordConfig::output_fd`: a test harness's text);
    /// empty otherwise, and in a saved recording.
    pub stdout: Vec<u8>,
    /// What it wrote to stderr (the tail shown when it failed).
    pub stderr: Vec<u8>,
}

/// What a saved block recording's first line starts with.
pub const SAVED_MAGIC: &str = "blackout-block-recording";

/// The layout version this blackout writes and reads.
pub const SAVED_VERSION: u32 = 1;

/// The largest device a saved recording may describe (its base image is
/// made as a sparse file of this size).
pub const SAVED_DEVICE_BYTES_MAX: u64 = 1 << 40;

/// The longest section line (`extent OFFSET LENGTH`) read.
const SECTION_LINE_MAX: usize = 128;

/// Bytes copied at a time.
const CHUNK_BYTES: usize = 1 << 20;

/// Why a saved recording could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SavedError {
    /// Reading or writing failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// Not a saved block recording, or a damaged one.
    #[error("not a valid block recording: {0}")]
    Invalid(String),
}

fn invalid(msg: impl Into<String>) -> SavedError {
    SavedError::Invalid(msg.into())
}

/// The `meta` section.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta {
    fs: String,
    size: u64,
    base: usize,
    end: usize,
    exited: usize,
    settle: Option<f64>,
    started_unix: f64,
    returned: Vec<(u32, f64)>,
}

/// Counts what is written through it.
struct Counted(u64);

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Whether `path` starts like a saved block recording.
///
/// # Examples
///
/// ```
/// let path = std::env::temp_dir().join(format!("saved-doc-{}", std::process::id()));
/// std::fs::write(&path, "blackout-trace 3\n").unwrap();
/// assert!(!blackout_check::saved::is_saved_recording(&path));
/// std::fs::remove_file(&path).unwrap();
/// ```
pub fn is_saved_recording(path: &Path) -> bool {
    let mut head = [0; SAVED_MAGIC.len()];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == SAVED_MAGIC.as_bytes())
}

impl BlockRecording {
    /// Writes the recording to `path` durably
    /// ([`blackout_sys::durable::write_durably`]): a failed write or a power
    /// cut leaves the old file or the new one whole, never half of one.
    ///
    /// # Errors
    ///
    /// I/O on `path`'s directory or the recording's own files.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        blackout_sys::durable::write_durably(path, 0o644, |w| self.write_to(w))
    }

    fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        writeln!(w, "{SAVED_MAGIC} {SAVED_VERSION}")?;
        let mut returned: Vec<(u32, f64)> = self.returned.iter().map(|(&l, &t)| (l, t)).collect();
        returned.sort_by_key(|&(l, _)| l);
        let meta = Meta {
            fs: self.fs.name().to_string(),
            size: self.device.size(),
            base: self.device.base(),
            end: self.end,
            exited: self.exited,
            settle: self.settle.map(|d| d.as_secs_f64()),
            started_unix: self.started_unix,
            returned,
        };
        section(w, "meta", &serde_json::to_vec(&meta)?)?;
        let mut counted = Counted(0);
        self.trace.write_to(&mut counted)?;
        writeln!(w, "trace {}", counted.0)?;
        self.trace.write_to(&mut *w)?;
        w.write_all(b"\n")?;
        section(w, "output", &self.output)?;
        section(w, "stderr", &self.stderr)?;
        section(w, "log", self.device.log().to_text().as_bytes())?;
        let mut data = File::open(self.device.dir().join(DATA_FILE))?;
        writeln!(w, "data {}", data.metadata()?.len())?;
        io::copy(&mut data, w)?;
        w.write_all(b"\n")?;
        let base = File::open(self.device.dir().join(BASE_FILE))?;
        let mut buf = vec![0; CHUNK_BYTES];
        for (at, len) in data_extents(&base)? {
            writeln!(w, "extent {at} {len}")?;
            let mut done = 0;
            while done < len {
                let n = (len - done).min(CHUNK_BYTES as u64) as usize;
                base.read_exact_at(&mut buf[..n], at + done)?;
                w.write_all(&buf[..n])?;
                done += n as u64;
            }
            w.write_all(b"\n")?;
        }
        w.write_all(b"end\n")
    }

    /// Reads a saved recording; its log's data and base image go to a new
    /// directory under `scratch_parent`, removed when the recording is
    /// dropped.
    ///
    /// # Errors
    ///
    /// I/O, or [`SavedError::Invalid`] saying what is wrong with the file.
    pub fn load(path: &Path, scratch_parent: &Path) -> Result<BlockRecording, SavedError> {
        let file = File::open(path)?;
        let left = file.metadata()?.len();
        let dir = tempfile::Builder::new()
            .prefix("blackout-recording-")
            .tempdir_in(scratch_parent)?;
        blackout_sys::scratch::mark_owned(dir.path())?;
        let mut r = Reader {
            r: BufReader::new(file),
            left,
        };
        let loaded = r.recording(dir.path())?;
        let (meta, trace, output, stderr, log) = loaded;
        let fs: FsKind = meta.fs.parse().map_err(invalid)?;
        let device = DeviceRecording::new(dir.keep(), log, meta.base, meta.size);
        Ok(BlockRecording {
            fs,
            trace,
            device,
            end: meta.end,
            exited: meta.exited,
            settle: meta.settle.map(Duration::from_secs_f64),
            started_unix: meta.started_unix,
            returned: meta.returned.into_iter().collect::<HashMap<_, _>>(),
            output,
            stdout: Vec::new(),
            stderr,
        })
    }
}

/// Reads the syscall trace of a saved recording alone (for the commands
/// that rebuild one state from it: `state`, `explain`, `ops`).
///
/// # Errors
///
/// I/O, or [`SavedError::Invalid`] saying what is wrong with the file.
pub fn load_trace_of(path: &Path) -> Result<Trace, SavedError> {
    let file = File::open(path)?;
    let left = file.metadata()?.len();
    let mut r = Reader {
        r: BufReader::new(file),
        left,
    };
    r.magic()?;
    let meta = r.section("meta")?;
    r.skip(meta)?;
    let n = r.section("trace")?;
    let bytes = r.bytes(n)?;
    Trace::read(&bytes).map_err(|e| invalid(format!("its trace: {e}")))
}

/// One section: its line, its bytes, a newline.
fn section(w: &mut impl Write, name: &str, bytes: &[u8]) -> io::Result<()> {
    writeln!(w, "{name} {}", bytes.len())?;
    w.write_all(bytes)?;
    w.write_all(b"\n")
}

/// The sections read from a saved recording.
type Loaded = (Meta, Trace, Vec<u8>, Vec<u8>, BlockLog);

/// A saved recording being read, with how many of its bytes are left.
struct Reader {
    r: BufReader<File>,
    left: u64,
}

impl Reader {
    /// Every section, the data and base image written into `dir`.
    fn recording(&mut self, dir: &Path) -> Result<Loaded, SavedError> {
        self.magic()?;
        let n = self.section("meta")?;
        let meta: Meta = serde_json::from_slice(&self.bytes(n)?)
            .map_err(|e| invalid(format!("its meta section: {e}")))?;
        if meta.size > SAVED_DEVICE_BYTES_MAX {
            return Err(invalid(format!(
                "a device of {} bytes (at most {SAVED_DEVICE_BYTES_MAX})",
                meta.size
            )));
        }
        let n = self.section("trace")?;
        let trace_path = dir.join("trace");
        self.copy_to(n, &mut File::create(&trace_path)?)?;
        let trace = Trace::load(&trace_path).map_err(|e| invalid(format!("its trace: {e}")))?;
        let n = self.section("output")?;
        let output = self.bytes(n)?;
        let n = self.section("stderr")?;
        let stderr = self.bytes(n)?;
        let n = self.section("log")?;
        let text =
            String::from_utf8(self.bytes(n)?).map_err(|_| invalid("its block log is not UTF-8"))?;
        let log = BlockLog::parse(&text).map_err(|e| invalid(format!("its block log: {e}")))?;
        let n = self.section("data")?;
        self.copy_to(n, &mut File::create(dir.join(DATA_FILE))?)?;
        log.validate(meta.size, n)
            .map_err(|e| invalid(format!("its block log: {e}")))?;
        let records = log.records.len();
        if !(meta.base <= meta.exited && meta.exited <= meta.end && meta.end <= records) {
            return Err(invalid(format!(
                "positions base {}, exit {}, end {} do not fit a log of {records} records",
                meta.base, meta.exited, meta.end
            )));
        }
        self.base_image(&dir.join(BASE_FILE), meta.size)?;
        Ok((meta, trace, output, stderr, log))
    }

    /// The base image from the `extent` sections, up to `end`.
    fn base_image(&mut self, path: &Path, size: u64) -> Result<(), SavedError> {
        let image = create_sparse(path, size)?;
        let mut from = 0;
        let mut buf = vec![0; CHUNK_BYTES];
        loop {
            let line = self.line()?;
            if line == "end" {
                break;
            }
            let extent = line
                .strip_prefix("extent ")
                .and_then(|rest| rest.split_once(' '))
                .and_then(|(a, l)| Some((a.parse::<u64>().ok()?, l.parse::<u64>().ok()?)));
            let Some((at, len)) = extent else {
                return Err(invalid(format!(
                    "expected `extent OFFSET LENGTH` or `end`, found `{line}`"
                )));
            };
            if at < from || at.checked_add(len).is_none_or(|e| e > size) {
                return Err(invalid(format!(
                    "the base image's extent of {len} bytes at {at} overlaps the one before or passes the device's end ({size})"
                )));
            }
            self.take(len)?;
            let mut done = 0;
            while done < len {
                let n = (len - done).min(CHUNK_BYTES as u64) as usize;
                self.r.read_exact(&mut buf[..n])?;
                image.write_all_at(&buf[..n], at + done)?;
                done += n as u64;
            }
            self.newline()?;
            from = at + len;
        }
        if self.left != 0 {
            return Err(invalid(format!("{} bytes after `end`", self.left)));
        }
        Ok(())
    }

    /// The first line: the magic and a version this blackout reads.
    fn magic(&mut self) -> Result<(), SavedError> {
        let line = self.line()?;
        let version = line
            .strip_prefix(SAVED_MAGIC)
            .and_then(|v| v.trim().parse::<u32>().ok())
            .ok_or_else(|| invalid(format!("it does not start with `{SAVED_MAGIC}`")))?;
        if version != SAVED_VERSION {
            return Err(invalid(format!(
                "format version {version}; this blackout reads version {SAVED_VERSION}"
            )));
        }
        Ok(())
    }

    /// A section line `NAME LENGTH`: its length, which the file must hold.
    fn section(&mut self, name: &str) -> Result<u64, SavedError> {
        let line = self.line()?;
        let n = line
            .strip_prefix(name)
            .and_then(|rest| rest.strip_prefix(' '))
            .and_then(|n| n.parse::<u64>().ok())
            .ok_or_else(|| {
                invalid(format!(
                    "expected the section `{name} LENGTH`, found `{line}`"
                ))
            })?;
        if n >= self.left {
            return Err(invalid(format!(
                "its {name} section says {n} bytes; {} are left in the file",
                self.left
            )));
        }
        Ok(n)
    }

    /// One line (without its newline), at most [`SECTION_LINE_MAX`] bytes.
    fn line(&mut self) -> Result<String, SavedError> {
        let mut line = Vec::new();
        (&mut self.r)
            .take(SECTION_LINE_MAX as u64 + 1)
            .read_until(b'\n', &mut line)?;
        self.take(line.len() as u64)?;
        if line.pop() != Some(b'\n') {
            return Err(invalid("a section line is cut short or too long"));
        }
        String::from_utf8(line).map_err(|_| invalid("a section line is not UTF-8"))
    }

    /// `n` bytes of a section and its newline, in memory.
    fn bytes(&mut self, n: u64) -> Result<Vec<u8>, SavedError> {
        self.take(n)?;
        let mut out = vec![0; usize::try_from(n).map_err(|_| invalid("a section too large"))?];
        self.r.read_exact(&mut out)?;
        self.newline()?;
        Ok(out)
    }

    /// `n` bytes of a section and its newline, skipped.
    fn skip(&mut self, n: u64) -> Result<(), SavedError> {
        self.take(n)?;
        io::copy(&mut (&mut self.r).take(n), &mut io::sink())?;
        self.newline()
    }

    /// `n` bytes of a section and its newline, written to `out`.
    fn copy_to(&mut self, n: u64, out: &mut File) -> Result<(), SavedError> {
        self.take(n)?;
        let copied = io::copy(&mut (&mut self.r).take(n), out)?;
        if copied != n {
            return Err(invalid("the file is cut short"));
        }
        self.newline()
    }

    fn newline(&mut self) -> Result<(), SavedError> {
        self.take(1)?;
        let mut b = [0];
        self.r.read_exact(&mut b)?;
        if b != *b"\n" {
            return Err(invalid("a section is longer than its line says"));
        }
        Ok(())
    }

    /// Counts `n` bytes as read; the file must hold them.
    fn take(&mut self, n: u64) -> Result<(), SavedError> {
        self.left = self
            .left
            .checked_sub(n)
            .ok_or_else(|| invalid("the file is cut short"))?;
        Ok(())
    }
}
