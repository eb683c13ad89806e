# atomicwrites' AtomicFile::write: a temporary file, fsynced, renamed over
# the target, the directory fsynced; a small Rust binary (Cargo.toml,
# src/) built against the pinned crate.
NAME="atomicwrites (Rust)"
ECOSYSTEM=crates.io
VERSION=0.4.4
ACTION="AtomicFile::new(\"config.json\", AllowOverwrite).write(...) replacing {\"v\": 1} with {\"v\": 2}"
install() { install_crate "$1"; }
# Built with line tables: causes name the source line of the call.
STACKS=1
SETUP='echo "{\"v\": 1}" > config.json'
CHECK=json
# What the program promises, in its own documentation at this release.
PROMISE=silent
PROMISE_QUOTE=''
PROMISE_LINK='https://docs.rs/atomicwrites/0.4.4/atomicwrites/struct.AtomicFile.html#method.write'
PROMISE_NOTE='README and rustdoc (AtomicFile::new, write, replace_atomic) at 0.4.4: atomic in the sense of concurrent writers ("This avoids the problem of two programs writing to the same file"); nothing about fsync, crashes or the disk'
