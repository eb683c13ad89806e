#!/bin/sh
NODE_PATH="$AUDIT_LIB/node_modules" exec node -e '
require("fs-extra").outputJsonSync("config.json", { v: 2 });
console.log("saved");'
