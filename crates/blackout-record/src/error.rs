//! Replay errors: what is wrong, the class it falls into, and where.
//!
//! Decoding a call and applying it to the file-system model fail with a
//! [`Fault`]: a [`ReplayErrorKind`] a caller can match and the sentence a
//! user reads. Replay places it at a log line and a system call, making a
//! [`ReplayError`]. The sentences are part of
//! blackout's interface (tests elsewhere compare them), so the kind is kept
//! beside the text, never folded into it.

/// The class of a replay error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReplayErrorKind {
    /// The log is not strace output (a line the parser does not understand).
    Parse,
    /// A replay option is invalid (a `--volatile` glob).
    Options,
    /// A call's arguments are not what strace prints for it (a number that
    /// is not one, a missing argument, a negative size).
    Malformed,
    /// strace cut a string short (its `-s` limit), so the bytes a call used
    /// are not all in the log.
    Truncated,
    /// A call does something blackout does not model (a shared writable
    /// mmap, io_uring, a special file, a reflink, bytes from outside the
    /// directory under test).
    Unmodelable,
    /// The log and the model of the directory under test disagree (a call
    /// succeeded that the model says must fail).
    Divergence,
    /// A call changes the directory under test through an fd whose origin
    /// the log does not show.
    UnknownFd,
    /// A process appears without the clone or fork that created it.
    UnknownProcess,
    /// A call that may have changed the directory under test never completed
    /// or returned no result.
    Unfinished,
    /// The model would grow past its limits (file size, inode count).
    TooLarge,
}

/// Why a call cannot be replayed: its class and the sentence a user reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The class.
    pub kind: ReplayErrorKind,
    /// What is wrong, in one sentence.
    pub message: String,
}

impl Fault {
    /// A fault of `kind` saying `message`.
    pub fn new(kind: ReplayErrorKind, message: impl Into<String>) -> Self {
        Fault {
            kind,
            message: message.into(),
        }
    }

    /// A [`ReplayErrorKind::Malformed`] fault.
    pub fn malformed(message: impl Into<String>) -> Self {
        Fault::new(ReplayErrorKind::Malformed, message)
    }

    /// A [`ReplayErrorKind::Unmodelable`] fault.
    pub fn unmodelable(message: impl Into<String>) -> Self {
        Fault::new(ReplayErrorKind::Unmodelable, message)
    }

    /// A [`ReplayErrorKind::Divergence`] fault.
    pub fn divergence(message: impl Into<String>) -> Self {
        Fault::new(ReplayErrorKind::Divergence, message)
    }

    /// The fault placed at a log line and, when it is about one, a call.
    pub fn at(self, line: u32, syscall: Option<&str>) -> ReplayError {
        ReplayError {
            line,
            syscall: syscall.map(str::to_string),
            kind: self.kind,
            message: self.message,
        }
    }
}

/// A replay error: the log line and call it is about, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayError {
    /// Log line (1-based; 0 for an error about the options).
    pub line: u32,
    /// The system call, when the error is about one.
    pub syscall: Option<String>,
    /// The class of the error.
    pub kind: ReplayErrorKind,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for ReplayError {
    /// `LINE: syscall: message`, always on one line: control characters that
    /// a hostile log put into a path are escaped.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let message = blackout_oplog::ops::escape_controls(&self.message);
        match &self.syscall {
            Some(s) => write!(f, "{}: {}: {}", self.line, s, message),
            None => write!(f, "{}: {}", self.line, message),
        }
    }
}

impl std::error::Error for ReplayError {}
