/* pmix_boot.c - exchanges through PMIx put/commit/fence/get (pmix_boot.h). */
#include "pmix_boot.h"

#include <pmix.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocks.h"

struct pmix_boot {
    pmix_proc_t me;
    uint32_t size;
    int timeout_s;
    unsigned seq;
};

int pmix_boot_open(uint32_t expect_rank, uint32_t size, int timeout_s, struct pmix_boot **out,
                   struct cohort_err *err)
{
    *out = NULL;
    struct pmix_boot *b = calloc(1, sizeof *b);
    if (!b)
        return cohort_fail_code(err, COHORT_E_RESOURCE, "out of memory");
    pmix_status_t rc = PMIx_Init(&b->me, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        free(b);
        return cohort_fail_code(err, COHORT_E_CONFIG,
                                "PMIx_Init failed: %s (is this srun --mpi=pmix?)",
                                PMIx_Error_string(rc));
    }
    if (b->me.rank != expect_rank) {
        uint32_t got = b->me.rank;
        PMIx_Finalize(NULL, 0);
        free(b);
        return cohort_fail_code(err, COHORT_E_CONFIG, "PMIx says rank %u, Slurm says rank %u",
                                got, expect_rank);
    }
    b->size = size;
    b->timeout_s = timeout_s;
    *out = b;
    return 0;
}

int pmix_boot_exchange(struct pmix_boot *b, const void *mine, uint32_t len,
                       uint32_t only_rank, const char *what, uint8_t **down,
                       uint32_t *down_len, struct cohort_err *err)
{
    *down = NULL;
    *down_len = 0;
    char key[PMIX_MAX_KEYLEN + 1];
    snprintf(key, sizeof key, "cohort.%u", ++b->seq);
    pmix_status_t rc = PMIX_SUCCESS;
    if (len) {
        pmix_value_t v;
        memset(&v, 0, sizeof v);
        v.type = PMIX_BYTE_OBJECT;
        v.data.bo.bytes = (char *)mine;
        v.data.bo.size = len;
        rc = PMIx_Put(PMIX_GLOBAL, key, &v);
    }
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS)
        return cohort_fail_code(err, COHORT_E_PMIX, "%s: PMIx put failed: %s", what,
                                PMIx_Error_string(rc));
    pmix_info_t info[2];
    bool collect = true;
    int timeout = b->timeout_s;
    PMIX_INFO_CONSTRUCT(&info[0]);
    PMIX_INFO_CONSTRUCT(&info[1]);
    PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout, PMIX_INT);
    pmix_proc_t all;
    PMIX_PROC_LOAD(&all, b->me.nspace, PMIX_RANK_WILDCARD);
    rc = PMIx_Fence(&all, 1, info, 2);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    if (rc != PMIX_SUCCESS)
        return cohort_fail_code(err, rc == PMIX_ERR_TIMEOUT ? COHORT_E_TIMEOUT : COHORT_E_PMIX,
                                "%s: the PMIx fence did not complete%s (%s)", what,
                                rc == PMIX_ERR_TIMEOUT ? " within the deadline" : "",
                                PMIx_Error_string(rc));
    struct blocks got = {0};
    for (uint32_t r = 0; r < b->size; r++) {
        if (only_rank != UINT32_MAX && r != only_rank)
            continue;
        pmix_proc_t p;
        PMIX_PROC_LOAD(&p, b->me.nspace, r);
        pmix_value_t *v = NULL;
        /* After a collecting fence the data is local; a rank that put
         * nothing (an empty block) has no key. */
        pmix_info_t opt;
        bool immediate = true;
        PMIX_INFO_CONSTRUCT(&opt);
        PMIX_INFO_LOAD(&opt, PMIX_IMMEDIATE, &immediate, PMIX_BOOL);
        rc = PMIx_Get(&p, key, &opt, 1, &v);
        PMIX_INFO_DESTRUCT(&opt);
        if (rc == PMIX_ERR_NOT_FOUND)
            continue;
        if (rc != PMIX_SUCCESS || !v || v->type != PMIX_BYTE_OBJECT) {
            if (v)
                PMIX_VALUE_RELEASE(v);
            free(got.data);
            return cohort_fail_code(err, COHORT_E_PMIX, "%s: PMIx get of rank %u failed: %s",
                                    what, r, PMIx_Error_string(rc));
        }
        int bad = blocks_add(&got, r, v->data.bo.bytes, (uint32_t)v->data.bo.size);
        PMIX_VALUE_RELEASE(v);
        if (bad) {
            free(got.data);
            return cohort_fail_code(err, COHORT_E_RESOURCE, "%s: out of memory", what);
        }
    }
    *down = got.data;
    *down_len = (uint32_t)got.len;
    return 0;
}

void pmix_boot_set_timeout(struct pmix_boot *b, int timeout_s)
{
    b->timeout_s = timeout_s;
}

void pmix_boot_close(struct pmix_boot *b)
{
    if (!b)
        return;
    PMIx_Finalize(NULL, 0);
    free(b);
}
