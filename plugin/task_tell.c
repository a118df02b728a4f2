/* task_tell.c - a line written into running tasks' stderr by a child
 * process with a deadline (see task_tell.h). */
#include "task_tell.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base_sys.h"
#include "linux_calls.h"

#define REAP_MS 500 /* the most a killed child is waited on to end */
#define NAP_NS 1000000 /* the child's pause between two looks at the pipes it wrote */
#define ERRNO_OF(how) ((how) & 0xffff)
#define STAGE_OF(how) ((how) >> 16)

/* One telling, all of it allocated before the fork: a child of a threaded
 * process may make async-signal-safe calls only. */
struct tell {
    uint32_t n;        /* the tasks to tell */
    const int *pidfd;  /* their pidfds (the caller's), or negative */
    const int *err;    /* why a task has no pidfd (a stage | errno), or 0 */
    int *fd;           /* in the child: each task's stderr, or -1 */
    int *took;         /* in the child: why that stderr could not be had, or 0 */
    int *keep;         /* the descriptors the child keeps, ascending */
    size_t n_keep;
    unsigned open_max; /* the most descriptors the process may hold */
    int gate[2];       /* The child waits on it until the caller holds its pidfd. */
    int result[2];     /* The child writes one int per task there: how it went. */
    struct iovec v[2];
};

/* In the child: closes every descriptor but t->keep's, so that it holds
 * none of slurmstepd's (the caller's stop descriptor above all). */
static void keep_only(const struct tell *t)
{
    unsigned from = 0;
    for (size_t i = 0; i <= t->n_keep; i++) {
        unsigned to = i < t->n_keep ? (unsigned)t->keep[i] : ~0U; /* [from, to) is closed */
        if (to > from && syscall(SYS_close_range, from, to - 1, 0U) < 0)
            for (unsigned fd = from; fd < to && fd < t->open_max; fd++)
                close(fd);
        from = to + 1;
    }
}

/* In the child: waits, TASK_TELL_DRAIN_MS at most, until each pipe it
 * wrote (t->fd[i] >= 0) has been seen empty once, its reader (slurmstepd's
 * I/O thread) having taken the line; a pipe seen empty is closed and looked
 * at no more, so that a task that goes on writing does not hold the wait.
 * Returns how many were never seen empty. Only async-signal-safe calls
 * (base_now_ms is clock_gettime). */
static int unread_after(struct tell *t)
{
    struct timespec nap = {0, NAP_NS};
    long long end = base_now_ms() + TASK_TELL_DRAIN_MS;
    for (;;) {
        int left = 0;
        for (uint32_t i = 0; i < t->n; i++) {
            int bytes = 0;
            if (t->fd[i] >= 0 && ioctl(t->fd[i], FIONREAD, &bytes) == 0 && bytes > 0) {
                left++;
            } else if (t->fd[i] >= 0) {
                close(t->fd[i]);
                t->fd[i] = -1;
            }
        }
        if (!left || base_now_ms() >= end)
            return left;
        nanosleep(&nap, NULL);
    }
}

/* The child: takes each task's stderr (as root, as pidfd_getfd may need
 * CAP_SYS_PTRACE), becomes the job's user for good (each write's checks
 * are the user's, and its memory, slurmstepd's copy, cannot be read),
 * writes the line on each stderr and says how each went, then how many
 * of the pipes among them were not seen empty (unread_after). Only
 * async-signal-safe calls. */
static _Noreturn void tell_child(const struct mps_user *user, struct tell *t)
{
    char go;
    close(t->gate[1]);
    while (read(t->gate[0], &go, 1) < 0 && errno == EINTR)
        ;
    keep_only(t);
    for (uint32_t i = 0; i < t->n; i++) {
        t->fd[i] = -1;
        t->took[i] = t->pidfd[i] < 0 ? t->err[i] : 0;
        if (t->pidfd[i] < 0)
            continue;
        t->fd[i] = (int)syscall(SYS_pidfd_getfd, t->pidfd[i], 2, 0U);
        if (t->fd[i] < 0)
            t->took[i] = TELL_TAKE | errno;
        close(t->pidfd[i]);
    }
    int become = 0;
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || mps_user_become(user) < 0)
        become = TELL_BECOME | errno;
    for (uint32_t i = 0; i < t->n; i++) {
        int how = t->took[i] ? t->took[i] : become;
        if (how == TELL_TOLD && writev(t->fd[i], t->v, 2) < 0)
            how = TELL_WRITE | errno;
        (void)!write(t->result[1], &how, sizeof how);
        struct stat st;
        if (t->fd[i] >= 0 && (how != TELL_TOLD || fstat(t->fd[i], &st) < 0 ||
                              !S_ISFIFO(st.st_mode))) {
            close(t->fd[i]); /* Only a pipe written is looked at again. */
            t->fd[i] = -1;
        }
    }
    int unread = unread_after(t);
    (void)!write(t->result[1], &unread, sizeof unread);
    _exit(0);
}

static int by_value(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Fills t with all the child needs. 0, or -1 with errno; t is for
 * tell_free in both cases. */
static int tell_prepare(struct tell *t, const int *pidfd, const int *err, uint32_t n,
                        const char *line)
{
    *t = (struct tell){.n = n, .pidfd = pidfd, .err = err, .gate = {-1, -1},
                       .result = {-1, -1}, .v = {{(char *)line, strlen(line)}, {"\n", 1}}};
    t->fd = malloc((n ? n : 1) * sizeof *t->fd);
    t->took = malloc((n ? n : 1) * sizeof *t->took);
    t->keep = malloc((n + 1) * sizeof *t->keep);
    if (!t->fd || !t->took || !t->keep || pipe2(t->gate, O_CLOEXEC) < 0 ||
        pipe2(t->result, O_CLOEXEC | O_NONBLOCK) < 0)
        return -1;
    t->keep[t->n_keep++] = t->result[1];
    for (uint32_t i = 0; i < n; i++)
        if (pidfd[i] >= 0)
            t->keep[t->n_keep++] = pidfd[i];
    qsort(t->keep, t->n_keep, sizeof *t->keep, by_value);
    long max = sysconf(_SC_OPEN_MAX);
    t->open_max = max > 0 && max < 1L << 20 ? (unsigned)max : 1U << 20;
    return 0;
}

static void tell_free(struct tell *t)
{
    for (int i = 0; i < 2; i++) {
        if (t->gate[i] >= 0)
            close(t->gate[i]);
        if (t->result[i] >= 0)
            close(t->result[i]);
    }
    free(t->fd);
    free(t->took);
    free(t->keep);
}

/* Waits for the child (its pidfd) to end: TELL_TOLD when it ended by
 * itself, TELL_LATE when TASK_TELL_MS passed first, TELL_STOPPED when
 * stop_fd became readable first. A child that has not ended is killed and
 * waited on for REAP_MS more at most. It is then reaped, unless
 * slurmstepd, which waits for any child, has done so (ECHILD: nothing to
 * do). */
static int child_end(int child, int stop_fd)
{
    struct pollfd p[2] = {{.fd = child, .events = POLLIN}, {.fd = stop_fd, .events = POLLIN}};
    int r = poll(p, 2, TASK_TELL_MS);
    int end = r > 0 && p[0].revents ? TELL_TOLD : r > 0 ? TELL_STOPPED : TELL_LATE;
    if (end != TELL_TOLD) {
        syscall(SYS_pidfd_send_signal, child, SIGKILL, NULL, 0U);
        poll(p, 1, REAP_MS);
    }
    siginfo_t info;
    waitid(COHORT_P_PIDFD, (id_t)child, &info, WEXITED | WNOHANG);
    return end;
}

/* Runs the child that tells the tasks of t, and fills how[0..t->n) with
 * how each telling went; returns how many pipes written were not seen
 * empty (0 when the child did not say). */
static int tell_run(struct tell *t, const struct mps_user *user, int stop_fd, int *how)
{
    pid_t pid = fork();
    if (pid == 0)
        tell_child(user, t);
    int child = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0U) : -1;
    int end = child >= 0 ? TELL_TOLD : TELL_START | errno;
    if (pid > 0 && child < 0)
        kill(pid, SIGKILL); /* It still waits on the gate: pid is still the child's. */
    (void)!write(t->gate[1], "", 1);
    close(t->result[1]);
    t->result[1] = -1;
    if (child >= 0) {
        end = child_end(child, stop_fd);
        close(child);
    }
    size_t got = 0, want = t->n * sizeof *how;
    for (ssize_t r = 1; got < want && r > 0; got += r > 0 ? (size_t)r : 0)
        r = read(t->result[0], (char *)how + got, want - got);
    for (uint32_t i = (uint32_t)(got / sizeof *how); i < t->n; i++)
        how[i] = end == TELL_TOLD ? TELL_WRITE | EIO : end;
    int unread = 0;
    return got == want && read(t->result[0], &unread, sizeof unread) == sizeof unread ? unread
                                                                                       : 0;
}

int task_tell(const int *pidfd, const int *err, uint32_t n, const char *line,
              const struct mps_user *user, int stop_fd, int *how)
{
    struct tell t;
    int unread = 0;
    if (tell_prepare(&t, pidfd, err, n, line) == 0) {
        unread = tell_run(&t, user, stop_fd, how);
    } else {
        int e = TELL_START | errno;
        for (uint32_t i = 0; i < n; i++)
            how[i] = e;
    }
    tell_free(&t);
    return unread;
}

const char *task_tell_why(int how, char *buf, size_t len)
{
    static const char *const stage[] = {"", "its pidfd", "pidfd_getfd on its descriptor 2",
                                        "becoming the job's user", "the write",
                                        "starting the child that writes"};
    int e = ERRNO_OF(how), s = STAGE_OF(how);
    const char *hint = e == ENOSYS && (s == STAGE_OF(TELL_PIDFD) || s == STAGE_OF(TELL_TAKE))
                           ? " (Linux 5.6 or later is needed)"
                       : e == EPERM && s == STAGE_OF(TELL_TAKE)
                           ? " (Yama's ptrace_scope 3, or a security module?)"
                           : "";
    if (how == TELL_LATE)
        snprintf(buf, len, "its stderr did not take the line within %d s", TASK_TELL_MS / 1000);
    else if (how == TELL_STOPPED)
        snprintf(buf, len, "the step ended first");
    else
        snprintf(buf, len, "%s: %s%s", stage[s <= STAGE_OF(TELL_START) ? s : 0], strerror(e),
                 hint);
    return buf;
}
