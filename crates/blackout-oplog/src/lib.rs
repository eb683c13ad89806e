//! The op log: the hub every stage of blackout reads.
//!
//! A recorder turns what a program asked of the kernel into [`ops::Op`]s
//! that name **inodes**, not paths; a [`trace::Trace`] holds them with the
//! initial tree and their data, self-contained and versioned. Everything
//! after recording works from a trace alone: [`ops::synced_by`] (the forcing
//! rules: which later sync covers each op), [`promises::Outputs`] (which
//! lines of output were promised before each crash point), [`store`] (the
//! inode store and the one `apply` that changes it by an op), [`naming`]
//! (ops in the user's terms) and [`tear`] (what storage may leave of a
//! write a crash lets reach the disk).
//!
//! This crate knows nothing of strace, processes, checkers or persistence
//! models: it is data and the rules that hold for all of them.
//!
//! ```
//! use blackout_oplog::ops::{synced_by, DataRef, Op, OpKind};
//!
//! let op = |kind| Op {
//!     kind,
//!     syscall: "write".into(),
//!     pid: 1,
//!     line: 1,
//!     path: "log".into(),
//!     stack: Vec::new(),
//!     origin: None,
//!     volatile: false,
//! };
//! let ops = vec![
//!     op(OpKind::Write { ino: 1, off: 0, data: DataRef { start: 0, len: 4 } }),
//!     op(OpKind::Fsync { ino: 1, barrier: 1, implied: false }),
//!     op(OpKind::Write { ino: 1, off: 4, data: DataRef { start: 4, len: 4 } }),
//! ];
//! let synced = synced_by(&ops);
//! assert_eq!(synced[0].main, Some(1)); // the fsync covers the first write
//! assert!(!synced[2].synced()); // nothing covers the second
//! ```
#![deny(missing_docs)]

pub mod blob;
pub mod contents;
pub mod naming;
pub mod ops;
pub mod origin;
pub mod outcome;
pub mod promises;
pub mod protocol;
pub mod store;
pub mod tear;
pub mod trace;
pub mod tree;
