# tempfile's NamedTempFile: made in the same directory, written, persisted
# (renamed) over the target; a small Rust binary (Cargo.toml, src/) built
# against the pinned crate.
NAME=tempfile
ECOSYSTEM=crates.io
VERSION=3.27.0
ACTION="NamedTempFile::new_in(\".\"), write, persist(\"config.json\") replacing {\"v\": 1} with {\"v\": 2}"
install() {
    cp -r "$REPO/examples/audit/programs/rust-tempfile/Cargo.toml" \
        "$REPO/examples/audit/programs/rust-tempfile/Cargo.lock" \
        "$REPO/examples/audit/programs/rust-tempfile/src" "$1/" &&
        cargo build --release --quiet --manifest-path "$1/Cargo.toml" --target-dir "$1/target"
}
SETUP='echo "{\"v\": 1}" > config.json'
CHECK=json
