#!/bin/sh
# autoload the database, update the document, save; the promise in the
# save callback once it reports no error.
NODE_PATH="$AUDIT_LIB/node_modules" exec node -e '
const loki = require("lokijs");
const db = new loki("db.json", {
  autoload: true,
  autoloadCallback: (err) => {
    if (err) { console.error(String(err)); process.exit(1); }
    const items = db.getCollection("items");
    const doc = items.findOne({ k: { $exists: true } });
    doc.k = "v2";
    items.update(doc);
    db.saveDatabase((err) => {
      if (err) { console.error(String(err)); process.exit(1); }
      console.log("saved");
    });
  },
});'
