/* cohort_coord.c - a step's coordinator process and every rank's
 * connection to it (cohort_coord.h): started by rank 0 with its start
 * record on its standard input and a minimal environment, its port and a
 * nonce broadcast; each node's relay started by the node's first rank
 * (or asked of the node's relay process, host.h); every rank dials its
 * node's relay. */
#include "cohort_coord.h"

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
 * as role (addr: where a relay is reached, or NULL); the key wiped from
 * cfg after. */
static void start(const struct coord_link *l, const struct envlist *env,
                  struct coord_config *cfg, const char *role, pid_t *pid, uint16_t *port,
                  char addr[COORD_ADDR_LEN], char *why, size_t len)
{
    const char *path = envlist_get(env, "COHORT_WORK_COORD");
    path = path && *path ? path : COHORT_WORK_COORD_PATH;
    if (cfg->kind == COORD_RELAY) /* the node's relay process, when one serves the step */
        coord_start_relay(cfg, path, l->timeout_s, pid, port, addr, why, len);
    else
        coord_start(cfg, path, role, l->timeout_s, pid, port, addr, why, len);
    explicit_bzero(&cfg->key, sizeof cfg->key);
}

/* COHORT_RELAY_FANOUT: relays below the coordinator and below each relay
 * (rank 0's, given to every rank). 0, or -1 with why. */
static int relay_fanout(const struct envlist *env, uint32_t *out, char *why, size_t len)
{
    const char *v = envlist_get(env, "COHORT_RELAY_FANOUT");
    uint32_t n;
    struct cohort_err e;
    *out = COORD_DEFAULT_FANOUT;
    if (!v || !*v)
        return 0;
    if (parse_u32("COHORT_RELAY_FANOUT", v, &n, &e) < 0 || n < 1 || n > COORD_MAX_FANOUT) {
        snprintf(why, len, "COHORT_RELAY_FANOUT='%.40s' is not a number from 1 to %u: give "
                 "one, or unset it for the default (%u)", v, COORD_MAX_FANOUT,
                 COORD_DEFAULT_FANOUT);
        return -1;
    }
    *out = n;
    return 0;
}

/* Rank 0: the step's half of the start record, and the coordinator started. */
static void launch(struct coord_link *l, const struct cohort_self *self,
                   struct coord_config *cfg, const struct envlist *env, uint16_t *port,
                   char *why, size_t len)
{
    *port = 0;
    if (relay_fanout(env, &cfg->fanout, why, len) < 0)
        return;
    step_half(l, self, cfg);
    const char *v = envlist_get(env, "COHORT_VERBOSE");
    cfg->verbose = v && *v && strcmp(v, "0") != 0;
    start(l, env, cfg, "work coordinator", &l->pid, port, NULL, why, len);
}

/* Every rank: rank 0's port, the relays' nonce and fanout (or its
 * failure, the same line everywhere). */
static int share_port(struct coord_link *l, const struct cohort_self *self,
                      const char *func, const char *what, struct coord_config *cfg,
                      const struct envlist *env, uint16_t *port)
{
    uint8_t b[8 + RELAY_NONCE_LEN + COHORT_ERR_LEN] = {0};
    char *why = (char *)b + 8 + RELAY_NONCE_LEN;
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
        memcpy(b + 8, nonce, RELAY_NONCE_LEN);
        wire_put32(b, p);
        wire_put32(b + 4, cfg->fanout);
    }
    if (cohort_bcast(l->c, b, sizeof b, 0) != 0)
        return -1;
    *port = (uint16_t)wire_get32(b);
    l->fanout = wire_get32(b + 4);
    memcpy(l->nonce, b + 8, RELAY_NONCE_LEN);
    b[sizeof b - 1] = 0;
    if (*port == 0)
        return cohort_internal_fail(l->c, COHORT_ERR_CONFIG, "cohort: %s: %s: %s", func, what,
                                    why);
    return 0;
}

/* The node's first rank: its relay started, dialing host:port (the
 * coordinator's, or the relay's above); its block for the others: 1, the
 * port the relays below dial and its address, or 0 and why it could not
 * start. */
static uint32_t start_relay(struct coord_link *l, const struct cohort_self *self,
                            const struct envlist *env, const char *host, uint16_t port,
                            uint8_t *block, size_t cap)
{
    struct coord_config cfg = {.kind = COORD_RELAY, .port = port, .fanout = l->fanout,
                               .node = self->step->node_id};
    step_half(l, self, &cfg);
    snprintf(cfg.host, sizeof cfg.host, "%.255s", host);
    coord_relay_name(l->nonce, cfg.node, cfg.name);
    char addr[COORD_ADDR_LEN], why[COHORT_ERR_LEN] = "";
    uint16_t at;
    start(l, env, &cfg, "node relay", &l->relay_pid, &at, addr, why, sizeof why);
    block[0] = at != 0;
    if (!at)
        return 1 + (uint32_t)snprintf((char *)block + 1, cap - 1, "%s", why);
    wire_put32(block + 1, at);
    return 5 + (uint32_t)snprintf((char *)block + 5, cap - 5, "%s", addr);
}

/* A failed start: the relay and the coordinator this rank started are
 * ended (nobody will use them), and the failure recorded with line. */
static int start_failed(struct coord_link *l, const char *func, const char *what,
                        const char *line)
{
    if (l->relay_pid > 0)
        coord_end(&l->relay_pid);
    if (l->pid > 0)
        coord_end(&l->pid);
    if (!line)
        return -1; /* the gather failed: its line is c's error already */
    return cohort_internal_fail(l->c, COHORT_ERR_CONFIG, "cohort: %s: %s: %s", func, what, line);
}

/* One level of the relays' tree: the first rank of each of its nodes
 * starts the node's relay; every rank learns where its node's relay dials
 * (its parent's port in *port, its address in host) or fails at once with
 * the line of the first node that could not start one. */
static int start_level(struct coord_link *l, const struct cohort_self *self,
                       const char *func, const char *what, const struct envlist *env,
                       uint32_t level, char *host, size_t host_len, uint16_t *port)
{
    const struct cohort_step *s = self->step;
    struct coord_config tree = {.fanout = l->fanout, .num_nodes = s->num_nodes};
    uint32_t first = 0;
    while (self->rank_node[first] != s->node_id)
        first++;
    uint8_t block[8 + COHORT_ERR_LEN];
    uint32_t len = 0, n;
    if (first == s->rank && coord_relay_depth(&tree, s->node_id) == level)
        len = start_relay(l, self, env, host, *port, block, sizeof block);
    uint8_t *down;
    if (cohort_self_gather(l->c, len ? block : NULL, len, &down, &n) < 0)
        return start_failed(l, func, what, NULL);
    uint32_t up = coord_relay_up(&tree, s->node_id);
    char line[COHORT_ERR_LEN] = "";
    for (uint32_t off = 0; !line[0] && n - off >= 8;) {
        uint32_t r = wire_get32(down + off), k = wire_get32(down + off + 4);
        const char *b = (const char *)down + off + 8;
        if (k < 1 || k > n - off - 8 || r >= s->num_tasks)
            snprintf(line, sizeof line, "the relays' start gave rank %u a malformed block", r);
        else if (!b[0] && k == 1)
            snprintf(line, sizeof line, "the node relay of rank %u's node did not start", r);
        else if (!b[0])
            snprintf(line, sizeof line, "%.*s", (int)k - 1, b + 1);
        else if (self->rank_node[r] == up && k >= 5) {
            *port = (uint16_t)wire_get32((const uint8_t *)b + 1);
            snprintf(host, host_len, "%.*s", (int)k - 5, b + 5);
        }
        off += 8 + k;
    }
    free(down);
    return line[0] ? start_failed(l, func, what, line) : 0;
}

/* Every rank: the relays started, level by level of their tree (one level
 * up to the fanout's nodes, COHORT_RELAY_FANOUT), each dialing the one
 * above it or, at the top, the coordinator. */
static int start_relays(struct coord_link *l, const struct cohort_self *self,
                        const char *func, const char *what, const struct envlist *env,
                        uint16_t port)
{
    struct coord_config tree = {.fanout = l->fanout, .num_nodes = self->step->num_nodes};
    uint32_t levels = coord_relay_levels(&tree);
    char host[256];
    snprintf(host, sizeof host, "%s", self->master);
    for (uint32_t level = 0; level < levels; level++)
        if (start_level(l, self, func, what, env, level, host, sizeof host, &port) < 0)
            return -1;
    return 0;
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
    long long end = base_now_ms() + (long long)l->timeout_s * 1000;
    if (!(l->conn = net_dial_wait(l->net, &t, end, &e)))
        return cohort_internal_fail(l->c, e.code ? e.code : COHORT_ERR_RESOURCE,
                                    "cohort: %s: cannot reach this node's relay (gone?): %s",
                                    func, e.msg);
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
    if (l->conn->closed) /* a failed write closed it: what the relay said last is read still */
        conn_fill(&l->conn->c, WIRE_MAX_PAYLOAD_DEFAULT);
    while ((got = conn_next(&l->conn->c, WIRE_MAX_PAYLOAD_DEFAULT, f, err)) > 0 &&
           f->type == WIRE_RELAY && f->flags == RELAY_GONE && f->rank == UINT32_MAX) {
        l->coord_closed = true;
        l->gone_node = f->len == 4 ? wire_get32(f->payload) : UINT32_MAX;
        conn_consume(&l->conn->c, f);
    }
    return got;
}

bool coord_link_over(const struct coord_link *l)
{
    return l->conn->closed || l->coord_closed;
}

void coord_link_gone(const struct coord_link *l, const char *what, char *buf, size_t len)
{
    if (l->coord_closed && l->gone_node != UINT32_MAX)
        snprintf(buf, len, "the relay of node %u, on the way to the %s (%s), is gone (killed, "
                 "or its node failed)", l->gone_node, what, l->where);
    else if (l->coord_closed)
        snprintf(buf, len, "the %s (%s) is gone (killed, or its node failed)", what, l->where);
    else
        snprintf(buf, len, "this node's relay to the %s (%s, relay pid %d) is gone (killed?)",
                 what, l->where, (int)l->relay_peer);
}

int coord_link_wait(struct coord_link *l, long long until_ms, struct cohort_err *err)
{
    long long left = until_ms - base_now_ms();
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
