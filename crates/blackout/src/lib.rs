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
//!   deduplicated, and a [`explore::state::Materializer`] writes them out;
//! - [`check`]: a [`check::Checker`] judges each distinct state, in
//!   parallel, in scratch directories that are always removed;
//! - [`analysis`]: the cause of each failure, grouped, each fix verified by
//!   re-exploring with the sync added, as plain data;
//! - [`export`]: that data as text or JSON ([`export::Exporter`]).
//!
//! [`run`] drives them in order: promises, the pre-check (the checker must
//! reject the state before the workload), the nothing-lost check (it must
//! accept the state with every op applied), exploration, checking, analysis.
//! Why seams and not one crate: each coming capability (an in-process
//! checker for `cargo test`, a disk-image materializer for real file
//! systems, a recorder that does not stop the process per syscall, JUnit and
//! HTML exporters) is one new piece behind one seam, and a stage cannot
//! reach back into an earlier one: exploration knows nothing of processes,
//! checking draws no verdict, exporters never explore.
//!
//! ```no_run
//! use blackout::record::{RecordConfig, Recorder, StraceRecorder};
//! use blackout::run::{check_trace, RunConfig};
//! use blackout::explore::model::Model;
//!
//! // Record a save, then check every crash state with a shell checker.
//! let command = vec!["/opt/app/save.sh".into(), "full".into()];
//! let recording = StraceRecorder.record(&RecordConfig::new(command)).unwrap();
//! let mut cfg = RunConfig::new("sh /opt/app/check.sh");
//! cfg.models = Model::ALL.to_vec();
//! let report = check_trace(&recording.trace, &cfg).unwrap();
//! println!("{}", report.verdict.name());
//! ```
#![deny(missing_docs)]

pub use blackout_analysis as analysis;
pub use blackout_check as check;
pub use blackout_explore as explore;
pub use blackout_export as export;
pub use blackout_oplog as oplog;
pub use blackout_record as record;
pub use blackout_sys as sys;

pub mod run;
