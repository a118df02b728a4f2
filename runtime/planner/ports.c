/* ports.c - rendezvous port selection (see ports.h). */
#include "ports.h"

#include "base_text.h"

#include <stdlib.h>
#include <string.h>

/* A port number (1-65535, at most 5 digits) at *p. */
static int parse_u16(const char **p, uint16_t *v)
{
    uint64_t acc;
    const char *s = *p;
    if (base_parse_decimal(&s, NULL, 5, 65535, &acc, NULL) < 0 || acc == 0)
        return -1;
    *v = (uint16_t)acc;
    *p = s;
    return 0;
}

int port_parse(const char *name, const char *text, uint16_t *out, struct cohort_err *err)
{
    const char *p = text;
    if (!text || parse_u16(&p, out) < 0 || *p)
        return cohort_fail(err, "%s='%s' is not a port number (1-65535)", name,
                           text ? text : "");
    return 0;
}

int port_range_parse(const char *text, struct port_range *out, struct cohort_err *err)
{
    const char *p = text;
    if (!text || parse_u16(&p, &out->lo) < 0 || *p++ != '-' ||
        parse_u16(&p, &out->hi) < 0 || *p)
        return cohort_fail(err, "port range '%s' is malformed; expected A-B, e.g. 20000-32767",
                           text ? text : "");
    if (out->lo < 1024 || out->hi <= out->lo)
        return cohort_fail(err, "port range '%s' must satisfy 1024 <= A < B <= 65535",
                           text);
    return 0;
}

int resv_ports_parse(const char *text, uint16_t *out, unsigned max, unsigned *n,
                     struct cohort_err *err)
{
    const char *p = text;
    *n = 0;
    while (p && *p) {
        uint16_t lo, hi;
        if (parse_u16(&p, &lo) < 0)
            goto bad;
        hi = lo;
        if (*p == '-') {
            p++;
            if (parse_u16(&p, &hi) < 0 || hi < lo)
                goto bad;
        }
        for (uint32_t v = lo; v <= hi && *n < max; v++)
            out[(*n)++] = (uint16_t)v;
        if (*p == ',')
            p++;
        else if (*p)
            goto bad;
    }
    if (*n == 0)
        goto bad;
    return 0;
bad:
    return cohort_fail(err, "SLURM_STEP_RESV_PORTS='%s' is malformed; expected ports "
                            "such as 12000-12003",
                       text ? text : "");
}

/* splitmix64 finaliser: a well-mixed hash of the job id. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void ports_hashed(uint32_t job_id, uint32_t step_id, struct port_range range,
                  uint16_t *master, uint16_t *bootstrap)
{
    uint64_t size = (uint64_t)range.hi - range.lo + 1;
    uint64_t base = mix64(job_id) % size;
    uint64_t m = (base + 2 * (uint64_t)step_id) % size;
    *master = (uint16_t)(range.lo + m);
    *bootstrap = (uint16_t)(range.lo + (m + 1) % size);
}

uint16_t ports_keyed(uint32_t job_id, uint32_t step_id, const char *secret,
                     struct port_range range, uint16_t master)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a over the secret, then mixed */
    for (const unsigned char *p = (const unsigned char *)secret; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    h = mix64(h ^ mix64(((uint64_t)job_id << 32) | step_id));
    uint64_t size = (uint64_t)range.hi - range.lo + 1;
    uint16_t port = (uint16_t)(range.lo + h % size);
    if (port == master) /* a range holds at least 2 ports */
        port = port == range.hi ? range.lo : (uint16_t)(port + 1);
    return port;
}
