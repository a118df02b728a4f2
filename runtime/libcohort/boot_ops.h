/* boot_ops.h - libcohort's bootstrap backends behind one table of
 * operations, chosen once in cohort_init: cohort's own TCP tree (boot_tcp.c,
 * over tree.h) and the job's PMIx server (boot_pmix.c, over pmix_boot.h,
 * built only where PMIx is found). cohort.c calls the table and knows no
 * backend. */
#ifndef COHORT_BOOT_OPS_H
#define COHORT_BOOT_OPS_H

#include <stdint.h>

#include "config.h"
#include "envlist.h"
#include "error.h"
#include "step.h"

/* An exchange's want: the one rank whose block matters (a broadcast's
 * root), every rank's, or none (a barrier). */
#define BOOT_WANT_ALL UINT32_MAX
#define BOOT_WANT_NONE (UINT32_MAX - 1)

/* What a backend may need to join the step. */
struct boot_args {
    const struct cohort_step *step;
    const uint32_t *rank_node;  /* every rank's node index */
    const char *master;         /* MASTER_ADDR: the root's host */
    uint16_t port;              /* the root's TCP port */
    int timeout_s;              /* the deadline of the first exchange (the join) */
    const struct envlist *env;  /* the task's environment (COHORT_SECRET, ...) */
};

struct boot_ops {
    const char *name; /* what cohort_bootstrap() says: "tcp", "pmix" */
    /* Starts joining the step (the first exchange completes the join):
     * *b is the backend's state, for the other operations. */
    int (*open)(const struct boot_args *a, void **b, struct cohort_err *err);
    /* Contributes len bytes (mine may be NULL when len is 0) and returns in
     * *down (malloc'd) entries [u32 rank][u32 len][bytes], in rank order,
     * of the ranks with a non-empty block; a backend may leave out those
     * want does not ask for. what names the call in messages. */
    int (*exchange)(void *b, const void *mine, uint32_t len, uint32_t want, const char *what,
                    uint8_t **down, uint32_t *down_len, struct cohort_err *err);
    /* The deadline of later exchanges. */
    void (*set_timeout)(void *b, int seconds);
    /* Frees b (b is never NULL). */
    void (*close)(void *b);
};

extern const struct boot_ops boot_tcp_ops;
#ifdef HAVE_PMIX
extern const struct boot_ops boot_pmix_ops;
#define BOOT_PMIX_OPS (&boot_pmix_ops)
#else
#define BOOT_PMIX_OPS NULL /* built without PMIx */
#endif

#endif
