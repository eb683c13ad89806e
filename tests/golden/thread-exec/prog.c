/* A worker thread replaces the whole process with a shell script (execve
 * from a thread that is not the thread group leader) while the main thread
 * is blocked reading a pipe. The script inherits the fd table: the O_CLOEXEC
 * fd is closed, the other stays open.
 *
 * Covers: execve from a non-leader thread (strace logs
 * "+++ superseded by execve in pid N +++" and resumes the execve under the
 * leader's pid), a leader's read cut short by it ("= ?"), execve closing
 * O_CLOEXEC fds of the shared table; the script then appends through fd 3,
 * fails on fd 4, runs sync(1) and prints "saved".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int pipefd[2];

static void put(int fd, const char *s)
{
    if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
        exit(1);
}

static void *worker(void *arg)
{
    (void)arg;
    usleep(20000); /* let main block in read() first */
    execl("/bin/sh", "sh", "-c",
          "echo script >&3; echo lost 2>/dev/null >&4; sync; echo saved", (char *)NULL);
    exit(2);
}

int main(void)
{
    int kept = open("kept.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int closed = open("closed.txt", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (kept != 3 || closed != 4 || pipe2(pipefd, O_CLOEXEC) != 0)
        exit(3);
    put(kept, "main\n");
    put(closed, "main\n");
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        exit(4);
    char c;
    if (read(pipefd[0], &c, 1) >= 0) /* never returns: the execve ends it */
        exit(5);
    exit(6);
}
