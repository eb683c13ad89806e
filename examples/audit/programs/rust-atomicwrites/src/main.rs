//! atomicwrites' AtomicFile: config.json rewritten with AllowOverwrite;
//! "saved" once write returns.
use std::io::Write;

use atomicwrites::{AllowOverwrite, AtomicFile};

fn main() {
    AtomicFile::new("config.json", AllowOverwrite)
        .write(|f| f.write_all(b"{\"v\": 2}\n"))
        .expect("write");
    println!("saved");
}
