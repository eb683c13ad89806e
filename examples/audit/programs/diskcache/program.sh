# diskcache's Cache.set: small values live in the cache's SQLite database
# (cache/cache.db, WAL journal, synchronous=NORMAL by default).
NAME=diskcache
ECOSYSTEM=PyPI
VERSION=5.6.3
ACTION="Cache('cache').set('k', 'v2') on a cache holding k = 'v1', then close()"
install() { install_pip "$1" "diskcache==$VERSION"; }
SETUP='PYTHONPATH="$AUDIT_LIB" python3 -c "
from diskcache import Cache
c = Cache(\"cache\")
c.set(\"k\", \"v1\")
c.close()"'
# SQLite maps cache.db-shm shared and writable (WAL's index); SQLite
# rebuilds it on the first open after a restart.
VOLATILE="*-shm"
# What the program promises, in its own documentation at this release.
PROMISE=silent
PROMISE_QUOTE=''
PROMISE_LINK='https://github.com/grantjenks/python-diskcache/blob/v5.6.3/docs/tutorial.rst#settings'
PROMISE_NOTE='README, docstring of Cache.set and docs (tutorial.rst, api.rst) at 5.6.3: no statement that set() is durable or survives a crash; the settings list gives sqlite_synchronous default 1 ("NORMAL") with WAL and refers to the SQLite pragma documentation, without comment on durability'
