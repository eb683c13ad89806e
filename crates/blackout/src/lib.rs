//! blackout's engine.
#![deny(missing_docs)]

pub mod check;
pub mod contents;
pub mod explain;
pub mod explore;
pub mod ops;
pub mod proc;
pub mod record;
pub mod replay;
pub mod report;
pub mod run;
pub mod stacks;
pub mod state;
pub mod strace;
pub mod trace;
pub mod tree;
