#!/bin/sh
# Re-records golden cases: runs each case's program under `blackout record`,
# keeps the raw strace log as tests/golden/CASE/strace.log and the path the
# directory under test had as tests/golden/CASE/dir.txt. Then refresh the
# expected op logs with: UPDATE_GOLDEN=1 cargo test --test golden
#
# usage: tests/golden/record.sh CASE...    (run from the repository root)
set -eu
cargo build -q --bin blackout
root=$(pwd)
bin="$root/target/debug/blackout"
for case in "$@"; do
    d="$root/tests/golden/$case"
    [ -d "$d" ] || { echo "no case $d" >&2; exit 2; }
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    if [ -f "$d/prog.c" ]; then
        cc -g -O0 -pthread -o "$work/prog" "$d/prog.c"
        set -- "$work/prog"
    elif [ -f "$d/prog.py" ]; then
        set -- python3 "$d/prog.py"
    else
        set -- sh "$d/prog.sh"
    fi
    init=""
    [ -d "$d/init" ] && init="--init $d/init"
    # shellcheck disable=SC2086
    "$bin" record -o "$work/t.trace" --keep-log "$d/strace.log" $init -- "$@"
    "$bin" ops --json "$work/t.trace" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["dir"])' > "$d/dir.txt"
    rm -rf "$work"
    trap - EXIT
    echo "recorded $case"
done
