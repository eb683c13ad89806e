/* Makes files durable with each flavour of sync (sync_file_range, which is
 * not a durability barrier, is followed by a real fdatasync).
 *
 * Covers: sync_file_range (SYNC_FILE_RANGE_WRITE), fdatasync, fsync of a
 * file, sync, syncfs (through a directory fd), and a file created after the
 * last barrier; close.
 *
 * Expected durability: a.txt's write by fdatasync (not sync_file_range); b.txt's
 * write by its fsync; the entries so far and c.txt by sync(); d.txt by syncfs();
 * e.txt (written after "saved") never.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void ok(long r, long want)
{
    if (r != want)
        exit(1);
}

static int make(const char *name, const char *text)
{
    int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ok(write(fd, text, strlen(text)), (long)strlen(text));
    return fd;
}

int main(void)
{
    int a = make("a.txt", "range-synced\n");
    ok(sync_file_range(a, 0, 0, SYNC_FILE_RANGE_WRITE), 0);
    ok(fdatasync(a), 0);

    int b = make("b.txt", "fsynced\n");
    ok(fsync(b), 0);

    int c = make("c.txt", "synced by sync\n");
    sync();

    int d = make("d.txt", "synced by syncfs\n");
    int dir = open(".", O_RDONLY | O_DIRECTORY);
    ok(syncfs(dir), 0);
    ok(write(1, "saved\n", 6), 6);

    int e = make("e.txt", "scratch, never synced\n");
    close(a);
    close(b);
    close(c);
    close(d);
    close(e);
    return 0;
}
