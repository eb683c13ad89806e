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
