# @seald-io/nedb's update: loading rewrites data.db (a temporary file,
# fsynced, renamed, the directory fsynced); an update appends a line.
NAME=@seald-io/nedb
ECOSYSTEM=npm
VERSION=4.1.2
ACTION="updateAsync({k: 'v1'}, {\$set: {k: 'v2'}}) on a data.db holding {k: 'v1'}"
install() { install_npm "$1" "@seald-io/nedb@$VERSION"; }
SETUP='NODE_PATH="$AUDIT_LIB/node_modules" node -e "
const Datastore = require(\"@seald-io/nedb\");
const db = new Datastore({ filename: \"data.db\" });
(async () => {
  await db.loadDatabaseAsync();
  await db.insertAsync({ k: \"v1\" });
})().catch((e) => { console.error(e); process.exit(1); });"'
# What the program promises, in its own documentation at this release.
PROMISE=os
PROMISE_QUOTE='Durability works similarly to major databases: compaction forces the OS to physically flush data to disk, while appends to the data file do not (the OS is responsible for flushing the data). … The worst that can happen is a crash between two syncs, causing a loss of all data between the two syncs.'
PROMISE_LINK='https://github.com/seald/nedb/blob/v4.1.2/lib/persistence.js#L31-L36'
