/* Preloaded into a workload recorded with syncs taken out of it
 * (`--without-sync`, and each call site `run --syncs` measures on a real
 * file system): a sync the program asks for through the C library, of a
 * file the list names, returns 0 without reaching the kernel, so the
 * recording never sees it. Every other call goes to the kernel as made.
 *
 * BLACKOUT_OMIT_SYNCS holds one entry per line: the call, a tab, 'e' (the
 * path exactly) or 'p' (a pattern: '#' is a run of digits), a tab, the
 * absolute path. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Whether `path` is `pattern`, '#' standing for a run of digits. */
static int like(const char *pattern, size_t len, const char *path) {
    for (size_t i = 0; i < len; i++) {
        if (pattern[i] == '#') {
            if (*path < '0' || *path > '9')
                return 0;
            while (*path >= '0' && *path <= '9')
                path++;
        } else if (pattern[i] != *path++) {
            return 0;
        }
    }
    return *path == '\0';
}

/* Whether the list names `call` on the file `fd` is open on. */
static int omitted(const char *call, int fd) {
    const char *list = getenv("BLACKOUT_OMIT_SYNCS");
    if (list == NULL)
        return 0;
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n < 0)
        return 0;
    path[n] = '\0';
    size_t call_len = strlen(call);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > call_len + 3 && strncmp(p, call, call_len) == 0 && p[call_len] == '\t'
            && p[call_len + 2] == '\t') {
            const char *name = p + call_len + 3;
            size_t name_len = len - call_len - 3;
            int hit = p[call_len + 1] == 'p'
                          ? like(name, name_len, path)
                          : strlen(path) == name_len && strncmp(path, name, name_len) == 0;
            if (hit)
                return 1;
        }
        p += len + (end != NULL);
    }
    return 0;
}

int fsync(int fd) {
    return omitted("fsync", fd) ? 0 : (int)syscall(SYS_fsync, fd);
}

int fdatasync(int fd) {
    return omitted("fdatasync", fd) ? 0 : (int)syscall(SYS_fdatasync, fd);
}

int sync_file_range(int fd, off64_t offset, off64_t nbytes, unsigned int flags) {
    if (omitted("sync_file_range", fd))
        return 0;
    return (int)syscall(SYS_sync_file_range, fd, offset, nbytes, flags);
}
