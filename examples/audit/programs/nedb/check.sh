#!/bin/sh
# data.db loads with nedb and holds one document with k, v1 or v2, and
# v2 once "saved" was printed.
v=$(NODE_PATH="$AUDIT_LIB/node_modules" node -e '
const Datastore = require("@seald-io/nedb");
const db = new Datastore({ filename: "data.db" });
(async () => {
  await db.loadDatabaseAsync();
  const docs = await db.findAsync({ k: { $exists: true } });
  console.log(docs.length === 1 ? String(docs[0].k) : docs.length + " documents");
})().catch((e) => { console.error(String(e)); process.exit(1); });' 2>&1) || {
    echo "data.db does not load: $(echo "$v" | tail -1)" >&2
    exit 1
}
case "$BLACKOUT_ACKED" in
*saved*) [ "$v" = v2 ] || { echo "k is $v after updateAsync resolved" >&2; exit 1; } ;;
*) [ "$v" = v1 ] || [ "$v" = v2 ] || { echo "k is $v" >&2; exit 1; } ;;
esac
