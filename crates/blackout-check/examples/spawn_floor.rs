//! The floor for checking speed: how many `sh -c true` a Rust process can
//! spawn and wait for per second, with what every checker run needs (its own
//! process group, a working directory, an extra environment variable) and
//! nothing else: no state written, no pidfd, no output captured.
//!
//! `cargo run --release -p blackout-check --example spawn_floor [THREADS]`

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Instant;

fn main() {
    let threads: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let per_thread = 2000;
    let dir = std::env::temp_dir();
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..per_thread {
                    Command::new("/bin/sh")
                        .args(["-c", "true"])
                        .current_dir(&dir)
                        .env("BLACKOUT_STATE", "c0")
                        .stdin(Stdio::null())
                        .process_group(0)
                        .status()
                        .expect("spawn sh");
                }
            });
        }
    });
    let rate = (threads * per_thread) as f64 / start.elapsed().as_secs_f64();
    println!("{threads} threads: {rate:.0} spawns of `sh -c true` per second");
}
