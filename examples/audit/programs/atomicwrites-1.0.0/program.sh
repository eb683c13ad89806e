# atomicwrites before upstream's directory fsync: the temporary file is
# fsynced and renamed over the target, the directory is not fsynced. 1.1.0
# added the fsync of the directory after the rename (its README's new
# "fsync" section: "and on the parent directory after the file is moved");
# 1.1.5 is the first release whose directory fsync takes a bare file name
# (1.1.0 opens "" for config.json). The workload and checker are
# atomicwrites'.
same_as atomicwrites
NAME="atomicwrites (before upstream's directory fsync)"
VERSION=1.0.0
FIXED_IN=atomicwrites
# What the program promises, in its own documentation at this release.
PROMISE=durable
PROMISE_QUOTE='responsible for clearing as many file caches as possible before commit'
PROMISE_LINK='https://github.com/untitaker/python-atomicwrites/blob/1.0.0/atomicwrites/__init__.py#L139-L143'
