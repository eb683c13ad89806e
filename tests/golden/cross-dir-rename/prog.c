/* Moves files between two directories but fsyncs only one side of each move.
 *
 * Covers: a cross-directory rename (raw SYS_rename) a/x -> b/x where only b
 * is fsynced afterwards (the removal from a is never synced), and b/y -> a/y
 * where only b (the source) is fsynced (the new entry in a is never synced);
 * mkdir, fsync of files and directories.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static void ok(long r, long want)
{
    if (r != want)
        exit(1);
}

static void make(const char *name, const char *text)
{
    int fd = open(name, O_WRONLY | O_CREAT | O_EXCL, 0644);
    ok(write(fd, text, strlen(text)), (long)strlen(text));
    ok(fsync(fd), 0);
    close(fd);
}

int main(void)
{
    ok(mkdir("a", 0755), 0);
    ok(mkdir("b", 0755), 0);
    make("a/x", "x data\n");
    make("b/y", "y data\n");
    int a = open("a", O_RDONLY | O_DIRECTORY);
    int b = open("b", O_RDONLY | O_DIRECTORY);
    int top = open(".", O_RDONLY | O_DIRECTORY);
    ok(fsync(a), 0);
    ok(fsync(b), 0);
    ok(fsync(top), 0);

    ok(syscall(SYS_rename, "a/x", "b/x"), 0);
    ok(syscall(SYS_rename, "b/y", "a/y"), 0);
    ok(fsync(b), 0); /* a is never fsynced again */
    ok(write(1, "saved\n", 6), 6);
    return 0;
}
