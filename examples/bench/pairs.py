#!/usr/bin/env python3
"""Times two shell commands as whole processes in alternating pairs (A, B,
A, B, ...) and prints each one's median wall time and peak RSS, and the
median of the pair-by-pair ratios A/B, as docs/PERFORMANCE.md quotes them.
Pairing keeps a ratio meaningful when the machine's speed drifts.

    examples/bench/pairs.py [-n PAIRS] 'COMMAND A' 'COMMAND B'

Each command runs under `sh -c` with its output thrown away; one warm-up
pair is not counted. Peak RSS is the largest process's, from wait4."""
import argparse
import os
import statistics
import subprocess
import sys
import time


def run(cmd):
    """Runs cmd; its wall seconds and the peak RSS (MiB) of its largest process."""
    start = time.monotonic()
    proc = subprocess.Popen(["sh", "-c", cmd], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"pairs.py: `{cmd}` exited {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=5, help="pairs timed (default 5)")
    ap.add_argument("a")
    ap.add_argument("b")
    args = ap.parse_args()
    run(args.a)
    run(args.b)
    a, b = [], []
    for _ in range(args.n):
        a.append(run(args.a))
        b.append(run(args.b))
    for name, runs in (("A", a), ("B", b)):
        walls = [w for w, _ in runs]
        print(f"{name}: wall median {statistics.median(walls):.3f} s "
              f"(min {min(walls):.3f}, max {max(walls):.3f}), "
              f"peak RSS {max(r for _, r in runs):.1f} MiB")
    ratios = [x[0] / y[0] for x, y in zip(a, b)]
    print(f"A/B wall: median {statistics.median(ratios):.2f} "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f}) over {args.n} pairs")


if __name__ == "__main__":
    main()
