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
# What the program promises, in its own documentation at this release.
PROMISE=caller
PROMISE_QUOTE='Note: Temporary files cannot be persisted across filesystems. Also neither the file contents nor the containing directory are synchronized, so the update may not yet have reached the disk when persist returns.'
PROMISE_LINK='https://docs.rs/tempfile/3.27.0/tempfile/struct.NamedTempFile.html#method.persist'
