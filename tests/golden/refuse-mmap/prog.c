/* Updates a file through a shared writable memory mapping, then msyncs it.
 * The bytes reach the file through memory, not through a system call.
 *
 * Covers: mmap with MAP_SHARED and PROT_READ|PROT_WRITE of an O_RDWR fd on a
 * file in the directory (a recording of it must be refused); ftruncate,
 * msync, munmap. Prints its working directory on stderr.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void)
{
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd))
        exit(1);
    fprintf(stderr, "%s\n", cwd);
    int fd = open("table.bin", O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, 4096) != 0)
        exit(2);
    char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        exit(3);
    memcpy(p, "row 1\nrow 2\n", 12);
    if (msync(p, 4096, MS_SYNC) != 0 || munmap(p, 4096) != 0)
        exit(4);
    close(fd);
    if (write(1, "saved\n", 6) != 6)
        exit(5);
    return 0;
}
