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
