# redb: an embedded key-value store in one file (copy-on-write B-trees, a
# commit made durable by default); a small Rust binary (Cargo.toml, src/)
# built against the pinned crate does the setup, the write and the read.
NAME=redb
ECOSYSTEM=crates.io
VERSION=5.0.0
ACTION="a write transaction setting k = \"v2\" in table t of db.redb holding k = \"v1\", commit()"
install() { install_crate "$1"; }
# Built with line tables: causes name the source line of the call.
STACKS=1
SETUP='"$AUDIT_LIB/target/release/redb-audit" setup'
# What the program promises, in its own documentation at this release.
PROMISE=durable
PROMISE_QUOTE='Commits with this durability level are guaranteed to be persistent as soon as WriteTransaction::commit returns.'
PROMISE_LINK='https://docs.rs/redb/5.0.0/redb/enum.Durability.html#variant.Immediate'
