/* watch_comm.c - the communicators of the step watch (watch.h): each one's
 * counts of collectives started and completed by each rank, and when a
 * rank keeps the others waiting (NOT_JOINED, NOT_COMPLETED). A report
 * costs logarithmic time: a communicator keeps its active places in two
 * heaps, by started and by completed, so that its slowest rank is known at
 * once and the holder keeps up with every rank's report each second. It
 * remembers when the peers first reached each of its last RING counts; a
 * count older than those takes the oldest time kept, which is later than
 * the truth, so that a wait is never named early. A place whose rank has
 * ended or whose node has left is out of the heaps (its counts are stale),
 * and its communicator is not judged NOT_COMPLETED any more. Finding the
 * wait due (watch_comms_due, watch_comms_next) looks at each communicator
 * once. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base_runs.h"
#include "base_sys.h"
#include "watch_private.h"

static const char *const op_names[] = {"collective",    "broadcast", "reduce", "allgather",
                                       "reducescatter", "allreduce", "send",   "recv",
                                       "alltoall"};

const char *watch_op_name(unsigned op)
{
    return op <= WATCH_OP_MAX ? op_names[op] : op_names[0];
}

/* ---- the count -> first time rings ---- */

static void ring_add(struct seq_ring *q, uint64_t hi, int64_t t)
{
    if (hi == 0 || (q->n && q->r[q->n - 1].hi >= hi))
        return;
    if (q->n == RING)
        memmove(q->r, q->r + 1, --q->n * sizeof *q->r);
    q->r[q->n++] = (struct seq_time){hi, t};
}

/* Forgets the counts up to seq: no place will ask for them again. */
static void ring_drop(struct seq_ring *q, uint64_t seq)
{
    uint32_t k = 0;
    while (k < q->n && q->r[k].hi <= seq)
        k++;
    memmove(q->r, q->r + k, (q->n - k) * sizeof *q->r);
    q->n -= k;
}

static int64_t ring_time(const struct seq_ring *q, uint64_t seq)
{
    size_t i = base_lower_bound(q->r, q->n, sizeof *q->r, offsetof(struct seq_time, hi), seq);
    return i < q->n ? q->r[i].t : NEVER;
}

/* ---- the heaps of active places (h 0: by started, 1: by completed) ---- */

static uint64_t hkey(const struct comm *c, int h, uint32_t i)
{
    return c->m[c->heap[h][i]].count[h];
}

static void hset(struct comm *c, int h, uint32_t i, uint32_t m)
{
    c->heap[h][i] = m;
    c->m[m].pos[h] = i;
}

static void sift_up(struct comm *c, int h, uint32_t i)
{
    uint32_t m = c->heap[h][i];
    while (i > 0 && hkey(c, h, (i - 1) / 2) > c->m[m].count[h]) {
        hset(c, h, i, c->heap[h][(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    hset(c, h, i, m);
}

static void sift_down(struct comm *c, int h, uint32_t i)
{
    uint32_t m = c->heap[h][i], n = c->heap_n[h];
    for (;;) {
        uint32_t k = 2 * i + 1;
        if (k >= n)
            break;
        if (k + 1 < n && hkey(c, h, k + 1) < hkey(c, h, k))
            k++;
        if (hkey(c, h, k) >= c->m[m].count[h])
            break;
        hset(c, h, i, c->heap[h][k]);
        i = k;
    }
    hset(c, h, i, m);
}

static void heap_remove(struct comm *c, int h, uint32_t m)
{
    uint32_t i = c->m[m].pos[h], last = --c->heap_n[h];
    c->m[m].pos[h] = NONE;
    if (i == last)
        return;
    uint32_t moved = c->heap[h][last];
    hset(c, h, i, moved);
    sift_down(c, h, i);
    sift_up(c, h, c->m[moved].pos[h]);
}

/* Works out when each of the communicator's waits becomes due, from its
 * slowest active place, and forgets what no place will ask for. The lowest
 * started only rises once every place has reported. */
static void comm_due(const struct watch *w, struct comm *c, int64_t now)
{
    c->due_joined = c->due_done = NEVER;
    if (!c->heap_n[0])
        return;
    uint64_t lo = hkey(c, 0, 0);
    if (c->n_reported == c->nranks)
        ring_drop(&c->peers, lo);
    if (c->max_started > lo)
        c->due_joined = watch_after(ring_time(&c->peers, lo + 1), w->stall_ms);
    if (c->n_active < c->nranks)
        return;
    uint64_t done = hkey(c, 1, 0);
    ring_add(&c->all, lo, now);
    ring_drop(&c->all, done);
    if (lo > done)
        c->due_done = watch_after(ring_time(&c->all, done + 1), w->stall_ms);
}

void watch_comms_retire(struct watch *w, uint32_t r, int64_t now)
{
    for (uint32_t ci = w->rank[r].first_comm, mi = w->rank[r].first_member; ci != NONE;) {
        struct comm *c = w->comms[ci];
        struct member *m = &c->m[mi];
        if (m->pos[0] != NONE) {
            heap_remove(c, 0, mi);
            heap_remove(c, 1, mi);
            c->n_active--;
            comm_due(w, c, now);
        }
        ci = m->next_comm;
        mi = m->next_member;
    }
}

void watch_comms_free(struct watch *w)
{
    for (size_t i = 0; i < w->n_comms; i++) {
        free(w->comms[i]->heap[0]);
        free(w->comms[i]);
    }
    free(w->comms);
    free(w->keys);
}

/* ---- reports ---- */

static struct comm *comm_new(struct watch *w, uint64_t hash, uint32_t nranks, size_t at)
{
    if (base_grow((void **)&w->comms, &w->cap_comms, w->n_comms + 1, sizeof *w->comms) < 0 ||
        base_grow((void **)&w->keys, &w->cap_keys, w->n_comms + 1, sizeof *w->keys) < 0)
        return NULL;
    struct comm *c = calloc(1, sizeof *c + nranks * sizeof c->m[0]);
    uint32_t *heaps = malloc(2 * (size_t)nranks * sizeof *heaps);
    if (!c || !heaps) {
        free(c);
        free(heaps);
        errno = ENOMEM;
        return NULL;
    }
    c->hash = hash;
    c->nranks = nranks;
    c->heap[0] = heaps;
    c->heap[1] = heaps + nranks;
    c->due_joined = c->due_done = NEVER;
    for (uint32_t i = 0; i < nranks; i++)
        c->m[i] = (struct member){.rank = NONE, .pos = {NONE, NONE}};
    memmove(w->keys + at + 1, w->keys + at, (w->n_comms - at) * sizeof *w->keys);
    w->keys[at] = (struct comm_key){hash, (uint32_t)w->n_comms};
    w->comms[w->n_comms++] = c;
    return c;
}

/* The communicator of that hash, made on its first report; NULL with errno
 * (EINVAL: it is known with another size). */
static struct comm *comm_get(struct watch *w, uint64_t hash, uint32_t nranks, uint32_t *index)
{
    size_t at = base_lower_bound(w->keys, w->n_comms, sizeof *w->keys,
                                 offsetof(struct comm_key, hash), hash);
    if (at == w->n_comms || w->keys[at].hash != hash) {
        *index = (uint32_t)w->n_comms;
        return comm_new(w, hash, nranks, at);
    }
    *index = w->keys[at].index;
    if (w->comms[*index]->nranks != nranks) {
        errno = EINVAL;
        return NULL;
    }
    return w->comms[*index];
}

/* The place's first report: it joins the rank's memberships and, while the
 * rank is active, the heaps. */
static void member_join(struct watch *w, struct comm *c, uint32_t ci, uint32_t mi, uint32_t rank)
{
    struct member *m = &c->m[mi];
    m->rank = rank;
    m->next_comm = w->rank[rank].first_comm;
    m->next_member = w->rank[rank].first_member;
    w->rank[rank].first_comm = ci;
    w->rank[rank].first_member = mi;
    c->n_reported++;
    if (!watch_rank_active(w, rank))
        return;
    for (int h = 0; h < 2; h++) {
        hset(c, h, c->heap_n[h]++, mi);
        sift_up(c, h, c->heap_n[h] - 1);
    }
    c->n_active++;
}

int watch_progress(struct watch *w, uint32_t rank, uint64_t comm, uint32_t nranks,
                   uint32_t comm_rank, uint64_t started, uint64_t completed, unsigned op,
                   int64_t now)
{
    uint32_t ci;
    if (rank >= w->n_ranks || nranks == 0 || nranks > w->n_ranks || comm_rank >= nranks) {
        errno = EINVAL;
        return -1;
    }
    struct comm *c = comm_get(w, comm, nranks, &ci);
    if (!c)
        return -1;
    struct member *m = &c->m[comm_rank];
    if (m->rank != NONE && m->rank != rank) {
        errno = EINVAL;
        return -1;
    }
    /* Counts never go back, and completed never passes started: the two
     * are read one after the other while the task runs. */
    if (started > m->count[0])
        m->count[0] = started;
    if (completed > m->count[0])
        completed = m->count[0];
    if (completed > m->count[1])
        m->count[1] = completed;
    m->op = op;
    if (m->rank == NONE)
        member_join(w, c, ci, comm_rank, rank);
    else if (m->pos[0] != NONE)
        for (int h = 0; h < 2; h++)
            sift_down(c, h, m->pos[h]);
    if (m->count[0] > c->max_started) {
        c->max_started = m->count[0];
        ring_add(&c->peers, c->max_started, now);
    }
    comm_due(w, c, now);
    return 0;
}

/* ---- verdicts ---- */

void watch_name_rank(struct watch_verdict *v, uint32_t r)
{
    uint32_t n = v->n_ranks < WATCH_RANKS_MAX ? v->n_ranks : WATCH_RANKS_MAX;
    v->n_ranks++;
    if (n == WATCH_RANKS_MAX && r > v->ranks[n - 1])
        return;
    uint32_t i = n == WATCH_RANKS_MAX ? n - 1 : n;
    for (; i > 0 && v->ranks[i - 1] > r; i--)
        v->ranks[i] = v->ranks[i - 1];
    v->ranks[i] = r;
}

/* NOT_JOINED (h 0: the active places at the lowest started) or
 * NOT_COMPLETED (h 1: those at the lowest completed) of communicator c. */
static void comm_verdict(const struct watch *w, const struct comm *c, int h,
                         struct watch_verdict *v)
{
    uint64_t lo = hkey(c, h, 0), closest = UINT64_MAX;
    v->kind = h ? WATCH_NOT_COMPLETED : WATCH_NOT_JOINED;
    v->comm = c->hash;
    v->seq = lo + 1;
    v->since_ms = ring_time(h ? &c->all : &c->peers, lo + 1);
    v->peers = h ? c->nranks : 0;
    for (uint32_t i = 0; i < c->nranks; i++) {
        const struct member *m = &c->m[i];
        if (m->rank == NONE)
            continue;
        if (m->pos[h] != NONE && m->count[h] == lo)
            watch_name_rank(v, m->rank);
        if (!h && m->count[0] > lo)
            v->peers++;
        /* Collective lo + 1's op is the last one started by a place that
         * has started no further. */
        if (m->count[0] > lo && m->count[0] < closest && (!h || m->pos[1] != NONE)) {
            closest = m->count[0];
            v->op = m->op;
        }
    }
    v->node = w->rank_node[v->ranks[0]];
}

bool watch_comms_due(const struct watch *w, int64_t now, struct watch_verdict *v)
{
    const struct comm *best = NULL;
    int best_h = 0;
    for (size_t i = 0; i < w->n_comms; i++) {
        const struct comm *c = w->comms[i];
        for (int h = 1; h >= 0; h--) {
            int64_t due = h ? c->due_done : c->due_joined;
            int64_t best_due = !best ? NEVER : best_h ? best->due_done : best->due_joined;
            if (due <= now && (!best || h > best_h || (h == best_h && due < best_due))) {
                best = c;
                best_h = h;
            }
        }
    }
    if (best)
        comm_verdict(w, best, best_h, v);
    return best != NULL;
}

void watch_comms_waiting(const struct watch *w, uint32_t r, struct watch_verdict *v)
{
    int64_t first = NEVER;
    for (uint32_t ci = w->rank[r].first_comm, mi = w->rank[r].first_member; ci != NONE;) {
        const struct comm *c = w->comms[ci];
        const struct member *m = &c->m[mi];
        uint64_t lo = m->count[0];
        int64_t t = lo < c->max_started ? ring_time(&c->peers, lo + 1) : NEVER;
        if (t < first) {
            first = t;
            v->comm = c->hash;
            v->seq = lo + 1;
            v->coll_since_ms = t;
            v->peers = 0;
            uint64_t closest = UINT64_MAX;
            for (uint32_t i = 0; i < c->nranks; i++) {
                const struct member *p = &c->m[i];
                if (p->rank == NONE || p->count[0] <= lo)
                    continue;
                v->peers++;
                if (p->count[0] < closest) { /* the op of collective lo + 1, as above */
                    closest = p->count[0];
                    v->op = p->op;
                }
            }
        }
        ci = m->next_comm;
        mi = m->next_member;
    }
}

int64_t watch_comms_next(const struct watch *w)
{
    int64_t t = NEVER;
    for (size_t i = 0; i < w->n_comms; i++) {
        const struct comm *c = w->comms[i];
        t = c->due_joined < t ? c->due_joined : t;
        t = c->due_done < t ? c->due_done : t;
    }
    return t;
}

/* t moved gap later, NEVER kept. */
static int64_t later(int64_t t, int64_t gap)
{
    return t == NEVER ? NEVER : watch_after(t, gap);
}

void watch_comms_pause(struct watch *w, int64_t gap_ms)
{
    for (size_t i = 0; i < w->n_comms; i++) {
        struct comm *c = w->comms[i];
        for (uint32_t k = 0; k < c->peers.n; k++)
            c->peers.r[k].t = later(c->peers.r[k].t, gap_ms);
        for (uint32_t k = 0; k < c->all.n; k++)
            c->all.r[k].t = later(c->all.r[k].t, gap_ms);
        c->due_joined = later(c->due_joined, gap_ms);
        c->due_done = later(c->due_done, gap_ms);
    }
}
