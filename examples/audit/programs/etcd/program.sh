# etcd from Debian's packages, one member, on a data directory it has
# started in before (etcd.sh setup): a client PUTs keys one at a time
# over its HTTP/JSON gateway and prints `ok KEY` once etcd answered;
# soaked on the live file system.
NAME="etcd put"
ECOSYSTEM=Debian
VERSION=$(deb_version etcd-server)
ACTION="PUTs one at a time over the HTTP/JSON gateway, each acknowledged once etcd answered; 20 power failures under load, 3 seeds, on a data directory etcd ran in before"
CONFIG="etcd's defaults, one member, URLs on loopback"
install() { install_deb etcd etcd-server; }
etcd="sh $REPO/examples/audit/programs/etcd/etcd.sh"
SERVICE="$etcd serve"
SOAK_SETUP="$etcd setup"
READY="$etcd ready"
CLIENT="$etcd load"
CHECK="$etcd check"
ACK_PREFIX=ok
# What the program promises, in its own documentation at this release.
PROMISE=durable
PROMISE_QUOTE='Any completed operations are durable. All accessible data is also durable data. A read will never return data that has not been made durable.'
PROMISE_LINK='https://github.com/etcd-io/etcd/blob/v3.4.23/Documentation/learning/api_guarantees.md'
