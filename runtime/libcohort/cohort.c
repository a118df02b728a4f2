/* cohort.c - libcohort's public API (cohort.h): the step from the task's
 * environment through the planner, the bootstrap tree, and barrier,
 * broadcast and allgather made of its one exchange. */
#include "cohort.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "blocks.h"
#include "config.h"
#include "cohort_internal.h"
#include "envlist.h"
#include "layout.h"
#include "plan.h"
#include "ports.h"
#include "step_env.h"
#include "text_file.h"
#include "tree.h"
#include "wire.h"
#ifdef HAVE_PMIX
#include "pmix_boot.h"
#endif

#define DEFAULT_TIMEOUT_S 120

extern char **environ;

struct cohort {
    struct cohort_step step;
    uint32_t *rank_node;
    uint32_t local_size;
    char master[HOSTLIST_MAX_NAME + 1];
    struct tree *tree;
#ifdef HAVE_PMIX
    struct pmix_boot *pmix;
#endif
    int timeout_s;
    char error[COHORT_ERR_LEN];
};

int cohort_internal_fail(struct cohort *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->error, sizeof c->error, fmt, ap);
    va_end(ap);
    return -1;
}

static int timeout_s(const struct cohort_opts *opts, const struct envlist *env,
                     struct cohort_err *err)
{
    if (opts && opts->timeout_s > 0)
        return opts->timeout_s;
    const char *v = envlist_get(env, "COHORT_TIMEOUT");
    uint32_t s = DEFAULT_TIMEOUT_S;
    if (v && (parse_u32("COHORT_TIMEOUT", v, &s, err) < 0 || s == 0 || s > 86400))
        return cohort_fail(err, "COHORT_TIMEOUT='%s' is not a number of seconds (1-86400)", v);
    return (int)s;
}

/* The step, every rank's node, MASTER_ADDR and the bootstrap port. */
static int describe_step(struct cohort *c, const struct envlist *env, uint16_t *port,
                         struct cohort_err *err)
{
    const char *hostfile = step_env_hostfile(env);
    char *hostfile_text = NULL;
    if (hostfile && !(hostfile_text = read_text_file("SLURM_HOSTFILE", hostfile, err)))
        return -1;
    if (!envlist_get(env, "SLURM_STEP_NODELIST")) {
        free(hostfile_text);
        return cohort_fail(err, "not inside a Slurm job step (SLURM_STEP_NODELIST is not "
                                "set): start the program with srun");
    }
    int rc = step_from_env(&c->step, env, hostfile_text, err);
    free(hostfile_text);
    if (rc < 0)
        return -1;
    if (c->step.rank == COHORT_UNKNOWN)
        return cohort_fail(err, "SLURM_PROCID and SLURM_LOCALID are not set: start one "
                                "process per task with srun");
    const struct cohort_step *s = &c->step;
    c->rank_node = malloc(sizeof *c->rank_node * s->num_tasks);
    uint32_t *ranks = malloc(sizeof *ranks * s->num_tasks);
    if (!c->rank_node || !ranks) {
        free(ranks);
        return cohort_fail(err, "out of memory");
    }
    for (uint32_t n = 0; n < s->num_nodes && rc == 0; n++) {
        rc = layout_node_ranks(s, n, ranks, err);
        for (uint32_t i = 0; rc == 0 && i < s->tasks_per_node[n]; i++)
            c->rank_node[ranks[i]] = n;
    }
    free(ranks);
    if (rc < 0)
        return -1;
    c->local_size = s->tasks_per_node[s->node_id];
    plan_master_addr(s, env, c->master, sizeof c->master);
    const char *boot = envlist_get(env, "COHORT_BOOTSTRAP_PORT");
    if (boot)
        return port_parse("COHORT_BOOTSTRAP_PORT", boot, port, err);
    /* Without the plugin: as the plugin would set it. */
    struct port_range range = {PORTS_DEFAULT_LO, PORTS_DEFAULT_HI};
    const char *r = envlist_get(env, "COHORT_PORT_RANGE");
    if (r && port_range_parse(r, &range, err) < 0)
        return -1;
    uint16_t master;
    plan_step_ports(s, range, &master, port);
    return 0;
}

int cohort_init(struct cohort **out, const struct cohort_opts *opts)
{
    struct cohort *c = calloc(1, sizeof *c);
    *out = c;
    if (!c)
        return -1;
    step_init(&c->step);
    struct envlist env;
    struct cohort_err err;
    struct auth_key key;
    uint16_t port = 0;
    envlist_init(&env);
    int rc = -1, secs;
    if (envlist_from_envp(&env, environ) < 0) {
        cohort_internal_fail(c, "out of memory");
        goto out;
    }
    if ((secs = c->timeout_s = timeout_s(opts, &env, &err)) < 0 ||
        describe_step(c, &env, &port, &err) < 0) {
        cohort_internal_fail(c, "cohort: %s", err.msg);
        goto out;
    }
    const char *boot = envlist_get(&env, "COHORT_BOOTSTRAP");
    if (boot && strcmp(boot, "tcp") != 0 && strcmp(boot, "pmix") != 0) {
        cohort_internal_fail(c, "cohort: COHORT_BOOTSTRAP='%s' is not tcp or pmix", boot);
        goto out;
    }
    bool pmix = boot ? strcmp(boot, "pmix") == 0 : envlist_get(&env, "PMIX_NAMESPACE") != NULL;
    if (pmix) {
#ifdef HAVE_PMIX
        if (pmix_boot_open(c->step.rank, c->step.num_tasks, secs, &c->pmix, &err) < 0) {
            cohort_internal_fail(c, "cohort: %s", err.msg);
            goto out;
        }
        rc = cohort_barrier(c);
        goto out;
#else
        if (boot) {
            cohort_internal_fail(c, "cohort: COHORT_BOOTSTRAP=pmix, but this libcohort was "
                                    "built without PMIx");
            goto out;
        }
#endif
    }
    const char *secret = envlist_get(&env, "COHORT_SECRET");
    if (!secret) {
        /* no plugin: munge vouches for the user instead, where it runs */
        const char *socket = envlist_get(&env, "COHORT_MUNGE_SOCKET");
        if (auth_key_munge(socket, &key, &err) < 0) {
            cohort_internal_fail(c, "cohort: COHORT_SECRET is not set and munge cannot stand "
                                    "in (%s): the cohort plugin sets it for every step "
                                    "(srun --cohort=env|train|infer); without the plugin, "
                                    "export a random secret of 64 hex digits before srun, "
                                    "or run munged%s",
                                 err.msg, socket ? "" : " (or set COHORT_MUNGE_SOCKET)");
            goto out;
        }
    } else if (auth_key_from_hex("COHORT_SECRET", secret, &key, &err) < 0) {
        cohort_internal_fail(c, "cohort: %s", err.msg);
        goto out;
    }
    struct tree_layout layout = {
        .rank = c->step.rank,
        .size = c->step.num_tasks,
        .num_nodes = c->step.num_nodes,
        .rank_node = c->rank_node,
        .nodes = c->step.nodes,
        .master_addr = c->master,
        .port = port,
        .job_id = c->step.job_id,
        .step_id = c->step.step_id,
    };
    rc = tree_open(&layout, &key, secs * 1000, &c->tree, &err);
    auth_key_clear(&key);
    if (rc < 0) {
        cohort_internal_fail(c, "cohort: %s", err.msg);
        goto out;
    }
    rc = cohort_barrier(c); /* everyone joined */
out:
    envlist_clear(&env);
    return rc;
}

int cohort_rank(const struct cohort *c) { return (int)c->step.rank; }
int cohort_size(const struct cohort *c) { return (int)c->step.num_tasks; }
int cohort_local_rank(const struct cohort *c) { return (int)c->step.local_rank; }
int cohort_local_size(const struct cohort *c) { return (int)c->local_size; }
int cohort_node_rank(const struct cohort *c) { return (int)c->step.node_id; }
int cohort_node_count(const struct cohort *c) { return (int)c->step.num_nodes; }

int cohort_set_timeout(struct cohort *c, int seconds)
{
    if (seconds <= 0 || seconds > 86400)
        return cohort_internal_fail(c, "cohort: cohort_set_timeout: %d is not 1-86400 seconds",
                                    seconds);
    c->timeout_s = seconds;
    if (c->tree)
        tree_set_timeout(c->tree, seconds * 1000);
#ifdef HAVE_PMIX
    if (c->pmix)
        pmix_boot_set_timeout(c->pmix, seconds);
#endif
    return 0;
}

int cohort_internal_timeout_s(const struct cohort *c)
{
    return c->timeout_s > 0 ? c->timeout_s : DEFAULT_TIMEOUT_S;
}

const char *cohort_error(const struct cohort *c)
{
    return c ? c->error : "out of memory";
}

/* One exchange; the result's entries in *down. want: the rank whose block
 * matters (bcast), WANT_ALL (allgather) or WANT_NONE (barrier). */
#define WANT_ALL UINT32_MAX
#define WANT_NONE (UINT32_MAX - 1)
static int exchange(struct cohort *c, const void *mine, size_t len, uint32_t want,
                    const char *what, uint8_t **down, uint32_t *down_len)
{
    struct cohort_err err;
    *down = NULL;
    if (len > UINT32_MAX / 2)
        return cohort_internal_fail(c, "cohort: %s: %zu bytes is too large", what, len);
#ifdef HAVE_PMIX
    if (c->pmix) {
        if (pmix_boot_exchange(c->pmix, mine, (uint32_t)len, want == WANT_ALL ? UINT32_MAX : want,
                               what, down, down_len, &err) < 0)
            return cohort_internal_fail(c, "cohort: %s", err.msg);
        return 0;
    }
#endif
    (void)want;
    if (!c->tree)
        return cohort_internal_fail(c, "cohort: %s: cohort_init did not succeed", what);
    if (tree_exchange(c->tree, mine, (uint32_t)len, what, down, down_len, &err) < 0)
        return cohort_internal_fail(c, "cohort: %s", err.msg);
    return 0;
}

const char *cohort_bootstrap(const struct cohort *c)
{
#ifdef HAVE_PMIX
    if (c->pmix)
        return "pmix";
#endif
    return c->tree ? "tcp" : "none";
}

int cohort_barrier(struct cohort *c)
{
    uint8_t *down;
    uint32_t n;
    int rc = exchange(c, NULL, 0, WANT_NONE, "cohort_barrier", &down, &n);
    free(down);
    return rc;
}

int cohort_bcast(struct cohort *c, void *buf, size_t len, int root)
{
    if (root < 0 || (uint32_t)root >= c->step.num_tasks)
        return cohort_internal_fail(c, "cohort: cohort_bcast: root %d is not a rank (0-%u)", root,
                    c->step.num_tasks - 1);
    uint8_t *down;
    uint32_t n;
    bool mine = (uint32_t)root == c->step.rank;
    if (exchange(c, mine ? buf : NULL, mine ? len : 0, (uint32_t)root, "cohort_bcast", &down,
                 &n) < 0)
        return -1;
    int rc = 0;
    if (len && (n != 8 + len || wire_get32(down) != (uint32_t)root || wire_get32(down + 4) != len))
        rc = cohort_internal_fail(c, "cohort: cohort_bcast: rank %d sent another length than this rank's %zu",
                  root, len);
    else if (len && !mine)
        memcpy(buf, down + 8, len);
    free(down);
    return rc;
}

int cohort_allgather(struct cohort *c, const void *in, size_t len, void *out)
{
    uint8_t *down;
    uint32_t n;
    if (exchange(c, in, len, WANT_ALL, "cohort_allgather", &down, &n) < 0)
        return -1;
    int rc = 0;
    if (len && n != (uint64_t)c->step.num_tasks * (8 + len))
        rc = cohort_internal_fail(c, "cohort: cohort_allgather: ranks gave different lengths (this one %zu)",
                  len);
    for (uint32_t r = 0; rc == 0 && len && r < c->step.num_tasks; r++) {
        const uint8_t *e = down + (size_t)r * (8 + len);
        if (wire_get32(e) != r || wire_get32(e + 4) != len)
            rc = cohort_internal_fail(c, "cohort: cohort_allgather: ranks gave different lengths (this one "
                         "%zu)", len);
        else
            memcpy((uint8_t *)out + (size_t)r * len, e + 8, len);
    }
    free(down);
    return rc;
}

int cohort_finalize(struct cohort *c)
{
    if (!c)
        return 0;
    bool joined = c->tree != NULL;
#ifdef HAVE_PMIX
    joined |= c->pmix != NULL;
#endif
    int rc = joined && !c->error[0] ? cohort_barrier(c) : 0;
    tree_close(c->tree);
#ifdef HAVE_PMIX
    pmix_boot_close(c->pmix);
#endif
    step_free(&c->step);
    free(c->rank_node);
    free(c);
    return rc;
}
