/* watch_text.c - a verdict of the step watch as the user reads it
 * (watch_text.h): the line for the step's stderr and the JSON object for
 * COHORT_WATCH_FILE. Times are UTC: HH:MM:SS in the line, ISO 8601 with
 * milliseconds and a Z in the object. A node whose host name is not known
 * is "node N" in the line and null in the object's "nodes". */
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

#include "watch_text.h"

/* Text built up to a capacity, cut when it is full. */
struct text {
    char *p;
    size_t cap, len;
};

__attribute__((format(printf, 2, 3))) static void put(struct text *t, const char *fmt, ...)
{
    if (t->len + 1 >= t->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->len = t->len + (size_t)n < t->cap ? t->len + (size_t)n : t->cap - 1;
}

static const char *host_of(const struct watch_names *n, uint32_t node)
{
    if (!n->node_host || node >= n->n_nodes || !n->node_host[node] || !n->node_host[node][0])
        return NULL;
    return n->node_host[node];
}

static void put_node(struct text *t, const struct watch_names *n, uint32_t node)
{
    const char *h = host_of(n, node);
    if (h)
        put(t, "%s", h);
    else
        put(t, "node %" PRIu32, node);
}

static const char *gpu_of(const struct watch_names *n, uint32_t rank)
{
    if (!n->rank_gpu || rank >= n->n_ranks || !n->rank_gpu[rank] || !n->rank_gpu[rank][0])
        return NULL;
    return n->rank_gpu[rank];
}

static uint32_t named(const struct watch_verdict *v)
{
    return v->n_ranks < WATCH_RANKS_MAX ? v->n_ranks : WATCH_RANKS_MAX;
}

/* The node of the verdict's i-th listed rank (the verdict's node when the
 * names do not say). */
static uint32_t node_of(const struct watch_verdict *v, const struct watch_names *n, uint32_t i)
{
    return n->rank_node && v->ranks[i] < n->n_ranks ? n->rank_node[v->ranks[i]] : v->node;
}

/* Ascending ranks as ranges: "2-3,7". */
static void put_ranges(struct text *t, const uint32_t *r, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && r[j + 1] == r[j] + 1)
            j++;
        put(t, i ? ",%" PRIu32 : "%" PRIu32, r[i]);
        if (j > i)
            put(t, "-%" PRIu32, r[j]);
        i = j + 1;
    }
}

/* "rank 3 (n2, GPU 1)" or "ranks 2-3 and 5 others (n2, n3)": the GPU only
 * when one rank is named and its GPU is known. */
static void put_ranks(struct text *t, const struct watch_verdict *v, const struct watch_names *n)
{
    uint32_t shown = named(v), node[WATCH_RANKS_MAX];
    put(t, v->n_ranks == 1 ? "rank " : "ranks ");
    put_ranges(t, v->ranks, shown);
    if (v->n_ranks > shown)
        put(t, " and %" PRIu32 " others", v->n_ranks - shown);
    put(t, " (");
    for (uint32_t i = 0; i < shown; i++) {
        node[i] = node_of(v, n, i);
        bool seen = false;
        for (uint32_t k = 0; k < i; k++)
            seen = seen || node[k] == node[i];
        if (!seen) {
            put(t, i ? ", " : "");
            put_node(t, n, node[i]);
        }
    }
    if (v->n_ranks == 1 && gpu_of(n, v->ranks[0]))
        put(t, ", GPU %s", gpu_of(n, v->ranks[0]));
    put(t, ")");
}

static const char *verb(const struct watch_verdict *v)
{
    return v->n_ranks == 1 ? "has" : "have";
}

/* The lost node's ranks, ascending, malloc'd, from the names' rank_node
 * (*count of them); NULL when there is no rank_node, or no memory: the
 * verdict's ranks stand for them then. */
static uint32_t *node_ranks(const struct watch_verdict *v, const struct watch_names *n,
                            uint32_t *count)
{
    uint32_t *all = n->rank_node ? malloc(((size_t)n->n_ranks + 1) * sizeof *all) : NULL;
    *count = 0;
    for (uint32_t r = 0; all && r < n->n_ranks; r++)
        if (n->rank_node[r] == v->node)
            all[(*count)++] = r;
    if (!all)
        *count = named(v);
    return all;
}

/* The node's ranks: "ranks 2-3", "rank 2" or "no ranks". */
static void put_node_ranks(struct text *t, const struct watch_verdict *v,
                           const struct watch_names *n)
{
    uint32_t count, *all = node_ranks(v, n, &count);
    put(t, count == 0 ? "no ranks" : count == 1 ? "rank " : "ranks ");
    put_ranges(t, all ? all : v->ranks, count);
    free(all);
}

static void put_clock(struct text *t, int64_t wall_ms)
{
    time_t s = (time_t)(wall_ms / 1000);
    struct tm tm;
    if (gmtime_r(&s, &tm))
        put(t, "%02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static long long seconds(int64_t from, int64_t to)
{
    return to > from ? (long long)((to - from) / 1000) : 0;
}

static void put_death(struct text *t, const struct watch_verdict *v, const struct watch_names *n)
{
    put_ranks(t, v, n);
    if (WIFSIGNALED(v->status))
        put(t, " was killed by signal %d at ", WTERMSIG(v->status));
    else if (WIFEXITED(v->status))
        put(t, " exited with status %d at ", WEXITSTATUS(v->status));
    else
        put(t, " ended with wait status %d at ", v->status);
    put_clock(t, v->at_wall_ms);
}

static void put_comm(struct text *t, const struct watch_verdict *v)
{
    put(t, "%s #%" PRIu64 " of communicator %08" PRIx64 "...", watch_op_name(v->op), v->seq,
        v->comm >> 32);
}

void watch_line(const struct watch_verdict *v, const struct watch_names *n, char *out, size_t cap)
{
    struct text t = {out, cap, 0};
    if (cap)
        out[0] = '\0';
    long long waited = seconds(v->since_ms, v->now_ms);
    put(&t, "cohort: ");
    switch (v->kind) {
    case WATCH_DIED:
        put_death(&t, v, n);
        break;
    case WATCH_NODE_LOST:
        put(&t, "node ");
        if (host_of(n, v->node))
            put(&t, "%s", host_of(n, v->node));
        else
            put(&t, "%" PRIu32, v->node);
        put(&t, v->closed ? "'s agent (" : " (");
        put_node_ranks(&t, v, n);
        if (v->closed)
            put(&t, ") is gone");
        else
            put(&t, ") has not been heard from for %lld s", waited);
        break;
    case WATCH_STOPPED:
        put_ranks(&t, v, n);
        put(&t, " %s been stopped for %lld s", verb(v), waited);
        if (v->seq) { /* its NCCL peers wait for it in a collective */
            put(&t, " and has not joined ");
            put_comm(&t, v);
            put(&t, ", which its %" PRIu32 " peer%s started %lld s ago", v->peers,
                v->peers == 1 ? "" : "s", seconds(v->coll_since_ms, v->now_ms));
        }
        break;
    case WATCH_NOT_JOINED:
        put_ranks(&t, v, n);
        put(&t, " %s not joined ", verb(v));
        put_comm(&t, v);
        put(&t, ", which its %" PRIu32 " peer%s started %lld s ago", v->peers,
            v->peers == 1 ? "" : "s", waited);
        break;
    case WATCH_NOT_COMPLETED:
        put_comm(&t, v);
        put(&t, " was started by all %" PRIu32 " ranks but ", v->peers);
        put_ranks(&t, v, n);
        put(&t, " %s not completed it for %lld s", verb(v), waited);
        break;
    case WATCH_NONE:
        put(&t, "no verdict");
        break;
    }
    put(&t, "; ending the step");
}

static const char *kind_name(enum watch_kind k)
{
    static const char *const names[] = {"none",    "died",       "node_lost",
                                        "stopped", "not_joined", "not_completed"};
    return (unsigned)k < sizeof names / sizeof *names ? names[k] : names[0];
}

/* wall_ms as "2024-05-01T12:00:03.123Z"; null when gmtime cannot. */
static json_t *iso_time(int64_t wall_ms)
{
    char buf[64];
    time_t s = (time_t)(wall_ms / 1000);
    struct tm tm;
    if (!gmtime_r(&s, &tm))
        return json_null();
    snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)(wall_ms % 1000));
    return json_string(buf);
}

/* Sets key to value (taken) in o; a failure (no memory) marks *bad. */
static void set(json_t *o, const char *key, json_t *value, int *bad)
{
    if (json_object_set_new(o, key, value) < 0)
        *bad = 1;
}

static void add(json_t *a, json_t *value, int *bad)
{
    if (json_array_append_new(a, value) < 0)
        *bad = 1;
}

static json_t *host_json(const struct watch_names *n, uint32_t node)
{
    const char *h = host_of(n, node);
    return h ? json_string(h) : json_null();
}

/* "ranks" (a lost node's every rank), "ranks_total" when more were named
 * than listed, "nodes" and "gpu". */
static void who_json(json_t *o, const struct watch_verdict *v, const struct watch_names *n,
                     int *bad)
{
    json_t *ranks = json_array(), *nodes = json_array();
    uint32_t count = named(v), *all = NULL;
    if (v->kind == WATCH_NODE_LOST)
        all = node_ranks(v, n, &count);
    for (uint32_t i = 0; ranks && i < count; i++)
        add(ranks, json_integer(all ? all[i] : v->ranks[i]), bad);
    free(all);
    set(o, "ranks", ranks, bad);
    if (v->kind != WATCH_NODE_LOST && v->n_ranks > count)
        set(o, "ranks_total", json_integer(v->n_ranks), bad);
    uint32_t node[WATCH_RANKS_MAX + 1] = {v->node}, n_nodes = 1;
    for (uint32_t i = 0; v->kind != WATCH_NODE_LOST && i < count; i++) {
        uint32_t x = node_of(v, n, i);
        bool seen = false;
        for (uint32_t k = 0; k < n_nodes; k++)
            seen = seen || node[k] == x;
        if (!seen)
            node[n_nodes++] = x;
    }
    for (uint32_t i = 0; nodes && i < n_nodes; i++)
        add(nodes, host_json(n, node[i]), bad);
    set(o, "nodes", nodes, bad);
    const char *gpu = v->kind != WATCH_NODE_LOST && v->n_ranks == 1 ? gpu_of(n, v->ranks[0]) : NULL;
    set(o, "gpu", gpu ? json_string(gpu) : json_null(), bad);
}

static json_t *status_json(int status)
{
    if (WIFSIGNALED(status))
        return json_pack("{s:i}", "signal", WTERMSIG(status));
    if (WIFEXITED(status))
        return json_pack("{s:i}", "exit", WEXITSTATUS(status));
    return json_pack("{s:i}", "wait_status", status);
}

static json_t *collective_json(const struct watch_verdict *v)
{
    char comm[17];
    snprintf(comm, sizeof comm, "%016" PRIx64, v->comm);
    int64_t since = v->kind == WATCH_STOPPED ? v->coll_since_ms : v->since_ms;
    return json_pack("{s:s, s:I, s:s, s:I, s:I}", "op", watch_op_name(v->op), "seq",
                     (json_int_t)v->seq, "comm", comm, "peers", (json_int_t)v->peers,
                     "started_s_ago", (json_int_t)seconds(since, v->now_ms));
}

char *watch_json(const struct watch_verdict *v, const struct watch_names *n, const char *line)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = 0;
    set(o, "kind", json_string(kind_name(v->kind)), &bad);
    set(o, "job", json_integer(n->job), &bad);
    set(o, "step", json_integer(n->step), &bad);
    who_json(o, v, n, &bad);
    if (v->kind == WATCH_DIED)
        set(o, "status", status_json(v->status), &bad);
    if (v->kind == WATCH_NOT_JOINED || v->kind == WATCH_NOT_COMPLETED ||
        (v->kind == WATCH_STOPPED && v->seq))
        set(o, "collective", collective_json(v), &bad);
    int64_t at = v->kind == WATCH_DIED ? v->at_wall_ms
                                       : n->wall_now_ms - (v->now_ms - v->since_ms);
    set(o, "at", iso_time(at), &bad);
    set(o, "detected", iso_time(n->wall_now_ms), &bad);
    set(o, "line", json_string(line ? line : ""), &bad);
    char *s = bad ? NULL : json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}
