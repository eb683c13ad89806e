/* Publishes a new config and a new directory tree with RENAME_EXCHANGE, so
 * the old versions stay reachable under the staging names.
 *
 * Covers: renameat2 with RENAME_EXCHANGE (raw SYS_renameat2) of two files in
 * one directory and of two directories in different parents (a/cur <-> next),
 * then a create through "next/.." that must land in the top directory (next
 * now lives there); fsync of files and both directories.
 *
 * init/: live.conf, a/cur/marker, next/marker.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void ok(long r, long want)
{
    if (r != want)
        exit(1);
}

int main(void)
{
    int fd = open("staged.conf", O_WRONLY | O_CREAT | O_EXCL, 0644);
    ok(write(fd, "current settings v2\n", 20), 20);
    ok(fsync(fd), 0);
    close(fd);

    ok(syscall(SYS_renameat2, AT_FDCWD, "staged.conf", AT_FDCWD, "live.conf",
               RENAME_EXCHANGE), 0);
    ok(syscall(SYS_renameat2, AT_FDCWD, "a/cur", AT_FDCWD, "next", RENAME_EXCHANGE), 0);

    /* "next" is the old a/cur now, and sits in the top directory. */
    fd = open("next/../swapped.txt", O_WRONLY | O_CREAT | O_EXCL, 0644);
    ok(write(fd, "done\n", 5), 5);
    ok(fsync(fd), 0);
    close(fd);

    int a = open("a", O_RDONLY | O_DIRECTORY);
    ok(fsync(a), 0);
    int top = open(".", O_RDONLY | O_DIRECTORY);
    ok(fsync(top), 0);
    ok(write(1, "saved\n", 6), 6);
    return 0;
}
