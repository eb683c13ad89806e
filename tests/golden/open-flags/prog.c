/* Creates and rewrites files through every open flavour.
 *
 * Covers: open (raw SYS_open), openat, creat (raw SYS_creat); O_CREAT,
 * O_EXCL (including a failing O_EXCL on an existing name), O_TRUNC on
 * non-empty files from init/ (with O_WRONLY, and with O_RDONLY, which Linux
 * truncates as well), O_APPEND, O_SYNC, O_DSYNC, O_DIRECTORY (a directory fd
 * that is fsynced); write; fsync; close.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void put(int fd, const char *s)
{
    if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
        exit(1);
}

static int check(long fd)
{
    if (fd < 0)
        exit(2);
    return (int)fd;
}

int main(void)
{
    int a = check(syscall(SYS_open, "a.txt", O_WRONLY | O_CREAT | O_EXCL, 0644));
    put(a, "alpha\n");
    close(a);
    if (syscall(SYS_open, "a.txt", O_WRONLY | O_CREAT | O_EXCL, 0644) >= 0)
        exit(3); /* must fail with EEXIST */

    int b = check(syscall(SYS_creat, "b.txt", 0644));
    put(b, "bravo\n");
    close(b);

    int old = check(openat(AT_FDCWD, "old.txt", O_WRONLY | O_TRUNC));
    put(old, "new\n");
    close(old);

    int ro = check(openat(AT_FDCWD, "ro.txt", O_RDONLY | O_TRUNC));
    close(ro);

    int ap = check(openat(AT_FDCWD, "a.txt", O_WRONLY | O_APPEND));
    put(ap, "appended\n");
    close(ap);

    int s = check(openat(AT_FDCWD, "sync.txt", O_WRONLY | O_CREAT | O_SYNC, 0644));
    put(s, "synced\n");
    close(s);

    int d = check(syscall(SYS_open, "dsync.txt", O_WRONLY | O_CREAT | O_DSYNC, 0644));
    put(d, "dsynced\n");
    close(d);

    int dir = check(openat(AT_FDCWD, ".", O_RDONLY | O_DIRECTORY));
    if (fsync(dir) != 0)
        exit(4);
    close(dir);
    put(1, "saved\n");
    return 0;
}
