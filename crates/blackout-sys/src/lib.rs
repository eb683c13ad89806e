//! What blackout asks of the operating system: children that lead their own
//! process group and are waited on without polling latency, scratch
//! directories that are always removed (whatever a checker left in them),
//! files of its own written durably (whole or not at all, and kept once
//! written), FUSE file systems served by a thread and stopped on every
//! path, signal names, and the `{dir}` placeholder in commands.
//!
//! Recording and checking both start programs they do not trust; both use
//! [`proc::wait_group`], so a workload's or checker's descendants never
//! outlive the directory blackout is about to remove.
//!
//! ```
//! use blackout_sys::command::substitute;
//! use std::ffi::OsStr;
//! use std::path::Path;
//!
//! let arg = substitute(OsStr::new("cat {dir}/doc.txt"), Path::new("/tmp/s"));
//! assert_eq!(arg, "cat /tmp/s/doc.txt");
//! ```
#![deny(missing_docs)]

pub mod command;
pub mod durable;
pub mod fuse;
pub mod isolate;
pub mod memory;
pub mod proc;
pub mod scratch;
