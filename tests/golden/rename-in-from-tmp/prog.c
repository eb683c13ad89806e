/* Prepares a file in /tmp (outside the directory) and moves it into the
 * directory with rename, so its bytes never pass through a logged write to
 * the directory.
 *
 * Covers: a file created new outside the directory (mkstemp: O_CREAT|O_EXCL),
 * written and fsynced there, then renamed (raw SYS_rename) into it: modelled
 * in the directory standing for everywhere outside, the rename a rename from
 * it; fsync of the directory. Prints its working directory on stderr.
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
    char tmp[] = "/tmp/golden-rename-in-XXXXXX";
    int fd = mkstemp(tmp);
    if (fd < 0)
        exit(2);
    if (write(fd, "prepared elsewhere\n", 19) != 19 || fsync(fd) != 0)
        exit(3);
    close(fd);
    if (syscall(SYS_rename, tmp, "imported.txt") != 0) {
        unlink(tmp);
        exit(4);
    }
    int dir = open(".", O_RDONLY | O_DIRECTORY);
    if (fsync(dir) != 0)
        exit(5);
    if (write(1, "saved\n", 6) != 6)
        exit(6);
    return 0;
}
