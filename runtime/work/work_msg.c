/* work_msg.c - encoding and checking of the work messages' payloads
 * (work_msg.h). */
#include "work_msg.h"

#include "wire.h"

size_t work_span_count(const uint64_t *ids, size_t n)
{
    size_t spans = 0;
    for (size_t i = 0; i < n; i++)
        spans += i == 0 || ids[i] != ids[i - 1] + 1;
    return spans;
}

void work_spans_put(const uint64_t *ids, size_t n, uint8_t *out)
{
    size_t i = 0;
    while (i < n) {
        size_t j = i + 1;
        while (j < n && ids[j] == ids[j - 1] + 1)
            j++;
        wire_put64(out, ids[i]);
        wire_put64(out + 8, ids[j - 1] + 1);
        out += WORK_SPAN_LEN;
        i = j;
    }
}

int work_spans_check(const uint8_t *p, uint32_t len, uint64_t n_items, uint64_t *n_ids,
                     struct cohort_err *err)
{
    *n_ids = 0;
    if (len % WORK_SPAN_LEN)
        return cohort_fail(err, "a list of ids of %u bytes, not whole spans", len);
    for (uint32_t off = 0; off < len; off += WORK_SPAN_LEN) {
        uint64_t lo = wire_get64(p + off), hi = wire_get64(p + off + 8);
        if (lo >= hi || hi > n_items)
            return cohort_fail(err, "ids %llu..%llu are not ids of this queue (0..%llu)",
                               (unsigned long long)lo, (unsigned long long)hi - 1,
                               (unsigned long long)n_items - 1);
        if (hi - lo > UINT64_MAX - *n_ids)
            return cohort_fail(err, "a list of ids that holds more than 2^64 ids");
        *n_ids += hi - lo;
    }
    return 0;
}

void work_spans_ids(const uint8_t *p, uint32_t len, uint64_t *ids)
{
    for (uint32_t off = 0; off < len; off += WORK_SPAN_LEN)
        for (uint64_t id = wire_get64(p + off), hi = wire_get64(p + off + 8); id < hi; id++)
            *ids++ = id;
}

/* n u64 values to or from 8n big-endian bytes. */
static void put_all(uint8_t *out, const uint64_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        wire_put64(out + 8 * i, v[i]);
}

static void get_all(const uint8_t *in, uint64_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        v[i] = wire_get64(in + 8 * i);
}

void work_totals_put(const struct work_totals *t, uint8_t out[WORK_TOTALS_LEN])
{
    put_all(out, (const uint64_t[]){t->total, t->committed, t->leased, t->queued, t->set_aside},
            5);
}

void work_totals_get(const uint8_t in[WORK_TOTALS_LEN], struct work_totals *t)
{
    uint64_t v[5];
    get_all(in, v, 5);
    *t = (struct work_totals){v[0], v[1], v[2], v[3], v[4]};
}

void work_verdict_put(const struct work_verdict *v, uint8_t out[WORK_VERDICT_LEN])
{
    put_all(out, (const uint64_t[]){v->taken, v->stale, v->bad, v->first_stale, v->first_bad},
            5);
}

void work_verdict_get(const uint8_t in[WORK_VERDICT_LEN], struct work_verdict *v)
{
    uint64_t a[5];
    get_all(in, a, 5);
    *v = (struct work_verdict){a[0], a[1], a[2], a[3], a[4]};
}
