#!/bin/sh
# The binary writes config.json through atomicwrites and prints "saved"
# once write returned.
exec "$AUDIT_LIB/target/release/rust-atomicwrites"
