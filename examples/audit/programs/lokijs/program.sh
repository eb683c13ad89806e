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
# What the program promises, in its own documentation at this release.
PROMISE=silent
PROMISE_QUOTE=''
PROMISE_LINK='https://github.com/techfort/LokiJS/blob/v1.5.12/src/lokijs.js#L2428-L2434'
PROMISE_NOTE='README, OVERVIEW, tutorials/Persistence Adapters.md and the JSDoc of Loki.saveDatabase and LokiFsAdapter.saveDatabase at 1.5.12: no promise and no statement that syncing is left to the caller; the adapter'\''s JSDoc only remarks "might want to expand this to avoid dataloss on partial save"'
