/* store_service.c - serves the step's store to the node agents (see
 * store_service.h). It reads their frames, answers them through the store,
 * and bounds what each node may have unsent. */
#include "store_service.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_kv.h"
#include "base_sys.h"
#include "store_msg.h"
#include "watch_holder.h"
#include "watch_tree.h"
#include "wire.h"

#define HOLDER_WAIT_MS 1000 /* The longest poll: the join deadline is checked this often. */
#define HOLDER_HELD_MS 1000 /* After a loss, a wait on one key this long is told of it. */
/* An agent's queries wait (in its connection, then in the kernel, then in
 * the agent) while this much of the holder's answers to it is unsent. */
#define HOLDER_OUT_MAX (16u << 20)
/* The holder keeps at most this much unsent to one node: an answer or a
 * watch's message that would take it past this closes the client it is for
 * (with a line) instead of being queued. A node's queries are read while
 * under HOLDER_OUT_MAX and an answer is at most a frame, so what can pass it
 * is the messages to the node's watchers (of changes any node makes) and the
 * answers queued after them. The holder's memory is thus its keys and values
 * and this much per node, whatever the clients watch or read. */
#define HOLDER_NODE_MAX (HOLDER_OUT_MAX + WIRE_MAX_PAYLOAD_DEFAULT)

_Static_assert(STORE_ANSWER_MAX + STORE_MSG_HEAD <= WIRE_MAX_PAYLOAD_DEFAULT,
               "every answer of the store fits in one frame");

struct store_holder {
    const struct coord_config *cfg;
    struct net *net;
    struct store_kv *kv;
    struct net_conn **agent;  /* per node */
    bool *claimed;            /* per node: whether an agent was admitted (one per node, ever) */
    uint32_t came, connected;
    uint32_t expected;        /* agents that dial the holder: every node's, or in the
                               * watch's tree (cfg->fanout > 0) those at its top */
    int64_t join_by;
    bool oom;
    char gone[128];           /* the first rank (or node) gone before its time; "": none */
    uint64_t *noted;          /* the clients told of it already */
    size_t n_noted, cap_noted;
    struct held *held;        /* the waits seen at the last look, and their keys */
    size_t n_held, cap_held;
    size_t n_last;            /* during a look: how many of held are the last look's */
    int64_t next_look;        /* when the waits are looked at next */
    bool *held_back;          /* per node: whether its frames are left unread, while
                               * HOLDER_OUT_MAX of answers to it is unsent */
    uint32_t n_held_back;
    struct watch_holder *watch; /* the step watch's part (--cohort-watch); NULL: off */
};

/* A held is a client seen waiting for a key at a look. The key is the
 * store's own copy, which lives as long as the store (store_kv_waiters). */
struct held {
    uint64_t client;
    const uint8_t *key;
};

/* Returns the kv client made of the agent's node and the agent's number
 * for the client. */
static uint64_t client_of(uint32_t node, uint32_t c)
{
    return (uint64_t)node << 32 | c;
}

/* Sends a store message op with p to client's node; when memory runs out,
 * the holder is marked out of memory. */
static void send_agent(struct store_holder *sh, uint64_t client, enum store_msg_op op,
                       const void *p, size_t len)
{
    struct net_conn *c = sh->agent[client >> 32];
    if (c && store_msg_send(c, UINT32_MAX, (uint16_t)op, (uint32_t)client, p, len, NULL, 0) < 0)
        sh->oom = true;
}

/* Sends the store's answers and watch messages, each to its client's node,
 * unless one would take what is unsent to the node past HOLDER_NODE_MAX:
 * then it closes the client with a line and returns 1 to tell the store.
 * Returns 0 when sent, or -1 when out of memory. */
static int reply(void *ctx, uint64_t client, const uint8_t *p, size_t len)
{
    struct store_holder *sh = ctx;
    struct net_conn *c = sh->agent[client >> 32];
    size_t unsent = c ? c->c.out_len : 0;
    if (unsent + STORE_MSG_HEAD + len > HOLDER_NODE_MAX) {
        char line[300];
        int l = snprintf(line, sizeof line, "the store holder has %zu bytes unsent to this "
                         "client's node, and %zu more for this client would pass its %u MiB "
                         "(the node's clients watch keys that change faster than the node "
                         "takes the messages, or read too slowly)", unsent, len, HOLDER_NODE_MAX >> 20);
        send_agent(sh, client, STORE_CLOSE, line, (size_t)l);
        return sh->oom ? -1 : 1;
    }
    send_agent(sh, client, STORE_REPLY, p, len);
    return sh->oom ? -1 : 0;
}

/* Makes the store service's holder with an empty store (coord_service.h's
 * new). Returns 0, or -1 with err. */
static int service_new(const struct coord_config *cfg, void **out, struct cohort_err *err)
{
    struct store_holder *sh = calloc(1, sizeof *sh);
    *out = sh;
    if (!sh || !(sh->agent = calloc(cfg->num_nodes, sizeof *sh->agent)) ||
        !(sh->claimed = calloc(cfg->num_nodes, sizeof *sh->claimed)) ||
        !(sh->held_back = calloc(cfg->num_nodes, sizeof *sh->held_back)) ||
        store_kv_new(reply, sh, &sh->kv) != STORE_OK)
        return cohort_fail(err, "out of memory");
    if (cfg->watch_stall_s && !(sh->watch = watch_holder_new(cfg, sh->agent, err)))
        return -1;
    sh->cfg = cfg;
    sh->join_by = base_now_ms() + (int64_t)cfg->join_timeout_s * 1000;
    uint32_t first;
    sh->expected = watch_tree_kids(cfg->fanout, cfg->num_nodes, WATCH_TREE_TOP, &first);
    return 0;
}

static void service_free(void *svc)
{
    struct store_holder *sh = svc;
    if (!sh)
        return;
    store_kv_free(sh->kv);
    watch_holder_free(sh->watch);
    free(sh->noted);
    free(sh->held);
    free(sh->claimed);
    free(sh->held_back);
    free(sh->agent);
    free(sh);
}

/* Admits one agent per node of the step (coord_service.h's admit). */
static enum net_admit service_admit(void *svc, const struct hs_hello *h, bool via_unix,
                                    struct cohort_err *why)
{
    struct store_holder *sh = svc;
    (void)via_unix; /* It listens on TCP alone. */
    if (!coord_config_has_rank(sh->cfg, h))
        return NET_DROP;
    if (sh->claimed[h->node]) { /* Two hellos may be proven in one round. */
        cohort_fail_code(why, COHORT_E_CONFIG,
                         "node %u has had its store agent already", h->node);
        return NET_REFUSE;
    }
    sh->claimed[h->node] = true;
    return NET_ADMIT;
}

/* Returns whether client was told of sh->gone, and marks it told. */
static bool told(struct store_holder *sh, uint64_t client)
{
    for (size_t i = 0; i < sh->n_noted; i++)
        if (sh->noted[i] == client)
            return true;
    if (base_grow((void **)&sh->noted, &sh->cap_noted, sh->n_noted + 1, sizeof *sh->noted) < 0)
        return false;
    sh->noted[sh->n_noted++] = client;
    return false;
}

/* Looks at one waiting client after a loss. A client that still waits for
 * the key it waited for at the last look (HOLDER_HELD_MS ago) is told once,
 * in its task's stderr, which key and what is gone. Keys that are merely
 * late (set within the second) are never named. */
static void look_at(void *ctx, uint64_t client, const uint8_t *key, size_t len)
{
    struct store_holder *sh = ctx;
    bool again = false;
    for (size_t i = 0; i < sh->n_last && !again; i++)
        again = sh->held[i].client == client && sh->held[i].key == key;
    /* The new look's list follows the old one's. */
    if (base_grow((void **)&sh->held, &sh->cap_held, sh->n_held + 1, sizeof *sh->held) < 0)
        return;
    sh->held[sh->n_held++] = (struct held){client, key};
    if (!again || told(sh, client))
        return;
    char line[COHORT_ERR_LEN + 300];
    int k = (int)(len > 200 ? 200 : len);
    int l = snprintf(line, sizeof line, "cohort: store: %s; this rank has waited over %d s "
                     "for key '%.*s', which may never come: PyTorch ends the wait at its "
                     "timeout", sh->gone, HOLDER_HELD_MS / 1000, k, (const char *)key);
    if (l > 0)
        send_agent(sh, client, STORE_NOTE, line, (size_t)l < sizeof line ? (size_t)l
                                                                         : sizeof line - 1);
}

/* Looks at the waits. The list holds the last look's waits, then this
 * one's after them; this look's then replace the last. */
static void look(struct store_holder *sh, int64_t now)
{
    size_t old = sh->n_last = sh->n_held;
    store_kv_waiters(sh->kv, look_at, sh);
    if (sh->n_held > old) /* Never from a null list (no waiter yet, nothing held). */
        memmove(sh->held, sh->held + old, (sh->n_held - old) * sizeof *sh->held);
    sh->n_held -= old;
    sh->n_last = 0;
    sh->next_look = now + HOLDER_HELD_MS;
}

/* Notes that something is gone (the first thing gone is named), and looks
 * at the waits. */
static void gone(struct store_holder *sh, const char *what)
{
    if (!sh->gone[0]) {
        snprintf(sh->gone, sizeof sh->gone, "%s", what);
        look(sh, base_now_ms());
    }
}

/* Handles one frame of node's agent. Returns 0, or -1 when it is not one
 * of the store's. */
static int request(struct store_holder *sh, uint32_t node, const struct wire_frame *f)
{
    uint32_t c;
    const uint8_t *rest;
    size_t len;
    char why[COHORT_ERR_LEN];
    if (f->type != WIRE_STORE || store_msg_get(f->payload, f->len, &c, &rest, &len) < 0)
        return -1;
    uint64_t client = client_of(node, c);
    int w = sh->watch ? watch_holder_frame(sh->watch, node, f->flags, c, rest, len,
                                           base_now_ms())
                      : 0;
    if (w != 0)
        return w < 0 ? -1 : 0;
    if (f->flags == STORE_GONE) {
        store_kv_gone(sh->kv, client);
    } else if (f->flags == STORE_ENDED && (len == 4 || len == 12) && c < sh->cfg->size &&
               watch_tree_below(sh->cfg->fanout, node, sh->cfg->rank_node[c])) {
        uint32_t st = wire_get32(rest);
        char how[64], text[128];
        store_msg_status(st, how, sizeof how);
        snprintf(text, sizeof text, "rank %u ended (%s)", c, how);
        if (st != 0)
            gone(sh, text);
    } else if (f->flags == STORE_QUERY && len >= 1 && rest[0] <= TS_OP_MAX) {
        int rc = store_kv_query(sh->kv, client, (enum ts_op)rest[0], rest + 1, len - 1, why,
                                sizeof why);
        if (rc == STORE_ENOMEM)
            sh->oom = true;
        if (rc == STORE_FAIL) {
            store_kv_gone(sh->kv, client);
            send_agent(sh, client, STORE_DROP, why, strlen(why));
        }
    } else {
        return -1;
    }
    return 0;
}

/* Sets whether node's frames are left unread now (held) or read again. */
static void hold_back(struct store_holder *sh, uint32_t node, bool held)
{
    if (sh->held_back[node] == held)
        return;
    sh->held_back[node] = held;
    if (held)
        sh->n_held_back++;
    else
        sh->n_held_back--;
}

/* Closes node's agent, which is lost, ends its clients' waits and notes
 * it gone. */
static void lost(struct store_holder *sh, uint32_t node)
{
    hold_back(sh, node, false);
    net_close(sh->net, sh->agent[node]);
    sh->agent[node] = NULL;
    sh->connected--;
    if (sh->watch)
        watch_holder_closed(sh->watch, node, base_now_ms());
    store_kv_gone_group(sh->kv, node); /* Its clients' waits end. */
    char text[96];
    snprintf(text, sizeof text, "the store agent of node %u is gone, its ranks with it", node);
    gone(sh, text);
}

/* Handles every whole frame node's agent sent while what is unsent to it
 * stays under HOLDER_OUT_MAX; the rest is read once it is under again. When
 * its connection closed, it handles all of them, since they are its last
 * (a departing rank's final SET, which other nodes may wait for). */
static void serve(struct store_holder *sh, struct net_conn *c, bool closed)
{
    struct wire_frame f;
    struct cohort_err e;
    int got = 0;
    uint32_t node = c->c.node;
    hold_back(sh, node, !closed && c->c.out_len >= HOLDER_OUT_MAX);
    while (!sh->held_back[node] &&
           (got = conn_next(&c->c, WIRE_MAX_PAYLOAD_DEFAULT, &f, &e)) > 0) {
        if (request(sh, node, &f) < 0) {
            got = -1;
            snprintf(e.msg, sizeof e.msg, "a frame of another kind or a malformed request");
            break;
        }
        conn_consume(&c->c, &f);
        hold_back(sh, node, !closed && c->c.out_len >= HOLDER_OUT_MAX);
    }
    if (got < 0) {
        fprintf(stderr, "cohort: store holder: the agent of node %u sent what is not a "
                        "request (%s): its connection is closed\n", node, e.msg);
        lost(sh, node);
    }
}

/* Reads again the nodes held back whose unsent answers are under
 * HOLDER_OUT_MAX once written as far as their sockets take them now. The
 * loop calls it after each round and before each poll: its own write
 * (net_poll writes what is queued before it waits) can bring a node under
 * with no event to follow when its frames are read already, and this write
 * leaves it only what the agent takes between the two. */
static void resume(struct store_holder *sh)
{
    for (uint32_t node = 0; sh->n_held_back && node < sh->cfg->num_nodes; node++) {
        struct net_conn *c = sh->agent[node];
        if (!sh->held_back[node] || (c->c.out_len && conn_flush(&c->c) < 0))
            continue; /* A peer is gone: its close is the loop's next event. */
        if (c->c.out_len < HOLDER_OUT_MAX)
            serve(sh, c, false);
    }
}

/* Handles one round's events: agents that joined, then frames and closes. */
static void on_events(struct store_holder *sh, struct net_event *ev, int n)
{
    for (int i = 0; i < n; i++)
        if (ev[i].what & NET_EV_JOINED) {
            sh->agent[ev[i].c->c.node] = ev[i].c;
            if (sh->watch)
                watch_holder_joined(sh->watch, ev[i].c->c.node, base_now_ms());
            sh->came++;
            sh->connected++;
        }
    for (int i = 0; i < n; i++) {
        struct net_conn *c = ev[i].c;
        if (c->state != NET_READY || sh->agent[c->c.node] != c)
            continue;
        if (sh->watch && (ev[i].what & NET_EV_DATA))
            watch_holder_heard(sh->watch, c->c.node, base_now_ms());
        if (ev[i].what & (NET_EV_DATA | NET_EV_CLOSED))
            serve(sh, c, ev[i].what & NET_EV_CLOSED);
        if ((ev[i].what & NET_EV_CLOSED) && sh->agent[c->c.node] == c)
            lost(sh, c->c.node);
    }
}

/* Serves the store (coord_service.h's run) until no agent is connected and
 * every node came or the join deadline passed. Returns 0, or -1 with err
 * (out of memory, or the event loop failed). */
static int service_run(void *svc, struct net *net, struct cohort_err *err)
{
    struct store_holder *sh = svc;
    sh->net = net;
    int64_t now = base_now_ms();
    while (sh->connected || (sh->came < sh->expected && now < sh->join_by)) {
        struct net_event *ev;
        resume(sh);
        if (sh->oom)
            return cohort_fail(err, "out of memory");
        int64_t wait = sh->gone[0] ? sh->next_look - now : HOLDER_WAIT_MS;
        int64_t watch_wait = sh->watch ? watch_holder_tick(sh->watch, now) : HOLDER_WAIT_MS;
        if (watch_wait < 0)
            return cohort_fail(err, "out of memory");
        wait = watch_wait < wait ? watch_wait : wait;
        wait = wait < 0 ? 0 : wait > HOLDER_WAIT_MS ? HOLDER_WAIT_MS : wait;
        int n = net_poll(net, (int)wait, &ev, err);
        if (n < 0)
            return -1;
        if (sh->watch)
            watch_holder_woke(sh->watch, base_now_ms());
        on_events(sh, ev, n);
        if (sh->oom)
            return cohort_fail(err, "out of memory");
        now = base_now_ms();
        if (sh->gone[0] && now >= sh->next_look)
            look(sh, now);
    }
    net_flush(net, base_now_ms() + 1000);
    if (sh->cfg->verbose)
        fprintf(stderr, "cohort: store: %lld keys; %u of %u node agents came\n",
                (long long)store_kv_size(sh->kv), sh->came, sh->expected);
    return 0;
}

const struct coord_service_ops store_service_ops = {
    .name = "store", .who = "the store holder", .conns = "node agents, one connection each",
    .new = service_new, .admit = service_admit, .run = service_run, .free = service_free};
