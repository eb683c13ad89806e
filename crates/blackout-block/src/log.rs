//! The block log: every write, flush and zeroed range the device received,
//! in the order the daemon answered them, with the marks put in from
//! outside — and its text form.
//!
//! Records are small and kept in memory; the bytes of each write go to an
//! append-only data file beside the image (the record holds where), so the
//! memory a recording takes does not grow with the data written.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Write as _};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// The first line of a block log's text form; the number is the layout's
/// version.
///
/// # Examples
///
/// ```
/// use blackout_block::log::{BlockLog, LOG_HEADER};
/// assert!(BlockLog::default().to_text().starts_with(LOG_HEADER));
/// ```
pub const LOG_HEADER: &str = "blackout-block-log 1";

/// What one record says happened to the device.
///
/// # Examples
///
/// ```
/// use blackout_block::log::RecordKind;
/// let w = RecordKind::Write { offset: 4096, len: 512, data_at: 0 };
/// assert_eq!(w.label(), "write");
/// assert_eq!(RecordKind::Flush.label(), "flush");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordKind {
    /// `len` bytes written at `offset`; the bytes are at `data_at` in the
    /// data file.
    Write {
        /// Byte offset on the device.
        offset: u64,
        /// Number of bytes.
        len: u64,
        /// Where the bytes start in the data file.
        data_at: u64,
    },
    /// A cache flush: the block layer's flush (or a FUA write's), which the
    /// loop device turns into an fsync of its backing file, so FUSE sends an
    /// FSYNC. Everything answered before it is durable.
    Flush,
    /// A range that reads as zeros from now on: a discard or write-zeroes
    /// (FUSE FALLOCATE with punch-hole or zero-range).
    Zero {
        /// Byte offset on the device.
        offset: u64,
        /// Number of bytes.
        len: u64,
    },
    /// A named point put in from outside (a promise printed, a step done).
    Mark {
        /// The mark's name (any text).
        name: String,
    },
}

impl RecordKind {
    /// The kind's name as the text form and reports spell it.
    ///
    /// # Examples
    ///
    /// ```
    /// use blackout_block::log::RecordKind;
    /// assert_eq!(RecordKind::Zero { offset: 0, len: 8 }.label(), "zero");
    /// ```
    pub fn label(&self) -> &'static str {
        match self {
            RecordKind::Write { .. } => "write",
            RecordKind::Flush => "flush",
            RecordKind::Zero { .. } => "zero",
            RecordKind::Mark { .. } => "mark",
        }
    }
}

/// One entry of the block log.
///
/// # Examples
///
/// ```
/// use blackout_block::log::{Record, RecordKind};
/// let r = Record { nanos: 1_000, kind: RecordKind::Flush };
/// assert_eq!(r.kind.label(), "flush");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Monotonic nanoseconds since the log began.
    pub nanos: u64,
    /// What happened.
    pub kind: RecordKind,
}

/// Why a block log's text could not be read.
///
/// # Examples
///
/// ```
/// use blackout_block::log::BlockLog;
/// let err = BlockLog::parse("not a log").unwrap_err();
/// assert_eq!(err.line, 1);
/// ```
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("block log line {line}: {message}")]
pub struct LogError {
    /// The 1-based line that is wrong.
    pub line: usize,
    /// What is wrong with it.
    pub message: String,
}

/// A block log: the records in order. A position in the log is a number of
/// records: position `p` is the device after records `0..p`.
///
/// # Examples
///
/// ```
/// use blackout_block::log::{BlockLog, Record, RecordKind};
/// let log = BlockLog {
///     records: vec![Record { nanos: 5, kind: RecordKind::Flush }],
/// };
/// assert_eq!(BlockLog::parse(&log.to_text()).unwrap(), log);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockLog {
    /// Every record, in the order the daemon answered them.
    pub records: Vec<Record>,
}

impl BlockLog {
    /// The text form: [`LOG_HEADER`], then one line per record —
    /// `W NANOS OFFSET LEN DATA_AT`, `F NANOS`, `Z NANOS OFFSET LEN`,
    /// `M NANOS HEX-NAME` (the name's UTF-8 bytes in hex, so any name fits
    /// on one line).
    ///
    /// # Examples
    ///
    /// ```
    /// use blackout_block::log::{BlockLog, Record, RecordKind};
    /// let log = BlockLog {
    ///     records: vec![Record { nanos: 7, kind: RecordKind::Mark { name: "ok".into() } }],
    /// };
    /// assert_eq!(log.to_text(), "blackout-block-log 1\nM 7 6f6b\n");
    /// ```
    pub fn to_text(&self) -> String {
        let mut out = format!("{LOG_HEADER}\n");
        for r in &self.records {
            let n = r.nanos;
            let _ = match &r.kind {
                RecordKind::Write {
                    offset,
                    len,
                    data_at,
                } => writeln!(out, "W {n} {offset} {len} {data_at}"),
                RecordKind::Flush => writeln!(out, "F {n}"),
                RecordKind::Zero { offset, len } => writeln!(out, "Z {n} {offset} {len}"),
                RecordKind::Mark { name } => writeln!(out, "M {n} {}", hex(name.as_bytes())),
            };
        }
        out
    }

    /// Reads the text form back, refusing anything [`BlockLog::to_text`]
    /// would not write (wrong header, unknown kind, missing or extra fields,
    /// a range past `u64`, a name that is not hex of UTF-8).
    ///
    /// # Examples
    ///
    /// ```
    /// use blackout_block::log::BlockLog;
    /// let log = BlockLog::parse("blackout-block-log 1\nW 1 0 512 0\nF 2\n").unwrap();
    /// assert_eq!(log.records.len(), 2);
    /// assert!(BlockLog::parse("blackout-block-log 1\nQ 1\n").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<BlockLog, LogError> {
        let mut lines = text.lines();
        if lines.next() != Some(LOG_HEADER) {
            return Err(LogError {
                line: 1,
                message: format!("expected the header {LOG_HEADER:?}"),
            });
        }
        let mut records = Vec::new();
        for (i, line) in lines.enumerate() {
            let line_no = i + 2;
            let err = |message: &str| LogError {
                line: line_no,
                message: message.to_string(),
            };
            records.push(parse_record(line).map_err(|m| err(&m))?);
        }
        Ok(BlockLog { records })
    }

    /// Checks that every range lies on a device of `size` bytes and every
    /// write's bytes inside a data file of `data_len` bytes — what a log
    /// read from a file must pass before it is replayed (the daemon never
    /// logs anything else).
    ///
    /// # Examples
    ///
    /// ```
    /// use blackout_block::log::BlockLog;
    /// let log = BlockLog::parse("blackout-block-log 1\nW 1 4096 512 0\n").unwrap();
    /// assert!(log.validate(8192, 512).is_ok());
    /// assert_eq!(log.validate(4096, 512).unwrap_err().line, 2);
    /// assert!(log.validate(8192, 511).is_err());
    /// ```
    pub fn validate(&self, size: u64, data_len: u64) -> Result<(), LogError> {
        for (i, r) in self.records.iter().enumerate() {
            let (offset, len, data) = match r.kind {
                RecordKind::Write {
                    offset,
                    len,
                    data_at,
                } => (offset, len, Some(data_at)),
                RecordKind::Zero { offset, len } => (offset, len, None),
                RecordKind::Flush | RecordKind::Mark { .. } => continue,
            };
            let fail = |message: String| LogError {
                line: i + 2,
                message,
            };
            if offset.checked_add(len).is_none_or(|end| end > size) {
                return Err(fail(format!(
                    "{} of {len} bytes at {offset} is past the device's end ({size})",
                    r.kind.label()
                )));
            }
            if data.is_some_and(|at| at.checked_add(len).is_none_or(|end| end > data_len)) {
                return Err(fail(format!(
                    "write's bytes are past the data file's end ({data_len})"
                )));
            }
        }
        Ok(())
    }

    /// The marks before log position `position`, in order: the lines the
    /// workload printed by then.
    ///
    /// ```
    /// use blackout_block::log::{BlockLog, Record, RecordKind};
    /// let r = |kind| Record { nanos: 0, kind };
    /// let mark = |name: &str| RecordKind::Mark { name: name.into() };
    /// let log = BlockLog { records: vec![r(mark("a")), r(RecordKind::Flush), r(mark("b"))] };
    /// assert_eq!(log.marks_before(2).collect::<Vec<_>>(), ["a"]);
    /// assert_eq!(log.marks_before(9).count(), 2);
    /// ```
    pub fn marks_before(&self, position: usize) -> impl Iterator<Item = &str> {
        self.records[..position.min(self.records.len())]
            .iter()
            .filter_map(|r| match &r.kind {
                RecordKind::Mark { name } => Some(name.as_str()),
                _ => None,
            })
    }

    /// Positions just after each flush and each mark, in order: where a
    /// crash may be placed without cutting between writes the block layer
    /// ordered.
    ///
    /// # Examples
    ///
    /// ```
    /// use blackout_block::log::{BlockLog, Record, RecordKind};
    /// let r = |kind| Record { nanos: 0, kind };
    /// let log = BlockLog {
    ///     records: vec![
    ///         r(RecordKind::Write { offset: 0, len: 1, data_at: 0 }),
    ///         r(RecordKind::Flush),
    ///         r(RecordKind::Mark { name: "saved".into() }),
    ///     ],
    /// };
    /// assert_eq!(log.barrier_positions(0), vec![2, 3]);
    /// ```
    pub fn barrier_positions(&self, from: usize) -> Vec<usize> {
        self.records
            .iter()
            .enumerate()
            .skip(from)
            .filter(|(_, r)| matches!(r.kind, RecordKind::Flush | RecordKind::Mark { .. }))
            .map(|(i, _)| i + 1)
            .collect()
    }
}

fn parse_record(line: &str) -> Result<Record, String> {
    let fields: Vec<&str> = line.split(' ').collect();
    let num = |i: usize| -> Result<u64, String> {
        let f = fields.get(i).ok_or("missing field")?;
        f.parse::<u64>().map_err(|_| format!("not a number: {f:?}"))
    };
    let want = |n: usize| -> Result<(), String> {
        if fields.len() == n {
            Ok(())
        } else {
            Err(format!("expected {n} fields, found {}", fields.len()))
        }
    };
    let nanos = num(1)?;
    let kind = match fields[0] {
        "W" => {
            want(5)?;
            let (offset, len, data_at) = (num(2)?, num(3)?, num(4)?);
            if offset.checked_add(len).is_none() || data_at.checked_add(len).is_none() {
                return Err("range past the largest offset".into());
            }
            RecordKind::Write {
                offset,
                len,
                data_at,
            }
        }
        "F" => {
            want(2)?;
            RecordKind::Flush
        }
        "Z" => {
            want(4)?;
            let (offset, len) = (num(2)?, num(3)?);
            if offset.checked_add(len).is_none() {
                return Err("range past the largest offset".into());
            }
            RecordKind::Zero { offset, len }
        }
        "M" => {
            want(3)?;
            let bytes = unhex(fields[2]).ok_or("mark name is not hex")?;
            let name = String::from_utf8(bytes).map_err(|_| "mark name is not UTF-8")?;
            RecordKind::Mark { name }
        }
        other => return Err(format!("unknown record kind {other:?}")),
    };
    Ok(Record { nanos, kind })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// The log being written: shared by the daemon (writes, flushes, zeroed
/// ranges) and the session (marks), so a mark lands exactly between the
/// records answered before and after it. Cloning shares the same log.
///
/// # Examples
///
/// ```
/// use blackout_block::log::{LiveLog, RecordKind};
/// let dir = std::env::temp_dir().join(format!("live-log-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let log = LiveLog::create(&dir.join("writes.data")).unwrap();
/// log.write(0, b"hello").unwrap();
/// assert_eq!(log.mark("after hello"), 2);
/// log.flush();
/// assert_eq!(log.snapshot().records[2].kind, RecordKind::Flush);
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct LiveLog {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug)]
struct Inner {
    start: Instant,
    /// `start` in seconds since the epoch (the clock strace's `-ttt` uses).
    start_unix: f64,
    records: Vec<Record>,
    data: File,
    data_len: u64,
}

impl LiveLog {
    /// A new, empty log whose write data goes to `data_path` (created,
    /// must not exist).
    ///
    /// # Examples
    ///
    /// ```
    /// use blackout_block::log::LiveLog;
    /// let path = std::env::temp_dir().join(format!("live-log-create-{}", std::process::id()));
    /// let log = LiveLog::create(&path).unwrap();
    /// assert_eq!(log.position(), 0);
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn create(data_path: &Path) -> io::Result<LiveLog> {
        let data = File::options()
            .read(true)
            .append(true)
            .create_new(true)
            .open(data_path)?;
        Ok(LiveLog {
            inner: Arc::new(Mutex::new(Inner {
                start: Instant::now(),
                start_unix: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0.0, |d| d.as_secs_f64()),
                records: Vec::new(),
                data,
                data_len: 0,
            })),
        })
    }

    /// When the log began, in seconds since the epoch: a record happened at
    /// this plus its `nanos` (to within the clocks' drift over a run).
    pub fn started_unix(&self) -> f64 {
        self.lock().start_unix
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic elsewhere never leaves a half-pushed record: keep going.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Logs a write of `data` at `offset` (its bytes appended to the data
    /// file first). Returns the record's index.
    ///
    /// # Examples
    ///
    /// ```
    /// # use blackout_block::log::LiveLog;
    /// # let path = std::env::temp_dir().join(format!("live-log-write-{}", std::process::id()));
    /// let log = LiveLog::create(&path).unwrap();
    /// assert_eq!(log.write(512, &[1; 512]).unwrap(), 0);
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn write(&self, offset: u64, data: &[u8]) -> io::Result<usize> {
        let mut inner = self.lock();
        inner.data.write_all(data)?;
        let data_at = inner.data_len;
        inner.data_len += data.len() as u64;
        let kind = RecordKind::Write {
            offset,
            len: data.len() as u64,
            data_at,
        };
        Ok(inner.push(kind))
    }

    /// Logs a flush. Returns the record's index.
    ///
    /// # Examples
    ///
    /// ```
    /// # use blackout_block::log::LiveLog;
    /// # let path = std::env::temp_dir().join(format!("live-log-flush-{}", std::process::id()));
    /// let log = LiveLog::create(&path).unwrap();
    /// assert_eq!(log.flush(), 0);
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn flush(&self) -> usize {
        self.lock().push(RecordKind::Flush)
    }

    /// Logs `len` bytes at `offset` zeroed. Returns the record's index.
    ///
    /// # Examples
    ///
    /// ```
    /// # use blackout_block::log::LiveLog;
    /// # let path = std::env::temp_dir().join(format!("live-log-zero-{}", std::process::id()));
    /// let log = LiveLog::create(&path).unwrap();
    /// assert_eq!(log.zero(0, 1 << 20), 0);
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn zero(&self, offset: u64, len: u64) -> usize {
        self.lock().push(RecordKind::Zero { offset, len })
    }

    /// Appends a mark named `name` at the current position and returns the
    /// position just after it.
    ///
    /// # Examples
    ///
    /// ```
    /// # use blackout_block::log::LiveLog;
    /// # let path = std::env::temp_dir().join(format!("live-log-mark-{}", std::process::id()));
    /// let log = LiveLog::create(&path).unwrap();
    /// assert_eq!(log.mark("start"), 1);
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn mark(&self, name: &str) -> usize {
        let name = name.to_string();
        self.lock().push(RecordKind::Mark { name }) + 1
    }

    /// The number of records so far: the current position.
    ///
    /// # Examples
    ///
    /// ```
    /// # use blackout_block::log::LiveLog;
    /// # let path = std::env::temp_dir().join(format!("live-log-pos-{}", std::process::id()));
    /// let log = LiveLog::create(&path).unwrap();
    /// log.flush();
    /// assert_eq!(log.position(), 1);
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn position(&self) -> usize {
        self.lock().records.len()
    }

    /// A copy of the records so far.
    ///
    /// # Examples
    ///
    /// ```
    /// # use blackout_block::log::LiveLog;
    /// # let path = std::env::temp_dir().join(format!("live-log-snap-{}", std::process::id()));
    /// let log = LiveLog::create(&path).unwrap();
    /// log.flush();
    /// assert_eq!(log.snapshot().records.len(), 1);
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn snapshot(&self) -> BlockLog {
        BlockLog {
            records: self.lock().records.clone(),
        }
    }

    /// Reads `buf.len()` bytes of the data file at `at` (a write record's
    /// `data_at`).
    ///
    /// # Examples
    ///
    /// ```
    /// # use blackout_block::log::LiveLog;
    /// # let path = std::env::temp_dir().join(format!("live-log-read-{}", std::process::id()));
    /// let log = LiveLog::create(&path).unwrap();
    /// log.write(0, b"abc").unwrap();
    /// let mut buf = [0; 3];
    /// log.read_data(0, &mut buf).unwrap();
    /// assert_eq!(&buf, b"abc");
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn read_data(&self, at: u64, buf: &mut [u8]) -> io::Result<()> {
        let data = self.lock().data.try_clone()?;
        data.read_exact_at(buf, at)
    }
}

impl Inner {
    fn push(&mut self, kind: RecordKind) -> usize {
        let nanos = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.records.push(Record { nanos, kind });
        self.records.len() - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_flushes_zeroes_and_marks_round_trip() {
        let dir = std::env::temp_dir().join(format!("block-log-rt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let data = dir.join("writes.data");
        let _ = std::fs::remove_file(&data);
        let live = LiveLog::create(&data).unwrap();
        live.write(4096, b"first").unwrap();
        live.zero(0, 1 << 20);
        live.mark("saved: doc.txt\nwith a newline and ünïcode");
        live.write(0, b"second").unwrap();
        live.flush();
        let log = live.snapshot();
        let kinds: Vec<&str> = log.records.iter().map(|r| r.kind.label()).collect();
        assert_eq!(kinds, ["write", "zero", "mark", "write", "flush"]);
        assert!(log.records.windows(2).all(|w| w[0].nanos <= w[1].nanos));
        let text = log.to_text();
        assert_eq!(text.lines().count(), 6, "{text}");
        assert_eq!(BlockLog::parse(&text).unwrap(), log);
        // The second write's bytes follow the first's in the data file.
        let RecordKind::Write { data_at, len, .. } = log.records[3].kind else {
            panic!("not a write");
        };
        assert_eq!((data_at, len), (5, 6));
        let mut buf = vec![0; 6];
        live.read_data(data_at, &mut buf).unwrap();
        assert_eq!(buf, b"second");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn parse_refuses_what_to_text_never_writes() {
        for bad in [
            "",
            "blackout-block-log 2\n",
            "blackout-block-log 1\nW 1 2 3\n",
            "blackout-block-log 1\nF 1 2\n",
            "blackout-block-log 1\nZ 1 18446744073709551615 2\n",
            "blackout-block-log 1\nM 1 6\n",
            "blackout-block-log 1\nM 1 ff\n",
            "blackout-block-log 1\nX 1\n",
            "blackout-block-log 1\nF -1\n",
        ] {
            assert!(BlockLog::parse(bad).is_err(), "{bad:?}");
        }
        let err = BlockLog::parse("blackout-block-log 1\nF 1\nQ 2\n").unwrap_err();
        assert_eq!(err.line, 3);
    }

    #[test]
    fn mangled_logs_are_refused_or_validated_never_a_panic() {
        let good =
            "blackout-block-log 1\nW 1 0 512 0\nZ 2 512 512\nF 3\nM 4 6f6b\nW 5 1024 8 512\n";
        assert!(BlockLog::parse(good).unwrap().validate(2048, 520).is_ok());
        // Every single-byte change and every cut: an error or a log that
        // validates or is refused by validate, never a panic.
        let bytes = good.as_bytes();
        let mut seen = 0;
        for i in 0..bytes.len() {
            for b in [b' ', b'0', b'9', b'W', b'\n', b'-', 0xff] {
                let mut m = bytes.to_vec();
                m[i] = b;
                if let Ok(text) = std::str::from_utf8(&m) {
                    if let Ok(log) = BlockLog::parse(text) {
                        let _ = log.validate(2048, 520);
                        seen += 1;
                    }
                }
            }
            if let Ok(log) = BlockLog::parse(&good[..i]) {
                let _ = log.validate(2048, 520);
            }
        }
        assert!(seen > 0);
        let far = "blackout-block-log 1\nZ 1 18446744073709551000 10\n";
        assert!(BlockLog::parse(far).unwrap().validate(u64::MAX, 0).is_ok());
        assert!(BlockLog::parse(far).unwrap().validate(4096, 0).is_err());
    }
}
