# etcd's first start on an empty data directory, recorded as a program
# (workload.sh): the member started, 10 PUTs each acknowledged, the
# member killed; each crash state's checker restarts etcd on it
# (check.sh).
NAME="etcd put, first start"
ECOSYSTEM=Debian
VERSION=$(deb_version etcd-server)
ACTION="etcd started on an empty data directory, 10 PUTs one at a time, each acknowledged once etcd answered, then the member killed"
CONFIG="etcd's defaults, one member, URLs on loopback"
install() { install_deb etcd etcd-server; }
ACK_PREFIX=ok
# What the program promises, in its own documentation at this release.
PROMISE=durable
PROMISE_QUOTE='Any completed operations are durable. All accessible data is also durable data. A read will never return data that has not been made durable.'
PROMISE_LINK='https://github.com/etcd-io/etcd/blob/v3.4.23/Documentation/learning/api_guarantees.md'
