//! tempfile's NamedTempFile: a temporary file made in the directory under
//! test, written, then persisted (renamed) over config.json; "saved" once
//! persist returns.
use std::io::Write;

fn main() {
    let mut f = tempfile::NamedTempFile::new_in(".").expect("new_in");
    f.write_all(b"{\"v\": 2}\n").expect("write");
    f.persist("config.json").expect("persist");
    println!("saved");
}
