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
 * - With KILL_AT_S > 0, node 1's 8 workers die at that simulated second:
 *   their leases go back at once (sched_worker_lost), as when a node agent's
 *   connection closes.
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

#include "work_sched.h"

#define CAP (1u << 20) /* ids in one lease, as the coordinator's */
#define HOP_NODE_US 2
#define HOP_NET_US 5
#define PER_NODE 8
#define WINDOW_US 10000000 /* the 10 s windows of the peaks */

struct span {
    uint64_t lo, hi;
};

struct wk {
    struct span *held; /* the ids of its lease, as runs */
    size_t nheld, cap;
    int dead;
};

struct ev {
    int64_t t;  /* when the request reaches the coordinator */
    unsigned w;
};

static struct ev *heap;
static size_t nheap;

static void push(int64_t t, unsigned w)
{
    size_t i = nheap++;
    while (i && heap[(i - 1) / 2].t > t) {
        heap[i] = heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    heap[i] = (struct ev){t, w};
}

static struct ev pop(void)
{
    struct ev top = heap[0], last = heap[--nheap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= nheap)
            break;
        if (c + 1 < nheap && heap[c + 1].t < heap[c].t)
            c++;
        if (heap[c].t >= last.t)
            break;
        heap[i] = heap[c];
        i = c;
    }
    heap[i] = last;
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

/* Keeps the n ids of a grant as runs. */
static void hold(struct wk *k, const uint64_t *ids, size_t n)
{
    k->nheld = 0;
    for (size_t i = 0; i < n; i++) {
        if (k->nheld && k->held[k->nheld - 1].hi == ids[i]) {
            k->held[k->nheld - 1].hi++;
            continue;
        }
        if (k->nheld == k->cap) {
            k->cap = k->cap ? 2 * k->cap : 4;
            if (!(k->held = realloc(k->held, k->cap * sizeof *k->held)))
                exit(1);
        }
        k->held[k->nheld++] = (struct span){ids[i], ids[i] + 1};
    }
}

static size_t expand(const struct wk *k, uint64_t *ids)
{
    size_t n = 0;
    for (size_t i = 0; i < k->nheld; i++)
        for (uint64_t id = k->held[i].lo; id < k->held[i].hi; id++)
            ids[n++] = id;
    return n;
}

struct totals {
    uint64_t requests, win_req, max_win_req;
    int64_t busy_us, win_busy, max_win_busy, win_start, makespan;
    double sched_s;
};

static void window(struct totals *z, int64_t t, int64_t busy, const struct sched *s)
{
    while (t >= z->win_start + WINDOW_US) {
        if (getenv("SIM_TRACE")) {
            struct sched_status st;
            sched_status(s, &st);
            fprintf(stderr, "t=%.0f s: %" PRIu64 " requests, busy %.1f %%, committed %" PRIu64
                    ", queued %" PRIu64 ", leased %" PRIu64 "\n", z->win_start / 1e6, z->win_req,
                    100.0 * (double)z->win_busy / WINDOW_US, st.committed, st.queued, st.leased);
        }
        z->max_win_req = z->win_req > z->max_win_req ? z->win_req : z->max_win_req;
        z->max_win_busy = z->win_busy > z->max_win_busy ? z->win_busy : z->max_win_busy;
        z->win_req = 0;
        z->win_busy = 0;
        z->win_start += WINDOW_US;
    }
    z->win_req++;
    z->win_busy += busy;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: scale_sim WORKERS ITEMS ITEM_US [REQ_US [KILL_AT_S]]\n");
        return 2;
    }
    unsigned nw = (unsigned)strtoul(argv[1], NULL, 10);
    uint64_t n = strtoull(argv[2], NULL, 10);
    double item_us = atof(argv[3]), req_us = argc > 4 ? atof(argv[4]) : 30;
    double kill_s = argc > 5 ? atof(argv[5]) : 0;
    struct sched *s;
    struct cohort_err err;
    struct wk *w = calloc(nw, sizeof *w);
    uint64_t *ids = malloc(sizeof *ids * CAP);
    heap = malloc(sizeof *heap * nw);
    if (!w || !ids || !heap)
        return 1;
    if (sched_create(n, nw, NULL, &s, &err) < 0)
        die("sched_create", &err);
    double speed = 0; /* items per us, all workers */
    for (unsigned i = 0; i < nw; i++) {
        speed += (double)(1u << i % 3) / item_us;
        push(HOP_NODE_US + HOP_NET_US, i);
    }
    struct totals z = {0};
    int64_t free_at = 0, kill_at = kill_s > 0 ? (int64_t)(kill_s * 1e6) : INT64_MAX;
    double wall0 = clock_s(CLOCK_MONOTONIC), lost_speed = 0;
    while (nheap) {
        struct ev e = pop();
        if (w[e.w].dead)
            continue;
        if (e.t >= kill_at) { /* node 1's workers die */
            for (unsigned i = PER_NODE; i < 2 * PER_NODE && i < nw; i++) {
                if (sched_worker_lost(s, i, kill_at / 1000, &err) < 0)
                    die("sched_worker_lost", &err);
                w[i].dead = 1;
                lost_speed += (double)(1u << i % 3) / item_us;
            }
            kill_at = INT64_MAX;
            if (w[e.w].dead)
                continue;
        }
        int64_t start = e.t > free_at ? e.t : free_at;
        double c0 = cpu_s();
        struct wk *k = &w[e.w];
        size_t m = expand(k, ids);
        if (m && sched_commit(s, e.w, start / 1000, ids, m, NULL, NULL, &err) < 0)
            die("sched_commit", &err);
        k->nheld = 0;
        struct sched_grant g;
        int rc = sched_lease(s, e.w, start / 1000, ids, CAP, &g, &err);
        if (rc < 0)
            die("sched_lease", &err);
        double used = cpu_s() - c0;
        z.sched_s += used;
        int64_t busy = (int64_t)(req_us + used * 1e6);
        free_at = start + busy;
        window(&z, start, busy, s);
        z.requests++;
        z.busy_us += busy;
        int64_t back = free_at + HOP_NET_US + HOP_NODE_US; /* the answer reaches the worker */
        if (rc == SCHED_OK) {
            hold(k, ids, g.n);
            int64_t work = (int64_t)ceil((double)g.n * item_us / (1u << e.w % 3));
            push(back + work + HOP_NODE_US + HOP_NET_US, e.w);
        } else if (rc == SCHED_WAIT) {
            int64_t again = g.wait_until * 1000;
            push((again > back ? again : back) + HOP_NODE_US + HOP_NET_US, e.w);
        }
        if (m)
            z.makespan = start;
    }
    window(&z, z.win_start + WINDOW_US, 0, s);
    /* the ideal: all workers' speed until the kill, the others' after */
    double ideal = (double)n / speed, t0 = kill_s * 1e6;
    if (kill_s > 0 && t0 < ideal)
        ideal = t0 + ((double)n - speed * t0) / (speed - lost_speed);
    struct sched_status st;
    sched_status(s, &st);
    double span_s = (double)z.makespan / 1e6;
    printf("| %u | %" PRIu64 " | %.0f | %.1f | %.1f | %.4f | %.0f | %.0f | %.1f %% | %.1f %% | %.2f "
           "| %" PRIu64 " | %" PRIu64 " | %.0f |\n",
           nw, n, item_us, ideal / 1e6, span_s, (double)z.makespan / ideal,
           (double)z.requests / span_s, (double)z.max_win_req / (WINDOW_US / 1e6),
           100.0 * (double)z.busy_us / (double)z.makespan,
           100.0 * (double)z.max_win_busy / WINDOW_US, 1e6 * z.sched_s / (double)z.requests,
           st.requeued, st.copies, clock_s(CLOCK_MONOTONIC) - wall0);
    if (st.committed != n) {
        fprintf(stderr, "scale_sim: %" PRIu64 " of %" PRIu64 " items committed\n", st.committed, n);
        return 1;
    }
    sched_destroy(s);
    for (unsigned i = 0; i < nw; i++)
        free(w[i].held);
    free(w);
    free(ids);
    free(heap);
    return 0;
}
