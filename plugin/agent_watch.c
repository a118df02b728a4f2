/* agent_watch.c - the node agent watched from slurmstepd, and its node's
 * tasks told of its death (see agent_watch.h). */
#include "agent_watch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <slurm/spank.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define WRITE_MS 1000 /* the longest a task's full stderr is waited on */

struct agent_watch {
    int fd;            /* slurmstepd's end of the agent's input */
    int stop[2];       /* a pipe: its write end closed tells the thread to end */
    pthread_t thread;
    pthread_mutex_t lock; /* over pidfd[] */
    uint32_t n_tasks;
    int *pidfd;        /* by local id: a running task's pidfd, or -1 */
    char *line;        /* what each task is told */
};

/* Writes the line on the task's own standard error, the file it holds as
 * descriptor 2 (taken by pidfd_getfd, so that nothing is opened again by
 * path as root), where the task would write next. Whether it was written. */
static bool tell(const struct agent_watch *w, int pidfd)
{
    int fd = (int)syscall(SYS_pidfd_getfd, pidfd, 2, 0);
    if (fd < 0)
        return false; /* the task has just ended, or has no stderr */
    struct pollfd p = {.fd = fd, .events = POLLOUT}; /* a pipe nobody reads is left */
    struct iovec v[2] = {{w->line, strlen(w->line)}, {"\n", 1}};
    bool done = poll(&p, 1, WRITE_MS) == 1 && (p.revents & POLLOUT) && writev(fd, v, 2) > 0;
    close(fd);
    return done;
}

/* Whether the agent's end of the pair has closed: it never writes, so
 * anything readable is the end (what else comes is read and dropped). */
static bool agent_gone(int fd)
{
    char b[64];
    ssize_t n = recv(fd, b, sizeof b, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN);
}

static void *watch(void *arg)
{
    struct agent_watch *w = arg;
    for (;;) {
        struct pollfd p[2] = {{.fd = w->fd, .events = POLLIN}, {.fd = w->stop[0], .events = POLLIN}};
        int r = poll(p, 2, -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || p[1].revents)
            return NULL; /* stopped: the step ends on this node */
        if (p[0].revents && agent_gone(w->fd))
            break;
    }
    /* Once the node's last task has ended, slurmstepd ends what is left of
     * the step, the agent too: that is no death to tell. */
    uint32_t told = 0;
    for (uint32_t i = 0; i < w->n_tasks; i++) {
        pthread_mutex_lock(&w->lock); /* a copy: the task may end meanwhile */
        int pidfd = w->pidfd[i] >= 0 ? fcntl(w->pidfd[i], F_DUPFD_CLOEXEC, 0) : -1;
        pthread_mutex_unlock(&w->lock);
        if (pidfd >= 0) {
            told += tell(w, pidfd);
            close(pidfd);
        }
    }
    if (told) /* in the node's log too (an error would go to a task's stderr again) */
        slurm_info("%s (%u tasks told)", w->line, told);
    return NULL;
}

struct agent_watch *agent_watch_start(int fd, uint32_t n_tasks, const char *line)
{
    struct agent_watch *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->fd = fd;
    w->n_tasks = n_tasks;
    w->pidfd = malloc((n_tasks ? n_tasks : 1) * sizeof *w->pidfd);
    w->stop[0] = w->stop[1] = -1;
    w->line = strdup(line);
    if (!w->pidfd || !w->line || pipe2(w->stop, O_CLOEXEC) < 0 ||
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
    for (int i = 0; i < 2; i++)
        if (w->stop[i] >= 0)
            close(w->stop[i]);
    free(w->line);
    free(w->pidfd);
    free(w);
    return NULL;
}

void agent_watch_task(struct agent_watch *w, uint32_t local, pid_t pid)
{
    if (!w || local >= w->n_tasks)
        return;
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    pthread_mutex_lock(&w->lock);
    if (w->pidfd[local] >= 0)
        close(w->pidfd[local]);
    w->pidfd[local] = fd;
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
    free(w->line);
    free(w->pidfd);
    free(w);
}
