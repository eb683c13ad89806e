# atomic-write-file's AtomicWriteFile: open, write, commit (the new file
# replaces the target); a small Rust binary (Cargo.toml, src/) built
# against the pinned crate.
NAME=atomic-write-file
ECOSYSTEM=crates.io
VERSION=0.3.1
ACTION="AtomicWriteFile::open(\"config.json\"), write, commit() replacing {\"v\": 1} with {\"v\": 2}"
install() {
    cp -r "$REPO/examples/audit/programs/rust-atomic-write-file/Cargo.toml" \
        "$REPO/examples/audit/programs/rust-atomic-write-file/Cargo.lock" \
        "$REPO/examples/audit/programs/rust-atomic-write-file/src" "$1/" &&
        cargo build --release --quiet --manifest-path "$1/Cargo.toml" --target-dir "$1/target"
}
SETUP='echo "{\"v\": 1}" > config.json'
CHECK=json
