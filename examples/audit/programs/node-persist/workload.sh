#!/bin/sh
NODE_PATH="$AUDIT_LIB/node_modules" exec node -e '
const s = require("node-persist");
(async () => {
  await s.init({ dir: "store" });
  await s.setItem("k", "v2");
  console.log("saved");
})();'
