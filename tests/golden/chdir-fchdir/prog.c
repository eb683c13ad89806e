/* Creates files relative to a working directory that moves around.
 *
 * Covers: chdir into a subdirectory, fchdir into a sibling through an
 * O_DIRECTORY fd opened with "..", fchdir back to the top directory through
 * a saved fd, chdir with a two-level path; relative creat/open/mkdir after
 * each move; fsync of the files and of every directory but "other" (so
 * other/b.txt's entry is never synced).
 *
 * End state: sub/a.txt, sub/inner/d.txt, other/b.txt, c.txt.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static void sync_dir(const char *name)
{
    int fd = open(name, O_RDONLY | O_DIRECTORY);
    ok(fsync(fd), 0);
    close(fd);
}

int main(void)
{
    int top = open(".", O_RDONLY | O_DIRECTORY);
    ok(mkdir("sub", 0755), 0);
    ok(mkdir("other", 0755), 0);

    ok(chdir("sub"), 0);
    make("a.txt", "in sub\n");
    ok(mkdir("inner", 0755), 0);

    int other = open("../other", O_RDONLY | O_DIRECTORY);
    ok(fchdir(other), 0);
    make("b.txt", "in other\n");

    ok(fchdir(top), 0);
    make("c.txt", "at the top\n");

    ok(chdir("sub/inner"), 0);
    make("d.txt", "in sub/inner\n");
    sync_dir(".");
    sync_dir("..");
    ok(fsync(top), 0);
    ok(write(1, "saved\n", 6), 6);
    return 0;
}
