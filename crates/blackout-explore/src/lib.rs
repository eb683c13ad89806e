//! Exploration: which crash states a persistence model allows.
//!
//! A crash happens after op *k* (crash point `k`). A [`enumerate::CrashModel`]
//! says which subsets of the ops still pending at `k` may survive and which
//! writes may be torn; [`enumerate::enumerate`] walks every crash point and
//! yields [`enumerate::StateDesc`]s (what was lost or torn), counting what
//! it did not cover. [`state::FsState::build`] turns a description into
//! the inodes a crash leaves (the checking stage shows them to a checker);
//! [`dedup::distinct_states`] hashes every state ([`keys::Keyer`], along the
//! crash points) and keeps each distinct one once, under its simplest
//! description.
//!
//! Exploration knows nothing of processes, strace or checkers: it is pure
//! and deterministic for a given trace, config and seed.
//!
//! ```
//! use blackout_explore::enumerate::{enumerate, ExploreConfig};
//! use blackout_explore::model::Model;
//! use blackout_oplog::ops::test_ops::write;
//!
//! // Two unsynced writes: under posix each may be lost.
//! let ops = vec![write(1), write(2)];
//! let cfg = ExploreConfig::default();
//! let mut ids = Vec::new();
//! let coverage = enumerate(&ops, Model::Posix.crash_model(), &cfg, |s| ids.push(s.id())).unwrap();
//! assert!(ids.contains(&"c2.lost0+1".to_string()));
//! assert!(coverage.partial_crash_points.is_empty());
//! ```
#![deny(missing_docs)]

pub mod classes;
pub mod dedup;
pub mod enumerate;
pub mod keys;
pub mod model;
pub mod rest;
pub mod state;
