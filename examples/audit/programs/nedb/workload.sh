#!/bin/sh
# load the datastore, update the document, then the promise once the
# update resolved.
NODE_PATH="$AUDIT_LIB/node_modules" exec node -e '
const Datastore = require("@seald-io/nedb");
const db = new Datastore({ filename: "data.db" });
(async () => {
  await db.loadDatabaseAsync();
  const n = await db.updateAsync({ k: "v1" }, { $set: { k: "v2" } });
  if (n.numAffected !== 1) throw new Error("updated " + n.numAffected);
  console.log("saved");
})().catch((e) => { console.error(String(e)); process.exit(1); });'
