/* A helper process made with clone(CLONE_FILES) (its own memory, the
 * parent's fd table) opens the output file and closes one of the parent's
 * fds; the parent then writes through the fd the helper opened.
 *
 * Covers: clone (glibc clone(), SYS_clone) with CLONE_FILES but not CLONE_VM:
 * fds opened or closed by the child are opened or closed for the parent too
 * (a write to the fd the child closed fails with EBADF); wait4; fsync.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int helper(void *arg)
{
    int scratch = *(int *)arg;
    int out = open("out.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out != 4 || write(out, "from helper\n", 12) != 12)
        return 1;
    close(scratch);
    return 0;
}

int main(void)
{
    int scratch = open("scratch.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (scratch != 3)
        exit(1);
    size_t size = 64 * 1024;
    char *stack = malloc(size);
    pid_t pid = clone(helper, stack + size, CLONE_FILES | SIGCHLD, &scratch);
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
        exit(2);
    /* fd 3 was closed by the helper, fd 4 was opened by it. */
    if (write(scratch, "lost\n", 5) != -1)
        exit(3);
    if (write(4, "from parent\n", 12) != 12 || fsync(4) != 0)
        exit(4);
    int dir = open(".", O_RDONLY | O_DIRECTORY);
    if (fsync(dir) != 0)
        exit(5);
    if (write(1, "saved\n", 6) != 6)
        exit(6);
    return 0;
}
