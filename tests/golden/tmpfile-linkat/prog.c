/* Writes two files anonymously with O_TMPFILE and gives them names only once
 * their bytes are durable.
 *
 * Covers: openat with O_TMPFILE; linkat(fd, "", AT_FDCWD, name, AT_EMPTY_PATH)
 * (needs CAP_DAC_READ_SEARCH); linkat(AT_FDCWD, "/proc/self/fd/N", AT_FDCWD,
 * name, AT_SYMLINK_FOLLOW); write after the link; fsync, fdatasync; fsync of
 * the directory.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void ok(long r, long want)
{
    if (r != want)
        exit(1);
}

int main(void)
{
    int t1 = open(".", O_TMPFILE | O_WRONLY, 0644);
    if (t1 < 0)
        exit(2);
    ok(write(t1, "first, via AT_EMPTY_PATH\n", 25), 25);
    ok(fsync(t1), 0);
    ok(linkat(t1, "", AT_FDCWD, "one.txt", AT_EMPTY_PATH), 0);

    int t2 = open(".", O_TMPFILE | O_RDWR, 0600);
    if (t2 < 0)
        exit(3);
    ok(write(t2, "second, via /proc\n", 18), 18);
    ok(fdatasync(t2), 0);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", t2);
    ok(linkat(AT_FDCWD, path, AT_FDCWD, "two.txt", AT_SYMLINK_FOLLOW), 0);
    /* Written after the name exists and never synced. */
    ok(write(t2, "tail\n", 5), 5);

    int dir = open(".", O_RDONLY | O_DIRECTORY);
    ok(fsync(dir), 0);
    ok(write(1, "saved\n", 6), 6);
    return 0;
}
