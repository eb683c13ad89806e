/* The floor under any ptrace recorder (docs/PERFORMANCE.md): what one
 * traced call costs on this machine when the tracer does nothing with it.
 *
 *   cc -O2 -o stop examples/bench/stop.c
 *   ./stop bare N        N writes of 100 bytes, untraced
 *   ./stop one N         each write stops once (a seccomp stop), then goes on
 *   ./stop two N         each write stops at its start and again at its end
 *   taskset -c 0 ./stop one N    tracer and tracee on one CPU
 *
 * It prints the wall time and the time per write. The writes go to a file
 * "stop.out" in the working directory. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void writes(long n) {
    int fd = open("stop.out", O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    char b[100];
    memset(b, 'x', sizeof b);
    for (long i = 0; i < n; i++)
        if (write(fd, b, sizeof b) != sizeof b) _exit(3);
    close(fd);
}

/* Stops every write at a seccomp stop. */
static void filter_writes(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog p = {sizeof f / sizeof f[0], f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p))
        _exit(4);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: stop bare|one|two N\n");
        return 2;
    }
    long n = atol(argv[2]);
    int stops = strcmp(argv[1], "two") == 0 ? 2 : strcmp(argv[1], "one") == 0 ? 1 : 0;
    double t0 = now();
    if (stops == 0) {
        writes(n);
    } else {
        pid_t c = fork();
        if (c == 0) {
            raise(SIGSTOP);
            filter_writes();
            writes(n);
            _exit(0);
        }
        int st;
        waitpid(c, &st, WUNTRACED);
        ptrace(PTRACE_SEIZE, c, 0, PTRACE_O_TRACESECCOMP | PTRACE_O_EXITKILL);
        kill(c, SIGCONT);
        while (waitpid(c, &st, __WALL) == c && !WIFEXITED(st) && !WIFSIGNALED(st)) {
            int seccomp = st >> 8 == (SIGTRAP | (PTRACE_EVENT_SECCOMP << 8));
            int sig = WIFSTOPPED(st) ? WSTOPSIG(st) : 0;
            if (seccomp && stops == 2) {
                ptrace(PTRACE_SYSCALL, c, 0, 0);
                waitpid(c, &st, __WALL);
            }
            if (seccomp || sig == SIGSTOP || sig == SIGCONT || sig == SIGTRAP) sig = 0;
            ptrace(PTRACE_CONT, c, 0, sig);
        }
    }
    double t = now() - t0;
    printf("%s: %ld writes in %.3f s, %.2f us each\n", argv[1], n, t, t / n * 1e6);
    return 0;
}
