#!/bin/sh
# The store opens and holds k: v1 or v2, and v2 once "saved" was printed.
v=$(NODE_PATH="$AUDIT_LIB/node_modules" node -e '
const s = require("node-persist");
(async () => {
  await s.init({ dir: "store" });
  console.log(String(await s.getItem("k")));
})().catch((e) => { console.error(String(e)); process.exit(1); });') || exit 1
case "$BLACKOUT_ACKED" in
*saved*) [ "$v" = v2 ] || { echo "k is $v after setItem resolved" >&2; exit 1; } ;;
*) [ "$v" = v1 ] || [ "$v" = v2 ] || { echo "k is $v" >&2; exit 1; } ;;
esac
