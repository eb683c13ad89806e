//! blackout's live file system: a FUSE mount over a backing directory
//! where every change is visible at once (a page cache) and reaches the
//! backing directory only as the posix model says a sync makes it
//! durable; crashes on command keep what the model allows of what is
//! pending (nothing, a seeded subset, a prefix; writes torn at sector
//! boundaries), aimed at the next op matching a call and a path glob.
//!
//! Modules, lowest first: [`pending`] (the pending ops, what each sync
//! covers, what a crash keeps), [`faults`] (what a crash is asked and
//! what it says), [`limits`] (the backing file system's largest file and
//! longest name, the mount's), [`tree`] (real trees read, copied,
//! moved), [`durable`] (the backing directory as a crash leaves it, ops
//! applied to it), [`state`] (the view, requests, syncs, the crash),
//! [`fs`] (the FUSE adapter), [`mount`] (a mount's life: crash and
//! remount, unmount, the victims killed first), [`control`] (the control
//! socket and its client).

pub mod cluster;
pub mod control;
pub mod durable;
pub mod faults;
pub mod fs;
pub mod limits;
pub mod mount;
pub mod pending;
pub mod soak;
pub mod state;
pub mod tree;
