#!/bin/sh
# db.json autoloads with LokiJS and its collection items holds one
# document, its k v1 or v2, and v2 once "saved" was printed.
v=$(NODE_PATH="$AUDIT_LIB/node_modules" node -e '
const loki = require("lokijs");
const db = new loki("db.json", {
  autoload: true,
  autoloadCallback: (err) => {
    if (err) { console.log("a load error: " + String(err)); return; }
    const items = db.getCollection("items");
    if (!items) { console.log("no collection items"); return; }
    const docs = items.find();
    console.log(docs.length === 1 ? String(docs[0].k) : docs.length + " documents");
  },
});' 2>&1) || {
    echo "db.json does not load: $(echo "$v" | tail -1)" >&2
    exit 1
}
case "$BLACKOUT_ACKED" in
*saved*) [ "$v" = v2 ] || { echo "k is $v after saveDatabase called back" >&2; exit 1; } ;;
*) [ "$v" = v1 ] || [ "$v" = v2 ] || { echo "k is $v" >&2; exit 1; } ;;
esac
