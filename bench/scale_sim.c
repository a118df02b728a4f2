/* scale_sim.c - the work queue at up to 131,072 ranks, simulated: the real
 * scheduler (runtime/work/work_sched.h) driven by a simulated clock, and the
 * real shape of the node relays' tree (coord_config.h), with a model of
 * everything around them. Nothing here opens a socket.
 *
 * The model, in simulated microseconds:
 * - WORKERS workers, 8 a node, of speeds 1, 2 and 4 in turn; an item takes
 *   ITEM_US / speed. A worker asks for a lease, works it, commits it, and
 *   once the commit's verdict is back asks for the next: two frames and two
 *   round trips a lease, as cohort_work_commit and cohort_work_lease are.
 * - A frame travels 2 us within the node (rank to its node's relay) and
 *   5 us between nodes for each relay on its way up (coord_relay_depth:
 *   two levels beyond 128 nodes), plus RELAY_US of a relay's work at each
 *   relay it crosses; the answer the same way back. A relay is not modelled
 *   as a queue: at 131,072 ranks a top relay carries 1/128 of the frames.
 * - The coordinator is its loop (work_service_loop.c): a turn reads every frame
 *   that has arrived, on every connection (a top relay's) that has one,
 *   and answers them at its end. A turn costs WAKE_US, READ_US for each
 *   connection read or written, FRAME_US for each frame in or out
 *   (bench/coord-cost.sh measures these), plus the time the scheduler's own
 *   calls take here, measured as they run.
 * - A lease with nothing to hand out is held, as the coordinator holds it
 *   (runtime/coord/work_service_wake.c): after each commit the held leases are
 *   tried again oldest first until RETRY_WAITS in a row find nothing; one
 *   held 4.5 s is answered WAIT and its worker asks again.
 * - With KILL_AT_S > 0 and KILL "node", node 1's 8 workers die at that
 *   simulated second: their leases go back at once (sched_worker_lost), as
 *   when their connections close. With KILL "coord", node 0 dies, the
 *   coordinator's host: every worker's next call fails, all leases are
 *   lost, and the step runs again RESTART_S later with the same journal
 *   (the commits answered before the death: sched_mark_committed, as the
 *   coordinator replays a journal), every worker back.
 *
 * Prints one Markdown row: workers, items, ideal and simulated makespan and
 * their ratio, frames a second (mean, and the most in any 10 s), frames a
 * read, the coordinator's busy share of one core (mean and the most in any
 * 10 s), the scheduler's own CPU per frame measured here, the items that
 * went back to the queue (deadlines, the dead node) and those copied at the
 * tail, the relays' levels and the most sockets the coordinator and a relay
 * hold, and the simulator's wall time.
 *
 *   bench/scale_sim WORKERS ITEMS ITEM_US [WAKE_US READ_US FRAME_US
 *                   [KILL_AT_S [KILL [RESTART_S]]]]
 *   (14 10 2, KILL node, RESTART_S 30; RELAY_US and FANOUT from the
 *   environment, 20 and 128) */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coord_config.h"
#include "step.h"
#include "work_msg.h"
#include "work_sched.h"

#define CAP (1u << 20) /* ids in one lease, as the coordinator's */
#define HOP_NODE_US 2
#define HOP_NET_US 5
#define PER_NODE 8
#define WINDOW_US 10000000 /* the 10 s windows of the peaks */
#define KEEPALIVE_US 4500000 /* a held request is answered WAIT after 4-5 s */
#define RETRY_WAITS 4 /* held requests tried in a row without result end a retry */

struct wk {
    uint8_t *held;     /* the ids of its lease, as spans (work_msg.h) */
    size_t nids, nspans, cap;
    int dead;
    int waiting;       /* its lease request is held by the coordinator */
    int in_ring;
    uint32_t wait_gen; /* which hold a keepalive event is for */
    uint32_t conn;     /* the coordinator's connection it comes by: a top relay's node */
    int64_t way_us;    /* a message between it and the coordinator, one way */
};

/* Events, in this order at the same moment: frames reaching the
 * coordinator come before the round that reads them. */
enum { ARRIVE_LEASE, ARRIVE_COMMIT, ROUND, KEEPALIVE };

struct ev {
    int64_t t;
    unsigned w;
    int kind;
    uint32_t gen;
};

/* What a round sends back: a commit's verdict or a lease's grant. */
struct out {
    unsigned w;
    int verdict;
    size_t n;
};

/* The simulation: the scheduler, the workers, the coordinator's rounds. */
struct sim {
    struct sched *s;
    struct wk *w;
    unsigned nw;
    uint64_t *ids;
    uint8_t *done;  /* a bit per item: its commit was answered (the journal) */
    double item_us, wake_us, read_us, frame_us;
    struct ev *heap;
    size_t nheap, capheap;
    struct ev *pend; /* frames arrived and not yet read, in order */
    size_t npend, cappend;
    struct out *outs; /* the round's answers */
    size_t nouts, capouts;
    uint32_t *conn_round, round_no; /* the last round each connection was read or written in */
    int round_on, retry_due;
    unsigned *ring; /* held requests, oldest first (as work_service_wake.c) */
    size_t ring_head, ring_len;
    int64_t free_at; /* the coordinator is busy until then */
    uint64_t frames, retries, reads, win_frames, max_win_frames;
    int64_t busy_us, win_busy, max_win_busy, win_start, makespan;
    double sched_s;
};

static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    *cap = need < 1024 ? 1024 : 2 * need;
    if (!(p = realloc(p, *cap * size)))
        exit(1);
    return p;
}

static int before(const struct ev *a, const struct ev *b)
{
    return a->t < b->t || (a->t == b->t && a->kind < b->kind);
}

static void push(struct sim *m, struct ev e)
{
    m->heap = grow(m->heap, &m->capheap, m->nheap + 1, sizeof *m->heap);
    size_t i = m->nheap++;
    while (i && before(&e, &m->heap[(i - 1) / 2])) {
        m->heap[i] = m->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    m->heap[i] = e;
}

static struct ev pop(struct sim *m)
{
    struct ev top = m->heap[0], last = m->heap[--m->nheap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m->nheap)
            break;
        if (c + 1 < m->nheap && before(&m->heap[c + 1], &m->heap[c]))
            c++;
        if (!before(&m->heap[c], &last))
            break;
        m->heap[i] = m->heap[c];
        i = c;
    }
    m->heap[i] = last;
    return top;
}

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The scheduler's calls are timed on the monotonic clock (a vDSO call; the
 * process CPU clock is a system call that would cost more than most of
 * them): the simulator is one thread that never sleeps. */
static double cpu_s(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

static void die(const char *what, const struct cohort_err *err)
{
    fprintf(stderr, "scale_sim: %s: %s\n", what, err->msg);
    exit(1);
}

/* Keeps the n ids of a grant as spans, as the coordinator sends them. */
static void hold(struct wk *k, const uint64_t *ids, size_t n)
{
    k->nspans = work_span_count(ids, n);
    if (k->nspans > k->cap) {
        k->cap = 2 * k->nspans;
        if (!(k->held = realloc(k->held, k->cap * WORK_SPAN_LEN)))
            exit(1);
    }
    work_spans_put(ids, n, k->held);
    k->nids = n;
}

/* The ids held, back into ids; how many. */
static size_t expand(const struct wk *k, uint64_t *ids)
{
    work_spans_ids(k->held, (uint32_t)(k->nspans * WORK_SPAN_LEN), ids);
    return k->nids;
}

/* The coordinator spends busy us from the moment start. */
static void spend(struct sim *m, int64_t start, int64_t busy)
{
    while (start >= m->win_start + WINDOW_US) {
        if (getenv("SIM_TRACE")) {
            struct sched_status st;
            sched_status(m->s, &st);
            fprintf(stderr, "t=%.0f s: %" PRIu64 " frames, busy %.1f %%, committed %" PRIu64
                    ", queued %" PRIu64 ", leased %" PRIu64 ", held %zu\n", m->win_start / 1e6,
                    m->win_frames, 100.0 * (double)m->win_busy / WINDOW_US, st.committed,
                    st.queued, st.leased, m->ring_len);
        }
        m->max_win_frames = m->win_frames > m->max_win_frames ? m->win_frames : m->max_win_frames;
        m->max_win_busy = m->win_busy > m->max_win_busy ? m->win_busy : m->max_win_busy;
        m->win_frames = m->win_busy = 0;
        m->win_start += WINDOW_US;
    }
    m->free_at = start + busy;
    m->busy_us += busy;
    m->win_busy += busy;
}

/* 1 when this round had not yet read or written worker wi's connection. */
static int touch(struct sim *m, unsigned wi)
{
    uint32_t *r = &m->conn_round[m->w[wi].conn];
    if (*r == m->round_no)
        return 0;
    *r = m->round_no;
    return 1;
}

/* The scheduler's lease for worker wi at now: a grant (an answer of the
 * round), or the request held (WAIT at the keepalive: it asks again). */
static void lease(struct sim *m, unsigned wi, int64_t now)
{
    struct cohort_err err;
    struct sched_grant g;
    struct wk *k = &m->w[wi];
    int rc = sched_lease(m->s, wi, now / 1000, m->ids, CAP, &g, &err);
    if (rc < 0)
        die("sched_lease", &err);
    k->waiting = rc == SCHED_WAIT;
    if (rc == SCHED_OK) {
        hold(k, m->ids, g.n);
        m->outs = grow(m->outs, &m->capouts, m->nouts + 1, sizeof *m->outs);
        m->outs[m->nouts++] = (struct out){wi, 0, g.n};
    } else if (rc == SCHED_WAIT) {
        if (!k->in_ring) {
            m->ring[(m->ring_head + m->ring_len++) % m->nw] = wi;
            k->in_ring = 1;
        }
        push(m, (struct ev){now + KEEPALIVE_US, wi, KEEPALIVE, ++k->wait_gen});
    }
}

/* After a change the coordinator tries the held requests again, oldest
 * first, until RETRY_WAITS in a row find nothing (work_service_wake.c). How many
 * frames it sends and connections it adds to the round. */
static size_t retry_held(struct sim *m, int64_t now, size_t *conns)
{
    size_t n = m->ring_len, waits = 0, sent = 0;
    for (size_t i = 0; i < n && waits < RETRY_WAITS; i++) {
        unsigned wi = m->ring[m->ring_head];
        m->ring_head = (m->ring_head + 1) % m->nw;
        m->ring_len--;
        m->w[wi].in_ring = 0;
        if (!m->w[wi].waiting || m->w[wi].dead)
            continue;
        size_t had = m->nouts;
        lease(m, wi, now);
        m->retries++;
        if (m->nouts > had) {
            sent++;
            *conns += (size_t)touch(m, wi);
        }
        waits = m->nouts > had ? 0 : waits + 1;
    }
    return sent;
}

/* A frame of worker wi read in the round at now: its commit (then the
 * held requests tried again) or its lease. */
static size_t frame(struct sim *m, const struct ev *f, int64_t now, size_t *conns)
{
    struct cohort_err err;
    struct wk *k = &m->w[f->w];
    if (f->kind == ARRIVE_LEASE) {
        lease(m, f->w, now);
        return 0;
    }
    size_t n = expand(k, m->ids);
    if (sched_commit(m->s, f->w, now / 1000, m->ids, n, NULL, NULL, &err) < 0)
        die("sched_commit", &err);
    for (size_t i = 0; i < n; i++) /* committed, by it or by a copy's first commit */
        m->done[m->ids[i] / 8] |= (uint8_t)(1u << m->ids[i] % 8);
    k->nids = k->nspans = 0;
    m->makespan = now;
    m->outs = grow(m->outs, &m->capouts, m->nouts + 1, sizeof *m->outs);
    m->outs[m->nouts++] = (struct out){f->w, 1, 0};
    return retry_held(m, now, conns);
}

/* One turn of the coordinator's loop at t: every frame arrived is read
 * and answered (after a death, the held requests are tried first). It
 * costs wake_us (its wait for events), read_us for each connection read or
 * written (a read and a write), frame_us for each frame in or out, and the
 * scheduler's own time; the answers leave at its end. */
static void round_at(struct sim *m, int64_t t)
{
    size_t conns = 0, frames = m->npend;
    double c0 = cpu_s();
    m->round_on = 0;
    m->round_no++;
    m->nouts = 0;
    if (m->retry_due)
        frames += retry_held(m, t, &conns);
    m->retry_due = 0;
    for (size_t i = 0; i < m->npend; i++)
        if (!m->w[m->pend[i].w].dead) {
            conns += (size_t)touch(m, m->pend[i].w);
            frames += frame(m, &m->pend[i], t, &conns);
        }
    double used = cpu_s() - c0;
    m->sched_s += used;
    m->frames += m->npend;
    m->win_frames += m->npend;
    m->reads += conns;
    m->npend = 0;
    spend(m, t, (int64_t)(used * 1e6 + m->wake_us + (double)conns * m->read_us +
                          (double)frames * m->frame_us));
    for (size_t i = 0; i < m->nouts; i++) {
        const struct out *o = &m->outs[i];
        struct wk *k = &m->w[o->w];
        int64_t back = m->free_at + k->way_us;
        if (o->verdict) /* it asks for its next lease */
            push(m, (struct ev){back + k->way_us, o->w, ARRIVE_LEASE, 0});
        else
            push(m, (struct ev){back + (int64_t)ceil((double)o->n * m->item_us /
                                                     (1u << o->w % 3)) + k->way_us,
                                o->w, ARRIVE_COMMIT, 0});
    }
}

/* The coordinator's next round: at once when it is idle, else when busy ends. */
static void want_round(struct sim *m, int64_t t)
{
    if (!m->round_on) {
        push(m, (struct ev){t > m->free_at ? t : m->free_at, 0, ROUND, 0});
        m->round_on = 1;
    }
}

/* Node 1's 8 workers die at t: their leases go back, held requests are
 * tried again. Returns the speed lost (items per us). */
static double kill_node(struct sim *m, int64_t t)
{
    struct cohort_err err;
    double lost = 0;
    for (unsigned i = PER_NODE; i < 2 * PER_NODE && i < m->nw; i++) {
        if (sched_worker_lost(m->s, i, t / 1000, &err) < 0)
            die("sched_worker_lost", &err);
        m->w[i].dead = 1;
        lost += (double)(1u << i % 3) / m->item_us;
    }
    m->retry_due = 1;
    want_round(m, t);
    return lost;
}

/* The coordinator's host (node 0) dies at t: the frames on their way, the
 * held requests and every lease are lost; the step runs again restart_us
 * later with the commits answered so far (the journal), every worker back. */
static void kill_coord(struct sim *m, int64_t t, int64_t restart_us, uint64_t n_items)
{
    struct cohort_err err;
    size_t nspans = 0, cap = 0;
    struct sched_span *spans = NULL;
    for (uint64_t id = 0; id < n_items; id++) {
        if (!(m->done[id / 8] >> id % 8 & 1))
            continue;
        if (nspans && spans[nspans - 1].hi == id) {
            spans[nspans - 1].hi++;
            continue;
        }
        spans = grow(spans, &cap, nspans + 1, sizeof *spans);
        spans[nspans++] = (struct sched_span){id, id + 1};
    }
    sched_destroy(m->s);
    if (sched_create(n_items, m->nw, NULL, &m->s, &err) < 0 ||
        sched_mark_committed(m->s, spans, nspans, &err) < 0)
        die("the rerun's scheduler", &err);
    free(spans);
    m->nheap = m->npend = m->ring_len = 0;
    m->round_on = m->retry_due = 0;
    m->free_at = t + restart_us;
    for (unsigned i = 0; i < m->nw; i++) {
        struct wk *k = &m->w[i];
        k->nids = k->nspans = 0;
        k->waiting = k->in_ring = 0;
        push(m, (struct ev){m->free_at + k->way_us, i, ARRIVE_LEASE, 0});
    }
}

/* The relays' tree over the nodes (coord_config.h, fanout from FANOUT):
 * each worker's way to the coordinator and the connection it comes by,
 * the tree's levels, and the most sockets the coordinator and any relay
 * hold (a relay: its node's ranks, its Unix listener, the connection up,
 * the node's socket for the step's other queues and sets (host.h), and
 * with relays below a TCP listener and those). */
static void relay_tree(struct sim *m, unsigned *levels, unsigned *coord_fds, unsigned *relay_fds)
{
    const char *f = getenv("FANOUT"), *r = getenv("RELAY_US");
    struct coord_config cfg = {.num_nodes = (m->nw + PER_NODE - 1) / PER_NODE,
                               .fanout = COORD_DEFAULT_FANOUT};
    struct cohort_err err;
    if (f && (parse_u32("FANOUT", f, &cfg.fanout, &err) < 0 || cfg.fanout < 1 ||
              cfg.fanout > COORD_MAX_FANOUT)) {
        fprintf(stderr, "scale_sim: FANOUT=%s: give 1 to %u\n", f, COORD_MAX_FANOUT);
        exit(2);
    }
    double relay_us = r ? atof(r) : 20;
    *levels = coord_relay_levels(&cfg);
    *coord_fds = 1 + coord_relay_kids(&cfg, COORD_TOP);
    *relay_fds = 0;
    m->conn_round = calloc(cfg.num_nodes, sizeof *m->conn_round);
    if (!m->conn_round)
        exit(1);
    for (uint32_t node = 0; node < cfg.num_nodes; node++) {
        uint32_t kids = coord_relay_kids(&cfg, node), crossed = coord_relay_depth(&cfg, node) + 1;
        unsigned fds = PER_NODE + 3 + (kids ? 1 + kids : 0);
        *relay_fds = fds > *relay_fds ? fds : *relay_fds;
        for (unsigned i = node * PER_NODE; i < (node + 1) * PER_NODE && i < m->nw; i++) {
            m->w[i].way_us = HOP_NODE_US + (int64_t)(crossed * (HOP_NET_US + relay_us) + 0.5);
            m->w[i].conn = coord_relay_toward(&cfg, COORD_TOP, node);
        }
    }
}

/* Runs the events to the end; with kill_at, the death at that moment. */
static double run(struct sim *m, int64_t kill_at, int coord, int64_t restart_us, uint64_t n)
{
    double lost_speed = 0;
    while (m->nheap) {
        if (m->heap[0].t >= kill_at) {
            if (coord)
                kill_coord(m, kill_at, restart_us, n);
            else
                lost_speed = kill_node(m, kill_at);
            kill_at = INT64_MAX;
            continue;
        }
        struct ev e = pop(m);
        struct wk *k = &m->w[e.w];
        if (e.kind == ROUND) {
            round_at(m, e.t);
        } else if (k->dead || (e.kind == KEEPALIVE && (!k->waiting || e.gen != k->wait_gen))) {
            continue;
        } else if (e.kind == KEEPALIVE) { /* answered WAIT; it asks again */
            k->waiting = 0;
            push(m, (struct ev){e.t + 2 * k->way_us, e.w, ARRIVE_LEASE, 0});
        } else {
            m->pend = grow(m->pend, &m->cappend, m->npend + 1, sizeof *m->pend);
            m->pend[m->npend++] = e;
            want_round(m, e.t);
        }
    }
    spend(m, m->win_start + WINDOW_US, 0);
    return lost_speed;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: scale_sim WORKERS ITEMS ITEM_US [WAKE_US READ_US FRAME_US "
                        "[KILL_AT_S [KILL [RESTART_S]]]]\n");
        return 2;
    }
    struct sim m = {.nw = (unsigned)strtoul(argv[1], NULL, 10), .item_us = atof(argv[3]),
                    .wake_us = argc > 6 ? atof(argv[4]) : 14,
                    .read_us = argc > 6 ? atof(argv[5]) : 10,
                    .frame_us = argc > 6 ? atof(argv[6]) : 2};
    uint64_t n = strtoull(argv[2], NULL, 10);
    double kill_s = argc > 7 ? atof(argv[7]) : 0, speed = 0;
    int coord = argc > 8 && strcmp(argv[8], "coord") == 0;
    int64_t restart_us = (int64_t)((argc > 9 ? atof(argv[9]) : 30) * 1e6);
    unsigned levels, coord_fds, relay_fds;
    struct cohort_err err;
    m.w = calloc(m.nw, sizeof *m.w);
    m.ids = malloc(sizeof *m.ids * CAP);
    m.ring = malloc(sizeof *m.ring * m.nw);
    m.done = calloc(n / 8 + 1, 1);
    if (!m.w || !m.ids || !m.ring || !m.done)
        return 1;
    if (sched_create(n, m.nw, NULL, &m.s, &err) < 0)
        die("sched_create", &err);
    relay_tree(&m, &levels, &coord_fds, &relay_fds);
    for (unsigned i = 0; i < m.nw; i++) {
        speed += (double)(1u << i % 3) / m.item_us; /* items per us, all workers */
        push(&m, (struct ev){m.w[i].way_us, i, ARRIVE_LEASE, 0});
    }
    double wall0 = clock_s(CLOCK_MONOTONIC);
    double lost_speed = run(&m, kill_s > 0 ? (int64_t)(kill_s * 1e6) : INT64_MAX, coord,
                            restart_us, n);
    /* the ideal: all workers' speed until the kill, the others' after (the
     * coordinator's death: no loss at all) */
    double ideal = (double)n / speed, t0 = kill_s * 1e6;
    if (kill_s > 0 && !coord && t0 < ideal)
        ideal = t0 + ((double)n - speed * t0) / (speed - lost_speed);
    struct sched_status st;
    sched_status(m.s, &st);
    double span_s = (double)m.makespan / 1e6;
    printf("| %u | %" PRIu64 " | %.0f | %.1f | %.1f | %.4f | %.0f | %.0f | %.1f | %.1f %% | %.1f %% "
           "| %.2f | %" PRIu64 " | %" PRIu64 " | %u | %u | %u | %.0f |\n",
           m.nw, n, m.item_us, ideal / 1e6, span_s, (double)m.makespan / ideal,
           (double)m.frames / span_s, (double)m.max_win_frames / (WINDOW_US / 1e6),
           m.reads ? (double)m.frames / (double)m.reads : 0,
           100.0 * (double)m.busy_us / (double)m.makespan,
           100.0 * (double)m.max_win_busy / WINDOW_US,
           1e6 * m.sched_s / (double)(m.frames + m.retries), st.requeued, st.copies, levels,
           coord_fds, relay_fds, clock_s(CLOCK_MONOTONIC) - wall0);
    if (st.committed != n) {
        fprintf(stderr, "scale_sim: %" PRIu64 " of %" PRIu64 " items committed\n", st.committed, n);
        return 1;
    }
    sched_destroy(m.s);
    for (unsigned i = 0; i < m.nw; i++)
        free(m.w[i].held);
    free(m.w);
    free(m.ids);
    free(m.ring);
    free(m.heap);
    free(m.pend);
    free(m.outs);
    free(m.conn_round);
    free(m.done);
    return 0;
}
