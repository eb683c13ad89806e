/* Moves a file that was outside the directory before this program wrote to
 * it (opened without O_EXCL, so the log cannot tell it is new, and its old
 * bytes are not in the log) into the directory with rename.
 *
 * Covers: rename (raw SYS_rename) from outside the directory into it of a
 * file the run did not create new there (a recording of it must be
 * refused). Prints its working directory on stderr.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void)
{
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd))
        exit(1);
    fprintf(stderr, "%s\n", cwd);
    char tmp[64];
    snprintf(tmp, sizeof tmp, "/tmp/golden-refuse-rename-in-%d", (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT, 0644);
    if (fd < 0)
        exit(2);
    if (write(fd, "maybe old\n", 10) != 10)
        exit(3);
    close(fd);
    if (syscall(SYS_rename, tmp, "imported.txt") != 0) {
        unlink(tmp);
        exit(4);
    }
    if (write(1, "saved\n", 6) != 6)
        exit(6);
    return 0;
}
