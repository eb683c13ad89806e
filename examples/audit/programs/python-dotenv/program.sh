# python-dotenv's set_key: rewrites a .env file with one key changed.
NAME=python-dotenv
ECOSYSTEM=PyPI
VERSION=1.0.1
ACTION="set_key('.env', 'KEY', 'v2') on a .env holding KEY=v1"
install() { install_pip "$1" "python-dotenv==$VERSION"; }
# Its temporary file goes to the system's temporary directory and is
# moved over .env with shutil.move. The workload runs with the default
# environment (no TMPDIR: Python's tempfile uses /tmp) and the directory
# under test is on another file system (SCRATCH: blackout's own
# temporary directory, where it makes the directory under test, is
# /dev/shm), as a user's project is on another file system than /tmp on
# many systems: the move cannot rename and copies over .env in place.
SCRATCH=/dev/shm
SETUP='echo KEY=v1 > .env'
# What the program promises, in its own documentation at this release.
PROMISE=silent
PROMISE_QUOTE=''
PROMISE_LINK='https://github.com/theskumar/python-dotenv/blob/v1.0.1/src/dotenv/main.py#L152-L165'
PROMISE_NOTE='README, docs/ and the docstring of set_key at 1.0.1: no statement about syncing, atomicity or crash safety'
