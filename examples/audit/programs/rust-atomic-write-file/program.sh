# atomic-write-file's AtomicWriteFile: open, write, commit (the new file
# replaces the target); a small Rust binary (Cargo.toml, src/) built
# against the pinned crate.
NAME=atomic-write-file
ECOSYSTEM=crates.io
VERSION=0.3.1
ACTION="AtomicWriteFile::open(\"config.json\"), write, commit() replacing {\"v\": 1} with {\"v\": 2}"
install() { install_crate "$1"; }
# Built with line tables: causes name the source line of the call.
STACKS=1
SETUP='echo "{\"v\": 1}" > config.json'
CHECK=json
# What the program promises, in its own documentation at this release.
PROMISE=durable
PROMISE_QUOTE='Either the new contents of the files are written to the filesystem, or the old contents (if any) are preserved. … This crate is throughly tested to ensure the integrity of the files it creates. In particular, it ships with tests that simulate kernel panics on Linux and check the file contents afterwards.'
PROMISE_LINK='https://crates.io/crates/atomic-write-file/0.3.1'
