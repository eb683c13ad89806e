/* A writer thread appends records to a log while a syncer thread fsyncs the
 * same fd three times; main then only fsyncs the directory. strace splits the
 * concurrent calls into `<unfinished ...>` / `<... resumed>` pairs.
 *
 * Covers: concurrent write and fsync on one fd from two threads (clone3,
 * shared fd table); an fsync covers only the writes that completed before it
 * started, so the records written during and after the last fsync are never
 * synced (the program does not stop the writer before syncing).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fd;

static void *writer(void *arg)
{
    (void)arg;
    char rec[32];
    for (int i = 0; i < 24; i++) {
        snprintf(rec, sizeof rec, "record %02d\n", i);
        if (write(fd, rec, strlen(rec)) != (ssize_t)strlen(rec))
            exit(1);
        usleep(400);
    }
    return NULL;
}

static void *syncer(void *arg)
{
    (void)arg;
    for (int i = 0; i < 3; i++) {
        usleep(1500);
        if (fsync(fd) != 0)
            exit(2);
    }
    return NULL;
}

int main(void)
{
    fd = open("records.log", O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0)
        exit(3);
    pthread_t w, s;
    if (pthread_create(&w, NULL, writer, NULL) || pthread_create(&s, NULL, syncer, NULL))
        exit(4);
    pthread_join(w, NULL);
    pthread_join(s, NULL);
    int dir = open(".", O_RDONLY | O_DIRECTORY);
    if (fsync(dir) != 0)
        exit(5);
    if (write(1, "saved\n", 6) != 6)
        exit(6);
    return 0;
}
