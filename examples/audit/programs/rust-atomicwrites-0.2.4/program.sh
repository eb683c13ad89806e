# atomicwrites (Rust) before upstream's fsync of the file: a temporary
# file in a temporary directory, written, renamed over the target, the
# directory fsynced, the file's data never synced. 0.2.5's only change is
# tmpfile.sync_all() before the rename. The workload, checker and src/
# are rust-atomicwrites'; Cargo.toml and Cargo.lock pin 0.2.4.
same_as rust-atomicwrites
NAME="atomicwrites (Rust, before upstream's file fsync)"
VERSION=0.2.4
FIXED_IN=rust-atomicwrites
# What the program promises, in its own documentation at this release.
PROMISE=silent
PROMISE_QUOTE=''
PROMISE_LINK='https://docs.rs/atomicwrites/0.2.4/atomicwrites/struct.AtomicFile.html#method.write'
PROMISE_NOTE='README and rustdoc (AtomicFile::new, write, replace_atomic) at 0.2.4: atomic in the sense of concurrent writers ("This avoids the problem of two programs writing to the same file"); nothing about fsync, crashes or the disk'
