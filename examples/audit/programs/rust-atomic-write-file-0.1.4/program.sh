# atomic-write-file before upstream's directory fsync: the temporary file
# is fsynced and renamed over the target, the directory is not fsynced.
# 0.2.0 syncs the parent directory after the commit (its changelog: "Sync
# the parent directory after committing or discarding the temporary
# file"). The workload, checker and src/ are rust-atomic-write-file's;
# Cargo.toml and Cargo.lock pin 0.1.4.
same_as rust-atomic-write-file
NAME="atomic-write-file (before upstream's directory fsync)"
VERSION=0.1.4
FIXED_IN=rust-atomic-write-file
# What the program promises, in its own documentation at this release.
PROMISE=durable
PROMISE_QUOTE='Either the new contents of the files are written to the filesystem, or the old contents (if any) are preserved. … On Unix, the implementation is roughly equivalent to this pseudocode: … fsync(fd); rename(…)'
PROMISE_LINK='https://docs.rs/atomic-write-file/0.1.4/atomic_write_file/'
