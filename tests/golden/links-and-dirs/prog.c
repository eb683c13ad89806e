/* Builds and prunes a small tree of directories, hard links and symlinks.
 *
 * Covers: mkdir (raw SYS_mkdir), mkdirat (raw SYS_mkdirat), link (raw
 * SYS_link), linkat, symlink (raw SYS_symlink), symlinkat, a write through a
 * symlink (open follows it to d/f), unlink (raw SYS_unlink), unlinkat,
 * unlinkat with AT_REMOVEDIR, rmdir (raw SYS_rmdir); fsync of a file and of
 * both directories.
 *
 * End state: d/f ("data\nmore\n"), soft -> d/f, d/ otherwise empty.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static void ok(long r, long want)
{
    if (r != want)
        exit(1);
}

int main(void)
{
    ok(syscall(SYS_mkdir, "d", 0755), 0);
    int d = open("d", O_RDONLY | O_DIRECTORY);
    ok(syscall(SYS_mkdirat, d, "sub", 0755), 0);
    int f = openat(d, "f", O_WRONLY | O_CREAT | O_EXCL, 0644);
    ok(write(f, "data\n", 5), 5);
    ok(fsync(f), 0);
    close(f);

    ok(syscall(SYS_link, "d/f", "hard"), 0);
    ok(linkat(d, "f", AT_FDCWD, "hard2", 0), 0);
    ok(syscall(SYS_symlink, "d/f", "soft"), 0);
    ok(symlinkat("f", d, "soft2"), 0);

    int s = open("soft", O_WRONLY | O_APPEND);
    ok(write(s, "more\n", 5), 5);
    ok(fsync(s), 0);
    close(s);

    ok(syscall(SYS_unlink, "hard"), 0);
    ok(unlinkat(AT_FDCWD, "hard2", 0), 0);
    ok(unlinkat(d, "soft2", 0), 0);
    ok(unlinkat(d, "sub", AT_REMOVEDIR), 0);
    ok(syscall(SYS_mkdir, "gone", 0700), 0);
    ok(syscall(SYS_rmdir, "gone"), 0);

    ok(fsync(d), 0);
    int top = open(".", O_RDONLY | O_DIRECTORY);
    ok(fsync(top), 0);
    ok(write(1, "saved\n", 6), 6);
    return 0;
}
