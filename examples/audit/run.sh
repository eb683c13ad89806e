#!/bin/sh
# The audit (docs/AUDIT.md): real programs, each installed at a pinned
# version from its ordinary registry, each driven by a small workload that
# does what a user does and prints a promise where the program reports
# success, checked the way the program reads its data after a restart:
# under the posix model, and on ext4, xfs and btrfs through the block
# backend (--repeat 3: whether the verdict held). Writes docs/AUDIT.md.
#
#   cargo build --release
#   examples/audit/run.sh                 # every program, every column
#   examples/audit/run.sh fs-extra        # some programs
#   AUDIT_COLUMNS=posix examples/audit/run.sh
#
# Installs go to AUDIT_HOME (default target/audit), kept between runs;
# each program's reports to AUDIT_HOME/results; the table to AUDIT_OUT
# (default docs/AUDIT.md, and then the README's headline too), the report
# of each FAIL the headline counts to AUDIT_REPORTS (default docs/audit).
# BLACKOUT names the binary
# (default target/release/blackout). The block columns need root,
# /dev/fuse, a loop device and mkfs for the file system; a column that
# cannot run here says so in its cell.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$here/../.." && pwd)
export REPO
blackout=${BLACKOUT:-$REPO/target/release/blackout}
home=${AUDIT_HOME:-$REPO/target/audit}
columns=${AUDIT_COLUMNS:-posix ext4 xfs btrfs}
results=$home/results
mkdir -p "$home/lib" "$results"
if [ $# -gt 0 ]; then
    programs=$*
else
    programs=$(ls "$here/programs")
fi
# Installers a program's install() calls (DIR is the install directory).
# install_pip DIR PACKAGE==VERSION, install_npm DIR PACKAGE@VERSION.
install_pip() { pip install --quiet --disable-pip-version-check --target "$1" "$2"; }
install_npm() { npm install --silent --no-audit --no-fund --prefix "$1" "$2"; }
# install_crate DIR: the program's Rust binary (its Cargo.toml, Cargo.lock
# and src/, pinning the crate) built into DIR, with line tables so that
# STACKS=1 can name the source line of the call to blame.
install_crate() {
    cp -r "$dir/Cargo.toml" "$dir/Cargo.lock" "$(from src)" "$1/" &&
        CARGO_PROFILE_RELEASE_DEBUG=line-tables-only \
            cargo build --release --quiet --manifest-path "$1/Cargo.toml" --target-dir "$1/target"
}
# install_deb COMMAND PACKAGE: Debian's package when COMMAND is missing
# (DIR is left empty).
install_deb() {
    command -v "$1" >/dev/null 2>&1 && return 0
    apt-get install -y "$2" || { apt-get update && apt-get install -y "$2"; }
}
# deb_version PACKAGE: the installed version of Debian's PACKAGE, or
# nothing when it is not installed yet (program.sh is read again after
# its install()).
deb_version() { dpkg-query -W -f '${Version}' "$1" 2>/dev/null || true; }
# same_as PROGRAM, first in a program.sh: this program is PROGRAM at
# another version. PROGRAM's program.sh is read first (the lines after
# same_as set what differs: NAME, VERSION, ...), and PROGRAM's
# workload.sh, check.sh and src/ serve where this program's directory has
# none, so both run the same workload and checker.
same_as() {
    base=$here/programs/$1
    . "$base/program.sh"
}
# from FILE: the program's FILE, or its same_as program's.
from() {
    if [ -e "$dir/$1" ]; then echo "$dir/$1"; else echo "$base/$1"; fi
}
# FIXED_IN=PROGRAM in a program.sh: this program is a release from before
# an upstream fix that PROGRAM's release has; render.py lists the pair's
# two posix verdicts under the table. STACKS=1: the posix column records
# each call's stack (--stacks), so a cause names the source line that made
# the call (programs whose binaries carry line tables: install_crate's).
# VERIFY_FIXES (default 4) and FIX_TIME (default 30m): the posix column's
# --verify-fixes and --fix-time. Fixes are verified to the end, not for
# as long as the run took (which depends on the machine's load), so the
# table is the same on every run. SCRATCH=DIR: blackout's temporary
# directory (TMPDIR) for this program, where it makes the directory under
# test: another file system than the one the workload's own temporary
# files go to.
# A server (SERVICE set in its program.sh: the service's command; CHECK
# its checker, and CLIENT, READY, SOAK_SETUP, SOAK_ENV, SOAK_CRASHES and
# SOAK_SEEDS) is soaked on the live file system instead of recorded:
# `blackout soak` once per seed in SOAK_SEEDS, its report kept per seed.
# That is the posix column (the live file system forgets what was never
# synced, as the posix model does); the block columns do not run.
soak_program() {
    t0=$(date +%s)
    for seed in $SOAK_SEEDS; do
        set -- --crashes "$SOAK_CRASHES" --seed "$seed" --ready "$READY" \
            --client "$CLIENT" --checker "$CHECK"
        [ -z "$SOAK_SETUP" ] || set -- "$@" --setup "$SOAK_SETUP"
        [ -z "$ACK_PREFIX" ] || set -- "$@" --ack-prefix "$ACK_PREFIX"
        env $SOAK_ENV "$blackout" soak "$@" -- sh -c "$SERVICE" \
            >"$results/$p.soak.$seed.txt" 2>&1 || true
        echo "audit: $p soak seed $seed: $(grep -m1 -o '^[A-Z]*:' "$results/$p.soak.$seed.txt" || echo 'no report')" >&2
    done
    echo "$(($(date +%s) - t0))" >"$results/$p.posix.seconds"
}
started=$(date +%s)
for p in $programs; do
    dir=$here/programs/$p
    [ -f "$dir/program.sh" ] || { echo "audit: no program $p" >&2; exit 2; }
    (
        NAME= ECOSYSTEM= VERSION= ACTION= SETUP= CHECK= CLIENT= READY= ACK_PREFIX= VOLATILE= FIXED_IN= STACKS=
        SCRATCH= CONFIG= PROMISE= PROMISE_QUOTE= PROMISE_LINK= PROMISE_NOTE=
        SERVICE= SOAK_SETUP= SOAK_ENV= SOAK_CRASHES=20 SOAK_SEEDS="1 2 3"
        VERIFY_FIXES=4 FIX_TIME=30m
        base=$dir
        . "$dir/program.sh"
        lib=$home/lib/$p-$VERSION
        if command -v install >/dev/null 2>&1 && [ "$(command -v install)" = install ]; then
            if [ ! -e "$lib/.installed" ]; then
                rm -rf "$lib"
                mkdir -p "$lib"
                install "$lib" >"$home/install.log" 2>&1 || {
                    echo "audit: installing $NAME $VERSION failed:" >&2
                    tail -5 "$home/install.log" >&2
                    exit 2
                }
                touch "$lib/.installed"
                # What the install made known (a Debian package's version).
                . "$dir/program.sh"
            fi
        fi
        AUDIT_LIB=$lib
        export AUDIT_LIB
        if [ -n "$SCRATCH" ]; then
            TMPDIR=$SCRATCH
            export TMPDIR
        fi
        case "$CHECK" in
        "") checker="sh $(from check.sh)" ;;
        json) checker="sh $here/check-json.sh" ;;
        *) checker=$CHECK ;;
        esac
        set -- --json --setup "$SETUP" --checker "$checker"
        [ -z "$ACK_PREFIX" ] || set -- "$@" --ack-prefix "$ACK_PREFIX"
        [ -z "$VOLATILE" ] || set -- "$@" --volatile "$VOLATILE"
        workload=$(from workload.sh)
        kind=run
        [ -z "$SERVICE" ] || kind=soak
        python3 -c 'import json, sys; print(json.dumps(dict(zip(["name", "ecosystem", "version", "action", "fixed_in", "config", "promise", "quote", "link", "note", "kind"], sys.argv[1:]))))' \
            "$NAME" "$ECOSYSTEM" "$VERSION" "$ACTION" "$FIXED_IN" "$CONFIG" \
            "$PROMISE" "$PROMISE_QUOTE" "$PROMISE_LINK" "$PROMISE_NOTE" "$kind" >"$results/$p.meta.json"
        if [ "$kind" = soak ]; then
            case " $columns " in *" posix "*) soak_program ;; esac
            exit 0
        fi
        for col in $columns; do
            out=$results/$p.$col.json
            t0=$(date +%s)
            case "$col" in
            posix)
                extra=
                [ -z "$STACKS" ] || extra=--stacks
                extra="$extra --fix-time $FIX_TIME"
                "$blackout" run --model posix --verify-fixes "$VERIFY_FIXES" $extra "$@" \
                    -o "$results/$p.posix.trace" -- sh "$workload" \
                    >"$out" 2>"$results/$p.$col.err" || true
                # The op log, for the report of a FAIL (docs/audit/).
                "$blackout" ops "$results/$p.posix.trace" >"$results/$p.posix.ops" 2>&1 || true
                ;;
            *)
                "$blackout" run --backend block --fs "$col" --repeat 3 --verify-fixes 0 \
                    --model process "$@" \
                    -- sh "$workload" >"$out" 2>"$results/$p.$col.err" || true
                ;;
            esac
            echo "$(($(date +%s) - t0))" >"$results/$p.$col.seconds"
            echo "audit: $p $col: $(python3 -c 'import json,sys
try: d = json.load(open(sys.argv[1]))
except Exception: print("no report"); sys.exit()
print((d.get("block") or {}).get("verdict") or d.get("verdict"))' "$out")" >&2
        done
    )
done
echo "$(($(date +%s) - started))" >"$results/total.seconds"
# The table, the report of each FAIL the headline counts (AUDIT_REPORTS,
# default docs/audit beside the table) and, when the table is the
# repository's own, the README's headline sentence, which is the table's.
out=${AUDIT_OUT:-$REPO/docs/AUDIT.md}
reports=${AUDIT_REPORTS:-$(dirname "$out")/audit}
python3 "$here/render.py" "$results" "$here/programs" "$reports" >"$out"
if [ -z "${AUDIT_OUT:-}" ]; then
    python3 "$here/render.py" --headline "$out" "$REPO/README.md"
fi
echo "audit: wrote $out and $reports/" >&2
