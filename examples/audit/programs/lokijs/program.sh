# LokiJS's saveDatabase with its default Node adapter (LokiFsAdapter):
# writes the whole database to db.json~ and renames it over db.json.
NAME=lokijs
ECOSYSTEM=npm
VERSION=1.5.12
ACTION="load db.json (a collection items holding {k: 'v1'}), update k to 'v2', saveDatabase(callback)"
install() { install_npm "$1" "lokijs@$VERSION"; }
SETUP='NODE_PATH="$AUDIT_LIB/node_modules" node -e "
const loki = require(\"lokijs\");
const db = new loki(\"db.json\");
db.addCollection(\"items\").insert({ k: \"v1\" });
db.saveDatabase((err) => { if (err) { console.error(err); process.exit(1); } });"'
