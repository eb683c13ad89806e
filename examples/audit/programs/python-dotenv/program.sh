# python-dotenv's set_key: rewrites a .env file with one key changed.
NAME=python-dotenv
ECOSYSTEM=PyPI
VERSION=1.0.1
ACTION="set_key('.env', 'KEY', 'v2') on a .env holding KEY=v1"
install() { install_pip "$1" "python-dotenv==$VERSION"; }
# Its temporary file goes to TMPDIR and is renamed over .env: TMPDIR is
# pointed into the directory under test (a file made outside it and
# renamed in cannot be recorded: docs/AUDIT.md, limits).
SETUP='echo KEY=v1 > .env; mkdir tmp'
