//! blackout's engine.
#![deny(missing_docs)]

pub mod contents;
pub mod explore;
pub mod ops;
pub mod record;
pub mod replay;
pub mod state;
pub mod strace;
pub mod trace;
pub mod tree;
