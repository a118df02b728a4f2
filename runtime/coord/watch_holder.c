/* watch_holder.c - the store holder's part of the step watch (see
 * watch_holder.h): the agents' reports into the watch, beats out, and the
 * verdict to every agent once. */
#include "watch_holder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base_sys.h"
#include "store_msg.h"
#include "watch.h"
#include "watch_text.h"
#include "watch_tree.h"

/* The longest the holder goes without looking at the watch. Reports make
 * nothing due sooner than a stall (a second at least), except a death (its
 * settle window) and a closed link, which are looked at as they come. */
#define WATCH_LOOK_MS 100

struct watch_holder {
    const struct coord_config *cfg;
    struct net_conn **agent;   /* the holder's, per node */
    struct watch *w;
    char **host;               /* per node: its host name, as its agent said */
    char **gpu;                /* per rank: its GPU, as its node's agent said; NULL: none */
    int64_t next_beat;
    int64_t over_at;           /* when the watch's end is told; 0: not asked */
    int64_t next_check;        /* when the watch is looked at next (the caller's clock) */
    int64_t wake_by;           /* when the holder's loop is to run again at the latest */
    bool verdict_sent;
    bool over;
    uint8_t *verdict;          /* the VERDICT frame's payload sent, for agents that join later */
    size_t verdict_len;
};

struct watch_holder *watch_holder_new(const struct coord_config *cfg, struct net_conn **agent,
                                      struct cohort_err *err)
{
    struct watch_holder *wh = calloc(1, sizeof *wh);
    if (wh) {
        wh->cfg = cfg;
        wh->agent = agent;
        wh->host = calloc(cfg->num_nodes, sizeof *wh->host);
        wh->gpu = calloc(cfg->size, sizeof *wh->gpu);
        wh->w = watch_new(cfg->size, cfg->num_nodes, cfg->rank_node,
                          (int64_t)cfg->watch_stall_s * 1000);
    }
    if (!wh || !wh->host || !wh->gpu || !wh->w) {
        watch_holder_free(wh);
        cohort_fail(err, "out of memory");
        return NULL;
    }
    return wh;
}

void watch_holder_free(struct watch_holder *wh)
{
    if (!wh)
        return;
    for (uint32_t i = 0; wh->host && i < wh->cfg->num_nodes; i++)
        free(wh->host[i]);
    for (uint32_t i = 0; wh->gpu && i < wh->cfg->size; i++)
        free(wh->gpu[i]);
    free(wh->host);
    free(wh->gpu);
    free(wh->verdict);
    watch_free(wh->w);
    free(wh);
}

void watch_holder_heard(struct watch_holder *wh, uint32_t node, int64_t now)
{
    watch_node_heard(wh->w, node, now);
}

void watch_holder_closed(struct watch_holder *wh, uint32_t node, int64_t now)
{
    watch_node_closed(wh->w, node, now);
    wh->next_check = now;
}

/* Sends op with the head 0 and p to node's agent, if connected. Returns
 * 0, or -1 when out of memory. */
static int send_to(struct watch_holder *wh, uint32_t node, uint16_t op, const void *p,
                   size_t len)
{
    struct net_conn *c = wh->agent[node];
    if (!c || c->state != NET_READY)
        return 0;
    return store_msg_send(c, UINT32_MAX, op, 0, p, len, NULL, 0);
}

void watch_holder_joined(struct watch_holder *wh, uint32_t node, int64_t now)
{
    watch_node_joined(wh->w, node, now);
    /* An agent that dials the holder late (its parent in the tree left, or
     * was lost) is told what the others were told. */
    if (wh->verdict)
        send_to(wh, node, STORE_VERDICT, wh->verdict, wh->verdict_len);
    if (wh->over)
        send_to(wh, node, STORE_WATCH_OVER, NULL, 0);
}

/* Reads a STORE_WATCH_NODE: node's host name and its tasks' GPUs, by local
 * id in the node's ranks' order. Returns 1, or -1 when malformed. */
static int node_said(struct watch_holder *wh, uint32_t node, const uint8_t *p, size_t len)
{
    const char *host = (const char *)p;
    size_t hl = strnlen(host, len);
    if (hl == len || hl == 0 || hl > 255)
        return -1;
    const char *gpus = host + hl + 1;
    size_t gl = strnlen(gpus, len - hl - 1);
    if (gl == len - hl - 1)
        return -1;
    if (wh->host[node])
        return 1; /* It said so before, and dials again: its parent in the tree left. */
    if (!(wh->host[node] = strdup(host)))
        return 1; /* The node is named by number instead. */
    char *copy = strdup(gpus), *save = NULL;
    char *g = copy ? strtok_r(copy, ",", &save) : NULL;
    for (uint32_t r = 0; g && r < wh->cfg->size; r++) {
        if (wh->cfg->rank_node[r] != node)
            continue;
        wh->gpu[r] = *g && strcmp(g, "-") != 0 ? strdup(g) : NULL;
        g = strtok_r(NULL, ",", &save);
    }
    free(copy);
    return 1;
}

/* Whether node n is top's own or below it in the watch's tree, so that
 * top's agent speaks for it. */
static bool below(const struct watch_holder *wh, uint32_t top, uint32_t n)
{
    return n < wh->cfg->num_nodes && watch_tree_below(wh->cfg->fanout, top, n);
}

/* Whether rank c is of node's or of a node below it. */
static bool ours(const struct watch_holder *wh, uint32_t node, uint32_t c)
{
    return c < wh->cfg->size && below(wh, node, wh->cfg->rank_node[c]);
}

/* Node p of the watch's tree left: its children that are still running
 * dial the holder now, and are watched from now as if they had joined, so
 * that one that dies before it gets there is named. */
static void kids_watched(struct watch_holder *wh, uint32_t p, int64_t now)
{
    uint32_t first, n = watch_tree_kids(wh->cfg->fanout, wh->cfg->num_nodes, p, &first);
    for (uint32_t k = first; k < first + n; k++)
        watch_node_joined(wh->w, k, now);
}

/* Reads a STORE_WATCH_LOST: node n below top was lost, as its parent saw.
 * Returns 1, or -1 when malformed. */
static int lost_said(struct watch_holder *wh, uint32_t top, uint32_t n, const uint8_t *p,
                     size_t len, int64_t now)
{
    if (len != STORE_WATCH_LOST_LEN || p[0] > 1 || n == top || !below(wh, top, n))
        return -1;
    if (wh->agent[n])
        return 1; /* It reached the holder itself since: its own link tells. */
    watch_node_lost(wh->w, n, p[0] == 1, now - (int64_t)wire_get32(p + 1), now);
    wh->next_check = now;
    return 1;
}

/* Reads a STORE_WATCH_COLL of rank c. Returns 1, or -1 when malformed. */
static int coll_said(struct watch_holder *wh, uint32_t c, const uint8_t *p, size_t len,
                     int64_t now)
{
    if (len != STORE_WATCH_COLL_LEN)
        return -1;
    uint64_t comm = wire_get64(p), started = wire_get64(p + 16),
             completed = wire_get64(p + 24);
    uint32_t nranks = wire_get32(p + 8), crank = wire_get32(p + 12);
    /* A communicator the step cannot hold (a launcher inside the tasks, as
     * torchrun under srun, whose workers outnumber the step's ranks) or
     * counts that do not add up are not the watch's to judge: ignored,
     * never a reason to drop the node. */
    if (nranks == 0 || nranks > wh->cfg->size || crank >= nranks || completed > started)
        return 1;
    watch_progress(wh->w, c, comm, nranks, crank, started, completed, p[32], now);
    return 1;
}

int watch_holder_frame(struct watch_holder *wh, uint32_t node, uint16_t op, uint32_t c,
                       const uint8_t *rest, size_t len, int64_t now)
{
    watch_node_heard(wh->w, node, now);
    switch (op) {
    case STORE_BEAT:
        return len == 0 ? 1 : -1;
    case STORE_WATCH_NODE:
        return below(wh, node, c) ? node_said(wh, c, rest, len) : -1;
    case STORE_WATCH_STOP:
        if (len != 1 || rest[0] > 1 || !ours(wh, node, c))
            return -1;
        watch_task_stopped(wh->w, c, rest[0] == 1, now);
        return 1;
    case STORE_WATCH_COLL:
        return ours(wh, node, c) ? coll_said(wh, c, rest, len, now) : -1;
    case STORE_WATCH_LOST:
        return lost_said(wh, node, c, rest, len, now);
    case STORE_WATCH_BYE: {
        if (len != 0 || !below(wh, node, c))
            return -1;
        watch_node_left(wh->w, c, now);
        kids_watched(wh, c, now);
        /* The holder's node ends its part of the step, and the holder with it:
         * every agent is told, once a death reported just before has been
         * named (the settle window). */
        int64_t death = watch_death_seen(wh->w);
        if (c == 0 && !wh->over_at)
            wh->over_at = death != INT64_MAX && now < death + WATCH_SETTLE_MS
                              ? death + WATCH_SETTLE_MS
                              : now;
        return 1;
    }
    case STORE_ENDED:
        if (len != 12 || !ours(wh, node, c))
            return 0; /* The store reads it alone. */
        if (wire_get32(rest) != 0)
            wh->next_check = now;
        watch_task_ended(wh->w, c, (int)wire_get32(rest), (int64_t)wire_get64(rest + 4), now);
        return 0; /* The store notes it too. */
    default:
        return 0;
    }
}

/* Sends v to every agent: the teller, the line and the JSON object.
 * Returns 0, or -1 when out of memory. */
static int send_verdict(struct watch_holder *wh, const struct watch_verdict *v)
{
    struct watch_names names = {.node_host = (const char *const *)wh->host,
                                .rank_gpu = (const char *const *)wh->gpu,
                                .rank_node = wh->cfg->rank_node, .n_nodes = wh->cfg->num_nodes,
                                .n_ranks = wh->cfg->size, .job = wh->cfg->job,
                                .step = wh->cfg->step, .wall_now_ms = base_wall_ms()};
    char line[1024];
    watch_line(v, &names, line, sizeof line);
    char *json = watch_json(v, &names, line);
    wh->verdict = store_msg_verdict(v->teller, line, json, &wh->verdict_len);
    int rc = wh->verdict ? 0 : -1;
    for (uint32_t n = 0; n < wh->cfg->num_nodes && rc == 0; n++)
        rc = send_to(wh, n, STORE_VERDICT, wh->verdict, wh->verdict_len);
    fprintf(stderr, "%s\n", line);
    free(json);
    return rc;
}

int64_t watch_holder_tick(struct watch_holder *wh, int64_t now)
{
    if (now >= wh->next_beat) {
        for (uint32_t n = 0; n < wh->cfg->num_nodes; n++)
            if (send_to(wh, n, STORE_BEAT, NULL, 0) < 0)
                return -1;
        wh->next_beat = now + WATCH_BEAT_MS;
    }
    /* The watch is looked at when it said something may be due, a link
     * closed or a death came, and at least every WATCH_LOOK_MS: a look walks
     * every communicator, and the loop turns once per round of frames. */
    struct watch_verdict v;
    if (now >= wh->next_check) {
        if (!wh->verdict_sent && !wh->over && watch_check(wh->w, now, &v) == 1) {
            wh->verdict_sent = true;
            if (send_verdict(wh, &v) < 0)
                return -1;
        }
        int64_t due = watch_next(wh->w, now);
        wh->next_check = due < now + WATCH_LOOK_MS ? due : now + WATCH_LOOK_MS;
    }
    if (wh->over_at && !wh->over && now >= wh->over_at) {
        wh->over = true;
        for (uint32_t n = 0; n < wh->cfg->num_nodes; n++)
            if (send_to(wh, n, STORE_WATCH_OVER, NULL, 0) < 0)
                return -1;
    }
    int64_t next = wh->next_check;
    if (next > wh->next_beat)
        next = wh->next_beat;
    if (wh->over_at && !wh->over && next > wh->over_at)
        next = wh->over_at;
    wh->wake_by = next > now ? next : now;
    return next > now ? next - now : 0;
}

void watch_holder_woke(struct watch_holder *wh, int64_t now)
{
    /* A loop that ran WATCH_PAUSE_MS later than it asked was stopped (a
     * suspended step stops the holder and the agents alike): that time is
     * no one's silence. */
    if (wh->wake_by && now - wh->wake_by > WATCH_PAUSE_MS)
        watch_pause(wh->w, now - wh->wake_by);
    wh->wake_by = 0;
}
