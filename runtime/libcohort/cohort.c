/* cohort.c - libcohort's public API (cohort.h): its version, errors with
 * their codes, options read by their size, the step from the task's
 * environment through the planner, the bootstrap backend chosen once
 * (boot_ops.h), and barrier, broadcast and allgather made of its one
 * exchange. */
#include "cohort.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot_ops.h"
#include "cohort_internal.h"
#include "cohort_self.h"
#include "envlist.h"
#include "layout.h"
#include "plan.h"
#include "ports.h"
#include "step_env.h"
#include "text_file.h"
#include "wire.h"

#define DEFAULT_TIMEOUT_S 120
#define OPTS_SIZE_MAX 4096 /* above: not a size (an unset size member) */
/* struct cohort_opts as version 1 had it: up to its timeout_s */
#define OPTS_V1_SIZE (offsetof(struct cohort_opts, timeout_s) + sizeof(int))

/* The bootstrap's codes (error.h, below libcohort) are the public ones. */
#define SAME_CODE(e, pub) ((int)(e) == (int)(pub))
_Static_assert(SAME_CODE(COHORT_E_CONFIG, COHORT_ERR_CONFIG) &&
                   SAME_CODE(COHORT_E_USAGE, COHORT_ERR_USAGE) &&
                   SAME_CODE(COHORT_E_TIMEOUT, COHORT_ERR_TIMEOUT) &&
                   SAME_CODE(COHORT_E_PEER_LOST, COHORT_ERR_PEER_LOST) &&
                   SAME_CODE(COHORT_E_AUTH, COHORT_ERR_AUTH) &&
                   SAME_CODE(COHORT_E_NETWORK, COHORT_ERR_NETWORK) &&
                   SAME_CODE(COHORT_E_RESOURCE, COHORT_ERR_RESOURCE) &&
                   SAME_CODE(COHORT_E_NCCL, COHORT_ERR_NCCL) &&
                   SAME_CODE(COHORT_E_PMIX, COHORT_ERR_PMIX) &&
                   SAME_CODE(COHORT_E_MAX, COHORT_ERR_PMIX),
               "error.h's enum cohort_err_code must match cohort.h's enum cohort_errc");

extern char **environ;

struct cohort {
    struct cohort_step step;
    uint32_t *rank_node;
    uint32_t local_size;
    char master[HOSTLIST_MAX_NAME + 1];
    const struct boot_ops *boot; /* the backend, once it is open; NULL before */
    void *boot_state;
    int timeout_s;
    bool transport_failed; /* an exchange failed: no final barrier */
    int error_code;        /* enum cohort_errc, with error */
    char error[COHORT_ERR_LEN];
};

/* The handle that joined in this process, until it is finalized: a step's
 * sockets are named after it, so one process joins it once at a time. */
static const struct cohort *joined_handle;

int cohort_api_version(void)
{
    return COHORT_API_VERSION;
}

int cohort_internal_fail(struct cohort *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->error, sizeof c->error, fmt, ap);
    va_end(ap);
    c->error_code = code;
    return -1;
}

/* c's error from err: the bootstrap's code, or for the planner's (which
 * has none: it reads the environment) configuration. */
static int fail_with(struct cohort *c, const struct cohort_err *err)
{
    return cohort_internal_fail(c, err->code ? err->code : COHORT_ERR_CONFIG, "cohort: %s",
                                err->msg);
}

int cohort_internal_read_opts(struct cohort *c, const char *func, const char *type,
                              const void *opts, size_t min, void *out, size_t out_size)
{
    memset(out, 0, out_size);
    if (!opts)
        return 0;
    char init[64]; /* struct X is initialised by X_INIT, in capitals */
    size_t n = 0, size;
    for (; type[n] && n < sizeof init - 6; n++)
        init[n] = (char)toupper((unsigned char)type[n]);
    snprintf(init + n, sizeof init - n, "_INIT");
    memcpy(&size, opts, sizeof size);
    if (size < min || size > OPTS_SIZE_MAX)
        return cohort_internal_fail(c, COHORT_ERR_USAGE,
                                    "cohort: %s: opts->size is %zu, not the size of a struct %s: "
                                    "set it to sizeof(struct %s), e.g. with %s",
                                    func, size, type, type, init);
    for (size_t i = out_size; i < size; i++)
        if (((const unsigned char *)opts)[i])
            return cohort_internal_fail(
                c, COHORT_ERR_USAGE,
                "cohort: %s: opts->size is %zu, but this libcohort's struct %s has %zu bytes "
                "and byte %zu past them is set: an option of a newer libcohort; link with "
                "that one, or leave the option 0",
                func, size, type, out_size, i);
    memcpy(out, opts, size < out_size ? size : out_size);
    return 0;
}

static int timeout_s(const struct cohort_opts *opts, const struct envlist *env,
                     struct cohort_err *err)
{
    if (opts->timeout_s > 0)
        return opts->timeout_s;
    const char *v = envlist_get(env, "COHORT_TIMEOUT");
    uint32_t s = DEFAULT_TIMEOUT_S;
    if (v && (parse_u32("COHORT_TIMEOUT", v, &s, err) < 0 || s == 0 || s > 86400))
        return cohort_fail_code(err, COHORT_E_CONFIG,
                                "COHORT_TIMEOUT='%s' is not a number of seconds (1-86400)", v);
    return (int)s;
}

/* The step, every rank's node, MASTER_ADDR and the bootstrap port. */
static int describe_step(struct cohort *c, const struct envlist *env, uint16_t *port,
                         struct cohort_err *err)
{
    const char *hostfile = step_env_hostfile(env);
    char *hostfile_text = NULL;
    if (hostfile && !(hostfile_text = read_text_file("SLURM_HOSTFILE", hostfile, true, err)))
        return -1;
    if (!envlist_get(env, "SLURM_STEP_NODELIST")) {
        free(hostfile_text);
        return cohort_fail_code(err, COHORT_E_CONFIG,
                                "not inside a Slurm job step (SLURM_STEP_NODELIST is not set): "
                                "start the program with srun");
    }
    int rc = step_from_env(&c->step, env, hostfile_text, err);
    free(hostfile_text);
    if (rc < 0)
        return -1;
    if (c->step.rank == COHORT_UNKNOWN)
        return cohort_fail_code(err, COHORT_E_CONFIG,
                                "SLURM_PROCID and SLURM_LOCALID are not set: start one process "
                                "per task with srun");
    const struct cohort_step *s = &c->step;
    c->rank_node = malloc(sizeof *c->rank_node * s->num_tasks);
    if (!c->rank_node)
        return cohort_fail_code(err, COHORT_E_RESOURCE, "out of memory");
    if (layout_rank_nodes(s, c->rank_node, err) < 0)
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
    plan_step_ports(s, range, envlist_get(env, "COHORT_SECRET"), &master, port);
    return 0;
}

/* The backend: COHORT_BOOTSTRAP=tcp|pmix, else PMIx under srun --mpi=pmix
 * (PMIX_NAMESPACE is set) where libcohort has it, else the TCP tree. NULL
 * with c's error when there is none. */
static const struct boot_ops *choose_boot(struct cohort *c, const struct envlist *env)
{
    const struct boot_ops *pmix_ops = BOOT_PMIX_OPS;
    const char *boot = envlist_get(env, "COHORT_BOOTSTRAP");
    if (boot && strcmp(boot, "tcp") != 0 && strcmp(boot, "pmix") != 0) {
        cohort_internal_fail(c, COHORT_ERR_CONFIG,
                             "cohort: COHORT_BOOTSTRAP='%s' is not tcp or pmix", boot);
        return NULL;
    }
    bool pmix = boot ? strcmp(boot, "pmix") == 0 : envlist_get(env, "PMIX_NAMESPACE") != NULL;
    if (pmix && pmix_ops)
        return pmix_ops;
    if (pmix && boot) {
        cohort_internal_fail(c, COHORT_ERR_CONFIG, "cohort: COHORT_BOOTSTRAP=pmix, but this "
                                                   "libcohort was built without PMIx");
        return NULL;
    }
    return &boot_tcp_ops;
}

/* cohort_init once c and its options are there: the step, the backend,
 * and a first barrier that completes the join. */
static int join(struct cohort *c, const struct cohort_opts *opts, const struct envlist *env)
{
    struct cohort_err err;
    uint16_t port = 0;
    if ((c->timeout_s = timeout_s(opts, env, &err)) < 0 ||
        describe_step(c, env, &port, &err) < 0)
        return fail_with(c, &err);
    const struct boot_ops *ops = choose_boot(c, env);
    if (!ops)
        return -1;
    struct boot_args args = {
        .step = &c->step,
        .rank_node = c->rank_node,
        .master = c->master,
        .port = port,
        .timeout_s = c->timeout_s,
        .env = env,
    };
    if (ops->open(&args, &c->boot_state, &err) < 0)
        return fail_with(c, &err);
    c->boot = ops;
    if (cohort_barrier(c) != 0) /* everyone joined */
        return -1;
    joined_handle = c;
    return 0;
}

int cohort_init(struct cohort **out, const struct cohort_opts *opts)
{
    struct cohort *c = calloc(1, sizeof *c);
    *out = c;
    if (!c)
        return -1;
    step_init(&c->step);
    if (joined_handle)
        return cohort_internal_fail(c, COHORT_ERR_USAGE,
                                    "cohort: cohort_init was called again while this process is "
                                    "joined: call cohort_finalize first");
    struct cohort_opts o;
    if (cohort_internal_read_opts(c, "cohort_init", "cohort_opts", opts, OPTS_V1_SIZE, &o,
                                  sizeof o) < 0)
        return -1;
    struct envlist env;
    envlist_init(&env);
    int rc = envlist_from_envp(&env, environ) < 0
                 ? cohort_internal_fail(c, COHORT_ERR_RESOURCE, "out of memory")
                 : join(c, &o, &env);
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
        return cohort_internal_fail(c, COHORT_ERR_USAGE,
                                    "cohort: cohort_set_timeout: %d is not 1-86400 seconds",
                                    seconds);
    c->timeout_s = seconds;
    if (c->boot)
        c->boot->set_timeout(c->boot_state, seconds);
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

int cohort_error_code(const struct cohort *c)
{
    return c ? c->error_code : COHORT_ERR_RESOURCE;
}

/* One exchange; the result's entries in *down. want: the rank whose block
 * matters (bcast), BOOT_WANT_ALL (allgather) or BOOT_WANT_NONE (barrier). */
static int exchange(struct cohort *c, const void *mine, size_t len, uint32_t want,
                    const char *what, uint8_t **down, uint32_t *down_len)
{
    struct cohort_err err;
    *down = NULL;
    if (len > UINT32_MAX / 2)
        return cohort_internal_fail(c, COHORT_ERR_RESOURCE, "cohort: %s: %zu bytes is too large",
                                    what, len);
    if (!c->boot)
        return cohort_internal_fail(c, COHORT_ERR_USAGE,
                                    "cohort: %s: cohort_init did not succeed", what);
    if (c->boot->exchange(c->boot_state, mine, (uint32_t)len, want, what, down, down_len,
                          &err) < 0) {
        c->transport_failed = true;
        return fail_with(c, &err);
    }
    return 0;
}

int cohort_self(struct cohort *c, const char *func, struct cohort_self *s)
{
    if (!c->boot)
        return cohort_internal_fail(c, COHORT_ERR_USAGE, "cohort: %s: cohort_init did not succeed",
                                    func);
    s->step = &c->step;
    s->rank_node = c->rank_node;
    s->master = c->master;
    return 0;
}

int cohort_self_gather(struct cohort *c, const void *mine, size_t len, uint8_t **down,
                       uint32_t *down_len)
{
    return exchange(c, mine, len, BOOT_WANT_ALL, "cohort_allgather", down, down_len);
}

const char *cohort_bootstrap(const struct cohort *c)
{
    return c->boot ? c->boot->name : "none";
}

int cohort_barrier(struct cohort *c)
{
    uint8_t *down;
    uint32_t n;
    int rc = exchange(c, NULL, 0, BOOT_WANT_NONE, "cohort_barrier", &down, &n);
    free(down);
    return rc;
}

int cohort_bcast(struct cohort *c, void *buf, size_t len, int root)
{
    if (root < 0 || (uint32_t)root >= c->step.num_tasks)
        return cohort_internal_fail(c, COHORT_ERR_USAGE,
                                    "cohort: cohort_bcast: root %d is not a rank (0-%u)", root,
                                    c->step.num_tasks - 1);
    uint8_t *down;
    uint32_t n;
    bool mine = (uint32_t)root == c->step.rank;
    if (exchange(c, mine ? buf : NULL, mine ? len : 0, (uint32_t)root, "cohort_bcast", &down,
                 &n) < 0)
        return -1;
    int rc = 0;
    if (len && (n != 8 + len || wire_get32(down) != (uint32_t)root || wire_get32(down + 4) != len))
        rc = cohort_internal_fail(c, COHORT_ERR_USAGE,
                                  "cohort: cohort_bcast: rank %d sent another length than this "
                                  "rank's %zu",
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
    if (exchange(c, in, len, BOOT_WANT_ALL, "cohort_allgather", &down, &n) < 0)
        return -1;
    int rc = 0;
    if (len && n != (uint64_t)c->step.num_tasks * (8 + len))
        rc = cohort_internal_fail(c, COHORT_ERR_USAGE,
                                  "cohort: cohort_allgather: ranks gave different lengths (this "
                                  "one %zu)",
                                  len);
    for (uint32_t r = 0; rc == 0 && len && r < c->step.num_tasks; r++) {
        const uint8_t *e = down + (size_t)r * (8 + len);
        if (wire_get32(e) != r || wire_get32(e + 4) != len)
            rc = cohort_internal_fail(c, COHORT_ERR_USAGE,
                                      "cohort: cohort_allgather: ranks gave different lengths "
                                      "(this one %zu)",
                                      len);
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
    /* A local mistake (a bad argument) leaves the others waiting in this
     * barrier: only a failed exchange skips it. */
    int rc = c->boot && !c->transport_failed ? cohort_barrier(c) : 0;
    if (joined_handle == c)
        joined_handle = NULL;
    if (c->boot)
        c->boot->close(c->boot_state);
    step_free(&c->step);
    free(c->rank_node);
    free(c);
    return rc;
}
