#!/usr/bin/env python3
"""An etcd cluster of three members under `blackout soak --node`.

    blackout soak --crashes 50 --seed 1 --ack-prefix ok --faults all \
      --node a='python3 etcd.py serve' --node b='python3 etcd.py serve' \
      --node c='python3 etcd.py serve' \
      --setup 'python3 etcd.py setup' --ready 'python3 etcd.py ready' \
      --client 'python3 etcd.py load' --checker 'python3 etcd.py check'

etcd (from the system's packages) replicates every write through Raft: a
PUT is answered once a majority of the members have appended it to their
write-ahead logs, and each member fsyncs its log before it says so. Its
defaults are used; only the names, URLs and data directories are set.

The n-th node of BLACKOUT_NODES listens for clients on ETCD_PORT + 2n
(default 23800) and for its peers on the port after it, on loopback.

setup   (per node) on the last node only: starts every member once on its
        mount (`etcd/`), waits until the cluster answers a write, and stops
        them, so the soak starts on data directories each member ran in
        before (etcd's first start makes `etcd/` and `etcd/member` without
        an fsync of the directory holding them; blackout's audit shows that
        one as its own row). The soak makes what setup left durable.
serve   (per node) runs the member on its mount, its log in its soak
        directory.
ready   (per node) the member listens to its peers (it answers clients
        only once a quorum of members is up, so the nodes, started in
        order, could never each be ready on their own; the client and the
        checker wait for the quorum).
load    PUTs k<crash>-<n> = v<n> one at a time through any member that
        answers, printing `ok KEY` once etcd answered the PUT.
check   reads every acknowledged key back with a linearizable range read
        (through the leader), waiting up to 30 s for the cluster to elect
        one.
"""

import base64
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

HOST = "127.0.0.1"
BASE = int(os.environ.get("ETCD_PORT", "23800"))


def names():
    return os.environ["BLACKOUT_NODES"].split()


def client_url(name):
    return "http://%s:%d" % (HOST, BASE + 2 * names().index(name))


def peer_url(name):
    return "http://%s:%d" % (HOST, BASE + 2 * names().index(name) + 1)


def call(url, path, body, timeout=5.0):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.load(r)


def b64(s):
    return base64.b64encode(s.encode()).decode()


def member_args(name, mount, log):
    cluster = ",".join("%s=%s" % (n, peer_url(n)) for n in names())
    return ["etcd", "--name", name, "--data-dir", os.path.join(mount, "etcd"),
            "--listen-client-urls", client_url(name),
            "--advertise-client-urls", client_url(name),
            "--listen-peer-urls", peer_url(name),
            "--initial-advertise-peer-urls", peer_url(name),
            "--initial-cluster", cluster, "--initial-cluster-state", "new",
            "--initial-cluster-token", "blackout-cluster",
            "--logger", "zap", "--log-outputs", log]


def any_member(path, body, deadline):
    """The first answer of any member to `path`, trying them in turn until
    `deadline`; the last error when none answered."""
    last = None
    while True:
        for n in names():
            try:
                return call(client_url(n), path, body)
            except (OSError, urllib.error.URLError, ValueError) as e:
                last = e
        if time.monotonic() > deadline:
            raise RuntimeError("no member answered %s: %s" % (path, last))
        time.sleep(0.1)


def setup():
    if os.environ["BLACKOUT_NODE"] != names()[-1]:
        return
    procs = []
    for n in names():
        mount = os.environ["BLACKOUT_MOUNT_" + n.upper()]
        log = os.path.join(os.environ["BLACKOUT_SOAK_DIR_" + n.upper()], "setup.log")
        procs.append(subprocess.Popen(member_args(n, mount, log), cwd=mount,
                                      stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
    try:
        any_member("/v3/kv/put", {"key": b64("setup"), "value": b64("done")},
                   time.monotonic() + 60)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()


def serve():
    me = os.environ["BLACKOUT_NODE"]
    log = os.path.join(os.environ["BLACKOUT_SOAK_DIR"], "etcd.log")
    args = member_args(me, os.environ["BLACKOUT_MOUNT"], log)
    os.execvp(args[0], args)


def ready():
    port = BASE + 2 * names().index(os.environ["BLACKOUT_NODE"]) + 1
    try:
        socket.create_connection((HOST, port), timeout=1).close()
    except OSError:
        sys.exit(1)


def load():
    crash = os.environ.get("BLACKOUT_CRASH", "0")
    n = 0
    while True:
        key = "k%s-%d" % (crash, n)
        try:
            any_member("/v3/kv/put", {"key": b64(key), "value": b64("v%d" % n)},
                       time.monotonic() + 3600)
        except RuntimeError as e:
            print("load: %s" % e, file=sys.stderr, flush=True)
            continue
        print("ok %s" % key, flush=True)
        n += 1


def check():
    with open(os.environ["BLACKOUT_ACKS_FILE"]) as f:
        acked = [line.split()[1] for line in f if line.startswith("ok ")]
    if not acked:
        return
    try:
        kvs = any_member("/v3/kv/range", {"key": b64("k"), "range_end": b64("l")},
                         time.monotonic() + 30).get("kvs", [])
    except RuntimeError as e:
        print(str(e))
        sys.exit(1)
    have = {base64.b64decode(kv["key"]).decode(): base64.b64decode(kv.get("value", "")).decode()
            for kv in kvs}
    gone = [k for k in acked if have.get(k) != "v" + k.rsplit("-", 1)[1]]
    if gone:
        lost = os.environ.get("BLACKOUT_LOST_POWER", "") or "none"
        print("%d of %d acknowledged PUTs are gone (first: %s, last: %s; lost power: %s)"
              % (len(gone), len(acked), gone[0], gone[-1], lost))
        sys.exit(1)


if __name__ == "__main__":
    {"setup": setup, "serve": serve, "ready": ready, "load": load, "check": check}[
        sys.argv[1]
    ]()
