#!/bin/sh
# The binary writes config.json through atomic-write-file and prints
# "saved" once commit returned.
exec "$AUDIT_LIB/target/release/rust-atomic-write-file"
