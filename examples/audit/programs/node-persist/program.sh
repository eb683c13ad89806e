# node-persist's setItem: one file per key under its storage directory.
NAME=node-persist
ECOSYSTEM=npm
VERSION=4.0.4
ACTION="setItem('k', 'v2') in a storage directory holding k = 'v1'"
install() { install_npm "$1" "node-persist@$VERSION"; }
SETUP='NODE_PATH="$AUDIT_LIB/node_modules" node -e "
const s = require(\"node-persist\");
s.init({ dir: \"store\" }).then(() => s.setItem(\"k\", \"v1\"));"'
