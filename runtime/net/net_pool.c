/* net_pool.c - a loop's account of its unproven connections
 * (net_private.h): the trusted ones (this uid's, by a Unix socket or from
 * this host) in the order accepted, and the remote ones grouped by their
 * source (an IPv4 address, an IPv6 /64), each group in the order
 * accepted. A hash finds a source's group and the groups are kept in
 * lists by size, so that joining, leaving and finding whose place a new
 * connection takes all cost O(1) (amortised, for the hash's growth). */
#include "net_private.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"

void net_source_of(const struct sockaddr *sa, struct net_source *src)
{
    memset(src, 0, sizeof *src);
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        src->b[10] = src->b[11] = 0xff; /* ::ffff:a.b.c.d, as the same address by IPv6 */
        memcpy(src->b + 12, &in->sin_addr, 4);
        return;
    }
    const uint8_t *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
    static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
    /* an IPv4 address by a dual-stack listener is one source of its own; IPv6's, a /64 */
    memcpy(src->b, a, memcmp(a, mapped, sizeof mapped) == 0 ? 16 : 8);
}

static size_t hash(const struct net_pool *p, const struct net_source *s)
{
    uint64_t a, b;
    memcpy(&a, s->b, 8);
    memcpy(&b, s->b + 8, 8);
    uint64_t h = (a ^ p->seed) * 0x9e3779b97f4a7c15ull;
    h = ((h ^ (h >> 29)) ^ b) * 0xbf58476d1ce4e5b9ull;
    return (size_t)(h ^ (h >> 32)) & (p->n_buckets - 1);
}

static struct net_group *find(const struct net_pool *p, const struct net_source *s)
{
    if (!p->n_buckets)
        return NULL;
    struct net_group *g = p->buckets[hash(p, s)];
    while (g && memcmp(g->src.b, s->b, sizeof s->b) != 0)
        g = g->next;
    return g;
}

void net_pool_init(struct net_pool *p)
{
    struct cohort_err err;
    uint8_t seed[AUTH_NONCE_LEN];
    memset(p, 0, sizeof *p);
    if (auth_nonce(seed, &err) == 0) /* else 0: a guessable hash only lengthens its chains */
        memcpy(&p->seed, seed, sizeof p->seed);
}

void net_pool_free(struct net_pool *p)
{
    for (size_t i = 0; i < p->n_buckets; i++)
        for (struct net_group *g = p->buckets[i], *next; g; g = next) {
            next = g->next;
            free(g);
        }
    free(p->buckets);
    free(p->by_size);
    memset(p, 0, sizeof *p);
}

/* The hash grown to hold one group more (twice the buckets when they are
 * all in use): 0, or -1 when out of memory. */
static int hash_room(struct net_pool *p)
{
    if (p->n_groups < p->n_buckets)
        return 0;
    size_t n = p->n_buckets ? 2 * p->n_buckets : 64;
    struct net_group **b = calloc(n, sizeof *b), **old = p->buckets;
    if (!b)
        return -1;
    size_t n_old = p->n_buckets;
    p->buckets = b;
    p->n_buckets = n;
    for (size_t i = 0; i < n_old; i++)
        for (struct net_group *g = old[i], *next; g; g = next) {
            next = g->next;
            size_t h = hash(p, &g->src);
            g->next = b[h];
            b[h] = g;
        }
    free(old);
    return 0;
}

/* The lists by size grown to hold a group of count: 0, or -1. */
static int size_room(struct net_pool *p, size_t count)
{
    if (count < p->n_sizes)
        return 0;
    size_t n = p->n_sizes ? 2 * p->n_sizes : 64;
    while (n <= count)
        n *= 2;
    struct net_group **s = realloc(p->by_size, n * sizeof *s);
    if (!s)
        return -1;
    memset(s + p->n_sizes, 0, (n - p->n_sizes) * sizeof *s);
    p->by_size = s;
    p->n_sizes = n;
    return 0;
}

/* g into the list of its count (not 0), and out of it. */
static void size_in(struct net_pool *p, struct net_group *g)
{
    g->prev_size = NULL;
    g->next_size = p->by_size[g->count];
    if (g->next_size)
        g->next_size->prev_size = g;
    p->by_size[g->count] = g;
    if (g->count > p->largest)
        p->largest = g->count;
}

static void size_out(struct net_pool *p, struct net_group *g)
{
    if (g->prev_size)
        g->prev_size->next_size = g->next_size;
    else
        p->by_size[g->count] = g->next_size;
    if (g->next_size)
        g->next_size->prev_size = g->prev_size;
}

/* src's group, made (empty, hashed) when it had none; NULL when out of memory. */
static struct net_group *group_of(struct net_pool *p, const struct net_source *src)
{
    struct net_group *g = find(p, src);
    if (g || hash_room(p) < 0 || !(g = calloc(1, sizeof *g)))
        return g;
    g->src = *src;
    size_t h = hash(p, src);
    g->next = p->buckets[h];
    p->buckets[h] = g;
    p->n_groups++;
    return g;
}

static void unhash(struct net_pool *p, struct net_group *g)
{
    struct net_group **at = &p->buckets[hash(p, &g->src)];
    while (*at != g)
        at = &(*at)->next;
    *at = g->next;
    p->n_groups--;
    free(g);
}

int net_pool_join(struct net_pool *p, struct net_conn *c, const struct net_source *src)
{
    struct net_group *g = &p->trusted;
    if (src) {
        g = group_of(p, src);
        if (!g || size_room(p, g->count + 1) < 0) {
            if (g && !g->count)
                unhash(p, g);
            return -1;
        }
        if (g->count)
            size_out(p, g);
        g->count++;
        size_in(p, g);
        p->remote++;
    } else {
        g->count++;
    }
    c->group = g;
    c->older = g->newest;
    c->newer = NULL;
    if (g->newest)
        g->newest->newer = c;
    else
        g->oldest = c;
    g->newest = c;
    return 0;
}

void net_pool_leave(struct net_pool *p, struct net_conn *c)
{
    struct net_group *g = c->group;
    if (!g)
        return;
    if (c->older)
        c->older->newer = c->newer;
    else
        g->oldest = c->newer;
    if (c->newer)
        c->newer->older = c->older;
    else
        g->newest = c->older;
    c->older = c->newer = NULL;
    c->group = NULL;
    if (g == &p->trusted) {
        g->count--;
        return;
    }
    p->remote--;
    size_out(p, g);
    if (--g->count)
        size_in(p, g);
    else
        unhash(p, g);
    if (p->largest && !p->by_size[p->largest])
        p->largest--; /* g was the one largest: it holds one less now */
}

struct net_conn *net_pool_victim(const struct net_pool *p, const struct net_source *src,
                                 unsigned burst)
{
    const struct net_group *mine = src ? find(p, src) : &p->trusted, *g = NULL;
    size_t own = mine ? mine->count : 0;
    if (p->largest) /* the largest group; the newcomer's own on a tie */
        g = src && own == p->largest ? mine : p->by_size[p->largest];
    else if (!src)
        g = &p->trusted; /* a remote newcomer never takes a trusted one's place */
    if (!g || !g->oldest)
        return NULL;
    /* one accepted in this round only for a newcomer of a smaller group,
     * by two at least: never its own group's, nor one about as large */
    if (g->oldest->burst == burst && (g == mine || g->count <= (src ? own : 0) + 1))
        return NULL;
    return g->oldest;
}
