/* cohort_coord.c - a step's coordinator process and every rank's
 * connection to it (cohort_coord.h): started by rank 0 with its start
 * record on its standard input and a minimal environment, its port
 * broadcast, dialed by every rank. */
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
    hs_view(s->num_tasks, s->num_nodes, self->rank_node, NULL, 0, cfg->view);
    const char *path = envlist_get(env, "COHORT_WORK_COORD");
    coord_start(cfg, path && *path ? path : COHORT_WORK_COORD_PATH, "work coordinator",
                l->timeout_s, &l->pid, port, why, len);
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
    hs_view(s->num_tasks, s->num_nodes, self->rank_node, NULL, 0, me.view);
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
    int rc = auth_step_key(&env, &l->key, &e) < 0
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
