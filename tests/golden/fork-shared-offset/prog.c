/* A parent and its forked children write one report through the same
 * inherited fd, so they share one file offset; each child also writes a file
 * of its own and closes its copy of the shared fd.
 *
 * Covers: fork (raw SYS_fork, and glibc fork(), which is clone without
 * CLONE_FILES): the child gets a copy of the fd table whose entries share
 * open file descriptions (offsets continue across processes); close in a
 * child leaves the parent's fd open; wait4; fsync.
 *
 * report.txt: "parent 1\n"@0 "child A 1\n"@9 "child A 2\n"@19
 * "parent 2\n"@29 "child B\n"@38 "parent 3\n"@46.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void put(int fd, const char *s)
{
    if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
        _exit(1);
}

static void child(int fd, const char *own, const char **lines)
{
    int mine = open(own, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (; *lines; lines++)
        put(fd, *lines);
    close(fd);
    put(mine, "mine\n");
    fsync(mine);
    _exit(0);
}

static void reap(pid_t pid)
{
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
        exit(2);
}

int main(void)
{
    int fd = open("report.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    put(fd, "parent 1\n");

    const char *a[] = {"child A 1\n", "child A 2\n", NULL};
    pid_t pid = (pid_t)syscall(SYS_fork);
    if (pid == 0)
        child(fd, "child-a.txt", a);
    reap(pid);
    put(fd, "parent 2\n");

    const char *b[] = {"child B\n", NULL};
    pid = fork();
    if (pid == 0)
        child(fd, "child-b.txt", b);
    reap(pid);
    put(fd, "parent 3\n");

    if (fsync(fd) != 0)
        exit(3);
    int dir = open(".", O_RDONLY | O_DIRECTORY);
    if (fsync(dir) != 0)
        exit(4);
    put(1, "saved\n");
    return 0;
}
