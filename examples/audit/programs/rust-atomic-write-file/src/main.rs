//! atomic-write-file's AtomicWriteFile: config.json opened, written,
//! committed; "saved" once commit returns.
use std::io::Write;

use atomic_write_file::AtomicWriteFile;

fn main() {
    let mut f = AtomicWriteFile::open("config.json").expect("open");
    f.write_all(b"{\"v\": 2}\n").expect("write");
    f.commit().expect("commit");
    println!("saved");
}
