/* Builds one file through every write flavour, tracking the file offset.
 *
 * Covers: write, pwrite64, writev, pwritev, pwritev2 (raw SYS_pwritev2:
 * offset -1 = current offset, RWF_APPEND with offset -1 and with an explicit
 * offset, RWF_DSYNC), lseek (SEEK_SET, SEEK_END), fsync.
 *
 * Offsets as the kernel applies them (file offset in brackets):
 *   write "0123456789" @0 [10]; pwrite "AB" @2 [10]; writev "cdef" @10 [14];
 *   pwritev "cdef" @4 [14]; lseek 0 [0]; pwritev2(-1) "gh" @0 [2];
 *   pwritev2(-1, RWF_APPEND) "ij" @14 [16]; write "Z" @16 [17];
 *   pwritev2(5, RWF_DSYNC) "kl" @5 [17]; pwritev2(0, RWF_APPEND) "mn" @17 [17];
 *   write "Y" @17 [18]; lseek SEEK_END [19]; write "\n" @19.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static void ok(long r, long want)
{
    if (r != want)
        exit(1);
}

static long pwv2(int fd, const char *s, long off, int flags)
{
    struct iovec v = {(void *)s, strlen(s)};
    return syscall(SYS_pwritev2, fd, &v, 1, off, 0L, flags);
}

int main(void)
{
    int f = open("data.bin", O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (f < 0)
        exit(2);
    struct iovec two[2] = {{"cd", 2}, {"ef", 2}};
    ok(write(f, "0123456789", 10), 10);
    ok(pwrite(f, "AB", 2, 2), 2);
    ok(writev(f, two, 2), 4);
    ok(pwritev(f, two, 2, 4), 4);
    ok(lseek(f, 0, SEEK_SET), 0);
    ok(pwv2(f, "gh", -1, 0), 2);
    ok(pwv2(f, "ij", -1, RWF_APPEND), 2);
    ok(write(f, "Z", 1), 1);
    ok(pwv2(f, "kl", 5, RWF_DSYNC), 2);
    ok(pwv2(f, "mn", 0, RWF_APPEND), 2);
    ok(write(f, "Y", 1), 1);
    ok(lseek(f, 0, SEEK_END), 19);
    ok(write(f, "\n", 1), 1);
    ok(fsync(f), 0);
    close(f);
    int dir = open(".", O_RDONLY | O_DIRECTORY);
    ok(fsync(dir), 0);
    ok(write(1, "saved\n", 6), 6);
    return 0;
}
