#!/bin/sh
# Seeds the fuzz corpora from the checked-in golden strace logs and report
# recordings (run from the repository root or this directory).
set -e
cd "$(dirname "$0")"
mkdir -p corpus/strace_parser corpus/replay corpus/trace_loader
for log in ../tests/golden/*/strace.log; do
    name=$(basename "$(dirname "$log")")
    cp "$log" "corpus/strace_parser/$name"
    cp "$log" "corpus/replay/$name"
done
for t in ../tests/reports/*.trace ../examples/kvstore/tests/reports/*.trace; do
    cp "$t" "corpus/trace_loader/$(basename "$t")"
done
