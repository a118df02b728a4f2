/* streams_service.c - the stream coordinator's service (streams_service.h).
 * It takes the workers' requests in, sends the placement's actions and the
 * answers out, keeps the leases on the clock, and decides when to stop. */
#include "streams_service.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peers.h"
#include "place.h"
#include "streams_msg.h"
#include "wire.h"
#include "work_msg.h"

#define STREAMS_WAIT_MS 1000 /* The longest poll: joins and leases are checked this often. */

/* An sworker is what the coordinator knows of one worker. */
struct sworker {
    bool on;                /* connected (through its node's relay, peers.h) */
    bool ever;              /* it connected once */
    bool closed;            /* it closed the set (not lost) */
};

struct streams_service {
    struct peers *peers;    /* the ranks, through the node relays */
    const struct coord_config *cfg;
    struct peers_ops ops;   /* this file's: requests, workers joining and lost, at now */
    int64_t now;            /* the time of this round's events */
    struct place *p;
    struct sworker *w;
    uint32_t came, connected, lost;
    int64_t join_by;
    bool oom;
};

/* The peers' callbacks (peers.h) are defined below. */
static void on_joined(void *ctx, uint32_t r);
static int on_frame(void *ctx, uint32_t r, const struct wire_frame *f);
static void on_lost(void *ctx, uint32_t r);

/* Makes the streams service (coord_service.h's new): the placement, and the
 * ranks through the relays. Returns 0, or -1 with err. */
static int service_new(const struct coord_config *cfg, void **out, struct cohort_err *err)
{
    struct streams_service *sc = calloc(1, sizeof *sc);
    *out = sc;
    if (!sc || !(sc->w = calloc(cfg->size, sizeof *sc->w)))
        return cohort_fail(err, "out of memory");
    sc->cfg = cfg;
    sc->ops = (struct peers_ops){.ctx = sc, .joined = on_joined, .frame = on_frame,
                                 .lost = on_lost};
    if (peers_new(cfg, &sc->ops, &sc->peers, err) < 0)
        return -1;
    struct place_opts o = {.epsilon = cfg->epsilon,
                           .lease_ms = (int64_t)cfg->lease_timeout_s * 1000,
                           .shed_after_ms = cfg->shed_after_ms};
    if (place_new(cfg->size, &o, &sc->p, err) != PLACE_OK)
        return -1;
    sc->join_by = base_now_ms() +
                  (int64_t)(coord_relay_levels(cfg) + 1) * cfg->join_timeout_s * 1000;
    return 0;
}

/* Frees the streams service (coord_service.h's free); svc may be NULL. */
static void service_free(void *svc)
{
    struct streams_service *sc = svc;
    if (!sc)
        return;
    place_free(sc->p);
    peers_free(sc->peers);
    free(sc->w);
    free(sc);
}

/* Sends op with p to worker r; when that fails, sc is out of memory. */
static void send_to(struct streams_service *sc, uint32_t r, enum streams_op op, const void *p,
                    uint32_t len)
{
    if (peers_send(sc->peers, r, (uint16_t)op, p, len) < 0)
        sc->oom = true;
}

/* Sends the placement's actions, each to its worker. */
static void tell(struct streams_service *sc)
{
    const struct place_act *a;
    size_t n = place_actions(sc->p, &a);
    for (size_t i = 0; i < n; i++) {
        uint8_t b[STREAMS_MSG_MAX];
        uint32_t len = streams_msg_put(b, a[i].epoch, a[i].key);
        send_to(sc, a[i].worker, a[i].type == PLACE_ASSIGN ? STREAMS_ASSIGN : STREAMS_REVOKE, b,
                len);
    }
}

/* Sends the placement's actions, then the answer to a request the
 * placement took with rc (e's message when it failed). */
static void answer(struct streams_service *sc, uint32_t r, int rc, const struct cohort_err *e)
{
    tell(sc);
    if (rc == PLACE_ENOMEM)
        sc->oom = true;
    if (rc < 0) {
        send_to(sc, r, STREAMS_ERROR, e->msg, (uint32_t)strlen(e->msg));
        return;
    }
    uint8_t b = rc == PLACE_NOOP;
    send_to(sc, r, STREAMS_OK, &b, 1);
}

/* Takes worker r off (peers.h's lost); its streams go to others. */
static void on_lost(void *ctx, uint32_t r)
{
    struct streams_service *sc = ctx;
    struct sworker *w = &sc->w[r];
    struct cohort_err e;
    if (!w->on)
        return;
    w->on = false;
    sc->connected--;
    sc->lost += !w->closed;
    if (place_lost(sc->p, r, &e) == PLACE_ENOMEM)
        sc->oom = true;
    tell(sc);
}

/* Sends worker r the placement's totals. */
static void totals(struct streams_service *sc, uint32_t r)
{
    struct place_status st;
    place_status(sc->p, &st);
    uint64_t v[5] = {st.streams, st.moving, st.unplaced, st.moves, st.workers};
    uint8_t b[STREAMS_TOTALS_LEN];
    for (int i = 0; i < 5; i++)
        wire_put64(b + 8 * i, v[i]);
    send_to(sc, r, STREAMS_TOTALS, b, sizeof b);
}

/* Handles one request of worker r. Returns 0, or -1 when the frame was not
 * a request (then r is dropped). */
static int request(struct streams_service *sc, uint32_t r, const struct wire_frame *f, int64_t now)
{
    struct cohort_err e = {0};
    uint64_t head = 0;
    char key[STREAMS_KEY_MAX + 1];
    int with_key = f->flags == STREAMS_ADD || f->flags == STREAMS_REMOVE ||
                   f->flags == STREAMS_RELEASE || f->flags == STREAMS_REPORT;
    bool bare = f->flags == STREAMS_PING || f->flags == STREAMS_CLOSE ||
                f->flags == STREAMS_STATUS;
    if (bare ? f->len != 0 : streams_msg_get(f->payload, f->len, with_key, &head, key, &e) < 0)
        return -1;
    int rc = place_renew(sc->p, r, now, &e);
    if (rc == PLACE_ENOMEM)
        sc->oom = true;
    tell(sc);
    switch (f->flags) {
    case STREAMS_JOIN: rc = place_join(sc->p, r, streams_f64(head), now, &e); break;
    case STREAMS_ADD: rc = place_add(sc->p, key, streams_f64(head), &e); break;
    case STREAMS_REMOVE: rc = place_remove(sc->p, key, &e); break;
    case STREAMS_RELEASE: rc = place_release(sc->p, r, key, head, &e); break;
    case STREAMS_REPORT: rc = place_report(sc->p, r, key, streams_f64(head), &e); break;
    case STREAMS_PING: break;
    case STREAMS_STATUS:
        totals(sc, r);
        return 0;
    case STREAMS_CLOSE:
        sc->w[r].closed = true;
        if (place_lost(sc->p, r, &e) == PLACE_ENOMEM)
            sc->oom = true;
        tell(sc);
        send_to(sc, r, STREAMS_CLOSED, NULL, 0);
        return 0;
    default:
        return -1;
    }
    answer(sc, r, rc, &e);
    return 0;
}

/* Handles a frame of worker r (peers.h's frame). Returns 0, or -1 when it
 * is not a request, which drops the worker. */
static int on_frame(void *ctx, uint32_t r, const struct wire_frame *f)
{
    struct streams_service *sc = ctx;
    if (request(sc, r, f, sc->now) == 0)
        return 0;
    fprintf(stderr, "cohort: stream coordinator: rank %u sent what is not a request (a "
                    "malformed request): its connection is closed and its streams go to "
                    "others\n", r);
    return -1;
}

/* Takes worker r on (peers.h's joined). */
static void on_joined(void *ctx, uint32_t r)
{
    struct streams_service *sc = ctx;
    struct sworker *w = &sc->w[r];
    sc->came += !w->ever;
    w->ever = true;
    w->closed = false;
    w->on = true;
    sc->connected++;
}

/* Runs the streams service (coord_service.h's run). Returns 0 when every
 * worker closed the set, 1 when some were lost, or -1 with err when out of
 * memory. */
static int service_run(void *svc, struct net *net, struct cohort_err *err)
{
    struct streams_service *sc = svc;
    peers_attach(sc->peers, net);
    int64_t now = base_now_ms(), next = now;
    while (sc->connected || (sc->came < sc->cfg->size && now < sc->join_by)) {
        int64_t wait = next - now;
        wait = wait < 0 ? 0 : wait > STREAMS_WAIT_MS ? STREAMS_WAIT_MS : wait;
        struct net_event *ev;
        int n = net_poll(net, (int)wait, &ev, err);
        if (n < 0)
            return -1;
        now = base_now_ms();
        sc->now = now;
        peers_events(sc->peers, ev, n);
        if (place_tick(sc->p, now, &next, err) == PLACE_ENOMEM)
            sc->oom = true;
        tell(sc);
        if (sc->oom)
            return cohort_fail(err, "out of memory");
    }
    net_flush(net, base_now_ms() + 1000);
    if (sc->cfg->verbose) {
        struct place_status st;
        place_status(sc->p, &st);
        fprintf(stderr, "cohort: streams '%s': %zu streams, %llu moves; %u of %u workers came, "
                        "%u lost\n", sc->cfg->name, st.streams, (unsigned long long)st.moves,
                sc->came, sc->cfg->size, sc->lost);
    }
    return sc->lost ? 1 : 0;
}

/* Admits each relay of the tree's top (coord_service.h's admit). */
static enum net_admit service_admit(void *svc, const struct hs_hello *h, bool via_unix,
                                    struct cohort_err *why)
{
    struct streams_service *sc = svc;
    return peers_admit(sc->peers, h, via_unix, why);
}

const struct coord_service_ops streams_service_ops = {
    .name = "stream set", .who = "the work coordinator",
    .conns = "node relays, one connection each", .new = service_new,
    .admit = service_admit, .run = service_run, .free = service_free};
