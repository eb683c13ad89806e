# tinydb before upstream's fsync: JSONStorage.write rewrites db.json in
# place (seek to 0, write, flush, truncate) with no fsync. 3.9.0 added
# os.fsync after the flush (its changelog: "call fsync after flushing
# JSONStorage", issue 208). The workload, checker and setup are tinydb's.
same_as tinydb
NAME="tinydb (before upstream's fsync)"
VERSION=3.8.1
FIXED_IN=tinydb
# What the program promises, in its own documentation at this release.
PROMISE=none
PROMISE_QUOTE='Why Not Use TinyDB? … You need advanced features like: … ACID guarantees. … To put it plainly: If you need advanced features or high performance, TinyDB is the wrong database for you'
PROMISE_LINK='https://github.com/msiemens/tinydb/blob/v3.8.1/docs/intro.rst#why-not-use-tinydb'
