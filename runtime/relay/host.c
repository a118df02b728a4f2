/* host.c - the node's relay process of a step (host.h). It holds the
 * node's socket and runs a thread per relay; it ends with the last relay
 * (or, in the node agent, with the process). */
#include "host.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "coord_start.h"
#include "net.h"
#include "relay.h"

#define HOST_RECORD_MAX (1u << 24) /* a record holds the step's rank table, and a little */
#define HOST_RELAYS_MAX 1024       /* relays (and records being read) at once */
#define HOST_OWN_FDS 4             /* its socket, its pipe, its spare descriptor */

struct host {
    const struct coord_config *cfg; /* the step and node served, with its key */
    int lfd;                        /* the node's socket for the step */
    int wake[2];                    /* written when a relay thread ended */
    int spare;                      /* given up for a moment when accept finds no descriptor */
    pthread_mutex_t mu;
    uint32_t live;                  /* threads: relays, and records being read */
    uint32_t fds;                   /* descriptors their relays counted, and its own */
    bool failed;                    /* A relay failed, or the first could not start. */
    bool forever;                   /* It serves as long as the process lives (host_serve). */
};

/* A relay_thread runs a relay: the one the process was started for, or
 * one a rank of the node asked for over the node's socket. */
struct relay_thread {
    struct host *h;
    bool first;                     /* the relay the process was started for */
    int fd;                         /* the asking rank's connection (not the first's) */
    struct coord_config cfg;        /* its record (not the first's) */
};

/* Reads the record on the rank's connection to its end by the step's join
 * timeout, decodes it and checks that it is a relay's of this step and node
 * with this key. Returns 0, or -1 with err. */
static int take(struct relay_thread *rt, struct cohort_err *err)
{
    const struct coord_config *own = rt->h->cfg;
    int rc = coord_record_read(rt->fd, base_now_ms() + (long long)own->join_timeout_s * 1000,
                               HOST_RECORD_MAX, &rt->cfg, err);
    if (rc == -2)
        return cohort_fail(err, "the node's relay process could not read a record");
    const struct auth_key *k = &rt->cfg.key;
    if (rc == 0 && (rt->cfg.kind != COORD_RELAY || rt->cfg.job != own->job ||
                    rt->cfg.step != own->step || rt->cfg.node != own->node ||
                    k->kind != own->key.kind ||
                    memcmp(k->bytes, own->key.bytes, sizeof k->bytes) != 0 ||
                    strcmp(k->munge_socket, own->key.munge_socket) != 0))
        rc = cohort_fail(err, "the node relay process of step %u.%u on node %u was asked for "
                         "a relay of another step, node or key", own->job, own->step,
                         own->node);
    return rc;
}

/* Runs the relay of cfg, its descriptors counted with the others' (a
 * relay refused for them does not count). Returns what relay_run
 * returned. */
static int run_relay(struct relay_thread *rt, const struct coord_config *cfg,
                     struct cohort_err *err)
{
    struct host *h = rt->h;
    uint32_t need = relay_fds(cfg, true), others;
    pthread_mutex_lock(&h->mu);
    others = h->fds;
    h->fds += need;
    pthread_mutex_unlock(&h->mu);
    int rc = relay_run(cfg, rt->first ? NULL : &rt->fd, others, err);
    pthread_mutex_lock(&h->mu);
    h->fds -= need;
    pthread_mutex_unlock(&h->mu);
    return rc;
}

/* Says a line to the asking rank; the first relay says it on standard
 * output. */
static void say(struct relay_thread *rt, const char *line)
{
    if (rt->first) {
        printf("%s\n", line);
        fflush(stdout);
        return;
    }
    if (rt->fd < 0)
        return; /* It was told already (or the telling failed). */
    char text[COHORT_ERR_LEN + 16];
    int n = snprintf(text, sizeof text, "%s\n", line);
    /* A rank that is gone has nobody to tell, so the result is not looked at. */
    send(rt->fd, text, (size_t)n < sizeof text ? (size_t)n : sizeof text - 1,
         MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Reports a relay's end. A relay that could not start (rc -2) is reported
 * to its rank ("busy WHY" when this process lacks descriptors for it: the
 * rank then starts a process of its own, with a limit of its own); one that
 * failed (-1) is reported on standard error. */
static void report(struct relay_thread *rt, const struct coord_config *cfg, int rc,
                   const struct cohort_err *err)
{
    char line[COHORT_ERR_LEN + 8];
    if (rc == -2) {
        bool busy = !rt->first && err->code == COHORT_E_RESOURCE;
        snprintf(line, sizeof line, "%s %s", busy ? "busy" : "error", err->msg);
        say(rt, line);
    } else if (rc < 0) {
        fprintf(stderr, "cohort: the node relay of node %u failed: %s\n", cfg->node, err->msg);
    }
}

/* Runs one relay thread: takes its record (unless it is the first), runs
 * the relay, reports its end, and wakes the loop when it was the last. */
static void *relay_thread_main(void *arg)
{
    struct relay_thread *rt = arg;
    struct host *h = rt->h;
    struct cohort_err err = {0};
    bool first = rt->first;
    const struct coord_config *cfg = first ? h->cfg : &rt->cfg;
    int rc = first || take(rt, &err) == 0 ? run_relay(rt, cfg, &err) : -2;
    report(rt, cfg, rc, &err);
    if (rt->fd >= 0)
        close(rt->fd);
    if (!first)
        coord_config_free(&rt->cfg);
    free(rt);
    pthread_mutex_lock(&h->mu);
    h->failed |= rc == -1 || (first && rc == -2); /* A later one refused was told so. */
    if (--h->live == 0 && write(h->wake[1], "", 1) < 0) {
        /* The pipe holds a byte already, so the loop wakes. */
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* Starts a thread for fd's record (first: for the relay the process was
 * started for). Returns false when none could be made; fd is then told
 * busy and closed. */
static bool spawn_relay_thread(struct host *h, bool first, int fd)
{
    struct relay_thread *rt = calloc(1, sizeof *rt);
    pthread_attr_t at;
    pthread_t t;
    bool ok = false;
    pthread_mutex_lock(&h->mu);
    if (rt && h->live < HOST_RELAYS_MAX) {
        *rt = (struct relay_thread){.h = h, .first = first, .fd = fd};
        h->live++;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        ok = pthread_create(&t, &at, relay_thread_main, rt) == 0;
        pthread_attr_destroy(&at);
        if (!ok)
            h->live--;
    }
    pthread_mutex_unlock(&h->mu);
    if (!ok) {
        free(rt);
        if (!first) {
            struct relay_thread no = {.fd = fd};
            say(&no, "busy the node's relay process cannot run another relay now (out of "
                     "threads, or 1024 at once)");
            close(fd);
        }
    }
    return ok;
}

/* Accepts a connection on the node's socket: this user's get a thread, and
 * others are closed unread. With no descriptor left, the connection is
 * taken off the backlog with the spare one and closed (net_accept: the rank
 * starts a process of its own), rather than left there to wake the loop
 * again and again. */
static void accept_one(struct host *h)
{
    struct ucred cr;
    socklen_t len = sizeof cr;
    int fd = net_accept(h->lfd, SOCK_CLOEXEC, &h->spare);
    if (fd < 0)
        return;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || cr.uid != geteuid()) {
        close(fd);
        return;
    }
    spawn_relay_thread(h, false, fd);
}

/* Serves until the last relay has ended, or for ever. The socket is closed
 * once none is left, or when it cannot be waited on (the relays then run to
 * their end). Returns 0 when none failed, else 2. */
static int serve(struct host *h)
{
    for (;;) {
        struct pollfd p[2] = {{.fd = h->wake[0], .events = POLLIN},
                              {.fd = h->lfd, .events = POLLIN}};
        if (poll(p, h->lfd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR && h->lfd >= 0) {
            close(h->lfd);
            h->lfd = -1;
        }
        if (p[0].revents) {
            char b[64];
            while (read(h->wake[0], b, sizeof b) > 0) {
            }
        }
        pthread_mutex_lock(&h->mu);
        uint32_t live = h->live;
        pthread_mutex_unlock(&h->mu);
        if (live == 0 && !h->forever)
            break; /* Only this loop adds threads, so none can come now. */
        if (h->lfd >= 0 && (p[1].revents & POLLIN))
            accept_one(h);
    }
    if (h->lfd >= 0)
        close(h->lfd); /* A rank that comes now starts a new process. */
    return h->failed ? 2 : 0;
}

/* Runs a relay alone, when the node's socket is another's or none could
 * be had. Returns the exit status. */
static int alone(const struct coord_config *cfg)
{
    struct cohort_err err = {0};
    struct relay_thread first = {.first = true, .fd = -1};
    int rc = relay_run(cfg, NULL, 0, &err);
    report(&first, cfg, rc, &err);
    return rc < 0 ? 2 : 0;
}

/* The process has one host. It is static, so that a relay thread still
 * leaving its last unlock as the process exits touches memory that lives
 * on. */
static struct host the_host;

/* Closes what host_listen opened. */
static void unlisten(struct host *h)
{
    int *fds[] = {&h->lfd, &h->wake[0], &h->wake[1], &h->spare};
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
        if (*fds[i] >= 0) {
            close(*fds[i]);
            *fds[i] = -1;
        }
}

/* Opens the node's socket for cfg's step, the pipe that wakes the loop and
 * the spare descriptor in the process's host, which holds own descriptors
 * besides its relays'. Returns 0, or -1 with nothing held. */
static int host_listen(const struct coord_config *cfg, uint32_t own)
{
    char name[COORD_NAME_MAX + 1];
    struct sockaddr_un ua;
    coord_host_name(cfg, name);
    socklen_t len = coord_relay_addr(name, &ua);
    struct host *h = &the_host;
    *h = (struct host){.cfg = cfg, .lfd = -1, .wake = {-1, -1}, .fds = HOST_OWN_FDS + own};
    h->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    h->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (h->lfd < 0 || bind(h->lfd, (struct sockaddr *)&ua, len) < 0 || listen(h->lfd, 64) < 0 ||
        pipe2(h->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
        unlisten(h);
        return -1;
    }
    pthread_mutex_init(&h->mu, NULL);
    return 0;
}

int host_main(const struct coord_config *cfg)
{
    prctl(PR_SET_NAME, "cohort-relay");
    /* With too few descriptors to share (a relay alone needs fewer), it runs
     * alone, as before. */
    if ((long)relay_fds(cfg, true) + HOST_OWN_FDS + NET_FD_SPARE > net_fd_limit() ||
        host_listen(cfg, 0) < 0)
        return alone(cfg);
    if (spawn_relay_thread(&the_host, true, -1))
        return serve(&the_host); /* The pipe and lock last to the process's exit. */
    unlisten(&the_host);
    return alone(cfg);
}

/* Serves the host arg in its own thread, for ever. */
static void *serve_main(void *arg)
{
    serve(arg);
    return NULL;
}

int host_serve(const struct coord_config *cfg, uint32_t own, struct cohort_err *err)
{
    pthread_t t;
    pthread_attr_t at;
    if (host_listen(cfg, own) < 0)
        return cohort_fail(err, "the node's socket for the step's relays is taken (another "
                           "process holds it): each queue's or set's relay gets a process of "
                           "its own");
    the_host.forever = true;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int e = pthread_create(&t, &at, serve_main, &the_host);
    pthread_attr_destroy(&at);
    if (e != 0) {
        unlisten(&the_host);
        return cohort_fail(err, "cannot serve the node's relays: %s", strerror(e));
    }
    return 0;
}
