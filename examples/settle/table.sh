#!/bin/sh
# Prints the --settle table of docs/BLOCK.md: how long after its promise the
# no-dir-fsync document save (examples/save/save.sh) holds on ext4, for a
# journal commit interval of 1 s and of 30 s. Each cell is one
# `blackout run --backend block --settle SECS`: power failing SECS after
# "saved" was printed (and at every crash point after that).
#
#   sudo BLACKOUT=path/to/blackout examples/settle/table.sh
#
# It takes about three minutes (the runs wait out their settle times).
set -eu
blackout=${BLACKOUT:-blackout}
save=$(cd "$(dirname "$0")/../save" && pwd)
verdict() {
    "$blackout" run --backend block --fs ext4 --mount-opts "commit=$1" --settle "$2" \
        --verify-fixes 0 --json --setup 'echo "version 1" > doc.txt' \
        --checker "sh $save/check.sh" -- "$save/save.sh" no-dir-fsync 2>/dev/null |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["block"]["verdict"])'
}
echo "| power lost this long after \"saved\" | \`commit=1\` | \`commit=30\` |"
echo "|---|---|---|"
for settle in 0.5 1.5 2 5 10 25 35; do
    echo "| $settle s | $(verdict 1 "$settle") | $(verdict 30 "$settle") |"
done
