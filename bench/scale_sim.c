/* scale_sim.c - the work queue at up to 131,072 ranks, simulated: the real
 * scheduler (runtime/work/work_sched.h) driven by a simulated clock, with a
 * model of everything around it. Nothing here opens a socket.
 *
 * The model, in simulated microseconds:
 * - WORKERS workers, 8 a node, of speeds 1, 2 and 4 in turn; an item takes
 *   ITEM_US / speed. A worker that finishes its lease sends one request (its
 *   commit and its next lease; a first lease or an asking again after WAIT
 *   is one request too).
 * - A request travels 2 us within the node (rank to its node agent) and 5 us
 *   between nodes (agent to coordinator), the answer the same way back.
 * - The coordinator is one server: requests are served one at a time in
 *   the order they arrive, each taking REQ_US of its CPU (measured on the
 *   development VM: 29-32 us for a lease and its commit, docs/work.md) plus
 *   the time the scheduler's own calls take here, measured as they run
 *   (this is what grows with the number of workers, if anything does).
 * - A lease with nothing to hand out is held, as the coordinator holds it
 *   (runtime/coord/coord_wake.c): after each commit the held leases are
 *   tried again oldest first until RETRY_WAITS in a row find nothing (the
 *   scheduler's time, and half a request's for each grant sent); one held
 *   4.5 s is answered WAIT and its worker asks again.
 * - With KILL_AT_S > 0, node 1's 8 workers die at that simulated second:
 *   their leases go back at once (sched_worker_lost), as when their
 *   connections close.
 *
 * Prints one Markdown row: workers, items, ideal and simulated makespan and
 * their ratio, requests a second (mean, and the most in any 10 s), the
 * coordinator's busy share of one core (mean and the most in any 10 s), the
 * scheduler's own CPU per request measured here, the items that went back
 * to the queue (deadlines, the dead node) and those copied at the tail, and
 * the simulator's wall time.
 *
 *   bench/scale_sim WORKERS ITEMS ITEM_US [REQ_US [KILL_AT_S]]   (REQ_US 30) */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
};

enum { ARRIVE, KEEPALIVE };

struct ev {
    int64_t t;  /* ARRIVE: when the request reaches the coordinator */
    unsigned w;
    int kind;
    uint32_t gen;
};

/* The simulation: the scheduler, the workers, the coordinator's queue. */
struct sim {
    struct sched *s;
    struct wk *w;
    unsigned nw;
    uint64_t *ids;
    double item_us, req_us;
    struct ev *heap;
    size_t nheap, capheap;
    unsigned *ring; /* held requests, oldest first (as coord_wake.c) */
    size_t ring_head, ring_len;
    int64_t free_at; /* the coordinator is busy until then */
    uint64_t requests, retries, win_req, max_win_req;
    int64_t busy_us, win_busy, max_win_busy, win_start, makespan;
    double sched_s;
};

static void push(struct sim *m, struct ev e)
{
    if (m->nheap == m->capheap) {
        m->capheap = m->capheap ? 2 * m->capheap : 1024;
        if (!(m->heap = realloc(m->heap, m->capheap * sizeof *m->heap)))
            exit(1);
    }
    size_t i = m->nheap++;
    while (i && m->heap[(i - 1) / 2].t > e.t) {
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
        if (c + 1 < m->nheap && m->heap[c + 1].t < m->heap[c].t)
            c++;
        if (m->heap[c].t >= last.t)
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
            fprintf(stderr, "t=%.0f s: %" PRIu64 " requests, busy %.1f %%, committed %" PRIu64
                    ", queued %" PRIu64 ", leased %" PRIu64 ", held %zu\n", m->win_start / 1e6,
                    m->win_req, 100.0 * (double)m->win_busy / WINDOW_US, st.committed,
                    st.queued, st.leased, m->ring_len);
        }
        m->max_win_req = m->win_req > m->max_win_req ? m->win_req : m->max_win_req;
        m->max_win_busy = m->win_busy > m->max_win_busy ? m->win_busy : m->max_win_busy;
        m->win_req = m->win_busy = 0;
        m->win_start += WINDOW_US;
    }
    m->free_at = start + busy;
    m->busy_us += busy;
    m->win_busy += busy;
}

/* Worker wi gets the scheduler's answer rc (sent by the coordinator at
 * m->free_at): it works its grant then asks again, or its request is held
 * (the coordinator answers WAIT at the keepalive, and it asks again). */
static void answer(struct sim *m, unsigned wi, int rc, const struct sched_grant *g)
{
    struct wk *k = &m->w[wi];
    int64_t back = m->free_at + HOP_NET_US + HOP_NODE_US;
    k->waiting = rc == SCHED_WAIT;
    if (rc == SCHED_OK) {
        hold(k, m->ids, g->n);
        int64_t work = (int64_t)ceil((double)g->n * m->item_us / (1u << wi % 3));
        push(m, (struct ev){back + work + HOP_NODE_US + HOP_NET_US, wi, ARRIVE, 0});
    } else if (rc == SCHED_WAIT) {
        if (!k->in_ring) {
            m->ring[(m->ring_head + m->ring_len++) % m->nw] = wi;
            k->in_ring = 1;
        }
        push(m, (struct ev){m->free_at + KEEPALIVE_US, wi, KEEPALIVE, ++k->wait_gen});
    }
}

static int lease(struct sim *m, unsigned wi, int64_t now, struct sched_grant *g)
{
    struct cohort_err err;
    int rc = sched_lease(m->s, wi, now / 1000, m->ids, CAP, g, &err);
    if (rc < 0)
        die("sched_lease", &err);
    return rc;
}

/* After a change the coordinator tries the held requests again, oldest
 * first, until RETRY_WAITS in a row find nothing (coord_wake.c); a grant
 * costs it half a request (the answer's send). */
static void retry_held(struct sim *m)
{
    size_t n = m->ring_len, waits = 0;
    for (size_t i = 0; i < n && waits < RETRY_WAITS; i++) {
        unsigned wi = m->ring[m->ring_head];
        m->ring_head = (m->ring_head + 1) % m->nw;
        m->ring_len--;
        m->w[wi].in_ring = 0;
        if (!m->w[wi].waiting || m->w[wi].dead)
            continue;
        struct sched_grant g;
        double c0 = cpu_s();
        int rc = lease(m, wi, m->free_at, &g);
        double used = cpu_s() - c0;
        m->sched_s += used;
        m->retries++;
        spend(m, m->free_at, (int64_t)(used * 1e6 + (rc == SCHED_WAIT ? 0 : m->req_us / 2)));
        answer(m, wi, rc, &g);
        waits = rc == SCHED_WAIT ? waits + 1 : 0;
    }
}

/* One request of worker wi reaching the coordinator at t: the commit of
 * its last lease (if any) and its next lease. */
static void serve(struct sim *m, unsigned wi, int64_t t)
{
    struct cohort_err err;
    struct wk *k = &m->w[wi];
    int64_t start = t > m->free_at ? t : m->free_at;
    double c0 = cpu_s();
    size_t n = expand(k, m->ids);
    if (n && sched_commit(m->s, wi, start / 1000, m->ids, n, NULL, NULL, &err) < 0)
        die("sched_commit", &err);
    k->nids = k->nspans = 0;
    struct sched_grant g;
    int rc = lease(m, wi, start, &g);
    double used = cpu_s() - c0;
    m->sched_s += used;
    m->requests++;
    m->win_req++;
    spend(m, start, (int64_t)(m->req_us + used * 1e6));
    answer(m, wi, rc, &g);
    if (n) {
        m->makespan = start;
        retry_held(m);
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
    if (t > m->free_at)
        m->free_at = t;
    retry_held(m);
    return lost;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: scale_sim WORKERS ITEMS ITEM_US [REQ_US [KILL_AT_S]]\n");
        return 2;
    }
    struct sim m = {.nw = (unsigned)strtoul(argv[1], NULL, 10), .item_us = atof(argv[3]),
                    .req_us = argc > 4 ? atof(argv[4]) : 30};
    uint64_t n = strtoull(argv[2], NULL, 10);
    double kill_s = argc > 5 ? atof(argv[5]) : 0, speed = 0, lost_speed = 0;
    struct cohort_err err;
    m.w = calloc(m.nw, sizeof *m.w);
    m.ids = malloc(sizeof *m.ids * CAP);
    m.ring = malloc(sizeof *m.ring * m.nw);
    if (!m.w || !m.ids || !m.ring)
        return 1;
    if (sched_create(n, m.nw, NULL, &m.s, &err) < 0)
        die("sched_create", &err);
    for (unsigned i = 0; i < m.nw; i++) {
        speed += (double)(1u << i % 3) / m.item_us; /* items per us, all workers */
        push(&m, (struct ev){HOP_NODE_US + HOP_NET_US, i, ARRIVE, 0});
    }
    int64_t kill_at = kill_s > 0 ? (int64_t)(kill_s * 1e6) : INT64_MAX;
    double wall0 = clock_s(CLOCK_MONOTONIC);
    while (m.nheap) {
        struct ev e = pop(&m);
        if (e.t >= kill_at) {
            lost_speed = kill_node(&m, kill_at);
            kill_at = INT64_MAX;
        }
        struct wk *k = &m.w[e.w];
        if (k->dead || (e.kind == KEEPALIVE && (!k->waiting || e.gen != k->wait_gen)))
            continue;
        if (e.kind == KEEPALIVE) { /* answered WAIT; it asks again */
            k->waiting = 0;
            push(&m, (struct ev){e.t + 2 * (HOP_NODE_US + HOP_NET_US), e.w, ARRIVE, 0});
            continue;
        }
        serve(&m, e.w, e.t);
    }
    spend(&m, m.win_start + WINDOW_US, 0);
    /* the ideal: all workers' speed until the kill, the others' after */
    double ideal = (double)n / speed, t0 = kill_s * 1e6;
    if (kill_s > 0 && t0 < ideal)
        ideal = t0 + ((double)n - speed * t0) / (speed - lost_speed);
    struct sched_status st;
    sched_status(m.s, &st);
    double span_s = (double)m.makespan / 1e6;
    printf("| %u | %" PRIu64 " | %.0f | %.1f | %.1f | %.4f | %.0f | %.0f | %.1f %% | %.1f %% | %.2f "
           "| %" PRIu64 " | %" PRIu64 " | %.0f |\n",
           m.nw, n, m.item_us, ideal / 1e6, span_s, (double)m.makespan / ideal,
           (double)m.requests / span_s, (double)m.max_win_req / (WINDOW_US / 1e6),
           100.0 * (double)m.busy_us / (double)m.makespan,
           100.0 * (double)m.max_win_busy / WINDOW_US,
           1e6 * m.sched_s / (double)(m.requests + m.retries), st.requeued, st.copies,
           clock_s(CLOCK_MONOTONIC) - wall0);
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
    return 0;
}
