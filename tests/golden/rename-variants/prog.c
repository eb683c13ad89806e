/* Moves files and a directory around with each rename call.
 *
 * Covers: rename (raw SYS_rename), renameat (raw SYS_renameat, through a
 * directory fd), renameat2 with RENAME_NOREPLACE (one that succeeds and one
 * that fails with EEXIST), a rename that replaces an existing file, a
 * directory rename; mkdir (raw SYS_mkdir); fsync of both directories.
 *
 * End state: e (the bytes of a), h gone (replaced by f.txt), and d2/ (was
 * d) holding g (the bytes of f.txt).
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

static void make(const char *name, const char *text)
{
    int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ok(write(fd, text, strlen(text)), (long)strlen(text));
    ok(fsync(fd), 0);
    close(fd);
}

int main(void)
{
    ok(syscall(SYS_mkdir, "d", 0755), 0);
    int dfd = open("d", O_RDONLY | O_DIRECTORY);
    make("a", "first\n");
    make("f.txt", "second\n");
    make("h", "third\n");
    ok(syscall(SYS_rename, "a", "b"), 0);
    ok(syscall(SYS_renameat, AT_FDCWD, "b", dfd, "c"), 0);
    ok(syscall(SYS_renameat2, dfd, "c", AT_FDCWD, "e", RENAME_NOREPLACE), 0);
    ok(syscall(SYS_renameat2, AT_FDCWD, "f.txt", AT_FDCWD, "e", RENAME_NOREPLACE), -1);
    ok(syscall(SYS_rename, "f.txt", "h"), 0);      /* replaces h */
    ok(syscall(SYS_renameat, AT_FDCWD, "h", dfd, "g"), 0);
    ok(syscall(SYS_rename, "d", "d2"), 0);
    ok(fsync(dfd), 0);
    int root = open(".", O_RDONLY | O_DIRECTORY);
    ok(fsync(root), 0);
    ok(write(1, "saved\n", 6), 6);
    return 0;
}
