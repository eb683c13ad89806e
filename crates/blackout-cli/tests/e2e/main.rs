//! End-to-end tests of the `blackout` command: real workloads under real
//! strace, real checkers in real crash-state directories. One test binary
//! (its modules share the helpers in `common`).

mod acks;
mod audit;
mod baseline;
mod block;
mod cli;
mod cluster;
mod common;
mod conformance;
mod distributed;
mod engines;
mod explain;
mod exporters;
mod failsyncs;
mod live;
mod live_disk;
mod materialize;
mod native;
mod outside;
mod recorders;
mod reports;
mod representatives;
mod run;
mod selfcheck;
mod server;
mod shard;
mod sqlite_matrix;
mod syncs;
