/* Shrinks, grows, preallocates and zeroes ranges of one file.
 *
 * Covers: truncate, ftruncate; fallocate plain extend (mode 0 past the end),
 * mode 0 inside the file (allocation only, no visible change), KEEP_SIZE
 * alone (allocation only), FALLOC_FL_KEEP_SIZE|FALLOC_FL_PUNCH_HOLE,
 * FALLOC_FL_ZERO_RANGE inside the file and past its end; fdatasync.
 *
 * Size as it goes: 64 -> ftruncate 32 -> truncate 48 -> fallocate 100 ->
 * (fallocate 0..50: no change) -> punch 8..16 -> zero 16..24 ->
 * zero 96..112 (size 112) -> (keep-size 112..4208: no change).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void ok(long r, long want)
{
    if (r != want)
        exit(1);
}

int main(void)
{
    char buf[64];
    memset(buf, 'a', sizeof buf);
    int f = open("t.bin", O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (f < 0)
        exit(2);
    ok(write(f, buf, sizeof buf), 64);
    ok(ftruncate(f, 32), 0);
    ok(truncate("t.bin", 48), 0);
    ok(fallocate(f, 0, 0, 100), 0);
    ok(fallocate(f, 0, 0, 50), 0);
    ok(fallocate(f, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 8, 8), 0);
    ok(fallocate(f, FALLOC_FL_ZERO_RANGE, 16, 8), 0);
    ok(fallocate(f, FALLOC_FL_ZERO_RANGE, 96, 16), 0);
    ok(fallocate(f, FALLOC_FL_KEEP_SIZE, 112, 4096), 0);
    struct stat st;
    ok(fstat(f, &st), 0);
    ok(st.st_size, 112);
    ok(fdatasync(f), 0);
    close(f);
    int dir = open(".", O_RDONLY | O_DIRECTORY);
    ok(fsync(dir), 0);
    ok(write(1, "saved\n", 6), 6);
    return 0;
}
