/* watch_sim.c - the step watch's store holder at 1,024 and 16,384 nodes,
 * simulated: the real watch (runtime/watch/watch.h) fed in the order the
 * holder feeds it (runtime/coord/watch_holder.c) with what the node agents
 * send (runtime/agent/node_watch.c, node_tree.c), on a simulated clock (us).
 * Nothing here opens a socket; the CPU time measured is the watch's own.
 * docs/performance.md ("The step watch") gives the model in full:
 * - NODES nodes of 8 ranks, each rank in the world and a group ("node": one
 *   a node; "dp": one a local index), a loop of RATE steps a second from
 *   2 s (a group collective, then the world's), ranks up to 5 ms apart.
 * - The agents' tree (watch_tree.h) of fanout WATCH_SIM_FANOUT (environment;
 *   128 by default, the watch without the store; 0: every agent at the
 *   holder, the store's shape): LAT_US a hop; the agents at the top join
 *   and beat; a parent keeps its kids' beats and reports a silent kid
 *   (STORE_WATCH_LOST) at its first tick WATCH_LOST_MS after it last heard
 *   it. The parents' own work is not simulated.
 * - Each agent joins within the first second, then every second sends a
 *   beat, STOP frames and a COLL frame per changed communicator
 *   (node_watch_tick's order); a rank's end goes at once.
 * - The holder's loop (store_service.c): a turn takes every frame that has
 *   arrived, then watch_holder_tick's part; it costs the watch's measured
 *   CPU plus the net's modelled work (WAKE_US a turn, READ_US a burst,
 *   FRAME_US a frame; 14 10 2 by default, bench/coord-cost.sh).
 * - The cases, at 10.37 s: healthy (35 s, no verdict may come), silent (the
 *   victim's node sends nothing more), killed (signal 9; the others exit 1
 *   within 0.1-0.6 s), hung (it starts no further collective), stopped
 *   (the same, state T). The victim: rank 8 x NODES / 2 + 3.
 * Prints one Markdown row (watch-sim.sh's header names its columns); exits
 * 1 when a healthy run gets a verdict or a case gets none or the wrong one.
 *
 *   bench/watch_sim NODES [node|dp [CASE [RATE [STALL_S [WAKE_US READ_US FRAME_US]]]]]
 *   (node, healthy, 20 collectives a second a communicator, 30, 14 10 2) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "watch.h"
#include "watch_tree.h"

#define PER_NODE 8
#define LAT_US 100
#define START_US 2000000  /* the training loop's first collective */
#define WARM_S 5          /* costs are averaged from here */
#define HEALTHY_S 35
#define EVENT_US 10370000 /* the case's event */
#define MAX_S 4096
#define SOCKETS_BOUND 1100

enum kase { HEALTHY, SILENT, KILLED, HUNG, STOPPED };
static const char *const kase_names[] = {"healthy", "silent", "killed", "hung", "stopped"};
enum ev_kind { EV_JOIN, EV_TICK, EV_KILL, EV_CASCADE, EV_LOST };
enum frame_op { F_JOIN, F_NODE, F_BEAT, F_STOP, F_COLL, F_ENDED, F_LOST };

struct ev {
    int64_t t;      /* when the agent sends */
    int64_t arrive; /* when it reaches the holder: LAT_US a hop of the tree */
    uint32_t node, kind;
};

struct frame {
    uint32_t node, rank, op, nranks, crank;
    uint64_t comm, started, completed;
    int status;
    int64_t wall; /* F_ENDED: the wall clock; F_LOST: ms since the node was heard */
};

/* What a rank's agent last sent of it. */
struct rank_agent {
    uint64_t sent[4]; /* group started, completed; world started, completed */
    bool reported, stopped, ended;
};

struct sim {
    uint32_t nodes, ranks, victim;
    uint32_t fanout;    /* the agents' tree's (watch_tree.h); 0: every agent at the holder */
    uint32_t *top;      /* per node: the node whose agent's link to the holder carries it */
    uint32_t *hops;     /* per node: hops to the holder (1: its agent dials it) */
    bool dp;
    enum kase kase;
    int64_t period, stall_ms, end;
    double wake_us, read_us, frame_us;
    struct watch *w;
    struct ev *heap;
    size_t n_heap;
    struct frame *f;
    size_t n_f, cap_f;
    struct rank_agent *ra;
    int64_t t, next_beat, next_due;
    double cpu[MAX_S], net[MAX_S], check_cpu; /* s, by simulated second */
    long frames, bursts, turns, beats;        /* from WARM_S */
    double clock_cost;
    bool got;
    struct watch_verdict v;
    int64_t verdict_at;
    uint32_t holder_links, agent_links; /* the holder's, and the most an agent holds */
    int64_t lost_ago;                   /* SILENT below the holder: the parent's report */
};

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static double clock_s(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* ---- the event queue: a binary heap by time ---- */

static bool ev_before(const struct ev *a, const struct ev *b)
{
    return a->arrive < b->arrive || (a->arrive == b->arrive && a->node < b->node);
}

/* Queues what node's agent sends at t; from sender's node (node's own, or
 * for EV_LOST its parent's) it takes LAT_US a hop to the holder. */
static void ev_push(struct sim *s, int64_t t, uint32_t node, uint32_t kind, uint32_t sender)
{
    size_t i = s->n_heap++;
    struct ev e = {t, t + (int64_t)s->hops[sender] * LAT_US, node, kind};
    while (i > 0 && ev_before(&e, &s->heap[(i - 1) / 2])) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = e;
}

static struct ev ev_pop(struct sim *s)
{
    struct ev top = s->heap[0], last = s->heap[--s->n_heap];
    size_t i = 0;
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= s->n_heap)
            break;
        if (k + 1 < s->n_heap && ev_before(&s->heap[k + 1], &s->heap[k]))
            k++;
        if (!ev_before(&s->heap[k], &last))
            break;
        s->heap[i] = s->heap[k];
        i = k;
    }
    if (s->n_heap)
        s->heap[i] = last;
    return top;
}


/* ---- the ranks' counts ---- */

/* Rank r's counts at t in a healthy run: group started, completed, world
 * started, completed. */
static void healthy(const struct sim *s, uint32_t r, int64_t t, uint64_t c[4])
{
    int64_t u = t - START_US - (int64_t)(mix(r) % 5000);
    memset(c, 0, 4 * sizeof *c);
    if (u < 0)
        return;
    uint64_t k = (uint64_t)(u / s->period);
    int64_t f = u % s->period, done = s->period / 5, half = s->period / 2;
    c[0] = k + 1;
    c[1] = k + (f >= done);
    c[2] = k + (f >= half);
    c[3] = k + (f >= half + done);
}

static bool same_group(const struct sim *s, uint32_t a, uint32_t b)
{
    return s->dp ? a % PER_NODE == b % PER_NODE : a / PER_NODE == b / PER_NODE;
}

/* Where rank r ends up waiting once the victim starts nothing more: the
 * victim's own collectives complete; its group's peers wait in the next
 * group collective it does not start, every other rank in the next world
 * one. */
static void frozen(const struct sim *s, uint32_t r, uint64_t f[4])
{
    uint64_t v[4];
    healthy(s, s->victim, EVENT_US, v);
    uint64_t a = v[0];
    if (v[2] == a) { /* its last was world collective a */
        uint64_t vic[4] = {a, a, a, a}, peer[4] = {a + 1, a, a, a},
                 other[4] = {a + 1, a + 1, a + 1, a};
        memcpy(f, r == s->victim ? vic : same_group(s, r, s->victim) ? peer : other,
               sizeof vic);
    } else { /* its last was group collective a */
        uint64_t vic[4] = {a, a, a - 1, a - 1}, other[4] = {a, a, a, a - 1};
        memcpy(f, r == s->victim ? vic : other, sizeof vic);
    }
}

static void counts(const struct sim *s, uint32_t r, int64_t t, uint64_t c[4])
{
    if (s->kase == SILENT && t >= EVENT_US)
        t = EVENT_US; /* every rank stops in the collective it is in */
    healthy(s, r, t, c);
    if ((s->kase != HUNG && s->kase != STOPPED) || t < EVENT_US)
        return;
    uint64_t f[4];
    frozen(s, r, f);
    for (int i = 0; i < 4; i++)
        c[i] = c[i] < f[i] ? c[i] : f[i];
}

/* ---- the agents ---- */

static struct frame *frame_add(struct sim *s, uint32_t node, uint32_t op, uint32_t rank)
{
    if (s->n_f == s->cap_f) {
        s->cap_f = s->cap_f ? 2 * s->cap_f : 4096;
        if (!(s->f = realloc(s->f, s->cap_f * sizeof *s->f))) {
            fprintf(stderr, "watch_sim: out of memory\n");
            exit(2);
        }
    }
    struct frame *f = &s->f[s->n_f++];
    *f = (struct frame){.node = node, .op = op, .rank = rank};
    return f;
}

/* Rank r's COLL frames for the counts c that changed since last sent. */
static void coll_frames(struct sim *s, uint32_t r, const uint64_t c[4])
{
    struct rank_agent *ra = &s->ra[r];
    for (int i = 0; i < 2; i++) {
        if (ra->reported && c[2 * i] == ra->sent[2 * i] && c[2 * i + 1] == ra->sent[2 * i + 1])
            continue;
        struct frame *f = frame_add(s, r / PER_NODE, F_COLL, r);
        bool group = i == 0;
        f->comm = group ? mix(s->dp ? 1000000 + r % PER_NODE : 2000000 + r / PER_NODE)
                        : mix(3000000);
        f->nranks = !group ? s->ranks : s->dp ? s->nodes : PER_NODE;
        f->crank = !group ? r : s->dp ? r / PER_NODE : r % PER_NODE;
        f->started = c[2 * i];
        f->completed = c[2 * i + 1];
        ra->sent[2 * i] = c[2 * i];
        ra->sent[2 * i + 1] = c[2 * i + 1];
    }
    ra->reported = true;
}

/* Node n's agent at its second's tick: node_watch_tick's frames. */
static void agent_tick(struct sim *s, uint32_t n, int64_t t)
{
    if (s->kase == SILENT && n == s->victim / PER_NODE && t >= EVENT_US)
        return; /* silent from now on, and never heard again */
    if (s->hops[n] == 1) /* A parent keeps its kids' beats. */
        frame_add(s, n, F_BEAT, n);
    for (uint32_t r = n * PER_NODE; r < (n + 1) * PER_NODE; r++) {
        struct rank_agent *ra = &s->ra[r];
        if (ra->ended)
            continue;
        bool stopped = s->kase == STOPPED && r == s->victim && t >= EVENT_US;
        if (stopped != ra->stopped) {
            frame_add(s, n, F_STOP, r)->status = stopped;
            ra->stopped = stopped;
        }
        if (t < START_US || !s->period)
            continue;
        uint64_t c[4];
        counts(s, r, t, c);
        coll_frames(s, r, c);
    }
    ev_push(s, t + 1000000, n, EV_TICK, n);
}

/* Ends rank r at t with status: its agent reports it at once and no more. */
static void rank_end(struct sim *s, uint32_t r, int status, int64_t t)
{
    struct frame *f = frame_add(s, r / PER_NODE, F_ENDED, r);
    f->status = status;
    f->wall = 1700000000000 + t / 1000;
    s->ra[r].ended = true;
}

/* Turns each event that has reached the holder into its frames; counts
 * the bursts. */
static long collect(struct sim *s)
{
    long bursts = 0;
    while (s->n_heap && s->heap[0].arrive <= s->t) {
        struct ev e = ev_pop(s);
        bursts++;
        if (e.kind == EV_JOIN) {
            if (s->hops[e.node] == 1)
                frame_add(s, e.node, F_JOIN, e.node);
            frame_add(s, e.node, F_NODE, e.node);
            ev_push(s, e.t + 1000000, e.node, EV_TICK, e.node);
        } else if (e.kind == EV_TICK) {
            agent_tick(s, e.node, e.t);
        } else if (e.kind == EV_KILL) {
            rank_end(s, s->victim, 9, e.t);
        } else if (e.kind == EV_LOST) {
            frame_add(s, e.node, F_LOST, e.node)->wall = s->lost_ago;
        } else {
            for (uint32_t r = e.node * PER_NODE; r < (e.node + 1) * PER_NODE; r++)
                if (!s->ra[r].ended)
                    rank_end(s, r, 1 << 8, e.t);
        }
    }
    return bursts;
}

/* ---- the holder ---- */

/* One frame, as watch_holder_frame hands it to the watch. */
static void handle(struct sim *s, const struct frame *f, int64_t now)
{
    if (f->op == F_JOIN) {
        watch_node_joined(s->w, f->node, now);
        return;
    }
    watch_node_heard(s->w, s->top[f->node], now);
    if (f->op == F_LOST)
        watch_node_lost(s->w, f->node, false, now - f->wall, now);
    else if (f->op == F_STOP)
        watch_task_stopped(s->w, f->rank, f->status == 1, now);
    else if (f->op == F_COLL && watch_progress(s->w, f->rank, f->comm, f->nranks, f->crank,
                                               f->started, f->completed, WATCH_OP_ALLREDUCE,
                                               now) < 0)
        fprintf(stderr, "watch_sim: a report of rank %u was refused\n", f->rank);
    else if (f->op == F_ENDED)
        watch_task_ended(s->w, f->rank, f->status, f->wall, now);
    if ((f->op == F_ENDED && f->status != 0) || f->op == F_LOST)
        s->next_due = now; /* A death or a loss is looked at as it comes, as the holder does. */
}

/* watch_holder_tick's part: the beats due (counted), the verdict, the next
 * wake-up. Returns the beats sent. */
static long holder_tick(struct sim *s, int64_t now)
{
    long beats = 0;
    if (now >= s->next_beat) {
        beats = s->holder_links;
        s->next_beat = now + WATCH_BEAT_MS;
    }
    /* The holder looks at the watch when it may have something due, and
     * at least every WATCH_LOOK_MS (watch_holder.c: 100 ms). */
    if (now < s->next_due)
        return beats;
    struct watch_verdict v;
    if (!s->got && watch_check(s->w, now, &v) == 1) {
        s->got = true;
        s->v = v;
    }
    int64_t due = watch_next(s->w, now);
    s->next_due = due < now + 100 ? due : now + 100;
    return beats;
}

/* One turn of the holder's loop at s->t; returns its cost (us). */
static double turn(struct sim *s)
{
    s->n_f = 0;
    long bursts = collect(s);
    double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    for (size_t i = 0; i < s->n_f; i++)
        handle(s, &s->f[i], s->t / 1000);
    double c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    double net = s->wake_us + s->read_us * (double)bursts + s->frame_us * (double)s->n_f;
    double frames_us = (c1 - c0 - s->clock_cost) * 1e6 + net;
    long beats = holder_tick(s, (s->t + (int64_t)frames_us) / 1000);
    double c2 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    net += (s->read_us + s->frame_us) * (double)beats;
    double cpu = c2 - c0 - 2 * s->clock_cost;
    cpu = cpu > 0 ? cpu : 0;
    int64_t sec = s->t / 1000000;
    if (sec < MAX_S) {
        s->cpu[sec] += cpu;
        s->net[sec] += net / 1e6;
    }
    if (sec >= WARM_S) {
        s->check_cpu += c2 - c1 > s->clock_cost ? c2 - c1 - s->clock_cost : 0;
        s->frames += (long)s->n_f;
        s->bursts += bursts;
        s->beats += beats;
        s->turns++;
    }
    return cpu * 1e6 + net;
}

/* The holder's loop until the end or the verdict. */
static void run(struct sim *s)
{
    s->next_due = 0;
    while (s->t < s->end) {
        double cost = turn(s);
        if (s->got) {
            s->verdict_at = s->t + (int64_t)cost;
            return;
        }
        int64_t next = s->next_beat * 1000;
        if (s->next_due < INT64_MAX / 1000 && s->next_due * 1000 < next)
            next = s->next_due * 1000;
        if (s->n_heap && s->heap[0].arrive < next)
            next = s->heap[0].arrive;
        int64_t busy = s->t + (int64_t)(cost + 0.5);
        s->t = busy > next ? busy : next;
    }
}

/* ---- the report ---- */

/* What the design gives for the case, from the event (s). */
static void expected(const struct sim *s, char *b, size_t n)
{
    double stall = (double)s->stall_ms / 1000;
    bool deep = s->hops[s->victim / PER_NODE] > 1;
    if (s->kase == HEALTHY)
        snprintf(b, n, "no verdict in %d s", HEALTHY_S);
    else if (s->kase == SILENT) /* below the top: at its parent's next tick */
        snprintf(b, n, "%.0f-%.0f (10 s after its last beat%s)",
                 (WATCH_LOST_MS - WATCH_BEAT_MS) / 1000.0,
                 (WATCH_LOST_MS + (deep ? WATCH_BEAT_MS : 0)) / 1000.0,
                 deep ? ", at its parent's tick" : "");
    else if (s->kase == KILLED)
        snprintf(b, n, "%.1f (the settle window)", WATCH_SETTLE_MS / 1000.0);
    else if (s->kase == HUNG && !s->period)
        snprintf(b, n, "no verdict (no counts)");
    else
        snprintf(b, n, "%.0f-%.0f (stall + up to a report)", stall, stall + 1);
}

/* Whether the verdict is the one the case must give, and names the victim. */
static bool right(const struct sim *s)
{
    const struct watch_verdict *v = &s->v;
    bool named = false;
    for (uint32_t i = 0; i < v->n_ranks && i < WATCH_RANKS_MAX; i++)
        named = named || v->ranks[i] == s->victim;
    switch (s->kase) {
    case HEALTHY: return !s->got;
    case SILENT: return s->got && v->kind == WATCH_NODE_LOST && v->node == s->victim / PER_NODE;
    case KILLED: return s->got && v->kind == WATCH_DIED && v->n_ranks == 1 && named;
    case HUNG: return s->period ? s->got && v->kind == WATCH_NOT_JOINED && named : !s->got;
    default: return s->got && (v->kind == WATCH_STOPPED || v->kind == WATCH_NOT_JOINED) && named;
    }
}

static const char *const kind_names[] = {"none", "died", "node_lost", "stopped",
                                         "not_joined", "not_completed"};

static void report(const struct sim *s, double wall)
{
    int64_t last = s->t / 1000000 < MAX_S ? s->t / 1000000 : MAX_S - 1;
    double sum = 0, net = 0, most = 0, secs = (double)(s->t - WARM_S * 1000000) / 1e6;
    for (int64_t i = WARM_S; i <= last; i++) {
        sum += s->cpu[i];
        net += s->net[i];
        most = s->cpu[i] > most ? s->cpu[i] : most;
    }
    char exp[64], got[96] = "none", at[32] = "-";
    expected(s, exp, sizeof exp);
    if (s->got) {
        snprintf(got, sizeof got, "%s: %" PRIu32 " rank%s from %" PRIu32, kind_names[s->v.kind],
                 s->v.n_ranks, s->v.n_ranks == 1 ? "" : "s", s->v.ranks[0]);
        snprintf(at, sizeof at, "%.3f", (double)(s->verdict_at - EVENT_US) / 1e6);
    }
    char comms[64] = "none (no NCCL)";
    if (s->period)
        snprintf(comms, sizeof comms, "%s: %u", s->dp ? "world + 8 across nodes" : "world + 1 a node",
                 s->dp ? 9 : s->nodes + 1);
    printf("| %u | %u | %s | %s | %.0f | %.0f | %.0f | %.1f | %.1f | %.2f %% | %.2f %% | "
           "%.2f %% | %.1f %% | %.1f %% | %s | %s | %s | %s | %u, %u (%s ~%u) | %.1f |\n",
           s->nodes, s->ranks, comms, kase_names[s->kase], (double)s->frames / secs,
           (double)s->beats / secs, (double)s->turns / secs,
           s->turns ? (double)s->frames / (double)s->turns : 0.0, s->cpu[START_US / 1000000] * 1e3,
           100 * sum / secs, 100 * s->check_cpu / secs, 100 * most, 100 * net / secs,
           100 * (sum + net) / secs, at, exp, got, right(s) ? "yes" : "NO", s->holder_links,
           s->agent_links,
           s->holder_links > SOCKETS_BOUND || s->agent_links > SOCKETS_BOUND ? "over" : "within",
           SOCKETS_BOUND, wall);
}

/* The agents' tree of WATCH_SIM_FANOUT: each node's top and hops, and the
 * holder's and the busiest agent's links. 0, or -1 when out of memory. */
static int tree(struct sim *s)
{
    const char *f = getenv("WATCH_SIM_FANOUT");
    uint32_t first;
    s->fanout = f && *f ? (uint32_t)strtoul(f, NULL, 10) : WATCH_TREE_FANOUT;
    if (!(s->top = malloc(s->nodes * sizeof *s->top)) ||
        !(s->hops = malloc(s->nodes * sizeof *s->hops)))
        return -1;
    s->holder_links = watch_tree_kids(s->fanout, s->nodes, WATCH_TREE_TOP, &first);
    s->agent_links = 1;
    for (uint32_t n = 0; n < s->nodes; n++) {
        uint32_t k = watch_tree_kids(s->fanout, s->nodes, n, &first) + 1;
        s->agent_links = k > s->agent_links ? k : s->agent_links;
        s->hops[n] = watch_tree_depth(s->fanout, n) + 1;
        for (s->top[n] = n; watch_tree_up(s->fanout, s->top[n]) != WATCH_TREE_TOP;)
            s->top[n] = watch_tree_up(s->fanout, s->top[n]);
    }
    return 0;
}

static int setup(struct sim *s, int argc, char **argv)
{
    static const char *const usage =
        "usage: watch_sim NODES (2-65536) [node|dp [healthy|silent|killed|hung|stopped "
        "[RATE [STALL_S [WAKE_US READ_US FRAME_US]]]]]\n";
    s->nodes = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 0;
    s->dp = argc > 2 && strcmp(argv[2], "dp") == 0;
    s->kase = (enum kase)5;
    for (int k = 0; k < 5; k++)
        if (strcmp(argc > 3 ? argv[3] : "healthy", kase_names[k]) == 0)
            s->kase = (enum kase)k;
    double rate = argc > 4 ? strtod(argv[4], NULL) : 20;
    s->stall_ms = (argc > 5 ? strtol(argv[5], NULL, 10) : 30) * 1000;
    s->wake_us = argc > 8 ? strtod(argv[6], NULL) : 14;
    s->read_us = argc > 8 ? strtod(argv[7], NULL) : 10;
    s->frame_us = argc > 8 ? strtod(argv[8], NULL) : 2;
    if (s->nodes < 2 || s->nodes > 65536 || (argc > 2 && !s->dp && strcmp(argv[2], "node")) ||
        s->kase > STOPPED || rate < 0 || rate > 500 || s->stall_ms < 1000 ||
        s->stall_ms > 3600000) {
        fputs(usage, stderr);
        return -1;
    }
    s->ranks = s->nodes * PER_NODE;
    s->victim = s->nodes / 2 * PER_NODE + 3;
    s->period = rate > 0 ? (int64_t)(1e6 / rate) : 0;
    s->end = s->kase == HEALTHY ? HEALTHY_S * 1000000
             : s->kase == SILENT || s->kase == KILLED ? EVENT_US + 30000000
                                                      : EVENT_US + s->stall_ms * 1000 + 20000000;
    uint32_t *rank_node = malloc(s->ranks * sizeof *rank_node);
    s->ra = calloc(s->ranks, sizeof *s->ra);
    s->heap = malloc((2 * (size_t)s->nodes + 2) * sizeof *s->heap);
    for (uint32_t r = 0; rank_node && r < s->ranks; r++)
        rank_node[r] = r / PER_NODE;
    if (rank_node && s->ra && s->heap)
        s->w = watch_new(s->ranks, s->nodes, rank_node, s->stall_ms);
    free(rank_node);
    if (!s->w || tree(s) < 0) {
        fprintf(stderr, "watch_sim: out of memory\n");
        return -1;
    }
    return 0;
}

/* The agents' connections and, by case, the victim's event and its
 * cascade. */
static void schedule(struct sim *s)
{
    for (uint32_t n = 0; n < s->nodes; n++)
        ev_push(s, (int64_t)(mix(n + 7) % 1000000), n, EV_JOIN, n);
    uint32_t vn = s->victim / PER_NODE;
    if (s->kase == SILENT && s->hops[vn] > 1) {
        /* Its parent last heard it at its last tick before the event, one hop
         * later, and reports it at its first tick 10 s after that. */
        uint32_t p = watch_tree_up(s->fanout, vn);
        int64_t jv = (int64_t)(mix(vn + 7) % 1000000), jp = (int64_t)(mix(p + 7) % 1000000);
        int64_t heard = jv + (EVENT_US - jv) / 1000000 * 1000000 + LAT_US;
        int64_t due = heard + (int64_t)WATCH_LOST_MS * 1000;
        int64_t at = jp + (due - jp + 999999) / 1000000 * 1000000;
        s->lost_ago = (at - heard) / 1000;
        ev_push(s, at, vn, EV_LOST, p);
    }
    if (s->kase != KILLED)
        return;
    ev_push(s, EVENT_US, s->victim / PER_NODE, EV_KILL, s->victim / PER_NODE);
    for (uint32_t n = 0; n < s->nodes; n++)
        ev_push(s, EVENT_US + 100000 + (int64_t)(mix(n + 11) % 500000), n, EV_CASCADE, n);
}

/* What one CLOCK_PROCESS_CPUTIME_ID reading costs, taken off each measure. */
static double clock_cost(void)
{
    double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    for (int i = 0; i < 9999; i++)
        (void)clock_s(CLOCK_PROCESS_CPUTIME_ID);
    return (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / 10000;
}

int main(int argc, char **argv)
{
    double wall0 = clock_s(CLOCK_MONOTONIC);
    static struct sim s;
    if (setup(&s, argc, argv) < 0)
        return 2;
    s.clock_cost = clock_cost();
    schedule(&s);
    run(&s);
    report(&s, clock_s(CLOCK_MONOTONIC) - wall0);
    bool ok = right(&s);
    watch_free(s.w);
    free(s.ra);
    free(s.top);
    free(s.hops);
    free(s.heap);
    free(s.f);
    return ok ? 0 : 1;
}
