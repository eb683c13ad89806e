# atomicwrites' AtomicFile::write: a temporary file, fsynced, renamed over
# the target, the directory fsynced; a small Rust binary (Cargo.toml,
# src/) built against the pinned crate.
NAME="atomicwrites (Rust)"
ECOSYSTEM=crates.io
VERSION=0.4.4
ACTION="AtomicFile::new(\"config.json\", AllowOverwrite).write(...) replacing {\"v\": 1} with {\"v\": 2}"
install() {
    cp -r "$REPO/examples/audit/programs/rust-atomicwrites/Cargo.toml" \
        "$REPO/examples/audit/programs/rust-atomicwrites/Cargo.lock" \
        "$REPO/examples/audit/programs/rust-atomicwrites/src" "$1/" &&
        cargo build --release --quiet --manifest-path "$1/Cargo.toml" --target-dir "$1/target"
}
SETUP='echo "{\"v\": 1}" > config.json'
CHECK=json
