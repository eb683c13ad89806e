# tempfile's NamedTempFile: made in the same directory, written, persisted
# (renamed) over the target; a small Rust binary (Cargo.toml, src/) built
# against the pinned crate.
NAME=tempfile
ECOSYSTEM=crates.io
VERSION=3.27.0
ACTION="NamedTempFile::new_in(\".\"), write, persist(\"config.json\") replacing {\"v\": 1} with {\"v\": 2}"
install() { install_crate "$1"; }
# Built with line tables: causes name the source line of the call.
STACKS=1
SETUP='echo "{\"v\": 1}" > config.json'
CHECK=json
