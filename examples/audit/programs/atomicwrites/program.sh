# atomicwrites' atomic_write: a temporary file in the same directory,
# fsynced, renamed over the target, the directory fsynced.
NAME=atomicwrites
ECOSYSTEM=PyPI
VERSION=1.4.1
ACTION="atomic_write('config.json', overwrite=True) replacing {\"v\": 1} with {\"v\": 2}"
install() { install_pip "$1" "atomicwrites==$VERSION"; }
SETUP='echo "{\"v\": 1}" > config.json'
CHECK=json
