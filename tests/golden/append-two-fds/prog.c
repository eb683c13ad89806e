/* Two independently opened O_APPEND fds on one log (each with its own open
 * file description and offset) take turns appending, and a third fd without
 * O_APPEND overwrites the start at its own offset.
 *
 * Covers: O_APPEND from two separately opened fds (every write lands at the
 * current end of file, whichever fd wrote last), a plain fd whose offset is
 * not moved by the others' appends; appending to a non-empty file from
 * init/; fsync through one fd covers writes made through all of them.
 *
 * app.log starts as "existing line\n" (14 bytes): A1@14 B1@20 A2@26 B2@32,
 * "EXISTING"@0 through the plain fd, A3@38.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void put(int fd, const char *s)
{
    if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
        exit(1);
}

int main(void)
{
    int a = open("app.log", O_WRONLY | O_APPEND);
    int b = open("app.log", O_WRONLY | O_APPEND);
    int plain = open("app.log", O_WRONLY);
    if (a < 0 || b < 0 || plain < 0)
        exit(2);
    put(a, "A one\n");
    put(b, "B one\n");
    put(a, "A two\n");
    put(b, "B two\n");
    put(plain, "EXISTING");
    put(a, "A end\n");
    if (fsync(b) != 0)
        exit(3);
    put(1, "saved\n");
    return 0;
}
