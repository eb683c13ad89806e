/* A program of several processes, for comparing the recorders: a thread,
 * a child that writes its own file, a read on a pipe interrupted by a
 * signal and restarted, a child stopped and continued, a child that runs
 * another program, a rename into the directory it made, and a child still
 * running when the program exits. It prints "done" at the end. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int logfd;
static void say(const char *s) { write(logfd, s, strlen(s)); }
static void on_usr1(int sig) { (void)sig; }
static void *thread(void *arg) { (void)arg; say("thread\n"); fsync(logfd); return 0; }

int main(void) {
    logfd = open("log", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    say("start\n");
    pthread_t t;
    pthread_create(&t, 0, thread, 0);
    pthread_join(t, 0);

    /* A child writes its own file; the parent waits. */
    pid_t c = fork();
    if (c == 0) {
        int fd = open("child.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        write(fd, "from the child\n", 15);
        fdatasync(fd);
        _exit(0);
    }
    waitpid(c, 0, 0);

    /* A read blocked on a pipe, interrupted by a signal and restarted. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, 0);
    int p[2];
    pipe(p);
    pid_t parent = getpid();
    c = fork();
    if (c == 0) {
        usleep(100000);
        kill(parent, SIGUSR1);
        usleep(50000);
        write(p[1], "piped\n", 6);
        _exit(0);
    }
    char buf[16];
    ssize_t n = read(p[0], buf, sizeof buf);
    if (n > 0) write(logfd, buf, n);
    waitpid(c, 0, 0);

    /* A child stopped and continued (a group-stop). */
    c = fork();
    if (c == 0) {
        raise(SIGSTOP);
        say("continued\n");
        _exit(0);
    }
    int st;
    waitpid(c, &st, WUNTRACED);
    kill(c, SIGCONT);
    waitpid(c, 0, 0);

    /* A child that runs another program. */
    c = fork();
    if (c == 0) {
        execl("/bin/sh", "sh", "-c", "echo exec >> log; mkdir sub && echo x > sub/f", (char *)0);
        _exit(127);
    }
    waitpid(c, 0, 0);
    rename("child.txt", "sub/child.txt");

    /* A child still running when the program exits. */
    if (fork() == 0) {
        usleep(300000);
        int fd = open("late.txt", O_WRONLY | O_CREAT | O_EXCL, 0600);
        write(fd, "late\n", 5);
        fsync(fd);
        _exit(0);
    }
    printf("done\n");
    return 0;
}
