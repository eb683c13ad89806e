//! blackout's block recorder: the foundation of the real-file-system
//! backend.
//!
//! A workload runs on a real ext4, xfs or btrfs whose block device is a
//! loop device on `disk.img`, a file served by this crate's own FUSE
//! daemon from a sparse image. The daemon logs every write, flush and
//! zeroed range in the order it answers them; marks put in from outside
//! (a promise printed) land between them. Any position of the log can be
//! turned back into an image — the base (after mkfs, mount and sync) plus
//! the writes up to that point — and mounted so the file system's own
//! recovery runs. No device-mapper, nbd or kernel module is needed.
//!
//! Modules, each using only those before it: [`log`] (the records, their
//! text form, the live log), [`crash`] (crash points at the base, each
//! flush and each mark), [`image`] (sparse images and replay),
//! [`states`] (each crash point's subsets of the writes in flight, within
//! a bound, and the image of each), [`recording`] (a finished log with its data and base image, replayed
//! with no device left), [`daemon`] (the FUSE file system), [`session`] (image, daemon, loop
//! device, mkfs and mount, taken down on every path), [`mount`] (a
//! state's image mounted through a self-clearing loop device, so recovery
//! runs).
//!
//! ```no_run
//! use blackout_block::session::{DeviceSession, FsKind, SessionConfig};
//! let session = DeviceSession::start(&SessionConfig::new(FsKind::Ext4))?;
//! std::fs::write(session.mount_path().join("f"), b"x").unwrap();
//! session.mark("wrote f");
//! session.sync()?;
//! println!("{}", session.log().to_text());
//! session.close()?;
//! # Ok::<(), blackout_block::session::SessionError>(())
//! ```

#![warn(missing_docs)]

pub mod crash;
pub mod daemon;
pub mod image;
pub mod log;
pub mod mount;
pub mod recording;
pub mod session;
pub mod states;
