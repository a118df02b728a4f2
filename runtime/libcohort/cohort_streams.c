/* cohort_streams.c - a worker's side of a stream set (cohort_streams.h):
 * every rank's arguments compared through one allgather, the coordinator
 * and this rank's connection (cohort_coord.h), each request and its
 * answer with a deadline on the coordinator's silence, the ASSIGNs and
 * REVOKEs that arrive in between queued for cohort_streams_poll, and a
 * ping when the worker would otherwise stay silent past a third of its
 * lease. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cohort_coord.h"
#include "cohort_internal.h"
#include "cohort_streams.h"
#include "streams_msg.h"
#include "wire.h"
#include "work_msg.h"

#define NAME_MAX_LEN 128
#define DEFAULT_EPSILON 0.25
#define DEFAULT_LEASE_S 30
#define DEFAULT_SHED_S 10
#define WHY_MAX 200

struct cohort_streams {
    struct cohort *c;
    struct coord_link link;
    struct cohort_stream_event *ev; /* received, not yet polled: a ring */
    size_t ev_head, ev_len, ev_cap;
    long long last_sent;            /* ms: a ping is due a third of the lease after */
    int lease_s;
    bool gone;
    char name[NAME_MAX_LEN + 1];
};

/* ---- opening: every rank's arguments agree ----------------------------- */

struct args {
    uint8_t bad;
    uint64_t epsilon_bits;
    uint32_t lease_s, shed_s;
    char name[NAME_MAX_LEN + 1];
    char why[WHY_MAX];
};
#define ARGS_LEN (1 + 8 + 4 + 4 + NAME_MAX_LEN + 1 + WHY_MAX)

static void args_put(const struct args *a, uint8_t *p)
{
    p[0] = a->bad;
    wire_put64(p + 1, a->epsilon_bits);
    wire_put32(p + 9, a->lease_s);
    wire_put32(p + 13, a->shed_s);
    memcpy(p + 17, a->name, NAME_MAX_LEN + 1);
    memcpy(p + 17 + NAME_MAX_LEN + 1, a->why, WHY_MAX);
}

static void args_get(const uint8_t *p, struct args *a)
{
    a->bad = p[0];
    a->epsilon_bits = wire_get64(p + 1);
    a->lease_s = wire_get32(p + 9);
    a->shed_s = wire_get32(p + 13);
    memcpy(a->name, p + 17, NAME_MAX_LEN + 1);
    a->name[NAME_MAX_LEN] = 0;
    memcpy(a->why, p + 17 + NAME_MAX_LEN + 1, WHY_MAX);
    a->why[WHY_MAX - 1] = 0;
}

static void args_mine(struct cohort *c, const char *name, double capacity,
                      const struct cohort_streams_opts *opts, struct cohort_streams **s,
                      struct args *a)
{
    struct cohort_streams_opts o = {0};
    memset(a, 0, sizeof *a);
    if (cohort_internal_read_opts(c, "cohort_streams_open", "struct cohort_streams_opts", opts,
                                  sizeof o, &o, sizeof o) < 0)
        snprintf(a->why, sizeof a->why, "%s", cohort_error(c));
    else if (!s)
        snprintf(a->why, sizeof a->why, "s is NULL");
    else if (!name || !*name || strlen(name) > NAME_MAX_LEN)
        snprintf(a->why, sizeof a->why, "the set's name must have 1 to %d characters",
                 NAME_MAX_LEN);
    else if (!(capacity >= 0) || capacity > 1e6)
        snprintf(a->why, sizeof a->why, "capacity %g: give a number above 0, at most 1e6 "
                 "(0: 1.0)", capacity);
    else if (!(o.epsilon >= 0) || o.epsilon > 100)
        snprintf(a->why, sizeof a->why, "epsilon %g: give a number above 0, at most 100 "
                 "(0: %g)", o.epsilon, DEFAULT_EPSILON);
    else if (o.lease_timeout_s < 0 || o.lease_timeout_s > 86400 || o.shed_after_s < 0 ||
             o.shed_after_s > 86400)
        snprintf(a->why, sizeof a->why, "lease_timeout_s %d, shed_after_s %d: give 1 to "
                 "86400 (0: %d, %d)", o.lease_timeout_s, o.shed_after_s, DEFAULT_LEASE_S,
                 DEFAULT_SHED_S);
    a->bad = a->why[0] != 0;
    if (a->bad)
        return;
    snprintf(a->name, sizeof a->name, "%s", name);
    a->epsilon_bits = streams_f64_bits(o.epsilon > 0 ? o.epsilon : DEFAULT_EPSILON);
    a->lease_s = streams_lease_s((uint32_t)(o.lease_timeout_s ? o.lease_timeout_s
                                                              : DEFAULT_LEASE_S),
                                 (uint32_t)cohort_size(c));
    a->shed_s = (uint32_t)(o.shed_after_s ? o.shed_after_s : DEFAULT_SHED_S);
}

/* 0 when every rank's arguments are good and the same, else -1 with the
 * same line on every rank. */
static int agree(struct cohort *c, const struct args *mine)
{
    int size = cohort_size(c);
    uint8_t in[ARGS_LEN], *all;
    args_put(mine, in);
    if (coord_gather(c, in, ARGS_LEN, &all) < 0)
        return -1;
    struct args first, a;
    args_get(all, &first);
    int rc = 0;
    for (int r = 0; r < size && rc == 0; r++) {
        args_get(all + (size_t)r * ARGS_LEN, &a);
        if (a.bad)
            rc = cohort_internal_fail(c, COHORT_ERR_USAGE,
                                      "cohort: cohort_streams_open failed on rank %d: %s", r,
                                      a.why);
        else if (!first.bad && (strcmp(a.name, first.name) || a.lease_s != first.lease_s ||
                                a.shed_s != first.shed_s ||
                                a.epsilon_bits != first.epsilon_bits))
            rc = cohort_internal_fail(c, COHORT_ERR_USAGE,
                                      "cohort: cohort_streams_open: rank %d opens set '%s', "
                                      "rank 0 set '%s' (or other options): every rank must "
                                      "open the same set with the same options",
                                      r, a.name, first.name);
    }
    free(all);
    return rc;
}

/* ---- requests and events ------------------------------------------------ */

static int gone(struct cohort_streams *s, const char *func, int code, const char *why)
{
    s->gone = true;
    return cohort_internal_fail(s->c, code, "cohort: %s: the stream coordinator of set '%s' "
                                "(%s) %s", func, s->name, s->link.where, why);
}

static int queue_event(struct cohort_streams *s, const struct wire_frame *f)
{
    struct cohort_err e;
    uint64_t epoch;
    char key[STREAMS_KEY_MAX + 1];
    if (streams_msg_get(f->payload, f->len, 1, &epoch, key, &e) < 0)
        return -1;
    if (s->ev_len == s->ev_cap) {
        size_t cap = s->ev_cap ? 2 * s->ev_cap : 16;
        struct cohort_stream_event *n = malloc(cap * sizeof *n);
        if (!n)
            return -1;
        for (size_t i = 0; i < s->ev_len; i++)
            n[i] = s->ev[(s->ev_head + i) % s->ev_cap];
        free(s->ev);
        s->ev = n;
        s->ev_cap = cap;
        s->ev_head = 0;
    }
    struct cohort_stream_event *ev = &s->ev[(s->ev_head + s->ev_len++) % s->ev_cap];
    ev->type = f->flags == STREAMS_ASSIGN ? COHORT_STREAM_ASSIGN : COHORT_STREAM_REVOKE;
    ev->epoch = epoch;
    snprintf(ev->key, sizeof ev->key, "%s", key);
    return 0;
}

/* Takes every whole frame: events are queued; the first answer is left
 * in *f (1). 0 when no answer is there, -1 when gone or tampered with. */
static int take_frames(struct cohort_streams *s, const char *func, struct wire_frame *f)
{
    struct net_conn *conn = s->link.conn;
    struct cohort_err e;
    int got;
    while ((got = coord_link_next(&s->link, f, &e)) > 0 &&
           f->type == WIRE_WORK && (f->flags == STREAMS_ASSIGN || f->flags == STREAMS_REVOKE)) {
        if (queue_event(s, f) < 0)
            return gone(s, func, COHORT_ERR_NETWORK, "sent a malformed event (another cohort "
                        "version?), or memory is short");
        conn_consume(&conn->c, f);
    }
    if (got > 0 && f->type == WIRE_WORK)
        return 1;
    if (got != 0)
        return gone(s, func, COHORT_ERR_AUTH, got > 0 ? "sent a frame of another kind"
                                                      : "sent what failed its check");
    if (coord_link_over(&s->link)) {
        char what[NAME_MAX_LEN + 40], who[COHORT_ERR_LEN / 2];
        s->gone = true;
        snprintf(what, sizeof what, "stream coordinator of set '%s'", s->name);
        coord_link_gone(&s->link, what, who, sizeof who);
        return cohort_internal_fail(s->c, COHORT_ERR_PEER_LOST, "cohort: %s: %s", func, who);
    }
    return 0;
}

/* Waits until an answer is there (1, in *f), until_ms passes or, with
 * for_event, an event is queued (0), or the coordinator is gone (-1).
 * What has arrived by until_ms is taken in, even when it has passed. */
static int wait_answer(struct cohort_streams *s, const char *func, long long until_ms,
                       bool for_event, struct wire_frame *f)
{
    for (bool last = false;;) {
        int rc = take_frames(s, func, f);
        if (rc != 0)
            return rc;
        if ((for_event && s->ev_len) || last)
            return 0;
        last = base_now_ms() >= until_ms; /* then one look at what has come */
        struct cohort_err e;
        if (coord_link_wait(&s->link, until_ms, &e) < 0)
            return gone(s, func, e.code ? e.code : COHORT_ERR_RESOURCE, e.msg);
    }
}

/* One request and its answer: the answer's op (STREAMS_OK, whether the
 * request changed anything or not; STREAMS_CLOSED; STREAMS_TOTALS into
 * totals), or -1 with c's error set (an ERROR answer's sentence). */
static int exchange(struct cohort_streams *s, const char *func, enum streams_op op,
                    uint64_t head, const char *key, uint64_t totals[5])
{
    if (s->gone)
        return cohort_internal_fail(s->c, COHORT_ERR_USAGE, "cohort: %s: set '%s' failed "
                                    "earlier (see that call's error); close it", func, s->name);
    uint8_t b[STREAMS_MSG_MAX];
    bool bare = op == STREAMS_PING || op == STREAMS_CLOSE || op == STREAMS_STATUS;
    uint32_t len = bare ? 0 : streams_msg_put(b, head, key ? key : "");
    if (net_send(s->link.conn, WIRE_WORK, (uint16_t)op, s->link.conn->c.rank, b, len) < 0)
        return cohort_internal_fail(s->c, COHORT_ERR_RESOURCE, "cohort: %s: out of memory",
                                    func);
    s->last_sent = base_now_ms();
    struct wire_frame f;
    int rc = wait_answer(s, func, s->last_sent + (long long)s->link.timeout_s * 1000, false,
                         &f);
    if (rc == 0) {
        char why[64];
        snprintf(why, sizeof why, "did not answer within %d s (stopped, or its node hangs?)",
                 s->link.timeout_s);
        return gone(s, func, COHORT_ERR_TIMEOUT, why);
    }
    if (rc < 0)
        return -1;
    int answer = f.flags;
    if (answer == STREAMS_ERROR) {
        int n = f.len < COHORT_ERR_LEN - 1 ? (int)f.len : COHORT_ERR_LEN - 1;
        cohort_internal_fail(s->c, COHORT_ERR_USAGE, "cohort: %s: set '%s': %.*s", func,
                             s->name, n, (const char *)f.payload);
    } else if ((answer == STREAMS_OK && f.len == 1) || (answer == STREAMS_CLOSED && !f.len)) {
        /* done (a no-op is no error for a caller: an add of a stream the
         * set has, a remove of one it has not, a late release) */
    } else if (answer == STREAMS_TOTALS && totals && f.len == STREAMS_TOTALS_LEN) {
        for (int i = 0; i < 5; i++)
            totals[i] = wire_get64(f.payload + 8 * i);
    } else {
        answer = gone(s, func, COHORT_ERR_NETWORK, "answered with an unknown operation "
                      "(another cohort version?)");
    }
    conn_consume(&s->link.conn->c, &f);
    return answer == STREAMS_ERROR ? -1 : answer;
}

static int call(struct cohort_streams *s, const char *func, enum streams_op op, uint64_t head,
                const char *key)
{
    return exchange(s, func, op, head, key, NULL);
}

/* ---- the API ------------------------------------------------------------ */

static void streams_free(struct cohort_streams *s)
{
    if (!s)
        return;
    coord_link_free(&s->link);
    free(s->ev);
    free(s);
}

int cohort_streams_open_opts(struct cohort *c, const char *name, double capacity,
                             const struct cohort_streams_opts *opts, struct cohort_streams **out)
{
    struct args a;
    if (out)
        *out = NULL;
    if (!c)
        return -1;
    args_mine(c, name, capacity, opts, out, &a);
    if (agree(c, &a) < 0)
        return -1;
    struct cohort_streams *s = calloc(1, sizeof *s);
    if (!s)
        return cohort_internal_fail(c, COHORT_ERR_RESOURCE, "cohort: out of memory");
    s->c = c;
    s->lease_s = (int)a.lease_s;
    snprintf(s->name, sizeof s->name, "%s", a.name);
    struct coord_config cfg = {.kind = COORD_STREAMS, .lease_timeout_s = a.lease_s,
                               .epsilon = streams_f64(a.epsilon_bits),
                               .shed_after_ms = a.shed_s * 1000};
    snprintf(cfg.name, sizeof cfg.name, "%s", a.name);
    char what[NAME_MAX_LEN + 16];
    snprintf(what, sizeof what, "set '%s'", a.name);
    if (coord_link_open(&s->link, c, "cohort_streams_open", what, &cfg) < 0 ||
        call(s, "cohort_streams_open", STREAMS_JOIN,
             streams_f64_bits(capacity > 0 ? capacity : 1.0), NULL) < 0 ||
        cohort_barrier(c) != 0) { /* every worker in before any stream is added */
        streams_free(s);
        return -1;
    }
    *out = s;
    return 0;
}

int cohort_streams_open(struct cohort *c, const char *name, double capacity,
                        struct cohort_streams **s)
{
    return cohort_streams_open_opts(c, name, capacity, NULL, s);
}

/* A request about key, with its head (a cost, an epoch, a load). */
static int keyed(struct cohort_streams *s, const char *func, enum streams_op op,
                 const char *key, uint64_t head)
{
    if (!s)
        return -1;
    size_t n = key ? strnlen(key, STREAMS_KEY_MAX + 1) : 0;
    if (n == 0 || n > STREAMS_KEY_MAX)
        return cohort_internal_fail(s->c, COHORT_ERR_USAGE,
                                    "cohort: %s: a stream key %s: give 1 to 255 bytes", func,
                                    !key ? "that is NULL" : n ? "over 255 bytes" : "that is "
                                    "empty");
    return call(s, func, op, head, key) < 0 ? -1 : 0;
}

int cohort_streams_add(struct cohort_streams *s, const char *key, double cost)
{
    if (s && (!(cost >= 0) || cost > 1e12))
        return cohort_internal_fail(s->c, COHORT_ERR_USAGE, "cohort: cohort_streams_add: "
                                    "stream '%.255s': cost %g: give a number above 0 (0: 1.0)",
                                    key ? key : "", cost);
    return keyed(s, "cohort_streams_add", STREAMS_ADD, key,
                 streams_f64_bits(cost > 0 ? cost : 1.0));
}

int cohort_streams_remove(struct cohort_streams *s, const char *key)
{
    return keyed(s, "cohort_streams_remove", STREAMS_REMOVE, key, 0);
}

int cohort_streams_release(struct cohort_streams *s, const struct cohort_stream_event *ev)
{
    if (s && !ev)
        return cohort_internal_fail(s->c, COHORT_ERR_USAGE,
                                    "cohort: cohort_streams_release: ev is NULL");
    return keyed(s, "cohort_streams_release", STREAMS_RELEASE, ev ? ev->key : NULL,
                 ev ? ev->epoch : 0);
}

int cohort_streams_report(struct cohort_streams *s, const char *key, double load)
{
    if (s && (!(load >= 0) || !isfinite(load)))
        return cohort_internal_fail(s->c, COHORT_ERR_USAGE, "cohort: cohort_streams_report: "
                                    "stream '%.255s': load %g: give a number of 0 or more",
                                    key ? key : "", load);
    return keyed(s, "cohort_streams_report", STREAMS_REPORT, key, streams_f64_bits(load));
}

static bool pop(struct cohort_streams *s, struct cohort_stream_event *ev)
{
    if (!s->ev_len)
        return false;
    *ev = s->ev[s->ev_head];
    s->ev_head = (s->ev_head + 1) % s->ev_cap;
    s->ev_len--;
    return true;
}

int cohort_streams_poll(struct cohort_streams *s, struct cohort_stream_event *ev,
                        int timeout_ms)
{
    static const char func[] = "cohort_streams_poll";
    if (!s || !ev || timeout_ms < 0)
        return s ? cohort_internal_fail(s->c, COHORT_ERR_USAGE, "cohort: %s: %s", func,
                                        ev ? "timeout_ms is negative" : "ev is NULL")
                 : -1;
    if (s->gone)
        return cohort_internal_fail(s->c, COHORT_ERR_USAGE, "cohort: %s: set '%s' failed "
                                    "earlier (see that call's error); close it", func, s->name);
    long long end = base_now_ms() + timeout_ms;
    for (;;) {
        if (pop(s, ev))
            return 1;
        long long now = base_now_ms(), ping = s->last_sent + (long long)s->lease_s * 1000 / 3;
        if (now >= ping && call(s, func, STREAMS_PING, 0, NULL) < 0)
            return -1;
        if (s->ev_len)
            continue;
        struct wire_frame f;
        int rc = wait_answer(s, func, end < ping ? end : ping, true, &f);
        if (rc < 0)
            return -1;
        if (rc > 0) /* an answer to no request */
            return gone(s, func, COHORT_ERR_NETWORK, "answered a request never made (another "
                        "cohort version?)");
        if (!s->ev_len && base_now_ms() >= end)
            return 0;
    }
}

int cohort_streams_status(struct cohort_streams *s, struct cohort_streams_status *st)
{
    static const char func[] = "cohort_streams_status";
    uint64_t t[5];
    if (!s || !st)
        return s ? cohort_internal_fail(s->c, COHORT_ERR_USAGE, "cohort: %s: st is NULL", func)
                 : -1;
    if (exchange(s, func, STREAMS_STATUS, 0, NULL, t) != STREAMS_TOTALS)
        return -1;
    *st = (struct cohort_streams_status){t[0], t[1], t[2], t[3], t[4]};
    return 0;
}

int cohort_streams_close(struct cohort_streams *s)
{
    if (!s)
        return -1;
    int rc = call(s, "cohort_streams_close", STREAMS_CLOSE, 0, NULL) == STREAMS_CLOSED
                 ? 0 : -1;
    struct cohort *c = s->c;
    streams_free(s);
    if (cohort_barrier(c) != 0)
        rc = -1;
    return rc;
}
