# node-persist's setItem: one file per key under its storage directory.
NAME=node-persist
ECOSYSTEM=npm
VERSION=4.0.4
ACTION="setItem('k', 'v2') in a storage directory holding k = 'v1'"
install() { install_npm "$1" "node-persist@$VERSION"; }
SETUP='NODE_PATH="$AUDIT_LIB/node_modules" node -e "
const s = require(\"node-persist\");
s.init({ dir: \"store\" }).then(() => s.setItem(\"k\", \"v1\"));"'
# What the program promises, in its own documentation at this release.
PROMISE=silent
PROMISE_QUOTE=''
PROMISE_LINK='https://www.npmjs.com/package/node-persist/v/4.0.4'
PROMISE_NOTE='README at 4.0.4 (setItem, init options, change logs): no statement about syncing or crash safety; the 3.0.0 change log says "we immediately persist to disk now, asynchronously" (about dropping the interval-based saving) and writeQueue is described as avoiding corrupted files from concurrent writes'
