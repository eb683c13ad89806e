/* Three worker threads append records to one shared journal (one O_APPEND
 * fd opened by the main thread) and each writes its own part file, which it
 * opens, fsyncs and closes itself.
 *
 * Covers: pthread_create (clone3 with CLONE_FILES|CLONE_VM|CLONE_THREAD: one
 * fd table shared by all threads), writes from several threads to one
 * O_APPEND fd (each lands at the end of file whatever the interleaving), fds
 * opened and closed in threads, fsync from threads and from the main thread.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int journal;

static void put(int fd, const char *s)
{
    if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
        exit(1);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    char name[32], line[64];
    snprintf(name, sizeof name, "part-%ld.txt", id);
    int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        exit(2);
    for (int i = 0; i < 3; i++) {
        snprintf(line, sizeof line, "worker %ld record %d\n", id, i);
        put(journal, line);
        put(fd, line);
    }
    if (fsync(fd) != 0)
        exit(3);
    close(fd);
    return NULL;
}

int main(void)
{
    journal = open("journal.log", O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (journal < 0)
        exit(4);
    pthread_t t[3];
    for (long i = 0; i < 3; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
            exit(5);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    if (fsync(journal) != 0)
        exit(6);
    int dir = open(".", O_RDONLY | O_DIRECTORY);
    if (fsync(dir) != 0)
        exit(7);
    put(1, "saved\n");
    return 0;
}
