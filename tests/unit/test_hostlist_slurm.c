/* test_hostlist_slurm.c - differential test of cohort's hostlist against
 * libslurm's own: thousands of generated expressions in the grammar Slurm
 * 22.05 accepts, and node sets compressed by libslurm itself. */
#include <slurm/slurm.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "tap.h"

static unsigned rng_state = 12345;

static unsigned rnd(unsigned n)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return (rng_state >> 8) % n;
}

/* Same hosts in the same order? Returns 1 when equal. */
static int same(const char *expr, char *why, size_t len)
{
    struct hostlist *ours;
    struct cohort_err err;
    hostlist_t theirs = slurm_hostlist_create(expr);
    int rc_ours = hostlist_parse(expr, &ours, &err);
    if (!theirs || rc_ours < 0) {
        snprintf(why, len, "slurm %s, cohort %.300s", theirs ? "accepts" : "rejects",
                 rc_ours < 0 ? err.msg : "accepts");
        if (theirs)
            slurm_hostlist_destroy(theirs);
        if (rc_ours == 0)
            hostlist_free(ours);
        return !theirs && rc_ours < 0;
    }
    int eq = (uint64_t)slurm_hostlist_count(theirs) == hostlist_count(ours);
    char host[HOSTLIST_MAX_NAME + 1];
    for (uint64_t i = 0; eq && i < hostlist_count(ours); i++) {
        char *h = slurm_hostlist_shift(theirs);
        hostlist_nth(ours, i, host, sizeof host);
        eq = h && strcmp(h, host) == 0;
        if (!eq)
            snprintf(why, len, "host %llu: slurm %s, cohort %s", (unsigned long long)i,
                     h ? h : "(none)", host);
        free(h);
    }
    slurm_hostlist_destroy(theirs);
    hostlist_free(ours);
    return eq;
}

static void gen_range(char *out, size_t len)
{
    unsigned width = rnd(4), lo = rnd(120), span = rnd(4) ? rnd(12) : 0;
    if (span)
        snprintf(out, len, "%0*u-%0*u", (int)width, lo, (int)(rnd(2) ? width : 0), lo + span);
    else
        snprintf(out, len, "%0*u", (int)width, lo);
}

/* An expression Slurm 22.05 accepts: items of prefix + brackets, no suffix
 * after the last bracket (22.05 rejects that form). */
static void gen_expr(char *out, size_t len)
{
    static const char *prefixes[] = {"n", "node", "gpu-", "rack", "x", "a_b", "c1n", ""};
    /* No newline: libslurm 22.05 glues it into host names, cohort splits on
     * it (docs/planner.md); that difference is tested in test_hostlist. */
    static const char *seps[] = {",", " ", "\t", ",,", ", ", " ,"};
    out[0] = '\0';
    unsigned items = 1 + rnd(4);
    for (unsigned i = 0; i < items; i++) {
        char item[512] = "";
        unsigned dims = rnd(5) == 0 ? 2 : rnd(5) == 0 ? 0 : 1;
        for (unsigned d = 0; d < dims; d++) {
            const char *pre = prefixes[rnd(8)];
            if (d == 0 && !*pre)
                pre = "h";
            strcat(item, d ? "x" : pre);
            strcat(item, "[");
            unsigned ranges = 1 + rnd(3);
            for (unsigned r = 0; r < ranges; r++) {
                char rg[64];
                gen_range(rg, sizeof rg);
                if (r)
                    strcat(item, ",");
                strcat(item, rg);
            }
            strcat(item, "]");
        }
        if (dims == 0)
            snprintf(item, sizeof item, "%s%u", prefixes[rnd(7)], rnd(1000));
        if (i)
            strncat(out, seps[rnd(6)], len - strlen(out) - 1);
        strncat(out, item, len - strlen(out) - 1);
    }
}

int main(void)
{
    char expr[4096], why[512] = "";
    unsigned agree = 0, total = 3000;
    for (unsigned i = 0; i < total; i++) {
        gen_expr(expr, sizeof expr);
        if (same(expr, why, sizeof why))
            agree++;
        else
            printf("# differs: '%s': %s\n", expr, why);
    }
    ok(agree == total, "%u/%u generated expressions expand identically", agree, total);

    /* Node sets compressed by libslurm, expanded by cohort. */
    unsigned cagree = 0, ctotal = 1000;
    for (unsigned i = 0; i < ctotal; i++) {
        hostlist_t h = slurm_hostlist_create(NULL);
        unsigned n = 1 + rnd(200);
        for (unsigned k = 0; k < n; k++) {
            char host[64];
            snprintf(host, sizeof host, "%s%0*u", rnd(3) ? "node" : "gpu", (int)rnd(5),
                     rnd(2000));
            slurm_hostlist_push_host(h, host);
        }
        if (rnd(2))
            slurm_hostlist_uniq(h);
        char *ranged = slurm_hostlist_ranged_string_malloc(h);
        if (same(ranged, why, sizeof why))
            cagree++;
        else
            printf("# differs: '%s': %s\n", ranged, why);
        free(ranged);
        slurm_hostlist_destroy(h);
    }
    ok(cagree == ctotal, "%u/%u libslurm-compressed node lists expand identically", cagree,
       ctotal);

    /* Malformed expressions both reject. */
    static const char *bad[] = {"n[3-1]", "n[]", "n[x]", "n[1,]", "n[-1]", "n[1--3]",
                                "n[,1]", "n[1-65537]", "n[[1]]", "n[1-2]]", "n[10-9]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ok(same(bad[i], why, sizeof why), "'%s': both reject (%s)", bad[i], why);
    return tap_done();
}
