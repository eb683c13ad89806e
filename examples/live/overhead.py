#!/usr/bin/env python3
"""The live file system's overhead, side by side: the same write-heavy
workloads on a bare directory, on LazyFS and on `blackout fs`.

    overhead.py --blackout target/release/blackout --lazyfs PATH/TO/lazyfs \
        [--dir DIR] [--runs 5]

For each workload and each file system it reports the median wall time,
throughput, and the file-system daemon's CPU time per operation (user +
system time of its process, from /proc, over the workload; the bare
directory has no daemon). Both daemons keep their backing directory under
DIR (ext4 here); blackout keeps its view in $TMPDIR (else /dev/shm), LazyFS
its cache in its own memory. (LazyFS takes a config path holding
"-o" for an option: keep "-o" out of DIR.) The workloads:

  fio-seq   fio, sequential 4 KiB writes (64 MiB), fsync every 32 writes
  fio-rand  fio, random 4 KiB writes (32 MiB), fdatasync every 8 writes
  sqlite    the sqlite3 CLI, 2,000 inserts, one transaction each
            (WAL, synchronous=FULL)
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """User + system time of a process so far, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def mounted(path):
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        return any(line.split(" ")[4] == path for line in f)


def wait_until(cond, what, timeout=60):
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            sys.exit("timed out waiting for " + what)
        time.sleep(0.05)


def fio(directory, rw, size, sync):
    out = subprocess.run(
        ["fio", "--name=w", "--directory=" + directory, "--rw=" + rw, "--bs=4k",
         "--size=" + size, sync, "--ioengine=psync", "--output-format=json",
         "--randseed=1"],
        check=True, capture_output=True, text=True).stdout
    job = json.loads(out)["jobs"][0]["write"]
    return job["total_ios"] + job["total_ios"] // int(sync.split("=")[1])


def sqlite(directory):
    db = os.path.join(directory, "db.sqlite")
    script = ["PRAGMA journal_mode=WAL;", "PRAGMA synchronous=FULL;",
              "CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT);"]
    script += ["INSERT INTO t VALUES (%d, '%s');" % (i, "v" * 100) for i in range(2000)]
    subprocess.run(["sqlite3", db], input="\n".join(script), check=True,
                   capture_output=True, text=True)
    return 2000


WORKLOADS = {
    "fio-seq": lambda d: fio(d, "write", "64m", "--fsync=32"),
    "fio-rand": lambda d: fio(d, "randwrite", "32m", "--fdatasync=8"),
    "sqlite": sqlite,
}


class Bare:
    name = "bare"

    def __init__(self, base):
        self.dir = os.path.join(base, "bare")

    def start(self):
        os.makedirs(self.dir)
        return self.dir, None

    def stop(self):
        shutil.rmtree(self.dir)


class LazyFS:
    name = "LazyFS"

    def __init__(self, base, binary):
        self.base, self.binary = base, binary

    def start(self):
        b = self.base
        for d in ("lz-root", "lz-mnt"):
            os.makedirs(os.path.join(b, d))
        config = os.path.join(b, "lz.toml")
        with open(config, "w") as f:
            f.write('[faults]\nfifo_path="%s"\n[cache]\napply_eviction=false\n'
                    '[cache.simple]\ncustom_size="1gb"\nblocks_per_page=1\n'
                    '[filesystem]\nlog_all_operations=false\nlogfile=""\n'
                    % os.path.join(b, "lz.fifo"))
        mnt = os.path.join(b, "lz-mnt")
        self.proc = subprocess.Popen(
            [self.binary, mnt, "--config-path", config, "-o", "allow_other",
             "-o", "modules=subdir", "-o", "subdir=" + os.path.join(b, "lz-root"), "-f"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(lambda: mounted(mnt), "LazyFS to mount")
        return mnt, self.proc.pid

    def stop(self):
        mnt = os.path.join(self.base, "lz-mnt")
        subprocess.run(["umount", mnt], check=False)
        self.proc.wait()
        for d in ("lz-root", "lz-mnt", "lz.toml", "lz.fifo"):
            p = os.path.join(self.base, d)
            if os.path.isdir(p):
                shutil.rmtree(p)
            elif os.path.exists(p):
                os.unlink(p)


class Blackout:
    name = "blackout fs"

    def __init__(self, base, binary):
        self.base, self.binary = base, binary

    def start(self):
        b = self.base
        for d in ("bo-backing", "bo-mnt"):
            os.makedirs(os.path.join(b, d))
        mnt = os.path.join(b, "bo-mnt")
        self.proc = subprocess.Popen(
            [self.binary, "fs", "mount", mnt, "--backing", os.path.join(b, "bo-backing")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(lambda: mounted(mnt), "blackout fs to mount")
        return mnt, self.proc.pid

    def stop(self):
        mnt = os.path.join(self.base, "bo-mnt")
        subprocess.run([self.binary, "fs", "unmount", mnt], check=True)
        self.proc.wait()
        for d in ("bo-backing", "bo-mnt"):
            shutil.rmtree(os.path.join(self.base, d))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--blackout", required=True)
    ap.add_argument("--lazyfs", required=True)
    ap.add_argument("--dir", default="/var/tmp/live-bench")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    systems = [Bare(args.dir), LazyFS(args.dir, args.lazyfs), Blackout(args.dir, args.blackout)]
    print("| workload | file system | wall (median) | ops/s | daemon CPU per op |")
    print("|---|---|---:|---:|---:|")
    for wname, work in WORKLOADS.items():
        for fs in systems:
            walls, cpus, ops = [], [], 0
            for _ in range(args.runs):
                d, pid = fs.start()
                try:
                    c0 = cpu_seconds(pid) if pid else 0.0
                    t0 = time.perf_counter()
                    ops = work(d)
                    walls.append(time.perf_counter() - t0)
                    cpus.append((cpu_seconds(pid) - c0) if pid else 0.0)
                finally:
                    fs.stop()
            wall = statistics.median(walls)
            cpu = statistics.median(cpus)
            per_op = "%.1f µs" % (cpu / ops * 1e6) if fs.name != "bare" else "—"
            print("| %s | %s | %.2f s | %.0f | %s |" % (wname, fs.name, wall, ops / wall, per_op))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
