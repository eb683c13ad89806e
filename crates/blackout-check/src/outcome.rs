//! What one checker run said about a state: [`Outcome`], plain data that
//! analysis and reports read without knowing how states are checked.

pub use blackout_oplog::outcome::Outcome;
