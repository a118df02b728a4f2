/* work_service_journal.c - the work coordinator's journal (journal.h) as it
 * uses it. The journal is replayed into the scheduler at start: committed
 * ids are never handed out again, while items set aside by an earlier step
 * are, with fresh attempts. The taken ids of each commit are added, and one
 * sync per round goes before the answers go out (group commit). A commit
 * with results is recorded with its part, the totals now and then (for
 * cohort-work status), and the items set aside are written at the end.
 * Without a journal, each function does nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "work_service_private.h"
#include "journal.h"
#include "base_sys.h"

/* A replayed gathers the committed runs replayed, to give them to the
 * scheduler in one call. */
struct replayed {
    struct work_service *co;
    struct sched_span *spans;
    size_t n, cap;
};

/* Takes one event of the journal's replay. Returns 0, or -1 with err. */
static int replay(void *ctx, const struct journal_event *ev, struct cohort_err *err)
{
    struct replayed *r = ctx;
    if (ev->kind == JOURNAL_PUBLISHED)
        return work_service_output_replayed(r->co, ev, err); /* Its ids come as committed runs. */
    if (ev->kind != JOURNAL_COMMITTED)
        return 0; /* Items set aside before are tried again in this step. */
    if (base_grow((void **)&r->spans, &r->cap, r->n + 1, sizeof *r->spans) < 0)
        return cohort_fail(err, "out of memory replaying the journal");
    r->spans[r->n++] = (struct sched_span){ev->lo, ev->hi};
    return 0;
}

int work_service_journal_open(struct work_service *co, struct cohort_err *err)
{
    if (!co->cfg->journal[0])
        return 0;
    struct replayed r = {.co = co};
    int rc = journal_open(co->cfg->journal, co->cfg->name, co->cfg->n_items, replay, &r,
                          &co->journal, err);
    if (rc == 0 && r.n && sched_mark_committed(co->s, r.spans, r.n, err) != SCHED_OK)
        rc = -1;
    free(r.spans);
    if (rc < 0)
        return -1;
    uint64_t torn = journal_torn_bytes(co->journal);
    if (torn)
        fprintf(stderr, "cohort: work '%s': the journal %s ended in a write that did not "
                        "complete (%llu bytes, its last group commit, cut short by a crash): "
                        "ignored and cut away; the items it would have committed are done "
                        "again\n",
                co->cfg->name, co->cfg->journal, (unsigned long long)torn);
    return 0;
}

int work_service_journal_add(struct work_service *co, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (co->verdicts[i] == SCHED_V_TAKEN)
            co->ids[k++] = co->ids[i];
    struct cohort_err e;
    if (journal_add_committed(co->journal, co->ids, k, &e) < 0) {
        co->journal_failed = true;
        co->journal_error = e;
        return -1;
    }
    return 0;
}

int work_service_journal_publish(struct work_service *co, uint64_t part, uint64_t data_len,
                                 uint32_t kind, const uint8_t *token, size_t n)
{
    struct cohort_err e;
    if (journal_add_published(co->journal, part, data_len, kind, token, co->ids, n, &e) < 0) {
        co->journal_failed = true;
        co->journal_error = e;
        return -1;
    }
    return 0;
}

bool work_service_journal_progress(struct work_service *co)
{
    if (!co->journal)
        return false;
    struct sched_status st;
    sched_status(co->s, &st);
    struct journal_progress p = {(uint64_t)base_wall_ms(), st.committed, st.leased,
                                 st.set_aside, co->connected};
    if ((p.committed == co->said.committed && p.leased == co->said.leased &&
                         p.set_aside == co->said.set_aside && p.workers == co->said.workers))
        return false;
    struct cohort_err e;
    if (journal_add_progress(co->journal, &p, &e) < 0) {
        co->journal_failed = true;
        co->journal_error = e;
    }
    co->said = p;
    return true;
}

int work_service_journal_sync(struct work_service *co, struct cohort_err *err)
{
    if (!co->journal)
        return 0;
    if (co->journal_failed) {
        *err = co->journal_error;
        return -1;
    }
    return journal_sync(co->journal, err);
}

int work_service_journal_end(struct work_service *co, struct cohort_err *err)
{
    if (!co->journal)
        return 0;
    work_service_journal_progress(co); /* It records the last totals. */
    size_t n = 0;
    const struct sched_aside *a = sched_set_aside(co->s, &n);
    for (size_t i = 0; i < n; i++)
        for (uint64_t id = a[i].lo; id < a[i].hi; id++)
            if (journal_add_set_aside(co->journal, id, a[i].attempts, err) < 0)
                return -1;
    return journal_sync(co->journal, err);
}

void work_service_journal_close(struct work_service *co)
{
    journal_close(co->journal);
    co->journal = NULL;
}
