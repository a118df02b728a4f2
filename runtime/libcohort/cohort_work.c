/* cohort_work.c - opening and closing a work queue (cohort_work.h): every
 * rank's arguments compared through one allgather (so that a bad one
 * fails every rank with the same line), the coordinator started by rank 0
 * as a process of its own (cohort-work-coord, told the step through a
 * pipe), its port broadcast, and every rank's authenticated connection to
 * it (net.h). The calls in between are in cohort_work_call.c. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <nettle/sha2.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "boot_ops.h"
#include "cohort_internal.h"
#include "cohort_self.h"
#include "cohort_work_private.h"
#include "coord_config.h"
#include "envlist.h"

#ifndef COHORT_WORK_COORD_PATH
#error COHORT_WORK_COORD_PATH: where cohort-work-coord is installed (set by the build)
#endif

#define DEFAULT_LEASE_TIMEOUT_S 60
#define DEFAULT_MAX_ATTEMPTS 3
#define WHY_MAX 200

extern char **environ;

/* One rank's arguments, as every rank sees them after the allgather. */
struct args {
    uint8_t bad;
    uint8_t journal[SHA256_DIGEST_SIZE]; /* of the path; zero: none */
    uint32_t lease_timeout_s, max_attempts;
    uint64_t n_items;
    char name[WORK_NAME_MAX + 1];
    char why[WHY_MAX]; /* bad: what is wrong */
};
#define ARGS_LEN (1 + SHA256_DIGEST_SIZE + 4 + 4 + 8 + WORK_NAME_MAX + 1 + WHY_MAX)

static void args_put(const struct args *a, uint8_t *p)
{
    *p++ = a->bad;
    memcpy(p, a->journal, SHA256_DIGEST_SIZE);
    p += SHA256_DIGEST_SIZE;
    wire_put32(p, a->lease_timeout_s);
    wire_put32(p + 4, a->max_attempts);
    work_put64(p + 8, a->n_items);
    memcpy(p + 16, a->name, WORK_NAME_MAX + 1);
    memcpy(p + 16 + WORK_NAME_MAX + 1, a->why, WHY_MAX);
}

static void args_get(const uint8_t *p, struct args *a)
{
    a->bad = *p++;
    memcpy(a->journal, p, SHA256_DIGEST_SIZE);
    p += SHA256_DIGEST_SIZE;
    a->lease_timeout_s = wire_get32(p);
    a->max_attempts = wire_get32(p + 4);
    a->n_items = work_get64(p + 8);
    memcpy(a->name, p + 16, WORK_NAME_MAX + 1);
    a->name[WORK_NAME_MAX] = 0;
    memcpy(a->why, p + 16 + WORK_NAME_MAX + 1, WHY_MAX);
    a->why[WHY_MAX - 1] = 0;
}

static void digest(const char *s, uint8_t out[SHA256_DIGEST_SIZE])
{
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    sha256_update(&ctx, strlen(s), (const uint8_t *)s);
    sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
}

/* This rank's arguments, checked; a->bad with a->why when one is wrong. */
static void args_mine(struct cohort *c, const char *name, uint64_t n_items,
                      const struct cohort_work_opts *opts, struct cohort_work **w,
                      struct args *a, struct cohort_work_opts *o)
{
    memset(a, 0, sizeof *a);
    memset(o, 0, sizeof *o);
    a->n_items = n_items;
    if (cohort_internal_read_opts(c, "cohort_work_open", "struct cohort_work_opts", opts,
                                  sizeof *o, o, sizeof *o) < 0)
        snprintf(a->why, sizeof a->why, "%s", cohort_error(c));
    else if (!w)
        snprintf(a->why, sizeof a->why, "w is NULL");
    else if (!name || !*name || strlen(name) > WORK_NAME_MAX)
        snprintf(a->why, sizeof a->why, "the queue's name must have 1 to %d characters",
                 WORK_NAME_MAX);
    else if (n_items == 0)
        snprintf(a->why, sizeof a->why, "n_items is 0: a queue holds at least one item");
    else if (o->lease_timeout_s < 0 || o->lease_timeout_s > 7 * 86400)
        snprintf(a->why, sizeof a->why, "lease_timeout_s is %d: give 1 to 604800 (0: %d)",
                 o->lease_timeout_s, DEFAULT_LEASE_TIMEOUT_S);
    else if (o->max_attempts < 0 || o->max_attempts > 1000)
        snprintf(a->why, sizeof a->why, "max_attempts is %d: give 1 to 1000 (0: %d)",
                 o->max_attempts, DEFAULT_MAX_ATTEMPTS);
    else if (o->journal && (!*o->journal || strlen(o->journal) > COORD_PATH_MAX))
        snprintf(a->why, sizeof a->why, "the journal's path must have 1 to %d characters",
                 COORD_PATH_MAX);
    a->bad = a->why[0] != 0;
    if (a->bad)
        return;
    snprintf(a->name, sizeof a->name, "%s", name);
    a->lease_timeout_s = (uint32_t)(o->lease_timeout_s ? o->lease_timeout_s
                                                       : DEFAULT_LEASE_TIMEOUT_S);
    a->max_attempts = (uint32_t)(o->max_attempts ? o->max_attempts : DEFAULT_MAX_ATTEMPTS);
    if (o->journal)
        digest(o->journal, a->journal);
}

/* Every rank's arguments through one allgather: 0 when all are good and
 * the same, else -1 with the same line on every rank. */
static int agree(struct cohort *c, const struct args *mine)
{
    int size = cohort_size(c);
    uint8_t in[ARGS_LEN], *all = malloc((size_t)ARGS_LEN * (size_t)size);
    if (!all)
        return cohort_internal_fail(c, COHORT_ERR_RESOURCE,
                                    "cohort: cohort_work_open: out of memory");
    args_put(mine, in);
    if (cohort_allgather(c, in, ARGS_LEN, all) != 0) {
        free(all);
        return -1;
    }
    struct args first, a;
    args_get(all, &first);
    int rc = 0;
    for (int r = 0; r < size && rc == 0; r++) {
        args_get(all + (size_t)r * ARGS_LEN, &a);
        if (a.bad)
            rc = cohort_internal_fail(c, COHORT_ERR_USAGE,
                                      "cohort: cohort_work_open failed on rank %d: %s", r, a.why);
        else if (!first.bad && (strcmp(a.name, first.name) || a.n_items != first.n_items))
            rc = cohort_internal_fail(c, COHORT_ERR_USAGE,
                                      "cohort: cohort_work_open: rank %d opens queue '%s' of "
                                      "%llu items, rank 0 queue '%s' of %llu: every rank must "
                                      "open the same queue with the same n_items",
                                      r, a.name, (unsigned long long)a.n_items, first.name,
                                      (unsigned long long)first.n_items);
        else if (!first.bad && (memcmp(a.journal, first.journal, sizeof a.journal) ||
                                a.lease_timeout_s != first.lease_timeout_s ||
                                a.max_attempts != first.max_attempts))
            rc = cohort_internal_fail(c, COHORT_ERR_USAGE,
                                      "cohort: cohort_work_open: rank %d opens queue '%s' with "
                                      "other options than rank 0 (journal, lease_timeout_s or "
                                      "max_attempts): every rank must give the same",
                                      r, a.name);
    }
    free(all);
    return rc;
}

/* Rank 0: writes the start record to the coordinator's standard input and
 * reads its one line (the port, or "error WHY") within timeout_s. */
static int talk(int in, int out, const uint8_t *rec, size_t len, int timeout_s, char *line,
                size_t cap)
{
    for (size_t off = 0; off < len;) {
        ssize_t n = write(in, rec + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    close(in);
    size_t got = 0;
    long long end = net_now_ms() + (long long)timeout_s * 1000;
    while (got + 1 < cap && !memchr(line, '\n', got)) {
        struct pollfd p = {.fd = out, .events = POLLIN};
        long long left = end - net_now_ms();
        if (left <= 0 || poll(&p, 1, (int)left) == 0)
            return -2;
        ssize_t n = read(out, line + got, cap - 1 - got);
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

/* Rank 0: starts the coordinator for cfg; *port, or 0 with why. */
static void start(struct cohort_work *w, const struct coord_config *cfg, const char *path,
                  uint16_t *port, char *why, size_t len)
{
    uint8_t *rec = NULL;
    size_t rec_len = 0;
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    *port = 0;
    if (coord_config_encode(cfg, &rec, &rec_len) < 0 || pipe2(in, O_CLOEXEC) < 0 ||
        pipe2(out, O_CLOEXEC) < 0) {
        snprintf(why, len, "cannot start the work coordinator: %s", strerror(errno));
        goto done;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID); /* no signal to rank 0's group reaches it */
    char *argv[] = {(char *)path, NULL};
    int e = posix_spawn(&w->coord_pid, path, &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(in[0]);
    close(out[1]);
    in[0] = out[1] = -1;
    if (e != 0) {
        snprintf(why, len, "cannot start the work coordinator %s: %s (set COHORT_WORK_COORD to "
                 "cohort-work-coord's path)", path, strerror(e));
        w->coord_pid = 0;
        goto done;
    }
    char line[COHORT_ERR_LEN + 16];
    int rc = talk(in[1], out[0], rec, rec_len, w->timeout_s, line, sizeof line);
    in[1] = -1;
    unsigned p;
    if (rc == 0 && strncmp(line, "error ", 6) == 0)
        snprintf(why, len, "%.*s", (int)len - 1, line + 6);
    else if (rc == 0 && sscanf(line, "%u", &p) == 1 && p > 0 && p < 65536)
        *port = (uint16_t)p;
    else
        snprintf(why, len, "the work coordinator %s %s", path,
                 rc == -2 ? "did not start within the deadline" : "exited as it started");
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

/* Rank 0: the coordinator's start record, and the coordinator started. */
static void launch(struct cohort_work *w, const struct cohort_self *self, const struct args *a,
                   const struct cohort_work_opts *o, const struct envlist *env, uint16_t *port,
                   char *why, size_t len)
{
    const struct cohort_step *s = self->step;
    struct coord_config cfg = {
        .key = w->key, .job = s->job_id, .step = s->step_id, .size = s->num_tasks,
        .num_nodes = s->num_nodes, .rank_node = (uint32_t *)self->rank_node,
        .n_items = a->n_items, .lease_timeout_s = a->lease_timeout_s,
        .max_attempts = a->max_attempts, .join_timeout_s = (uint32_t)w->timeout_s};
    const char *v = envlist_get(env, "COHORT_VERBOSE");
    cfg.verbose = v && *v && strcmp(v, "0") != 0;
    hs_view(s->num_tasks, s->num_nodes, self->rank_node, NULL, cfg.view);
    snprintf(cfg.name, sizeof cfg.name, "%s", a->name);
    snprintf(cfg.journal, sizeof cfg.journal, "%s", o->journal ? o->journal : "");
    const char *path = envlist_get(env, "COHORT_WORK_COORD");
    start(w, &cfg, path && *path ? path : COHORT_WORK_COORD_PATH, port, why, len);
    explicit_bzero(&cfg.key, sizeof cfg.key);
}

/* Every rank: rank 0's port (or its failure, the same line everywhere). */
static int share_port(struct cohort_work *w, const struct cohort_self *self,
                      const struct args *a, const struct cohort_work_opts *o,
                      const struct envlist *env, uint16_t *port)
{
    uint8_t b[4 + COHORT_ERR_LEN] = {0};
    if (self->step->rank == 0) {
        uint16_t p;
        launch(w, self, a, o, env, &p, (char *)b + 4, COHORT_ERR_LEN);
        wire_put32(b, p);
    }
    if (cohort_bcast(w->c, b, sizeof b, 0) != 0)
        return -1;
    *port = (uint16_t)wire_get32(b);
    b[sizeof b - 1] = 0;
    if (*port == 0)
        return cohort_internal_fail(w->c, COHORT_ERR_CONFIG,
                                    "cohort: cohort_work_open: queue '%s': %s", a->name,
                                    (char *)b + 4);
    return 0;
}

/* Every rank: its authenticated connection to the coordinator. */
static int connect_coord(struct cohort_work *w, const struct cohort_self *self, uint16_t port)
{
    const struct cohort_step *s = self->step;
    struct cohort_err e;
    char ps[8];
    snprintf(ps, sizeof ps, "%u", port);
    snprintf(w->where, sizeof w->where, "%.80s:%u", self->master, port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
    int g = getaddrinfo(self->master, ps, &hints, &w->addrs);
    if (g != 0)
        return cohort_internal_fail(w->c, COHORT_ERR_NETWORK,
                                    "cohort: cohort_work_open: cannot resolve %s: %s",
                                    self->master, gai_strerror(g));
    struct hs_self me = {.key = &w->key, .job = s->job_id, .step = s->step_id,
                         .rank = s->rank, .node = s->node_id};
    hs_view(s->num_tasks, s->num_nodes, self->rank_node, NULL, me.view);
    struct net_ops ops = {.max_payload = WIRE_MAX_PAYLOAD_DEFAULT};
    if (net_new(&me, &ops, &w->net, &e) < 0)
        return cohort_internal_fail(w->c, e.code, "cohort: cohort_work_open: %s", e.msg);
    struct net_target t = {.addrs = w->addrs, .port = port, .timeout_s = w->timeout_s};
    snprintf(t.name, sizeof t.name, "the work coordinator of queue '%.64s' (%s)", w->name,
             w->where);
    long long end = net_now_ms() + (long long)w->timeout_s * 1000;
    if (!(w->conn = net_dial(w->net, &t, end)))
        return cohort_internal_fail(w->c, COHORT_ERR_RESOURCE, "cohort: out of memory");
    while (w->conn->state != NET_READY) {
        struct net_event *ev;
        int n = net_poll(w->net, (int)(end > net_now_ms() ? end - net_now_ms() : 0), &ev, &e);
        for (int i = 0; i < n; i++)
            if (ev[i].what & NET_EV_FAILED)
                return cohort_internal_fail(w->c, net_dial_error(w->conn)->code,
                                            "cohort: cohort_work_open: cannot reach the work "
                                            "coordinator rank 0 started (gone?): %s",
                                            net_dial_error(w->conn)->msg);
        if (n < 0)
            return cohort_internal_fail(w->c, e.code, "cohort: cohort_work_open: %s", e.msg);
    }
    return 0;
}

static void work_free(struct cohort_work *w)
{
    if (!w)
        return;
    net_free(w->net);
    if (w->addrs)
        freeaddrinfo(w->addrs);
    if (w->coord_pid > 0)
        waitpid(w->coord_pid, NULL, WNOHANG); /* reaped if it is done */
    explicit_bzero(&w->key, sizeof w->key);
    free(w->spans);
    free(w->stale);
    free(w);
}

int cohort_work_open(struct cohort *c, const char *name, uint64_t n_items,
                     const struct cohort_work_opts *opts, struct cohort_work **out)
{
    struct cohort_self self;
    struct args a;
    struct cohort_work_opts o;
    if (out)
        *out = NULL;
    if (!c || cohort_self(c, "cohort_work_open", &self) < 0)
        return -1;
    args_mine(c, name, n_items, opts, out, &a, &o);
    if (agree(c, &a) < 0)
        return -1;
    struct envlist env;
    struct cohort_err e;
    struct cohort_work *w = calloc(1, sizeof *w);
    envlist_init(&env);
    if (!w || !(w->spans = malloc((size_t)WORK_SPAN_LEN * WORK_LEASE_MAX)) ||
        envlist_from_envp(&env, environ) < 0) {
        envlist_clear(&env);
        work_free(w);
        return cohort_internal_fail(c, COHORT_ERR_RESOURCE, "cohort: out of memory");
    }
    w->c = c;
    w->n_items = a.n_items;
    w->timeout_s = cohort_internal_timeout_s(c);
    w->journal = o.journal != NULL;
    snprintf(w->name, sizeof w->name, "%s", a.name);
    uint16_t port;
    int rc = boot_step_key(&env, &w->key, &e) < 0
                 ? cohort_internal_fail(c, e.code, "cohort: %s", e.msg)
                 : share_port(w, &self, &a, &o, &env, &port) < 0 ? -1
                 : connect_coord(w, &self, port);
    envlist_clear(&env);
    if (rc < 0) {
        work_free(w);
        return -1;
    }
    *out = w;
    return 0;
}

int cohort_work_close(struct cohort_work *w)
{
    static const char func[] = "cohort_work_close";
    if (!w)
        return -1;
    if (w->gone) { /* c's error still says why */
        work_free(w);
        return -1;
    }
    struct wire_frame f;
    int rc = work_call(w, func, WORK_CLOSE, NULL, 0, &f);
    if (rc == 0 && f.flags == WORK_ERROR)
        rc = work_refused(w, func, &f);
    else if (rc == 0 && f.flags != WORK_CLOSED)
        rc = cohort_internal_fail(w->c, COHORT_ERR_NETWORK,
                                  "cohort: %s: the work coordinator of queue '%s' answered with "
                                  "operation %u (another cohort version?)",
                                  func, w->name, (unsigned)f.flags);
    work_free(w);
    return rc;
}
