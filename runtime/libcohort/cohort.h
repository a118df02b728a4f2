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
 * and their hosts, available from cohort_error(). All calls but the
 * accessors are collective: every rank of the step makes them, in the same
 * order. Not thread-safe: one thread per process calls cohort. */
#ifndef COHORT_H
#define COHORT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct cohort;

struct cohort_opts {
    int timeout_s; /* per call; 0: $COHORT_TIMEOUT, else 120 */
};

/* Joins the step. Returns 0, or -1 with the reason in cohort_error(*c).
 * *c is set in both cases (NULL only when out of memory); release it with
 * cohort_finalize(). */
int cohort_init(struct cohort **c, const struct cohort_opts *opts);

int cohort_rank(const struct cohort *c);       /* 0 .. size-1 (SLURM_PROCID) */
int cohort_size(const struct cohort *c);       /* tasks in the step */
int cohort_local_rank(const struct cohort *c); /* among this node's tasks */
int cohort_local_size(const struct cohort *c); /* tasks on this node */
int cohort_node_rank(const struct cohort *c);  /* this node's index in the step */
int cohort_node_count(const struct cohort *c); /* nodes in the step */

/* Sets the deadline of later calls (seconds, > 0), e.g. a long one for
 * cohort_init through COHORT_TIMEOUT and a short one afterwards. Local:
 * every rank should set the same. Returns -1 for seconds <= 0. */
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

/* The last error as one sentence, or "" when none. */
const char *cohort_error(const struct cohort *c);

/* Leaves the step (a last barrier when the bootstrap is sound) and frees c.
 * Returns 0, or -1 when that barrier failed. c may be NULL. */
int cohort_finalize(struct cohort *c);

#ifdef __cplusplus
}
#endif

#endif
