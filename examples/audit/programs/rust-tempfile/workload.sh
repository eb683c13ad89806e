#!/bin/sh
# The binary writes config.json through tempfile and prints "saved" once
# persist returned.
exec "$AUDIT_LIB/target/release/rust-tempfile"
