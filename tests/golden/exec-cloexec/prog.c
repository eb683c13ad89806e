/* Hands two open files to a shell script: the O_CLOEXEC one is closed by
 * execve, the other stays open in the script.
 *
 * Covers: vfork (glibc vfork, the vfork syscall) with a copied fd table,
 * execve closing O_CLOEXEC fds, a child shell writing through an inherited
 * fd (echo x >&3) and failing on the closed one (echo y >&4: EBADF, no
 * write), the parent writing through fd 4 after the child exec'd (still open
 * in the parent); wait4, fsync.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void put(int fd, const char *s)
{
    if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
        exit(1);
}

int main(void)
{
    int kept = open("kept.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int closed = open("closed.txt", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (kept != 3 || closed != 4)
        exit(2);
    put(kept, "parent\n");
    put(closed, "parent\n");

    pid_t pid = vfork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", "echo x >&3; echo y 2>/dev/null >&4; exit 0",
              (char *)NULL);
        _exit(127);
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
        exit(3);

    put(closed, "after\n");
    put(kept, "after\n");
    if (fsync(kept) != 0 || fsync(closed) != 0)
        exit(4);
    int dir = open(".", O_RDONLY | O_DIRECTORY);
    if (fsync(dir) != 0)
        exit(5);
    put(1, "saved\n");
    return 0;
}
