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
