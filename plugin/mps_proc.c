/* mps_proc.c - the processes around a step's MPS daemon (see mps_proc.h). */
#include "mps_proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "linux_calls.h"

#define KILL_ROUNDS 4
#define ENVIRON_MAX (4 << 20) /* the most of a process's environment read */

void mps_pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

void mps_user_groups(struct mps_user *u)
{
    u->ngroups = 0;
    u->groups = NULL;
    for (int tries = 0; tries < 4; tries++) { /* the count may change between the calls */
        int n = getgroups(0, NULL);
        if (n <= 0)
            return;
        gid_t *g = calloc((size_t)n, sizeof *g);
        if (!g)
            return;
        int got = getgroups(n, g);
        if (got >= 0) {
            u->ngroups = (size_t)got;
            u->groups = g;
            return;
        }
        free(g);
    }
}

void mps_user_free(struct mps_user *u)
{
    free(u->groups);
    u->groups = NULL;
    u->ngroups = 0;
}

int mps_user_become(const struct mps_user *u)
{
    if (geteuid() == 0 && setgroups(u->ngroups, u->groups) < 0)
        return -1;
    if (setresgid(u->gid, u->gid, u->gid) < 0 || setresuid(u->uid, u->uid, u->uid) < 0)
        return -1;
    return 0;
}

void mps_child_become(const struct mps_user *u, int in_fd, int out_fd)
{
    sigset_t none;
    sigemptyset(&none);
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (oom >= 0) {
        (void)!write(oom, "0\n", 2);
        close(oom);
    }
    if (mps_user_become(u) < 0)
        _exit(126);
    int null = open("/dev/null", O_RDWR);
    dup2(in_fd >= 0 ? in_fd : null, 0);
    dup2(out_fd >= 0 ? out_fd : null, 1);
    dup2(null, 2);
    if (syscall(SYS_close_range, 3U, ~0U, 0U) < 0)
        for (int fd = 3; fd < 65536; fd++)
            close(fd);
}

int mps_proc_stat(pid_t pid, pid_t *ppid, unsigned long long *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
    int parent;
    if (!p || sscanf(p + 2, "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
                            "%*d %*d %*d %llu", &parent, start) != 2)
        return -1;
    *ppid = parent;
    return 0;
}

bool mps_wait(pid_t pid, long ms, int *status)
{
    for (long waited = 0;; waited += 10) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            return true;
        if (waited >= ms)
            return false;
        mps_pause_ms(10);
    }
}

/* The real uid of pid (the first number of /proc/PID/status's Uid: line). */
static bool real_uid(pid_t pid, uid_t *uid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    bool found = false;
    unsigned long v;
    while (f && !found && fgets(line, sizeof line, f))
        found = sscanf(line, "Uid: %lu", &v) == 1;
    if (f)
        fclose(f);
    *uid = (uid_t)v;
    return found;
}

/* Whether var (NAME=VALUE) is one of pid's environment's entries. */
static bool has_var(pid_t pid, const char *var)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char *buf = fd >= 0 ? malloc(ENVIRON_MAX) : NULL;
    size_t n = 0, len = strlen(var);
    ssize_t got = 1;
    while (buf && n < ENVIRON_MAX - 1 && (got = read(fd, buf + n, ENVIRON_MAX - 1 - n)) > 0)
        n += (size_t)got;
    if (fd >= 0)
        close(fd);
    bool found = false;
    for (size_t i = 0; buf && i < n && !found; i += strnlen(buf + i, n - i) + 1)
        found = n - i > len && !memcmp(buf + i, var, len) && buf[i + len] == '\0';
    free(buf);
    return found;
}

/* SIGKILL through a pidfd taken before the checks: if pid was reused since
 * the scan, the pidfd names the old process and nothing is hit. */
static bool kill_if(pid_t pid, unsigned long long started, uid_t uid, const char *var)
{
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0)
        return false;
    pid_t ppid;
    unsigned long long start;
    uid_t owner;
    bool hit = started ? mps_proc_stat(pid, &ppid, &start) == 0 && start == started
                       : real_uid(pid, &owner) && owner == uid && has_var(pid, var);
    if (hit)
        hit = syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) == 0;
    close(fd);
    return hit;
}

void mps_kill_left(pid_t pid, unsigned long long started, uid_t uid, const char *var)
{
    if (pid > 0)
        kill_if(pid, started, uid, var);
    pid_t self = getpid();
    for (int round = 0; round < KILL_ROUNDS; round++) {
        unsigned hit = 0;
        DIR *dir = opendir("/proc");
        struct dirent *e;
        while (dir && (e = readdir(dir))) {
            pid_t p = (pid_t)atoi(e->d_name);
            if (p > 0 && p != self && p != pid)
                hit += kill_if(p, 0, uid, var);
        }
        if (dir)
            closedir(dir);
        if (!hit)
            break;
    }
}
