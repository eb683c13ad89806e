/* Writes one log through many duplicates of one fd, all sharing its offset.
 *
 * Covers: dup, dup2 (raw SYS_dup2, including onto an fd that was open on
 * another file), dup3 with O_CLOEXEC, fcntl F_DUPFD, F_DUPFD_CLOEXEC, F_SETFL
 * adding O_APPEND (seen by every duplicate), lseek, close, close_range (raw
 * SYS_close_range) and a write to an fd it closed (EBADF); fsync.
 *
 * log.txt offsets: one@0 two@4 three@8 four@14 five@19 (lseek 0) ONE@0,
 * then O_APPEND: six@24 seven@28 eight@34 (size 40).
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

static void ok(long r, long want)
{
    if (r != want)
        exit(2);
}

int main(void)
{
    int f = open("log.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ok(f, 3);
    put(f, "one\n");
    int g = dup(f);
    put(g, "two\n");
    ok(syscall(SYS_dup2, f, 10), 10);
    put(10, "three\n");
    ok(dup3(f, 11, O_CLOEXEC), 11);
    put(11, "four\n");
    ok(fcntl(f, F_DUPFD, 20), 20);
    put(20, "five\n");
    ok(fcntl(f, F_DUPFD_CLOEXEC, 30), 30);
    ok(lseek(30, 0, SEEK_SET), 0);
    put(30, "ONE\n");

    ok(fcntl(f, F_SETFL, fcntl(f, F_GETFL) | O_APPEND), 0);
    put(g, "six\n");
    ok(lseek(f, 0, SEEK_SET), 0);
    put(f, "seven\n"); /* O_APPEND: still at the end */
    close(g);

    int other = open("other.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ok(other, 4);
    ok(syscall(SYS_dup2, f, other), other); /* fd 4 now writes the log */
    put(other, "eight\n");

    ok(syscall(SYS_close_range, 4, 40, 0), 0);
    ok(write(10, "lost\n", 5), -1); /* closed: EBADF */
    ok(fsync(f), 0);
    int dir = open(".", O_RDONLY | O_DIRECTORY);
    ok(fsync(dir), 0);
    put(1, "saved\n");
    return 0;
}
