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
