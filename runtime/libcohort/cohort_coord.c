/* cohort_coord.c - a step's coordinator process and every rank's
 * connection to it (cohort_coord.h): started by rank 0 with its start
 * record on its standard input and a minimal environment, its port and a
 * nonce broadcast; each node's relay started by the node's first rank;
 * every rank dials its node's relay. */
#include "cohort_coord.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "boot_ops.h"
#include "cohort_internal.h"
#include "coord_start.h"
#include "envlist.h"

#ifndef COHORT_WORK_COORD_PATH
#error COHORT_WORK_COORD_PATH: where cohort-work-coord is installed (set by the build)
#endif

extern char **environ;

/* The step's half of a start record (the coordinator's or a relay's). */
static void step_half(const struct coord_link *l, const struct cohort_self *self,
                      struct coord_config *cfg)
{
    const struct cohort_step *s = self->step;
    cfg->key = l->key;
    cfg->job = s->job_id;
    cfg->step = s->step_id;
    cfg->size = s->num_tasks;
    cfg->num_nodes = s->num_nodes;
    cfg->rank_node = (uint32_t *)self->rank_node;
    cfg->join_timeout_s = (uint32_t)l->timeout_s;
    hs_view(s->num_tasks, s->num_nodes, self->rank_node, NULL, 0, cfg->view);
}

/* cfg's process started (cohort-work-coord, or COHORT_WORK_COORD's path),
 * as role; the key wiped from cfg after. */
static void start(const struct coord_link *l, const struct envlist *env,
                  struct coord_config *cfg, const char *role, pid_t *pid, uint16_t *port,
                  char *why, size_t len)
{
    const char *path = envlist_get(env, "COHORT_WORK_COORD");
    coord_start(cfg, path && *path ? path : COHORT_WORK_COORD_PATH, role, l->timeout_s, pid,
                port, why, len);
    explicit_bzero(&cfg->key, sizeof cfg->key);
}

/* Rank 0: the step's half of the start record, and the coordinator started. */
static void launch(struct coord_link *l, const struct cohort_self *self,
                   struct coord_config *cfg, const struct envlist *env, uint16_t *port,
                   char *why, size_t len)
{
    step_half(l, self, cfg);
    const char *v = envlist_get(env, "COHORT_VERBOSE");
    cfg->verbose = v && *v && strcmp(v, "0") != 0;
    start(l, env, cfg, "work coordinator", &l->pid, port, why, len);
}

/* Every rank: rank 0's port and the relays' nonce (or its failure, the
 * same line everywhere). */
static int share_port(struct coord_link *l, const struct cohort_self *self,
                      const char *func, const char *what, struct coord_config *cfg,
                      const struct envlist *env, uint16_t *port)
{
    uint8_t b[4 + RELAY_NONCE_LEN + COHORT_ERR_LEN] = {0};
    char *why = (char *)b + 4 + RELAY_NONCE_LEN;
    if (self->step->rank == 0) {
        uint16_t p;
        uint8_t nonce[AUTH_NONCE_LEN] = {0};
        struct cohort_err e;
        launch(l, self, cfg, env, &p, why, COHORT_ERR_LEN);
        if (p && auth_nonce(nonce, &e) < 0) {
            coord_end(&l->pid);
            snprintf(why, COHORT_ERR_LEN, "%s", e.msg);
            p = 0;
        }
        memcpy(b + 4, nonce, RELAY_NONCE_LEN);
        wire_put32(b, p);
    }
    if (cohort_bcast(l->c, b, sizeof b, 0) != 0)
        return -1;
    *port = (uint16_t)wire_get32(b);
    memcpy(l->nonce, b + 4, RELAY_NONCE_LEN);
    b[sizeof b - 1] = 0;
    if (*port == 0)
        return cohort_internal_fail(l->c, COHORT_ERR_CONFIG, "cohort: %s: %s: %s", func, what,
                                    why);
    return 0;
}

/* The node's first rank: its relay started (why, when it could not be). */
static void start_relay(struct coord_link *l, const struct cohort_self *self,
                        const struct envlist *env, uint16_t port, char *why, size_t len)
{
    struct coord_config cfg = {.kind = COORD_RELAY, .port = port,
                               .node = self->step->node_id};
    step_half(l, self, &cfg);
    snprintf(cfg.host, sizeof cfg.host, "%s", self->master);
    coord_relay_name(l->nonce, cfg.node, cfg.name);
    uint16_t ok;
    start(l, env, &cfg, "node relay", &l->relay_pid, &ok, why, len);
}

/* Every rank: each node's relay started by its first rank; a relay that
 * could not start fails every rank at once with the line of the first
 * such node's first rank (a second collective, only then). */
static int start_relays(struct coord_link *l, const struct cohort_self *self,
                        const char *func, const char *what, const struct envlist *env,
                        uint16_t port)
{
    const struct cohort_step *s = self->step;
    uint32_t first = 0;
    while (self->rank_node[first] != s->node_id)
        first++;
    char why[COHORT_ERR_LEN] = "";
    if (first == s->rank)
        start_relay(l, self, env, port, why, sizeof why);
    uint8_t failed = why[0] != 0, *all;
    if (coord_gather(l->c, &failed, 1, &all) < 0)
        return -1;
    uint32_t r = 0;
    while (r < s->num_tasks && !all[r])
        r++;
    free(all);
    if (r == s->num_tasks)
        return 0;
    if (l->relay_pid > 0) /* nobody will use it, nor the coordinator */
        coord_end(&l->relay_pid);
    if (l->pid > 0)
        coord_end(&l->pid);
    if (cohort_bcast(l->c, why, sizeof why, (int)r) != 0)
        return -1;
    why[sizeof why - 1] = 0;
    return cohort_internal_fail(l->c, COHORT_ERR_CONFIG, "cohort: %s: %s: %s", func, what, why);
}

/* Every rank: its authenticated connection to its node's relay. */
static int connect_coord(struct coord_link *l, const struct cohort_self *self,
                         const char *func, const char *what, uint16_t port)
{
    const struct cohort_step *s = self->step;
    struct cohort_err e;
    snprintf(l->where, sizeof l->where, "%.80s:%u", self->master, port);
    struct hs_self me = {.key = &l->key, .job = s->job_id, .step = s->step_id,
                         .rank = s->rank, .node = s->node_id};
    hs_view(s->num_tasks, s->num_nodes, self->rank_node, NULL, 0, me.view);
    struct net_ops ops = {.max_payload = WIRE_MAX_PAYLOAD_DEFAULT};
    if (net_new(&me, &ops, &l->net, &e) < 0)
        return cohort_internal_fail(l->c, e.code, "cohort: %s: %s", func, e.msg);
    struct net_target t = {.is_unix = true, .timeout_s = l->timeout_s, .role = "node relay",
                           .listening = true}; /* every relay listened before the gather */
    char name[COORD_NAME_MAX + 1];
    coord_relay_name(l->nonce, s->node_id, name);
    t.ua_len = coord_relay_addr(name, &t.ua);
    snprintf(t.name, sizeof t.name, "this node's relay to the coordinator of %.60s (%.90s)",
             what, l->where);
    long long end = net_now_ms() + (long long)l->timeout_s * 1000;
    if (!(l->conn = net_dial(l->net, &t, end)))
        return cohort_internal_fail(l->c, COHORT_ERR_RESOURCE, "cohort: out of memory");
    while (l->conn->state != NET_READY) {
        struct net_event *ev;
        int n = net_poll(l->net, (int)(end > net_now_ms() ? end - net_now_ms() : 0), &ev, &e);
        for (int i = 0; i < n; i++)
            if (ev[i].what & NET_EV_FAILED)
                return cohort_internal_fail(l->c, net_dial_error(l->conn)->code,
                                            "cohort: %s: cannot reach this node's relay "
                                            "(gone?): %s",
                                            func, net_dial_error(l->conn)->msg);
        if (n < 0)
            return cohort_internal_fail(l->c, e.code, "cohort: %s: %s", func, e.msg);
    }
    struct ucred cred;
    socklen_t cl = sizeof cred;
    if (getsockopt(l->conn->c.fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0)
        l->relay_peer = cred.pid;
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
    int rc = auth_step_key(&env, &l->key, &e) < 0
                 ? cohort_internal_fail(c, e.code, "cohort: %s", e.msg)
                 : share_port(l, &self, func, what, cfg, &env, &port) < 0 ? -1
                 : start_relays(l, &self, func, what, &env, port) < 0 ? -1
                 : connect_coord(l, &self, func, what, port);
    envlist_clear(&env);
    return rc;
}

int coord_link_next(struct coord_link *l, struct wire_frame *f, struct cohort_err *err)
{
    int got;
    while ((got = conn_next(&l->conn->c, WIRE_MAX_PAYLOAD_DEFAULT, f, err)) > 0 &&
           f->type == WIRE_RELAY && f->flags == RELAY_GONE && f->rank == UINT32_MAX) {
        l->coord_closed = true;
        conn_consume(&l->conn->c, f);
    }
    return got;
}

void coord_link_gone(const struct coord_link *l, const char *what, char *buf, size_t len)
{
    if (l->coord_closed)
        snprintf(buf, len, "the %s (%s) is gone (killed, or its node failed)", what, l->where);
    else
        snprintf(buf, len, "this node's relay to the %s (%s, relay pid %d) is gone (killed?)",
                 what, l->where, (int)l->relay_peer);
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
    if (l->pid > 0)
        waitpid(l->pid, NULL, WNOHANG); /* reaped if it is done */
    if (l->relay_pid > 0)
        waitpid(l->relay_pid, NULL, WNOHANG);
    explicit_bzero(&l->key, sizeof l->key);
}
