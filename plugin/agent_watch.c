/* agent_watch.c - the node agent watched from slurmstepd, and its node's
 * running tasks told of its death by a child process with a deadline (see
 * agent_watch.h). */
#include "agent_watch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <slurm/spank.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "linux_calls.h"

#define GRACE_MS 300  /* the time a step that Slurm kills has to end its tasks */
#define TELL_MS 2000  /* the most the child that tells the tasks may take */
#define REAP_MS 500   /* the most a killed child is waited on to end */
#define NO_PIDFD (-2) /* a running task whose pidfd could not be had */

/* How the telling of a task went: TOLD, LATE (the child was killed at
 * TELL_MS first), STOPPED (the step ended first), or one of the stages
 * below with the errno it failed with. */
enum { TOLD = 0, LATE = -1, STOPPED = -2 };
enum { PIDFD = 1 << 16, TAKE = 2 << 16, BECOME = 3 << 16, WRITE = 4 << 16, START = 5 << 16 };
#define ERRNO_OF(how) ((how) & 0xffff)
#define STAGE_OF(how) ((how) >> 16)

/* The watch of one node's agent. Its lock guards pidfd[] and open_err,
 * which the task hooks change while the thread reads them. pidfd[] holds
 * each task's pidfd by its local id: -1 before the task's fork and after
 * its end, NO_PIDFD when pidfd_open failed (open_err then says why). */
struct agent_watch {
    int fd;               /* slurmstepd's end of the agent's input */
    int stop[2];          /* a pipe whose write end, once closed, ends the thread */
    pthread_t thread;
    pthread_mutex_t lock;
    uint32_t n_tasks;
    int *pidfd;
    int open_err;         /* the first pidfd_open's failure (PIDFD | errno), or 0 */
    char *line;           /* what each task is told */
    struct mps_user user; /* the job's user, whose rights the writes take */
};

/* One telling, all of it allocated before the fork: a child of a threaded
 * process may make async-signal-safe calls only. */
struct tell {
    uint32_t n;        /* the running tasks to tell */
    int *pidfd;        /* their pidfds (copies), or NO_PIDFD */
    int *fd;           /* in the child: each task's stderr, or -1 */
    int *err;          /* why that stderr could not be had (a stage | errno), or 0 */
    int *keep;         /* the descriptors the child keeps, ascending */
    size_t n_keep;
    unsigned open_max; /* the most descriptors the process may hold */
    int gate[2];       /* The child waits on it until the thread holds its pidfd. */
    int result[2];     /* The child writes one int per task there: how it went. */
    struct iovec v[2];
};

/* In the child: closes every descriptor but t->keep's, so that it holds
 * none of slurmstepd's (the stop pipe's write end above all). */
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

/* The child: takes each task's stderr (as root, as pidfd_getfd may need
 * CAP_SYS_PTRACE), becomes the job's user for good (each write's checks
 * are the user's, and its memory, slurmstepd's copy, cannot be read),
 * writes the line on each stderr and says how each went. Only
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
        if (t->pidfd[i] < 0)
            continue;
        t->fd[i] = (int)syscall(SYS_pidfd_getfd, t->pidfd[i], 2, 0U);
        if (t->fd[i] < 0)
            t->err[i] = TAKE | errno;
        close(t->pidfd[i]);
    }
    int become = 0;
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || mps_user_become(user) < 0)
        become = BECOME | errno;
    for (uint32_t i = 0; i < t->n; i++) {
        int how = t->err[i] ? t->err[i] : become;
        if (how == TOLD && writev(t->fd[i], t->v, 2) < 0)
            how = WRITE | errno;
        (void)!write(t->result[1], &how, sizeof how);
        if (t->fd[i] >= 0)
            close(t->fd[i]);
    }
    _exit(0);
}

static int by_value(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Copies into t the pidfds of the node's tasks still running (a task whose
 * pidfd polls readable has exited, and slurmstepd has not said so yet),
 * with all the child needs. 0, or -1 with errno; t is for tell_free in
 * both cases. */
static int tell_prepare(struct agent_watch *w, struct tell *t)
{
    size_t n = w->n_tasks ? w->n_tasks : 1;
    *t = (struct tell){.gate = {-1, -1}, .result = {-1, -1},
                       .v = {{w->line, strlen(w->line)}, {"\n", 1}}};
    t->pidfd = malloc(n * sizeof *t->pidfd);
    t->fd = malloc(n * sizeof *t->fd);
    t->err = malloc(n * sizeof *t->err);
    t->keep = malloc((n + 1) * sizeof *t->keep);
    if (!t->pidfd || !t->fd || !t->err || !t->keep || pipe2(t->gate, O_CLOEXEC) < 0 ||
        pipe2(t->result, O_CLOEXEC | O_NONBLOCK) < 0)
        return -1;
    pthread_mutex_lock(&w->lock);
    for (uint32_t i = 0; i < w->n_tasks; i++) {
        int p = w->pidfd[i];
        struct pollfd ended = {.fd = p, .events = POLLIN};
        if (p == -1 || (p >= 0 && poll(&ended, 1, 0) != 0))
            continue;
        int copy = p >= 0 ? fcntl(p, F_DUPFD_CLOEXEC, 0) : -1;
        t->err[t->n] = copy >= 0 ? 0 : p >= 0 ? PIDFD | errno : w->open_err;
        t->pidfd[t->n++] = copy >= 0 ? copy : NO_PIDFD;
    }
    pthread_mutex_unlock(&w->lock);
    t->keep[t->n_keep++] = t->result[1];
    for (uint32_t i = 0; i < t->n; i++)
        if (t->pidfd[i] >= 0)
            t->keep[t->n_keep++] = t->pidfd[i];
    qsort(t->keep, t->n_keep, sizeof *t->keep, by_value);
    long max = sysconf(_SC_OPEN_MAX);
    t->open_max = max > 0 && max < 1L << 20 ? (unsigned)max : 1U << 20;
    return 0;
}

static void tell_free(struct tell *t)
{
    for (uint32_t i = 0; i < t->n; i++)
        if (t->pidfd[i] >= 0)
            close(t->pidfd[i]);
    for (int i = 0; i < 2; i++) {
        if (t->gate[i] >= 0)
            close(t->gate[i]);
        if (t->result[i] >= 0)
            close(t->result[i]);
    }
    free(t->pidfd);
    free(t->fd);
    free(t->err);
    free(t->keep);
}

/* Waits for the child (its pidfd) to end: TOLD when it ended by itself,
 * LATE when TELL_MS passed first, STOPPED when the watch was stopped
 * first. A child that has not ended is killed and waited on for REAP_MS
 * more at most. It is then reaped, unless slurmstepd, which waits for any
 * child, has done so (ECHILD: nothing to do). */
static int child_end(const struct agent_watch *w, int child)
{
    struct pollfd p[2] = {{.fd = child, .events = POLLIN}, {.fd = w->stop[0], .events = POLLIN}};
    int r = poll(p, 2, TELL_MS);
    int end = r > 0 && p[0].revents ? TOLD : r > 0 ? STOPPED : LATE;
    if (end != TOLD) {
        syscall(SYS_pidfd_send_signal, child, SIGKILL, NULL, 0U);
        poll(p, 1, REAP_MS);
    }
    siginfo_t info;
    waitid(COHORT_P_PIDFD, (id_t)child, &info, WEXITED | WNOHANG);
    return end;
}

/* Runs the child that tells the tasks of t, and fills how[0..t->n) with
 * how each telling went. */
static void tell_run(struct agent_watch *w, struct tell *t, int *how)
{
    pid_t pid = fork();
    if (pid == 0)
        tell_child(&w->user, t);
    int child = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0U) : -1;
    int end = child >= 0 ? TOLD : START | errno;
    if (pid > 0 && child < 0)
        kill(pid, SIGKILL); /* It still waits on the gate: pid is still the child's. */
    (void)!write(t->gate[1], "", 1);
    close(t->result[1]);
    t->result[1] = -1;
    if (child >= 0) {
        end = child_end(w, child);
        close(child);
    }
    size_t got = 0, want = t->n * sizeof *how;
    for (ssize_t r = 1; got < want && r > 0; got += r > 0 ? (size_t)r : 0)
        r = read(t->result[0], (char *)how + got, want - got);
    for (uint32_t i = (uint32_t)(got / sizeof *how); i < t->n; i++)
        how[i] = end == TOLD ? WRITE | EIO : end;
}

/* Why a task was not told, in words, in buf. */
static const char *why_not(int how, char *buf, size_t len)
{
    static const char *const stage[] = {"", "its pidfd", "pidfd_getfd on its descriptor 2",
                                        "becoming the job's user", "the write",
                                        "starting the child that writes"};
    int e = ERRNO_OF(how), s = STAGE_OF(how);
    const char *hint = e == ENOSYS && (s == STAGE_OF(PIDFD) || s == STAGE_OF(TAKE))
                           ? " (Linux 5.6 or later is needed)"
                       : e == EPERM && s == STAGE_OF(TAKE)
                           ? " (Yama's ptrace_scope 3, or a security module?)"
                           : "";
    if (how == LATE)
        snprintf(buf, len, "its stderr did not take the line within %d s", TELL_MS / 1000);
    else if (how == STOPPED)
        snprintf(buf, len, "the step ended first");
    else
        snprintf(buf, len, "%s: %s%s", stage[s <= STAGE_OF(START) ? s : 0], strerror(e), hint);
    return buf;
}

/* Says in the node's log, in one line (slurm_info: an error would go to a
 * task's stderr again), how many of the n running tasks were told and why
 * the first one not told was not. */
static void log_told(const int *how, uint32_t n)
{
    uint32_t told = 0;
    int first = TOLD;
    for (uint32_t i = 0; i < n; i++) {
        told += how[i] == TOLD;
        first = first == TOLD ? how[i] : first;
    }
    char why[160];
    slurm_info("cohort: store: the node agent died while the step was running: %u of the "
               "node's %u running tasks were told so in their stderr%s%s", told, n,
               first == TOLD ? "" : "; the first one not told: ",
               first == TOLD ? "" : why_not(first, why, sizeof why));
}

/* Whether the agent's end of the pair has closed: it never writes, so
 * anything readable is the end (what else comes is read and dropped). */
static bool agent_gone(int fd)
{
    char b[64];
    ssize_t n = recv(fd, b, sizeof b, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN);
}

/* Waits for the agent's death: true; false when the watch is stopped. */
static bool agent_died(const struct agent_watch *w)
{
    for (;;) {
        struct pollfd p[2] = {{.fd = w->fd, .events = POLLIN},
                              {.fd = w->stop[0], .events = POLLIN}};
        int r = poll(p, 2, -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || p[1].revents)
            return false;
        if (p[0].revents && agent_gone(w->fd))
            return true;
    }
}

/* Whether the watch is stopped within ms (0: whether it is now). */
static bool stopped_within(const struct agent_watch *w, int ms)
{
    struct pollfd p = {.fd = w->stop[0], .events = POLLIN};
    return poll(&p, 1, ms) == 1;
}

static void *watch(void *arg)
{
    struct agent_watch *w = arg;
    /* A step that Slurm kills loses its agent and its tasks together: the
     * tasks are given GRACE_MS to end, and only those still running are
     * told (a stop, the step's end on this node, ends the wait). */
    if (!agent_died(w) || stopped_within(w, GRACE_MS))
        return NULL;
    struct tell t;
    int *how = NULL;
    if (tell_prepare(w, &t) < 0 || !(how = calloc(t.n ? t.n : 1, sizeof *how))) {
        slurm_info("cohort: store: the node agent died while the step was running, and its "
                   "tasks cannot be told: %s", strerror(errno));
    } else if (t.n > 0 && !stopped_within(w, 0)) {
        tell_run(w, &t, how);
        log_told(how, t.n);
    }
    free(how);
    tell_free(&t);
    return NULL;
}

/* Copies the user (its groups too): 0, or -1. */
static int copy_user(struct mps_user *to, const struct mps_user *from)
{
    *to = (struct mps_user){.uid = from->uid, .gid = from->gid};
    if (!from->ngroups)
        return 0;
    to->groups = malloc(from->ngroups * sizeof *to->groups);
    if (!to->groups)
        return -1;
    memcpy(to->groups, from->groups, from->ngroups * sizeof *to->groups);
    to->ngroups = from->ngroups;
    return 0;
}

struct agent_watch *agent_watch_start(int fd, uint32_t n_tasks, const char *line,
                                      const struct mps_user *user)
{
    struct agent_watch *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->fd = fd;
    w->n_tasks = n_tasks;
    w->pidfd = malloc((n_tasks ? n_tasks : 1) * sizeof *w->pidfd);
    w->stop[0] = w->stop[1] = -1;
    w->line = strdup(line);
    if (!w->pidfd || !w->line || copy_user(&w->user, user) < 0 ||
        pipe2(w->stop, O_CLOEXEC) < 0 || pthread_mutex_init(&w->lock, NULL) != 0)
        goto fail;
    for (uint32_t i = 0; i < n_tasks; i++)
        w->pidfd[i] = -1;
    /* The thread takes no signal: slurmstepd's own threads handle them. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&w->thread, NULL, watch, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0)
        return w;
    pthread_mutex_destroy(&w->lock);
fail:
    for (int i = 0; i < 2; i++)
        if (w->stop[i] >= 0)
            close(w->stop[i]);
    mps_user_free(&w->user);
    free(w->line);
    free(w->pidfd);
    free(w);
    return NULL;
}

void agent_watch_task(struct agent_watch *w, uint32_t local, pid_t pid)
{
    if (!w || local >= w->n_tasks)
        return;
    int fd = (int)syscall(SYS_pidfd_open, pid, 0U);
    int err = errno;
    pthread_mutex_lock(&w->lock);
    if (w->pidfd[local] >= 0)
        close(w->pidfd[local]);
    w->pidfd[local] = fd >= 0 ? fd : NO_PIDFD;
    if (fd < 0 && !w->open_err)
        w->open_err = PIDFD | err;
    pthread_mutex_unlock(&w->lock);
}

void agent_watch_task_ended(struct agent_watch *w, uint32_t local)
{
    if (!w || local >= w->n_tasks)
        return;
    pthread_mutex_lock(&w->lock);
    if (w->pidfd[local] >= 0)
        close(w->pidfd[local]);
    w->pidfd[local] = -1;
    pthread_mutex_unlock(&w->lock);
}

void agent_watch_stop(struct agent_watch *w)
{
    if (!w)
        return;
    close(w->stop[1]);
    pthread_join(w->thread, NULL);
    close(w->stop[0]);
    for (uint32_t i = 0; i < w->n_tasks; i++)
        if (w->pidfd[i] >= 0)
            close(w->pidfd[i]);
    pthread_mutex_destroy(&w->lock);
    mps_user_free(&w->user);
    free(w->line);
    free(w->pidfd);
    free(w);
}
