//! blackout's engine.
#![deny(missing_docs)]

pub mod ops;
pub mod replay;
pub mod strace;
pub mod tree;
pub mod record;
pub mod trace;
