"""etcd's readiness probe, client and checker for etcd.sh, over etcd's
HTTP/JSON gateway (/v3/kv/...).

  kv.py ready URL    exit 0 once a range request is answered
  kv.py load URL     PUT k<crash>-<n> = v<n> for n = 0, 1, ... (PUT_COUNT
                     of them if set, else until killed); after each
                     answer print `ok KEY`
  kv.py check URL    every key of $BLACKOUT_ACKS_FILE holds its value
"""
import base64
import json
import os
import sys
import urllib.request


def call(url, path, body):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


def b64(s):
    return base64.b64encode(s.encode()).decode()


def ready(url):
    try:
        call(url, "/v3/kv/range", {"key": b64("k")})
    except Exception:
        sys.exit(1)


def load(url):
    crash = os.environ.get("BLACKOUT_CRASH", "0")
    count = int(os.environ.get("PUT_COUNT", "0"))
    n = 0
    while not count or n < count:
        key = "k%s-%d" % (crash, n)
        call(url, "/v3/kv/put", {"key": b64(key), "value": b64("v%d" % n)})
        sys.stdout.write("ok %s\n" % key)
        sys.stdout.flush()
        n += 1


def check(url):
    acked = [l.split()[1] for l in open(os.environ["BLACKOUT_ACKS_FILE"]) if l.startswith("ok ")]
    if not acked:
        return
    # Every key: the range from "k" up to "l".
    kvs = call(url, "/v3/kv/range", {"key": b64("k"), "range_end": b64("l")}).get("kvs", [])
    have = {base64.b64decode(kv["key"]).decode(): base64.b64decode(kv.get("value", "")).decode()
            for kv in kvs}
    lost = [k for k in acked if have.get(k) != "v" + k.rsplit("-", 1)[1]]
    if lost:
        sys.exit("%d acknowledged PUTs are gone after the crash (first: %s; %d of %d survived)"
                 % (len(lost), lost[0], len(acked) - len(lost), len(acked)))


if __name__ == "__main__":
    {"ready": ready, "load": load, "check": check}[sys.argv[1]](sys.argv[2])
