/* Assembles dst.txt from pieces of src.txt without reading them into memory.
 *
 * Covers: copy_file_range with an input offset pointer and with both
 * offsets NULL (file offsets move), sendfile with an offset pointer (input
 * offset unchanged) and with NULL, splice file -> pipe (input offset
 * pointer) and pipe -> file (output at the file offset); pipe2; lseek.
 *
 * src.txt = "hello copy world\n" (17 bytes). dst.txt gets "hello"@0,
 * " copy"@5, "world"@10, " world\n"@15 (sendfile with NULL reads src from its
 * offset 10, where the second copy_file_range left it) and "hello "@22.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <unistd.h>

static void ok(long r, long want)
{
    if (r != want)
        exit(1);
}

int main(void)
{
    int src = open("src.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
    int dst = open("dst.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ok(write(src, "hello copy world\n", 17), 17);

    loff_t in = 0;
    ok(copy_file_range(src, &in, dst, NULL, 5, 0), 5);      /* dst 0..5 */
    ok(lseek(src, 5, SEEK_SET), 5);
    ok(copy_file_range(src, NULL, dst, NULL, 5, 0), 5);     /* dst 5..10, src at 10 */
    off_t at = 11;
    ok(sendfile(dst, src, &at, 5), 5);                      /* "world" -> dst 10..15 */
    ok(sendfile(dst, src, NULL, 7), 7);                     /* src 10..17 -> dst 15..22 */

    int p[2];
    ok(pipe(p), 0);
    loff_t from = 0;
    ok(splice(src, &from, p[1], NULL, 6, 0), 6);           /* "hello " into the pipe */
    ok(splice(p[0], NULL, dst, NULL, 6, 0), 6);            /* -> dst 22..28 */

    ok(fsync(src), 0);
    ok(fsync(dst), 0);
    int dir = open(".", O_RDONLY | O_DIRECTORY);
    ok(fsync(dir), 0);
    ok(write(1, "saved\n", 6), 6);
    return 0;
}
