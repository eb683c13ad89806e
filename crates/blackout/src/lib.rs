//! blackout: crash-consistency testing for storage code.
//!
//! A program that promises "saved" must keep that promise through a power
//! failure at any moment. blackout records what the program really asks of
//! the kernel, builds every disk state a crash could leave, runs the
//! program's own recovery and checker on each, and says which promise broke,
//! which lost operation broke it, and which added sync makes it hold.
//!
//! The pipeline is a row of crates, data flowing one way, each meeting the
//! next at a small seam:
//!
//! ```text
//! record ──▶ oplog ──▶ explore ──▶ check ──▶ analysis ──▶ export
//! Recorder   Trace     CrashModel  Checker   RunReport    Exporter
//!                      Materializer
//! ```
//!
//! - [`record`]: a [`record::Recorder`] runs the workload and turns its
//!   system calls into ops that name inodes (today under strace);
//! - [`oplog`]: the hub every stage reads: ops, the forcing rules, the
//!   trace file, promises, ops in the user's terms;
//! - [`explore`]: persistence models ([`explore::model::CrashModel`]) say
//!   which states a crash may leave; states are built, hashed and
//!   deduplicated, and a [`check::materialize::Materializer`] writes them out;
//! - [`check`]: a [`check::Checker`] judges each distinct state, in
//!   parallel, in scratch directories that are always removed;
//! - [`analysis`]: the cause of each failure, grouped, each fix verified by
//!   re-exploring with the sync added, and the verdict in words, as plain
//!   data; the states it needs checked it asks of the pool through
//!   [`analysis::Ask`] ([`sweep::PoolAsk`]), never running a checker itself;
//! - [`export`]: that data as text or JSON ([`export::Exporter`]).
//!
//! [`run`] drives them in order, and computes nothing itself: a run's
//! steps are analysis's ([`analysis::steps`]: promises, the pre-check (the
//! checker must reject the state before the workload), the nothing-lost
//! check (it must accept the state with every op applied), exploration,
//! checking, analysis, then fix verification), the run's pool answering
//! what they ask ([`sweep::PoolAsk`]).
//! [`shard`] splits a run across machines: each shard explores everything
//! and checks the distinct states whose content key falls in its share
//! ([`sharded::check_shard`]), and [`sharded::merge_parts`] turns every shard's
//! part into the report one run would have made.
//! [`scenario`] runs all of it inside `cargo test`: a [`Scenario`]'s
//! workload closure is recorded in a re-executed copy of the test, and its
//! check closure judges each crash state in-process.
//! [`baseline`] is a ratchet for CI: [`assert_no_worse_than`] compares
//! scenario reports (and `blackout run --baseline` one run) with a
//! recorded baseline of verdicts and cause kinds, and fails on anything
//! worse.
//! Why seams and not one crate: each coming capability (an in-process
//! checker for `cargo test`, a disk-image materializer for real file
//! systems, a recorder that does not stop the process per syscall, JUnit and
//! HTML exporters) is one new piece behind one seam, and a stage cannot
//! reach back into an earlier one: exploration knows nothing of processes,
//! checking draws no verdict, exporters never explore.
//!
//! A whole run on a recording, with a shell checker:
//!
//! ```
//! use blackout::analysis::report::Verdict;
//! use blackout::oplog::trace::{Trace, TraceMeta};
//! use blackout::oplog::tree::Tree;
//! use blackout::record::replay::replay;
//! use blackout::run::{check_trace, RunConfig};
//!
//! // A program that creates `a`, writes "hi" and prints "saved" without
//! // any fsync, as `strace -f -xx -y` logged it in a directory `/d`.
//! let log = b"1 openat(AT_FDCWD</d>, \"\\x61\", O_WRONLY|O_CREAT, 0644) = 3</d/a>\n\
//!             1 write(3</d/a>, \"\\x68\\x69\", 2) = 2\n\
//!             1 write(1, \"\\x73\\x61\\x76\\x65\\x64\\x0a\", 6) = 6\n";
//! let tree = Tree::default();
//! let trace = Trace::new(&tree, replay(log, &tree, b"/d").unwrap(), TraceMeta::default());
//! // The checker: once "saved" was promised, `a` must hold "hi".
//! let checker = r#"! grep -qx saved "$BLACKOUT_ACKS_FILE" || [ "$(cat a 2>/dev/null)" = hi ]"#;
//! let report = check_trace(&trace, &RunConfig::new(checker)).unwrap();
//! // Under posix the create and the write may both be lost after "saved".
//! assert_eq!(report.verdict, Verdict::Fail);
//! ```
//!
//! Recording a live workload instead (it needs strace):
//!
//! ```no_run
//! use blackout::record::{RecordConfig, Recorder, StraceRecorder};
//!
//! let command = vec!["/opt/app/save.sh".into(), "full".into()];
//! let recording = StraceRecorder::default().record(&RecordConfig::new(command)).unwrap();
//! println!("{} ops", recording.trace.ops.len());
//! ```
#![deny(missing_docs)]

pub use blackout_analysis as analysis;
pub use blackout_block as block_device;
pub use blackout_check as check;
pub use blackout_explore as explore;
pub use blackout_export as export;
pub use blackout_live as live;
pub use blackout_oplog as oplog;
pub use blackout_record as record;
pub use blackout_sys as sys;

/// Sharded runs' parts and shares (the checking crate's).
pub use blackout_check::shard;

pub mod baseline;
pub mod block;
pub mod failsyncs;
pub mod run;
pub mod scenario;
pub mod sharded;
pub mod sweep;

pub use baseline::assert_no_worse_than;
pub use scenario::{Promises, Report, Scenario};
