/* boot_pmix.c - libcohort's PMIx bootstrap (boot_ops.h): the exchanges of
 * pmix_boot.h through the job's PMIx server, under srun --mpi=pmix. Built
 * only where PMIx is found. */
#include "boot_ops.h"

#include "pmix_boot.h"

static int pmix_open(const struct boot_args *a, void **b, struct cohort_err *err)
{
    struct pmix_boot *p;
    int rc = pmix_boot_open(a->step->rank, a->step->num_tasks, a->timeout_s, &p, err);
    *b = p;
    return rc;
}

static int pmix_exchange(void *b, const void *mine, uint32_t len, uint32_t want,
                         const char *what, uint8_t **down, uint32_t *down_len,
                         struct cohort_err *err)
{
    /* pmix_boot gets every rank's block for UINT32_MAX, only want's else
     * (none for BOOT_WANT_NONE, which is no rank) */
    return pmix_boot_exchange(b, mine, len, want == BOOT_WANT_ALL ? UINT32_MAX : want, what,
                              down, down_len, err);
}

static void pmix_set_timeout(void *b, int seconds)
{
    pmix_boot_set_timeout(b, seconds);
}

static void pmix_close(void *b)
{
    pmix_boot_close(b);
}

const struct boot_ops boot_pmix_ops = {
    .name = "pmix",
    .open = pmix_open,
    .exchange = pmix_exchange,
    .set_timeout = pmix_set_timeout,
    .close = pmix_close,
};
