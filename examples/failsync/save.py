#!/usr/bin/env python3
"""Saves a record to `data.txt` and prints "saved" once it is durable.

    save.py retry|fatal

Each mode writes the record, then fsyncs the file. When the fsync fails:

- `retry` calls fsync again until it returns 0, then prints "saved". After
  a failed writeback Linux marks the pages clean and reports the error
  once, so the retry returns 0 with the record never written: the promise
  is a lie (the "fsyncgate" pattern).
- `fatal` treats the error as fatal: it says so on standard error and
  exits 1 without promising anything (as PostgreSQL does since 2018).
"""
import os
import sys


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode not in ("retry", "fatal"):
        sys.exit("usage: save.py retry|fatal")
    fd = os.open("data.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, b"record 1\n")
    while True:
        try:
            os.fsync(fd)
            break
        except OSError as e:
            if mode == "fatal":
                sys.exit(f"save.py: fsync of data.txt failed ({e.strerror}); nothing was saved")
            print(f"save.py: fsync failed ({e.strerror}), retrying", file=sys.stderr)
    os.close(fd)
    dfd = os.open(".", os.O_RDONLY)
    os.fsync(dfd)
    os.close(dfd)
    print("saved", flush=True)


if __name__ == "__main__":
    main()
