# fs-extra's outputJsonSync: writes a JSON file (making its directory).
NAME=fs-extra
ECOSYSTEM=npm
VERSION=11.2.0
ACTION="outputJsonSync('config.json', {v: 2}) over {\"v\": 1}"
install() { install_npm "$1" "fs-extra@$VERSION"; }
SETUP='echo "{\"v\": 1}" > config.json'
CHECK=json
# What the program promises, in its own documentation at this release.
PROMISE=silent
PROMISE_QUOTE=''
PROMISE_LINK='https://github.com/jprichardson/node-fs-extra/blob/11.2.0/docs/outputJson-sync.md'
PROMISE_NOTE='README and docs/outputJson-sync.md, docs/writeJson-sync.md at 11.2.0: no statement about syncing, atomicity or crash safety (options pass through to fs.writeFileSync)'
