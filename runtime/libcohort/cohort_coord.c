/* cohort_coord.c - a step's coordinator process and every rank's
 * connection to it (cohort_coord.h): started by rank 0 with its start
 * record on its standard input and a minimal environment, its port
 * broadcast, dialed by every rank. */
#include "cohort_coord.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "boot_ops.h"
#include "cohort_internal.h"
#include "envlist.h"

#ifndef COHORT_WORK_COORD_PATH
#error COHORT_WORK_COORD_PATH: where cohort-work-coord is installed (set by the build)
#endif

#define COORD_END_MS 2000 /* a coordinator rank 0 killed is reaped within this */

extern char **environ;

/* Waits until fd is ready for events, or until end (ms): 1, 0 at end, -1. */
static int ready(int fd, short events, long long end)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events};
        long long left = end - net_now_ms();
        int r = left > 0 ? poll(&p, 1, (int)left) : 0;
        if (r >= 0 || errno != EINTR)
            return r;
    }
}

/* Rank 0: sends the start record on the coordinator's standard input (a
 * socket: never blocking, no SIGPIPE when the coordinator is gone), closes
 * it, and reads the coordinator's one line (the port, or "error WHY"), all
 * by end (ms). 0, -1 when the coordinator closed its end first, -2 at end. */
static int talk(int *in, int out, const uint8_t *rec, size_t len, long long end, char *line,
                size_t cap)
{
    for (size_t off = 0; off < len;) {
        int r = ready(*in, POLLOUT, end);
        ssize_t n = r > 0 ? send(*in, rec + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT) : -1;
        if (r == 0)
            return -2;
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0)
            return -1;
        off += (size_t)n;
    }
    close(*in);
    *in = -1;
    size_t got = 0;
    while (got + 1 < cap && !memchr(line, '\n', got)) {
        int r = ready(out, POLLIN, end);
        ssize_t n = r > 0 ? read(out, line + got, cap - 1 - got) : -1;
        if (r == 0)
            return -2;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    line[got] = 0;
    line[strcspn(line, "\n")] = 0;
    return 0;
}

/* What the coordinator's environment keeps of rank 0's (docs/work.md): the
 * search path, for a COHORT_WORK_COORD that is a script; the loader's path,
 * for libraries installed out of its default places; the sanitizers'
 * options, for builds with them. Never the step's secret (the start record
 * carries the key) nor any other variable of the user's. */
static const char *const coord_env[] = {"PATH", "LD_LIBRARY_PATH", "ASAN_OPTIONS",
                                        "LSAN_OPTIONS", "UBSAN_OPTIONS"};
#define COORD_ENV_N (sizeof coord_env / sizeof *coord_env)

/* The first entry of environ for each name of coord_env that is set, then
 * NULL. */
static void coord_environ(char *envp[COORD_ENV_N + 1])
{
    size_t k = 0;
    for (size_t i = 0; i < COORD_ENV_N; i++) {
        size_t len = strlen(coord_env[i]);
        char **e = environ;
        while (*e && (strncmp(*e, coord_env[i], len) != 0 || (*e)[len] != '='))
            e++;
        if (*e)
            envp[k++] = *e;
    }
    envp[k] = NULL;
}

/* Rank 0: path started in a session of its own (no signal to rank 0's
 * group reaches it; it leads its own process group) with in and out as
 * its standard input and output, and the environment of coord_environ.
 * 0 with l->pid, or an errno. */
static int spawn(struct coord_link *l, const char *path, int in, int out)
{
    char *envp[COORD_ENV_N + 1];
    coord_environ(envp);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in, 0);
    posix_spawn_file_actions_adddup2(&fa, out, 1);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID);
    char *argv[] = {(char *)path, NULL};
    int e = posix_spawn(&l->pid, path, &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (e != 0)
        l->pid = 0;
    return e;
}

/* Rank 0 gives up on the coordinator it started (no port in time, or it
 * failed): ends its process group with SIGKILL, which a stopped process
 * takes too, and reaps it, so that nothing it holds (the journal's lock)
 * outlives the failure. Waits COORD_END_MS at most: a process in an
 * uninterruptible wait dies only once that ends (coord_link_free tries
 * again). */
static void end_coordinator(struct coord_link *l)
{
    if (kill(-l->pid, SIGKILL) < 0)
        kill(l->pid, SIGKILL);
    long long end = net_now_ms() + COORD_END_MS;
    for (int nap = 1;; nap = nap < 32 ? 2 * nap : 50) {
        pid_t r = waitpid(l->pid, NULL, WNOHANG);
        if (r == l->pid || (r < 0 && errno != EINTR)) {
            l->pid = 0;
            return;
        }
        long long left = end - net_now_ms();
        if (left <= 0)
            return;
        poll(NULL, 0, left < nap ? (int)left : nap);
    }
}

/* Rank 0: starts the coordinator for cfg; *port, or 0 with why (and the
 * coordinator ended). */
static void start(struct coord_link *l, const struct coord_config *cfg, const char *path,
                  uint16_t *port, char *why, size_t len)
{
    uint8_t *rec = NULL;
    size_t rec_len = 0;
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    *port = 0;
    if (coord_config_encode(cfg, &rec, &rec_len) < 0 ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) < 0 || pipe2(out, O_CLOEXEC) < 0) {
        snprintf(why, len, "cannot start the coordinator: %s", strerror(errno));
        goto done;
    }
    int e = spawn(l, path, in[0], out[1]);
    close(in[0]);
    close(out[1]);
    in[0] = out[1] = -1;
    if (e != 0) {
        snprintf(why, len, "cannot start the work coordinator %s: %s (set COHORT_WORK_COORD to "
                 "cohort-work-coord's path)", path, strerror(e));
        goto done;
    }
    char line[COHORT_ERR_LEN + 16];
    int rc = talk(&in[1], out[0], rec, rec_len, net_now_ms() + (long long)l->timeout_s * 1000,
                  line, sizeof line);
    unsigned p;
    if (rc == 0 && strncmp(line, "error ", 6) == 0)
        snprintf(why, len, "%.*s", (int)len - 1, line + 6);
    else if (rc == 0 && sscanf(line, "%u", &p) == 1 && p > 0 && p < 65536)
        *port = (uint16_t)p;
    else if (rc == -2)
        snprintf(why, len, "the work coordinator %s did not start within %d s (stopped, or its "
                 "node overloaded?): rank 0 killed it", path, l->timeout_s);
    else
        snprintf(why, len, "the work coordinator %s exited as it started", path);
    if (!*port)
        end_coordinator(l);
done:
    if (rec)
        explicit_bzero(rec, rec_len);
    free(rec);
    for (int i = 0; i < 2; i++) {
        if (in[i] >= 0)
            close(in[i]);
        if (out[i] >= 0)
            close(out[i]);
    }
}

/* Rank 0: the step's half of the start record, and the coordinator started. */
static void launch(struct coord_link *l, const struct cohort_self *self,
                   struct coord_config *cfg, const struct envlist *env, uint16_t *port,
                   char *why, size_t len)
{
    const struct cohort_step *s = self->step;
    cfg->key = l->key;
    cfg->job = s->job_id;
    cfg->step = s->step_id;
    cfg->size = s->num_tasks;
    cfg->num_nodes = s->num_nodes;
    cfg->rank_node = (uint32_t *)self->rank_node;
    cfg->join_timeout_s = (uint32_t)l->timeout_s;
    const char *v = envlist_get(env, "COHORT_VERBOSE");
    cfg->verbose = v && *v && strcmp(v, "0") != 0;
    hs_view(s->num_tasks, s->num_nodes, self->rank_node, NULL, cfg->view);
    const char *path = envlist_get(env, "COHORT_WORK_COORD");
    start(l, cfg, path && *path ? path : COHORT_WORK_COORD_PATH, port, why, len);
    explicit_bzero(&cfg->key, sizeof cfg->key);
}

/* Every rank: rank 0's port (or its failure, the same line everywhere). */
static int share_port(struct coord_link *l, const struct cohort_self *self,
                      const char *func, const char *what, struct coord_config *cfg,
                      const struct envlist *env, uint16_t *port)
{
    uint8_t b[4 + COHORT_ERR_LEN] = {0};
    if (self->step->rank == 0) {
        uint16_t p;
        launch(l, self, cfg, env, &p, (char *)b + 4, COHORT_ERR_LEN);
        wire_put32(b, p);
    }
    if (cohort_bcast(l->c, b, sizeof b, 0) != 0)
        return -1;
    *port = (uint16_t)wire_get32(b);
    b[sizeof b - 1] = 0;
    if (*port == 0)
        return cohort_internal_fail(l->c, COHORT_ERR_CONFIG, "cohort: %s: %s: %s", func, what,
                                    (char *)b + 4);
    return 0;
}

/* Every rank: its authenticated connection to the coordinator. */
static int connect_coord(struct coord_link *l, const struct cohort_self *self,
                         const char *func, const char *what, uint16_t port)
{
    const struct cohort_step *s = self->step;
    struct cohort_err e;
    char ps[8];
    snprintf(ps, sizeof ps, "%u", port);
    snprintf(l->where, sizeof l->where, "%.80s:%u", self->master, port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
    int g = getaddrinfo(self->master, ps, &hints, &l->addrs);
    if (g != 0)
        return cohort_internal_fail(l->c, COHORT_ERR_NETWORK, "cohort: %s: cannot resolve %s: %s",
                                    func, self->master, gai_strerror(g));
    struct hs_self me = {.key = &l->key, .job = s->job_id, .step = s->step_id,
                         .rank = s->rank, .node = s->node_id};
    hs_view(s->num_tasks, s->num_nodes, self->rank_node, NULL, me.view);
    struct net_ops ops = {.max_payload = WIRE_MAX_PAYLOAD_DEFAULT};
    if (net_new(&me, &ops, &l->net, &e) < 0)
        return cohort_internal_fail(l->c, e.code, "cohort: %s: %s", func, e.msg);
    struct net_target t = {.addrs = l->addrs, .port = port, .timeout_s = l->timeout_s,
                           .listening = true, .role = "work coordinator"};
    snprintf(t.name, sizeof t.name, "the work coordinator of %.72s (%s)", what, l->where);
    long long end = net_now_ms() + (long long)l->timeout_s * 1000;
    if (!(l->conn = net_dial(l->net, &t, end)))
        return cohort_internal_fail(l->c, COHORT_ERR_RESOURCE, "cohort: out of memory");
    while (l->conn->state != NET_READY) {
        struct net_event *ev;
        int n = net_poll(l->net, (int)(end > net_now_ms() ? end - net_now_ms() : 0), &ev, &e);
        for (int i = 0; i < n; i++)
            if (ev[i].what & NET_EV_FAILED)
                return cohort_internal_fail(l->c, net_dial_error(l->conn)->code,
                                            "cohort: %s: cannot reach the work coordinator "
                                            "rank 0 started (gone?): %s",
                                            func, net_dial_error(l->conn)->msg);
        if (n < 0)
            return cohort_internal_fail(l->c, e.code, "cohort: %s: %s", func, e.msg);
    }
    return 0;
}

int coord_link_open(struct coord_link *l, struct cohort *c, const char *func,
                    const char *what, struct coord_config *cfg)
{
    struct cohort_self self;
    struct envlist env;
    struct cohort_err e;
    memset(l, 0, sizeof *l);
    l->c = c;
    if (cohort_self(c, func, &self) < 0)
        return -1;
    l->timeout_s = cohort_internal_timeout_s(c);
    envlist_init(&env);
    if (envlist_from_envp(&env, environ) < 0) {
        envlist_clear(&env);
        return cohort_internal_fail(c, COHORT_ERR_RESOURCE, "cohort: out of memory");
    }
    uint16_t port;
    int rc = boot_step_key(&env, &l->key, &e) < 0
                 ? cohort_internal_fail(c, e.code, "cohort: %s", e.msg)
                 : share_port(l, &self, func, what, cfg, &env, &port) < 0 ? -1
                 : connect_coord(l, &self, func, what, port);
    envlist_clear(&env);
    return rc;
}

int coord_link_wait(struct coord_link *l, long long until_ms, struct cohort_err *err)
{
    long long left = until_ms - net_now_ms();
    int ms = left <= 0 ? 0 : left < COORD_WAIT_SLICE_MS ? (int)left : COORD_WAIT_SLICE_MS;
    if (ms > 0 && !l->conn->c.out_len) {
        net_wait_read(l->net, l->conn, ms);
        return 0;
    }
    struct net_event *ev;
    return net_poll(l->net, ms, &ev, err) < 0 ? -1 : 0;
}

int coord_gather(struct cohort *c, const void *mine, size_t len, uint8_t **all)
{
    *all = malloc(len * (size_t)cohort_size(c));
    if (!*all)
        return cohort_internal_fail(c, COHORT_ERR_RESOURCE, "cohort: out of memory");
    if (cohort_allgather(c, mine, len, *all) == 0)
        return 0;
    free(*all);
    *all = NULL;
    return -1;
}

void coord_link_free(struct coord_link *l)
{
    net_free(l->net);
    l->net = NULL;
    l->conn = NULL;
    if (l->addrs)
        freeaddrinfo(l->addrs);
    l->addrs = NULL;
    if (l->pid > 0)
        waitpid(l->pid, NULL, WNOHANG); /* reaped if it is done */
    explicit_bzero(&l->key, sizeof l->key);
}
