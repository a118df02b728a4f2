/* plugin_args.c - strict parsing of plugstack.conf arguments. */
#include "plugin_args.h"

#include "topo_cache.h"
#include "watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const mode_names[] = {"off", "env", "train", "infer"};

int plugin_mode_parse(const char *text, enum cohort_plugin_mode *out, struct cohort_err *err)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(text, mode_names[i]) == 0) {
            *out = (enum cohort_plugin_mode)i;
            return 0;
        }
    return cohort_fail(err, "mode '%s' is not one of off, env, train, infer", text);
}

static int yes_no(const char *key, const char *v, bool *out, struct cohort_err *err)
{
    if (strcmp(v, "yes") && strcmp(v, "no"))
        return cohort_fail(err, "%s='%s' is not yes or no", key, v);
    *out = strcmp(v, "yes") == 0;
    return 0;
}

int store_arg_parse(const char *text, bool *out, struct cohort_err *err)
{
    if (!text || !strcmp(text, "yes") || !strcmp(text, "1"))
        *out = true;
    else if (!strcmp(text, "no") || !strcmp(text, "0"))
        *out = false;
    else
        return cohort_fail(err, "'%s' is not yes or no", text);
    return 0;
}

/* A number of seconds from 1 to WATCH_STALL_MAX_S: 0, or -1 (err untouched). */
static int stall_seconds(const char *v, unsigned *out)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (*v < '0' || *v > '9' || *end || n < 1 || n > WATCH_STALL_MAX_S)
        return -1;
    *out = (unsigned)n;
    return 0;
}

int watch_arg_parse(const char *text, unsigned dflt_s, unsigned *stall_s, struct cohort_err *err)
{
    if (!text || !strcmp(text, "yes"))
        *stall_s = dflt_s;
    else if (!strcmp(text, "no") || !strcmp(text, "0"))
        *stall_s = 0;
    else if (stall_seconds(text, stall_s) < 0)
        return cohort_fail(err, "'%s' is not yes, no or a number of seconds from 1 to %d "
                           "(how long a rank may keep the others waiting)",
                           text, WATCH_STALL_MAX_S);
    return 0;
}

static int mps_threads(const char *v, unsigned *out, struct cohort_err *err)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < 1 || n > 100)
        return cohort_fail(err, "threads '%s' is not a percentage from 1 to 100", v);
    *out = (unsigned)n;
    return 0;
}

/* A size as CUDA_MPS_PINNED_DEVICE_MEM_LIMIT takes it: digits and an
 * optional K, M or G. */
static int mps_mem(const char *v, char *out, size_t len, struct cohort_err *err)
{
    size_t digits = strspn(v, "0123456789");
    if (!digits || digits >= len - 1 || (v[digits] && (strchr("KMG", v[digits]) == NULL ||
                                                       v[digits + 1])))
        return cohort_fail(err, "mem '%s' is not a size such as 8G, 512M or 1048576K", v);
    snprintf(out, len, "%s", v);
    return 0;
}

int mps_args_parse(const char *text, struct mps_args *m, struct cohort_err *err)
{
    if (!text || !strcmp(text, "1") || !strcmp(text, "yes")) {
        m->on = true;
        return 0;
    }
    if (!strcmp(text, "0") || !strcmp(text, "no")) {
        m->on = false;
        return 0;
    }
    char buf[128];
    if (strlen(text) >= sizeof buf)
        return cohort_fail(err, "'%.40s...' is too long", text);
    snprintf(buf, sizeof buf, "%s", text);
    struct mps_args got = *m;
    got.on = true;
    for (char *save, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        int rc = 0;
        if (!strcmp(w, "yes") || !strcmp(w, "no"))
            got.on = !strcmp(w, "yes");
        else if (!strncmp(w, "threads=", 8))
            rc = mps_threads(w + 8, &got.threads, err);
        else if (!strncmp(w, "mem=", 4))
            rc = mps_mem(w + 4, got.mem, sizeof got.mem, err);
        else
            rc = cohort_fail(err, "'%s' is not yes, no, threads=PERCENT or mem=SIZE", w);
        if (rc)
            return rc;
    }
    *m = got;
    return 0;
}

/* The mps* keys of plugstack.conf; 1 when key is none of them. */
static int mps_key(const char *key, size_t klen, const char *v, struct plugin_args *out,
                   struct cohort_err *e)
{
    if (klen == 3 && !strncmp(key, "mps", 3))
        return yes_no("mps", v, &out->mps.on, e);
    if (klen == 11 && !strncmp(key, "mps_threads", 11))
        return mps_threads(v, &out->mps.threads, e);
    if (klen == 7 && !strncmp(key, "mps_mem", 7))
        return mps_mem(v, out->mps.mem, sizeof out->mps.mem, e);
    if (klen == 11 && !strncmp(key, "mps_control", 11)) {
        if (*v != '/' || strlen(v) >= sizeof out->mps_control)
            return cohort_fail(e, "mps_control= needs an absolute path");
        snprintf(out->mps_control, sizeof out->mps_control, "%s", v);
        return 0;
    }
    return 1;
}

/* The watch* keys of plugstack.conf; 1 when key is none of them. */
static int watch_key(const char *key, size_t klen, const char *v, struct plugin_args *out,
                     struct cohort_err *e)
{
    if (klen == 5 && !strncmp(key, "watch", 5))
        return yes_no("watch", v, &out->watch, e);
    if (klen == 11 && !strncmp(key, "watch_stall", 11)) {
        if (stall_seconds(v, &out->watch_stall_s) < 0)
            return cohort_fail(e, "'%s' is not a number of seconds from 1 to %d", v,
                               WATCH_STALL_MAX_S);
        return 0;
    }
    return 1;
}

int plugin_args_parse(int argc, char **argv, struct plugin_args *out, struct cohort_err *err)
{
    memset(out, 0, sizeof *out);
    out->default_mode = PLUGIN_MODE_OFF;
    out->ports.lo = PORTS_DEFAULT_LO;
    out->ports.hi = PORTS_DEFAULT_HI;
    out->membind = MEMBIND_BIND;
    out->watch_stall_s = WATCH_STALL_DEFAULT_S;
    snprintf(out->topology_cache, sizeof out->topology_cache, "%s", TOPO_CACHE_DIR);
    for (int i = 0; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        struct cohort_err e;
        if (!eq)
            return cohort_fail(err, "argument '%s' is not key=value", argv[i]);
        size_t klen = (size_t)(eq - argv[i]);
        const char *v = eq + 1;
        int rc = 0;
        if (klen == 7 && strncmp(argv[i], "default", 7) == 0)
            rc = plugin_mode_parse(v, &out->default_mode, &e);
        else if (klen == 10 && strncmp(argv[i], "port_range", 10) == 0)
            rc = port_range_parse(v, &out->ports, &e);
        else if (klen == 8 && strncmp(argv[i], "topology", 8) == 0) {
            if (!*v || strlen(v) >= sizeof out->topology)
                rc = cohort_fail(&e, "topology= needs a file name");
            else
                snprintf(out->topology, sizeof out->topology, "%s", v);
        } else if (klen == 14 && strncmp(argv[i], "topology_cache", 14) == 0) {
            if (strcmp(v, "no") && (*v != '/' || strlen(v) >= sizeof out->topology_cache))
                rc = cohort_fail(&e, "topology_cache= takes an absolute directory, or no");
            else
                snprintf(out->topology_cache, sizeof out->topology_cache, "%s",
                         strcmp(v, "no") ? v : "");
        } else if (klen == 7 && strncmp(argv[i], "membind", 7) == 0)
            rc = membind_parse(v, &out->membind, &e);
        else if (klen == 6 && strncmp(argv[i], "strict", 6) == 0)
            rc = yes_no("strict", v, &out->strict, &e);
        else if (klen == 5 && strncmp(argv[i], "store", 5) == 0)
            rc = yes_no("store", v, &out->store, &e);
        else if (klen == 6 && strncmp(argv[i], "secret", 6) == 0) {
            out->secret_munge = !strcmp(v, "munge");
            if (!out->secret_munge && strcmp(v, "random"))
                rc = cohort_fail(&e, "'%s' is not random or munge", v);
        } else if ((rc = mps_key(argv[i], klen, v, out, &e)) == 1 &&
                   (rc = watch_key(argv[i], klen, v, out, &e)) == 1)
            return cohort_fail(err,
                               "unknown argument '%.*s' (known: default, port_range, "
                               "topology, topology_cache, membind, strict, secret, store, "
                               "mps, mps_threads, mps_mem, mps_control, watch, watch_stall)",
                               (int)klen, argv[i]);
        if (rc)
            return cohort_fail(err, "argument '%s': %s", argv[i], e.msg);
    }
    return 0;
}
