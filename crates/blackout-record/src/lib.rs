//! Recording: what a program asked of the kernel, as ops.
//!
//! A [`Recorder`] runs a workload in a fresh directory under test and hands
//! back a [`blackout_oplog::trace::Trace`]. [`record::StraceRecorder`] runs
//! it under `strace -f`; [`strace`] parses the log into completed calls,
//! [`decode`] turns each into a typed [`syscall::SyscallEvent`], and
//! [`replay`] applies these to a model of the file system ([`fsmodel`]:
//! inodes, entries, per-process fd tables), which emits the ops that changed
//! the directory under test. [`native::NativeRecorder`] traces the workload
//! itself (ptrace, with a seccomp filter stopping only the calls replay
//! reads) and makes the same events from registers and memory, applied to
//! the same model as they complete: the same ops into the same trace, with
//! no text in between. Nothing after this crate knows how a run was
//! recorded.
//!
//! Replay never does I/O: paths in a log are only looked up in the model, so
//! a hostile log cannot make blackout touch a file outside its memory.
//!
//! ```
//! use blackout_oplog::tree::Tree;
//! use blackout_record::replay::replay;
//!
//! // `printf hi > a` in a directory recorded as /d, as strace -f -xx -y logs it.
//! let log = b"1 openat(AT_FDCWD</d>, \"\\x61\", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3</d/a>\n\
//!             1 write(3</d/a>, \"\\x68\\x69\", 2) = 2\n";
//! let replayed = replay(log, &Tree::default(), b"/d").unwrap();
//! assert_eq!(replayed.ops.len(), 2); // create, write
//! ```
#![deny(missing_docs)]

pub mod decode;
pub mod error;
pub mod fsmodel;
pub mod native;
pub mod omit;
pub mod record;
pub mod replay;
pub mod scenario;
pub mod snapshot;
pub mod stacks;
pub mod strace;
pub mod syscall;
pub mod times;

pub use native::NativeRecorder;
pub use record::{RecordConfig, RecordError, Recording, StraceRecorder};

/// A way of recording a workload into a trace.
///
/// Implementations run the workload described by a [`RecordConfig`] in a
/// fresh directory under test, with `--init`/`--setup` applied first, and
/// return the ops it made there. They must honour the config's cancel flag
/// and leave nothing behind (processes, scratch directories) on any path.
pub trait Recorder {
    /// Records the workload.
    fn record(&self, cfg: &RecordConfig) -> Result<Recording, RecordError>;
}
