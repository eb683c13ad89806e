#!/bin/sh
# The tree's account files parse (every line has the right number of
# fields: passwd 7, shadow 9, group 4, gshadow 4) and hold root. Once
# "saved" was printed (useradd had exited 0) alice is there and the files
# are consistent the way pwck and grpck check them (the same users in
# passwd and shadow, the same groups in group and gshadow, every user's
# primary group in group). Before that they need not be: useradd
# replaces the four files one after another, so a crash (or a kill)
# between two leaves alice in some of them, which pwck and grpck report
# and repair; that is how shadow works, not a lost write.
cd root/etc || { echo "root/etc is missing" >&2; exit 1; }
exec python3 -c '
import sys

def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)

def parse(name, fields):
    try:
        text = open(name).read()
    except OSError as e:
        fail(f"{name}: {e.strerror}")
    if text and not text.endswith("\n"):
        fail(f"{name}: the last line is cut short")
    rows = {}
    for n, line in enumerate(text.splitlines(), 1):
        parts = line.split(":")
        if len(parts) != fields or not parts[0]:
            fail(f"{name} line {n} has {len(parts)} fields, not {fields}: {line!r}")
        if parts[0] in rows:
            fail(f"{name}: {parts[0]} appears twice")
        rows[parts[0]] = parts
    return rows

passwd = parse("passwd", 7)
shadow = parse("shadow", 9)
group = parse("group", 4)
gshadow = parse("gshadow", 4)
for name, rows in (("passwd", passwd), ("shadow", shadow)):
    if "root" not in rows:
        fail(f"{name} has no root")
if "saved" not in sys.argv[1]:
    sys.exit(0)
if "alice" not in passwd:
    fail("alice is not in passwd after useradd returned")
if set(passwd) != set(shadow):
    fail(f"passwd and shadow disagree: users {sorted(set(passwd) ^ set(shadow))} are in one only")
if set(group) != set(gshadow):
    fail(f"group and gshadow disagree: groups {sorted(set(group) ^ set(gshadow))} are in one only")
gids = {g[2] for g in group.values()}
for u in passwd.values():
    if u[3] not in gids:
        fail(f"user {u[0]} has primary group {u[3]}, which group does not hold")
' "$BLACKOUT_ACKED"
