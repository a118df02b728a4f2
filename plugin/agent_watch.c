/* agent_watch.c - the node agent's side of its socketpair read from
 * slurmstepd: its death told to the node's running tasks and, when the
 * step is watched, its "end" lines and its death ending them (see
 * agent_watch.h). */
#include "agent_watch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <slurm/spank.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base_sys.h"
#include "linux_calls.h"
#include "task_tell.h"
#include "watch.h"

#define GRACE_MS 300 /* the time a step that Slurm kills has to end its tasks */
#define NO_PIDFD (-2) /* a running task whose pidfd could not be had */
#define LINE_CAP 2048 /* an agent's line at most (its "end" lines are under 1,200 bytes) */

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
    pid_t *pid;           /* each task's pid once forked (kept after its end), else 0 */
    int open_err;         /* the first pidfd_open's failure (TELL_PIDFD | errno), or 0 */
    char *line;           /* what each task is told of the agent's death */
    struct mps_user user; /* the job's user, whose rights the writes take */
    bool ends;            /* the step is watched: the agent's end and death end the tasks */
    int bye[2];           /* a pipe whose write end the thread closes at the agent's
                             "bye", its death, or the thread's end */
    char in[LINE_CAP];    /* the agent's bytes not yet read as lines (the thread's) */
    size_t n_in;
    bool too_long;        /* the line in hand began before in[0]: dropped */
};

/* The node's tasks running when the thread acts: a copy of each one's
 * pidfd (NO_PIDFD when there is none, err then saying why), and the
 * poll entries that wait on their ends, the stop pipe's first. */
struct running {
    uint32_t n;
    int *pidfd;
    int *err;
    struct pollfd *p;
    pid_t group;          /* the tasks' process group, when one of them leads it; else 0 */
};

/* Copies into r the pidfds of the node's tasks still running (a task
 * whose pidfd polls readable has exited, and slurmstepd has not said so
 * yet). 0, or -1 with errno; r is for running_free in both cases. */
static int running_take(struct agent_watch *w, struct running *r)
{
    size_t n = w->n_tasks ? w->n_tasks : 1;
    *r = (struct running){.pidfd = malloc(n * sizeof *r->pidfd),
                          .err = malloc(n * sizeof *r->err),
                          .p = calloc(n + 1, sizeof *r->p)};
    if (!r->pidfd || !r->err || !r->p)
        return -1;
    pthread_mutex_lock(&w->lock);
    for (uint32_t i = 0; i < w->n_tasks; i++) {
        int p = w->pidfd[i];
        struct pollfd ended = {.fd = p, .events = POLLIN};
        if (p == -1 || (p >= 0 && poll(&ended, 1, 0) != 0))
            continue;
        int copy = p >= 0 ? fcntl(p, F_DUPFD_CLOEXEC, 0) : -1;
        r->err[r->n] = copy >= 0 ? 0 : p >= 0 ? TELL_PIDFD | errno : w->open_err;
        r->pidfd[r->n++] = copy >= 0 ? copy : NO_PIDFD;
        pid_t g = !r->group && w->pid[i] > 0 ? getpgid(w->pid[i]) : 0;
        for (uint32_t j = 0; g > 0 && j < w->n_tasks && !r->group; j++)
            if (w->pid[j] == g)
                r->group = g;
    }
    pthread_mutex_unlock(&w->lock);
    return 0;
}

static void running_free(struct running *r)
{
    for (uint32_t i = 0; i < r->n; i++)
        if (r->pidfd[i] >= 0)
            close(r->pidfd[i]);
    free(r->pidfd);
    free(r->err);
    free(r->p);
}

/* Says in the node's log, in one line (slurm_info: an error would go to a
 * task's stderr again), how many of the n running tasks were told of the
 * agent's death, why the first one not told was not, and how many of
 * their stderr pipes were not seen empty when the telling ended. */
static void log_told(const struct agent_watch *w, const int *how, uint32_t n, int unread)
{
    uint32_t told = 0;
    int first = TELL_TOLD;
    for (uint32_t i = 0; i < n; i++) {
        told += how[i] == TELL_TOLD;
        first = first == TELL_TOLD ? how[i] : first;
    }
    char why[160], left[96] = "";
    if (unread)
        snprintf(left, sizeof left, "; %d of their stderr pipes were not seen empty within %d s",
                 unread, TASK_TELL_DRAIN_MS / 1000);
    slurm_info("cohort: %s: the node agent died while the step was running: %u of the "
               "node's %u running tasks were told so in their stderr%s%s%s",
               w->ends ? "watch" : "store", told, n,
               first == TELL_TOLD ? "" : "; the first one not told: ",
               first == TELL_TOLD ? "" : task_tell_why(first, why, sizeof why), left);
}

/* Whether the watch is stopped within ms (0: whether it is now). */
static bool stopped_within(const struct agent_watch *w, int ms)
{
    struct pollfd p = {.fd = w->stop[0], .events = POLLIN};
    return poll(&p, 1, ms) == 1;
}

/* What the agent's side said, as the thread waits on it. */
enum said { SAID_STOP, SAID_DEATH, SAID_END };

/* Whether line is "end TELL" or "end TELL TEXT" (TELL 0 or 1): true with
 * *tell (1 with some TEXT to tell) and the TEXT in text (cap bytes with
 * its end), its control characters as '?', so that it stays one line in
 * a task's stderr and in the node's log. */
static bool parse_end(const char *line, int *tell, char *text, size_t cap)
{
    if (strncmp(line, "end ", 4) != 0 || (line[4] != '0' && line[4] != '1') ||
        (line[5] && line[5] != ' '))
        return false;
    const char *t = line[5] ? line + 6 : "";
    size_t n = 0;
    for (; t[n] && n + 1 < cap; n++)
        text[n] = (unsigned char)t[n] < 0x20 || t[n] == 0x7f ? '?' : t[n];
    text[n] = '\0';
    *tell = line[4] == '1' && n > 0;
    return true;
}

/* Lets go of whoever waits for the agent's "bye" (agent_watch_wait_bye). */
static void bye_said(struct agent_watch *w)
{
    if (w->bye[1] >= 0)
        close(w->bye[1]);
    w->bye[1] = -1;
}

/* Takes the whole lines of w->in: "bye" lets go of the waiter, and the
 * first "end" line is returned (true, with *tell and text) when ends. */
static bool take_lines(struct agent_watch *w, bool ends, int *tell, char *text, size_t cap)
{
    char *line = w->in, *nl;
    bool end = false;
    while (!end && (nl = memchr(line, '\n', w->n_in - (size_t)(line - w->in)))) {
        *nl = '\0';
        if (!w->too_long && !strcmp(line, "bye"))
            bye_said(w);
        else if (!w->too_long && ends)
            end = parse_end(line, tell, text, cap);
        w->too_long = false;
        line = nl + 1;
    }
    w->n_in -= (size_t)(line - w->in);
    memmove(w->in, line, w->n_in);
    if (w->n_in == sizeof w->in - 1) { /* No line of the agent's is that long: dropped. */
        w->too_long = true;
        w->n_in = 0;
    }
    return end;
}

/* Waits for what the agent's side says: SAID_END with its next "end" line
 * in *tell and text (when ends and the step is watched; other lines are
 * dropped, "bye" once it lets the waiter go), SAID_DEATH when it closed,
 * SAID_STOP when the watch was stopped first. */
static enum said agent_says(struct agent_watch *w, bool ends, int *tell, char *text, size_t cap)
{
    for (;;) {
        if (take_lines(w, ends && w->ends, tell, text, cap))
            return SAID_END;
        struct pollfd p[2] = {{.fd = w->fd, .events = POLLIN},
                              {.fd = w->stop[0], .events = POLLIN}};
        int r = poll(p, 2, -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || p[1].revents)
            return SAID_STOP;
        ssize_t got = p[0].revents ? recv(w->fd, w->in + w->n_in, sizeof w->in - 1 - w->n_in,
                                          MSG_DONTWAIT)
                                   : -1;
        if (got < 0 && (!p[0].revents || errno == EINTR || errno == EAGAIN))
            continue;
        if (got <= 0)
            return SAID_DEATH;
        w->n_in += (size_t)got;
        w->in[w->n_in] = '\0';
    }
}

/* SIGTERM to each task of r, then SIGKILL to those still running
 * WATCH_GRACE_MS later, each by its pidfd (a task without one is left to
 * Slurm), and each signal to the tasks' process group too: slurmstepd puts
 * a node's tasks in one group led by the first, so that a task's own
 * children (a shell's, a launcher's) end with it and do not hold its output
 * open, which srun waits for. The group is signalled only when one of the
 * tasks leads it, never slurmstepd's. Returns how many needed SIGKILL;
 * nothing more is sent once the watch is stopped (the step ended on the
 * node). */
static uint32_t end_running(const struct agent_watch *w, struct running *r)
{
    r->p[0] = (struct pollfd){.fd = w->stop[0], .events = POLLIN};
    for (uint32_t i = 0; i < r->n; i++) {
        r->p[i + 1] = (struct pollfd){.fd = r->pidfd[i] >= 0 ? r->pidfd[i] : -1, .events = POLLIN};
        if (r->pidfd[i] >= 0)
            syscall(SYS_pidfd_send_signal, r->pidfd[i], SIGTERM, NULL, 0U);
    }
    if (r->group)
        kill(-r->group, SIGTERM);
    long long end = base_now_ms() + WATCH_GRACE_MS;
    for (;;) {
        uint32_t left = 0;
        for (uint32_t i = 1; i <= r->n; i++) {
            if (r->p[i].revents) /* It ended: polled no more. */
                r->p[i].fd = -1;
            left += r->p[i].fd >= 0;
        }
        long long ms = end - base_now_ms();
        if (!left || ms <= 0)
            break;
        if (poll(r->p, r->n + 1, (int)ms) < 0 && errno != EINTR)
            break;
        if (r->p[0].revents)
            return 0;
    }
    uint32_t killed = 0;
    for (uint32_t i = 1; i <= r->n; i++)
        killed += r->p[i].fd >= 0 &&
                  syscall(SYS_pidfd_send_signal, r->p[i].fd, SIGKILL, NULL, 0U) == 0;
    if (killed && r->group)
        kill(-r->group, SIGKILL);
    return killed;
}

/* Ends the node's running tasks of r: tell (NULL: nothing) written first
 * into the stderr of one of them, then the signals (end_running); one
 * line in the node's log says so, with why (the agent's TEXT). */
static void end_tasks(const struct agent_watch *w, struct running *r, const char *tell,
                      const char *why)
{
    if (stopped_within(w, 0))
        return;
    uint32_t one = 0; /* the first task with a pidfd, if any */
    while (one + 1 < r->n && r->pidfd[one] < 0)
        one++;
    int how = TELL_TOLD, unread = 0;
    if (tell && r->n)
        unread = task_tell(r->pidfd + one, r->err + one, 1, tell, &w->user, w->stop[0], &how);
    if (stopped_within(w, 0))
        return;
    uint32_t killed = end_running(w, r);
    char note[320] = "", told[160];
    int n = killed ? snprintf(note, sizeof note, " (%u of them needed SIGKILL", killed) : 0;
    if (how != TELL_TOLD)
        n += snprintf(note + n, sizeof note - (size_t)n, "%sthe line was not written: %s",
                      n ? "; " : " (", task_tell_why(how, told, sizeof told));
    if (unread)
        n += snprintf(note + n, sizeof note - (size_t)n, "%sthe task's stderr pipe was not seen "
                      "empty within %d s, so srun may drop the line", n ? "; " : " (",
                      TASK_TELL_DRAIN_MS / 1000);
    if (n)
        snprintf(note + n, sizeof note - (size_t)n, ")");
    slurm_info("cohort: watch: ending the node's %u tasks%s: %s", r->n, note, why);
}

/* The agent died while the step runs: the tasks of r told so, then, when
 * the step is watched, ended. */
static void agent_died(const struct agent_watch *w, struct running *r)
{
    if (r->n == 0 || stopped_within(w, 0))
        return;
    int *how = calloc(r->n, sizeof *how);
    if (!how) {
        slurm_info("cohort: %s: the node agent died while the step was running, and its "
                   "tasks cannot be told: out of memory", w->ends ? "watch" : "store");
        return;
    }
    int unread = task_tell(r->pidfd, r->err, r->n, w->line, &w->user, w->stop[0], how);
    log_told(w, how, r->n, unread);
    free(how);
    if (w->ends)
        end_tasks(w, r, NULL, "the node agent died while the step was running");
}

/* What the thread does for what the agent said: an end, or its death
 * (given GRACE_MS: a step that Slurm kills loses its agent and its tasks
 * together, and only the tasks still running then are told). */
static void act(struct agent_watch *w, enum said said, int tell, const char *text)
{
    struct running r;
    if (said == SAID_DEATH && stopped_within(w, GRACE_MS))
        return;
    if (running_take(w, &r) < 0)
        slurm_info("cohort: %s: the node agent %s, and its tasks cannot be %s: %s",
                   w->ends ? "watch" : "store",
                   said == SAID_END ? "ends the step" : "died while the step was running",
                   said == SAID_END ? "ended" : "told", strerror(errno));
    else if (said == SAID_END)
        end_tasks(w, &r, tell ? text : NULL, text);
    else
        agent_died(w, &r);
    running_free(&r);
}

/* The thread: the agent's first end acted on, then only its "bye" read
 * until its death or the watch's stop; its death before any end acted on
 * (told, and ended when watched). */
static void *watch(void *arg)
{
    struct agent_watch *w = arg;
    char text[LINE_CAP];
    int tell = 0;
    enum said said = agent_says(w, true, &tell, text, sizeof text);
    bool ended = said == SAID_END;
    if (ended) {
        act(w, said, tell, text);
        /* No end is taken now: this returns at the agent's death or the stop. */
        said = agent_says(w, false, &tell, text, sizeof text);
    }
    bye_said(w); /* Nothing more comes: the waiter goes. */
    if (said == SAID_DEATH && !ended)
        act(w, said, 0, "");
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
                                      const struct mps_user *user, bool ends)
{
    struct agent_watch *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->fd = fd;
    w->n_tasks = n_tasks;
    w->ends = ends;
    w->pidfd = malloc((n_tasks ? n_tasks : 1) * sizeof *w->pidfd);
    w->pid = calloc(n_tasks ? n_tasks : 1, sizeof *w->pid);
    w->stop[0] = w->stop[1] = w->bye[0] = w->bye[1] = -1;
    w->line = strdup(line);
    if (!w->pidfd || !w->pid || !w->line || copy_user(&w->user, user) < 0 ||
        pipe2(w->stop, O_CLOEXEC) < 0 || pipe2(w->bye, O_CLOEXEC) < 0 ||
        pthread_mutex_init(&w->lock, NULL) != 0)
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
    for (int i = 0; i < 2; i++) {
        if (w->stop[i] >= 0)
            close(w->stop[i]);
        if (w->bye[i] >= 0)
            close(w->bye[i]);
    }
    mps_user_free(&w->user);
    free(w->line);
    free(w->pidfd);
    free(w->pid);
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
    w->pid[local] = pid;
    if (fd < 0 && !w->open_err)
        w->open_err = TELL_PIDFD | err;
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

bool agent_watch_wait_bye(const struct agent_watch *w, int ms)
{
    if (!w)
        return false;
    struct pollfd p = {.fd = w->bye[0], .events = POLLIN};
    int r;
    while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR)
        ;
    return r == 1;
}

void agent_watch_stop(struct agent_watch *w)
{
    if (!w)
        return;
    close(w->stop[1]);
    pthread_join(w->thread, NULL);
    close(w->stop[0]);
    close(w->bye[0]);
    for (uint32_t i = 0; i < w->n_tasks; i++)
        if (w->pidfd[i] >= 0)
            close(w->pidfd[i]);
    pthread_mutex_destroy(&w->lock);
    mps_user_free(&w->user);
    free(w->line);
    free(w->pidfd);
    free(w->pid);
    free(w);
}
