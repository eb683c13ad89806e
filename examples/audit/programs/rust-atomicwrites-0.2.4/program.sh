# atomicwrites (Rust) before upstream's fsync of the file: a temporary
# file in a temporary directory, written, renamed over the target, the
# directory fsynced, the file's data never synced. 0.2.5's only change is
# tmpfile.sync_all() before the rename. The workload, checker and src/
# are rust-atomicwrites'; Cargo.toml and Cargo.lock pin 0.2.4.
same_as rust-atomicwrites
NAME="atomicwrites (Rust, before upstream's file fsync)"
VERSION=0.2.4
FIXED_IN=rust-atomicwrites
