# write-file-atomic's sync form: a temporary file next to the target,
# fsynced, renamed over it (the directory is not fsynced). 7.0.1 is the
# newest release whose engines field admits Node 20.
NAME=write-file-atomic
ECOSYSTEM=npm
VERSION=7.0.1
ACTION="writeFileAtomic.sync('config.json', '{\"v\": 2}') over {\"v\": 1}"
install() { install_npm "$1" "write-file-atomic@$VERSION"; }
SETUP='echo "{\"v\": 1}" > config.json'
CHECK=json
