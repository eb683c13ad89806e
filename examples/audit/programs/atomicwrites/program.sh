# atomicwrites' atomic_write: a temporary file in the same directory,
# fsynced, renamed over the target, the directory fsynced.
NAME=atomicwrites
ECOSYSTEM=PyPI
VERSION=1.4.1
ACTION="atomic_write('config.json', overwrite=True) replacing {\"v\": 1} with {\"v\": 2}"
install() { install_pip "$1" "atomicwrites==$VERSION"; }
SETUP='echo "{\"v\": 1}" > config.json'
CHECK=json
# What the program promises, in its own documentation at this release.
PROMISE=durable
PROMISE_QUOTE='On POSIX, fsync is invoked on the temporary file after it is written (to flush file content and metadata), and on the parent directory after the file is moved (to flush filename).'
PROMISE_LINK='https://github.com/untitaker/python-atomicwrites/blob/1.4.1/README.rst#fsync'
