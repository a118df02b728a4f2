/* cohort.h - libcohort: the ranks of a Slurm job step and an authenticated
 * bootstrap between them, without MPI.
 *
 *   struct cohort *c;
 *   if (cohort_init(&c, NULL) != 0) {
 *       fprintf(stderr, "%s\n", cohort_error(c));
 *       cohort_finalize(c);
 *       return 1;
 *   }
 *   ... cohort_rank(c), cohort_bcast(c, buf, len, 0) ...
 *   cohort_finalize(c);
 *
 * cohort_init reads the task's environment as srun gives it (SLURM_*, with
 * the cohort plugin's or cohort-launch's COHORT_BOOTSTRAP_PORT and
 * COHORT_SECRET) and joins the step's bootstrap: a two-level tree (tasks ->
 * their node's leader -> rank 0) whose connections all prove they hold the
 * step's secret (HMAC-SHA256). Every call waits at most COHORT_TIMEOUT
 * seconds (default 120); then, or at once when a task's connection closes,
 * every task still running fails with one sentence naming the missing ranks
 * and their hosts, available from cohort_error(), and the same code from
 * cohort_error_code(). All calls but the accessors are collective: every
 * rank of the step makes them, in the same order. Not thread-safe: one
 * thread per process calls cohort.
 *
 * For bindings (a program that loads libcohort at run time): the API has a
 * version (COHORT_API_VERSION, cohort_api_version()), every failure a code
 * beside its sentence (enum cohort_errc), and the option struct its size as
 * its first member, so that it can grow without breaking older callers. */
#ifndef COHORT_H
#define COHORT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The API's version, major * 1000 + minor. The major number changes when
 * the API changes incompatibly (a function or struct member removed or
 * changed, a code's meaning changed); the minor one when it grows
 * compatibly (a function, an option at the end of an options struct, an
 * error code). A program written for version V runs with a library of
 * version L when L / 1000 == V / 1000 and L % 1000 >= V % 1000. The
 * library's exported symbols carry the major number as their version
 * (COHORT_1). */
#define COHORT_API_VERSION_MAJOR 1
#define COHORT_API_VERSION_MINOR 3 /* 1: the work queue, cohort_work.h; 2: streams;
                                     3: a work queue's results published exactly once */
#define COHORT_API_VERSION (COHORT_API_VERSION_MAJOR * 1000 + COHORT_API_VERSION_MINOR)

/* COHORT_API_VERSION as the library was built: compare it with the value
 * a program or binding was written for. Needs no handle; never fails. */
int cohort_api_version(void);

/* What kind of failure cohort_error() describes (cohort_error_code()). A
 * failure relayed from another rank (the step fails on every rank) has the
 * code the rank that saw it gave it. Values are fixed: new codes are added
 * at the end, with a minor version. */
enum cohort_errc {
    COHORT_OK = 0,          /* no failure */
    COHORT_ERR_CONFIG = 1,  /* the task's environment or the step's set-up: not in a
                               job step, a bad SLURM_* or COHORT_* variable, no
                               COHORT_SECRET and no munge, a feature this library was
                               built without, a rank that sees the step otherwise
                               (task count, nodes, layout: not started by one srun), two
                               tasks with one rank, PMIx that does not answer or
                               disagrees with Slurm on the rank */
    COHORT_ERR_USAGE = 2,   /* a bad argument or call order on this rank: a size or
                               root out of range, cohort_init while joined, a call
                               after a failed cohort_init, opts->size wrong, lengths
                               that differ between ranks */
    COHORT_ERR_TIMEOUT = 3, /* the deadline passed: ranks did not join or reach the
                               call, a parent did not answer, a PMIx fence or the NCCL
                               communicator did not complete in time */
    COHORT_ERR_PEER_LOST = 4, /* a rank's bootstrap connection closed during a call
                                 (it exited or crashed) */
    COHORT_ERR_AUTH = 5,    /* a peer did not prove it holds the step's secret (or
                               munge's word), a bootstrap frame was changed, replayed
                               or made up on the way, a node's socket held by another
                               user */
    COHORT_ERR_NETWORK = 6, /* the bootstrap's network: the root cannot listen (its
                               port taken), a leader's socket cannot be opened,
                               MASTER_ADDR does not resolve, the parent cannot be
                               reached, another program answers on the port */
    COHORT_ERR_RESOURCE = 7, /* out of memory, too few file descriptors (ulimit -n), no
                                random bytes, a result above the bootstrap's 64 MiB
                                limit for one call */
    COHORT_ERR_NCCL = 8,    /* libcohort-nccl: CUDA or NCCL failed (no usable device,
                               an NCCL call's error) */
    COHORT_ERR_PMIX = 9,    /* the job's PMIx server failed an operation for another
                               reason than the deadline (its status is in the sentence) */
};

struct cohort;

/* Options of cohort_init. Set size to sizeof(struct cohort_opts), best
 * through COHORT_OPTS_INIT, and then the members wanted; members added in
 * later versions come at the end, and the library reads only those that
 * fit in size (the others keep their defaults). A size below the first
 * version's, or above this library's with non-zero bytes past its members
 * (an option this library does not know), fails with COHORT_ERR_USAGE.
 *   struct cohort_opts o = COHORT_OPTS_INIT;
 *   o.timeout_s = 600;
 *   cohort_init(&c, &o); */
struct cohort_opts {
    size_t size;   /* sizeof(struct cohort_opts) */
    int timeout_s; /* per call; 0: $COHORT_TIMEOUT, else 120 */
};
#define COHORT_OPTS_INIT {sizeof(struct cohort_opts), 0}

/* Joins the step. Returns 0, or -1 with the reason in cohort_error(*c)
 * and cohort_error_code(*c). *c is set in both cases (NULL only when out
 * of memory); release it with cohort_finalize(). opts may be NULL: the
 * defaults. */
int cohort_init(struct cohort **c, const struct cohort_opts *opts);

int cohort_rank(const struct cohort *c);       /* 0 .. size-1 (SLURM_PROCID) */
int cohort_size(const struct cohort *c);       /* tasks in the step */
int cohort_local_rank(const struct cohort *c); /* among this node's tasks */
int cohort_local_size(const struct cohort *c); /* tasks on this node */
int cohort_node_rank(const struct cohort *c);  /* this node's index in the step */
int cohort_node_count(const struct cohort *c); /* nodes in the step */

/* Sets the deadline of later calls (seconds, > 0), e.g. a long one for
 * cohort_init through COHORT_TIMEOUT and a short one afterwards. Local:
 * every rank should set the same. Returns -1 (COHORT_ERR_USAGE) for
 * seconds outside 1-86400. */
int cohort_set_timeout(struct cohort *c, int seconds);

/* Returns when every rank has called it. */
int cohort_barrier(struct cohort *c);

/* Copies root's len bytes into buf on every rank (len the same everywhere). */
int cohort_bcast(struct cohort *c, void *buf, size_t len, int root);

/* Gathers len bytes from every rank into out (size * len bytes, rank order)
 * on every rank. */
int cohort_allgather(struct cohort *c, const void *in, size_t len, void *out);

/* The bootstrap in use: "tcp" (cohort's own tree), "pmix" (under
 * srun --mpi=pmix, or COHORT_BOOTSTRAP=pmix), "none" before joining. */
const char *cohort_bootstrap(const struct cohort *c);

/* The last error as one sentence, or "" when none ("out of memory" for a
 * NULL c: cohort_init could not allocate it). */
const char *cohort_error(const struct cohort *c);

/* The last error's code (enum cohort_errc), set with every sentence
 * cohort_error() gives: COHORT_OK when none, COHORT_ERR_RESOURCE for a
 * NULL c. */
int cohort_error_code(const struct cohort *c);

/* Leaves the step (a last barrier when the bootstrap is sound) and frees c.
 * Returns 0, or -1 when that barrier failed. c may be NULL. */
int cohort_finalize(struct cohort *c);

#ifdef __cplusplus
}
#endif

#endif
