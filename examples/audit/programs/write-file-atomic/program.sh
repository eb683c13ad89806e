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
# What the program promises, in its own documentation at this release.
PROMISE=durable
PROMISE_QUOTE='This is an extension for node'\''s fs.writeFile that makes its operation atomic … fsync Boolean default = true … If the fsync option is false, writeFile will skip the final fsync call.'
PROMISE_LINK='https://github.com/npm/write-file-atomic/blob/v7.0.1/README.md'
