# Saves a new config atomically: write a temporary file, fsync it, replace
# the old config with os.replace, then fsync the directory through an
# O_DIRECTORY fd before reporting success.
#
# Covers: a Python program (interpreter start-up outside the directory is
# ignored), open(..., "w") (O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC), write,
# os.fsync of a file and of a directory fd, os.replace (rename over an
# existing file from init/), a line written to stdout.
import os
import sys

config = {"theme": "dark", "version": 2}
text = "".join(f"{k} = {v!r}\n" for k, v in sorted(config.items()))
tmp = "settings.conf.tmp"
with open(tmp, "w") as f:
    f.write(text)
    f.flush()
    os.fsync(f.fileno())
os.replace(tmp, "settings.conf")
dirfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
try:
    os.fsync(dirfd)
finally:
    os.close(dirfd)
sys.stdout.write("saved\n")
sys.stdout.flush()
