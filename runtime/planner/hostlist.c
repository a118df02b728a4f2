/* hostlist.c - Slurm hostlist expressions (see hostlist.h).
 * Kept compact: an expression is a list of items, an item a list of bracket
 * groups ("dims") with literal text between them, a dim a list of numeric
 * ranges. Counting and indexing walk these without expanding hosts. */
#include "hostlist.h"

#include "base_text.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hl_range {
    uint64_t lo, hi;
    int width; /* digits of the low bound as written: zero padding */
};

struct hl_dim {
    char *prefix; /* literal text before the '[' */
    struct hl_range *ranges;
    size_t n_ranges;
    uint64_t count;
};

struct hl_item {
    struct hl_dim *dims;
    size_t n_dims;
    char *suffix; /* literal text after the last ']' (the whole name if no dims) */
    uint64_t count;
};

struct hostlist {
    struct hl_item *items;
    size_t n_items;
    uint64_t count;
};

/* A number in brackets has at most this many digits (so no overflow). */
#define HL_DIGITS 18

static bool is_sep(char c)
{
    return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int digits_of(uint64_t v)
{
    int d = 1;
    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

static void free_item(struct hl_item *it)
{
    for (size_t i = 0; i < it->n_dims; i++) {
        free(it->dims[i].prefix);
        free(it->dims[i].ranges);
    }
    free(it->dims);
    free(it->suffix);
}

void hostlist_free(struct hostlist *hl)
{
    if (!hl)
        return;
    for (size_t i = 0; i < hl->n_items; i++)
        free_item(&hl->items[i]);
    free(hl->items);
    free(hl);
}

static char *dup_span(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

/* Parses the text between '[' and ']' into dim->ranges. */
static int parse_ranges(const char *s, const char *end, const char *item,
                        struct hl_dim *dim, struct cohort_err *err)
{
    size_t cap = 1;
    for (const char *c = s; c < end; c++)
        cap += (*c == ',');
    dim->ranges = calloc(cap, sizeof *dim->ranges);
    if (!dim->ranges)
        return cohort_fail(err, "out of memory parsing hostlist");
    int blen = (int)(end - s);
    if (s == end)
        return cohort_fail(err, "hostlist '%s': empty brackets '[]'", item);
    const char *p = s;
    while (p < end) {
        struct hl_range *r = &dim->ranges[dim->n_ranges];
        const char *start = p;
        if (base_parse_decimal(&p, end, HL_DIGITS, UINT64_MAX, &r->lo, &r->width) < 0)
            goto bad;
        r->hi = r->lo;
        if (p < end && *p == '-') {
            int hw;
            p++;
            /* Slurm reads "N-" as the single host N. */
            if (p < end && *p != ',' &&
                base_parse_decimal(&p, end, HL_DIGITS, UINT64_MAX, &r->hi, &hw) < 0)
                goto bad;
        }
        if (p < end && *p != ',')
            goto bad;
        if (r->hi < r->lo)
            return cohort_fail(err, "hostlist '%s': range '%.*s' runs backwards",
                               item, (int)(p - start), start);
        if (r->hi - r->lo + 1 > HOSTLIST_MAX_RANGE)
            return cohort_fail(err,
                               "hostlist '%s': range '%.*s' has more than %u hosts",
                               item, (int)(p - start), start, HOSTLIST_MAX_RANGE);
        dim->count += r->hi - r->lo + 1;
        dim->n_ranges++;
        if (p < end) { /* at ',' */
            p++;
            if (p == end)
                return cohort_fail(err, "hostlist '%s': '[%.*s]' ends with ','",
                                   item, blen, s);
        }
        continue;
    bad:
        return cohort_fail(err,
                           "hostlist '%s': '[%.*s]' is not a list of numbers and "
                           "ranges such as [1-4,7]",
                           item, blen, s);
    }
    return 0;
}

/* Longest name this item can produce, to bound buffers. */
static size_t item_max_len(const struct hl_item *it)
{
    size_t n = strlen(it->suffix);
    for (size_t d = 0; d < it->n_dims; d++) {
        int w = 0;
        for (size_t r = 0; r < it->dims[d].n_ranges; r++) {
            const struct hl_range *rg = &it->dims[d].ranges[r];
            int dw = digits_of(rg->hi);
            int rw = rg->width > dw ? rg->width : dw;
            if (rw > w)
                w = rw;
        }
        n += strlen(it->dims[d].prefix) + (size_t)w;
    }
    return n;
}

static int parse_item(const char *s, size_t len, struct hl_item *it,
                      struct cohort_err *err)
{
    char item[96];
    snprintf(item, sizeof item, "%.*s%s", len > 80 ? 80 : (int)len, s,
             len > 80 ? "..." : "");
    const char *end = s + len, *text = s;
    size_t cap = 0;
    for (size_t i = 0; i < len; i++)
        cap += (s[i] == '[');
    if (cap) {
        it->dims = calloc(cap, sizeof *it->dims);
        if (!it->dims)
            return cohort_fail(err, "out of memory parsing hostlist");
    }
    it->count = 1;
    for (const char *p = s; p < end; p++) {
        if (*p == ']')
            return cohort_fail(err, "hostlist '%s': ']' without '['", item);
        if (*p != '[')
            continue;
        const char *close = p + 1;
        while (close < end && *close != ']' && *close != '[')
            close++;
        if (close < end && *close == '[')
            return cohort_fail(err, "hostlist '%s': nested '['", item);
        if (close == end)
            return cohort_fail(err, "hostlist '%s': '[' without matching ']'", item);
        if (it->n_dims == HOSTLIST_MAX_DIMS)
            return cohort_fail(err, "hostlist '%s': more than %d bracket groups", item,
                               HOSTLIST_MAX_DIMS);
        struct hl_dim *dim = &it->dims[it->n_dims++];
        dim->prefix = dup_span(text, (size_t)(p - text));
        if (!dim->prefix)
            return cohort_fail(err, "out of memory parsing hostlist");
        if (parse_ranges(p + 1, close, item, dim, err) < 0)
            return -1;
        if (it->count * dim->count > HOSTLIST_MAX_HOSTS)
            return cohort_fail(err, "hostlist '%s' names more than %u hosts", item,
                               HOSTLIST_MAX_HOSTS);
        it->count *= dim->count;
        p = close;
        text = close + 1;
    }
    it->suffix = dup_span(text, (size_t)(end - text));
    if (!it->suffix)
        return cohort_fail(err, "out of memory parsing hostlist");
    if (item_max_len(it) > HOSTLIST_MAX_NAME)
        return cohort_fail(err, "hostlist '%s': host names longer than %d characters",
                           item, HOSTLIST_MAX_NAME);
    return 0;
}

int hostlist_parse(const char *expr, struct hostlist **out, struct cohort_err *err)
{
    *out = NULL;
    if (!expr)
        return cohort_fail(err, "hostlist is missing");
    size_t len = strnlen(expr, HOSTLIST_MAX_INPUT + 1);
    if (len > HOSTLIST_MAX_INPUT)
        return cohort_fail(err, "hostlist is longer than %u bytes", HOSTLIST_MAX_INPUT);
    struct hostlist *hl = calloc(1, sizeof *hl);
    size_t cap = 1;
    for (size_t i = 0; i < len; i++)
        cap += is_sep(expr[i]);
    if (!hl || !(hl->items = calloc(cap, sizeof *hl->items))) {
        hostlist_free(hl);
        return cohort_fail(err, "out of memory parsing hostlist");
    }
    size_t i = 0;
    while (i < len) {
        if (is_sep(expr[i])) {
            i++;
            continue;
        }
        size_t start = i;
        int depth = 0;
        while (i < len && (depth > 0 || !is_sep(expr[i]))) {
            if (expr[i] == '[')
                depth++;
            else if (expr[i] == ']' && depth > 0)
                depth--;
            if (depth > 0 && expr[i] != ',' && is_sep(expr[i])) {
                hostlist_free(hl);
                return cohort_fail(err, "hostlist '%.*s': whitespace inside brackets",
                                   (int)(i - start + 1 > 80 ? 80 : i - start + 1),
                                   expr + start);
            }
            i++;
        }
        struct hl_item *it = &hl->items[hl->n_items++];
        if (parse_item(expr + start, i - start, it, err) < 0) {
            hostlist_free(hl);
            return -1;
        }
        if (hl->count + it->count > HOSTLIST_MAX_HOSTS) {
            hostlist_free(hl);
            return cohort_fail(err, "hostlist names more than %u hosts",
                               HOSTLIST_MAX_HOSTS);
        }
        hl->count += it->count;
    }
    *out = hl;
    return 0;
}

uint64_t hostlist_count(const struct hostlist *hl)
{
    return hl ? hl->count : 0;
}

/* Value number k of a dim, with its zero-pad width. */
static void dim_value(const struct hl_dim *dim, uint64_t k, uint64_t *v, int *width)
{
    for (size_t r = 0; r < dim->n_ranges; r++) {
        uint64_t n = dim->ranges[r].hi - dim->ranges[r].lo + 1;
        if (k < n) {
            *v = dim->ranges[r].lo + k;
            *width = dim->ranges[r].width;
            return;
        }
        k -= n;
    }
}

int hostlist_nth(const struct hostlist *hl, uint64_t n, char *buf, size_t len)
{
    if (!hl || n >= hl->count)
        return -1;
    size_t i = 0;
    while (n >= hl->items[i].count)
        n -= hl->items[i++].count;
    const struct hl_item *it = &hl->items[i];

    /* Slurm's order: the last group varies fastest, then the first, the
     * second, ..., the one before last slowest. */
    uint64_t pick[HOSTLIST_MAX_DIMS] = {0};
    uint64_t rest = n;
    size_t nd = it->n_dims;
    if (nd > 0) {
        pick[nd - 1] = rest % it->dims[nd - 1].count;
        rest /= it->dims[nd - 1].count;
        for (size_t d = 0; d + 1 < nd; d++) {
            pick[d] = rest % it->dims[d].count;
            rest /= it->dims[d].count;
        }
    }
    size_t off = 0;
    for (size_t d = 0; d < nd; d++) {
        uint64_t v = 0;
        int w = 0;
        dim_value(&it->dims[d], pick[d], &v, &w);
        int k = snprintf(buf + off, off < len ? len - off : 0, "%s%0*llu",
                         it->dims[d].prefix, w, (unsigned long long)v);
        off += (size_t)k;
    }
    int k = snprintf(buf + off, off < len ? len - off : 0, "%s", it->suffix);
    off += (size_t)k;
    return off < len ? 0 : -1;
}

int64_t hostlist_find(const struct hostlist *hl, const char *name)
{
    char buf[HOSTLIST_MAX_NAME + 1];
    for (uint64_t n = 0; n < hostlist_count(hl); n++)
        if (hostlist_nth(hl, n, buf, sizeof buf) == 0 && strcmp(buf, name) == 0)
            return (int64_t)n;
    return -1;
}
