# fs-extra's outputJsonSync: writes a JSON file (making its directory).
NAME=fs-extra
ECOSYSTEM=npm
VERSION=11.2.0
ACTION="outputJsonSync('config.json', {v: 2}) over {\"v\": 1}"
install() { install_npm "$1" "fs-extra@$VERSION"; }
SETUP='echo "{\"v\": 1}" > config.json'
CHECK=json
