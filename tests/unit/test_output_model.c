/* test_output_model.c - an exhaustive model check of the publication
 * protocol of cohort_work_commit_output (docs/work.md, "Results exactly
 * once"; runtime/libcohort/cohort_work_output.c and
 * runtime/coord/work_service_output.c), with simulated crashes at every step.
 *
 * Two workers, A and B, hold the same ids (a tail copy: the first commit
 * wins) and each offers its results. The model's steps are the code's:
 * a worker writes its offer (.offers/.tmp-TOKEN: in the offers' folder,
 * this user's, 0700) and sends it; a stranger (another user, with
 * fs.protected_hardlinks=0) may hard-link any offer it can reach, which
 * is none in that folder; the coordinator takes an offer (one with a
 * stranger's second link is refused: its ids go back, its worker removes
 * it; else, the ids still uncommitted: commit in memory and record it in
 * the journal's buffer; else remove the offer and answer stale),
 * syncs the journal (group commit: whatever is buffered), links each
 * synced part to part-N, unlinks its offer, answers. Any worker may die
 * after any step; the coordinator may die after any step, losing its
 * memory (queue of offers, buffer, links to do); then the next step over
 * the journal recovers (each durable record's part linked from its offer
 * when missing, the offer removed; every other offer removed) and a fresh
 * worker does the ids left. Every interleaving is explored. In each end
 * state: the ids' results are in exactly one part, that part is the one
 * the journal records, its bytes are the offer of the worker whose commit
 * won, no offer is left, and no commit was refused for a stranger's link.
 *
 * A second search starts from what an older cohort, which wrote its
 * offers in the output directory itself, may have left at a crash (an
 * offer there, recorded or not, linked to its part or not): the start
 * moves it into the offers' folder (a link there, the folder synced, the
 * old name removed), then finishes as above, and may crash after any step
 * and start again. In each end state the recorded results are in their
 * part and no offer is left, anywhere.
 *
 * The same searches over broken variants (the part linked before the
 * journal's sync; a worker removing its offer when the coordinator goes
 * away; offers written in the directory itself, where the stranger
 * reaches them; a start that looks for offers in the folder alone) must
 * find a violation: the check can fail. */
#include <stdio.h>
#include <string.h>

#include "tap.h"

enum { A, B, R, NW };         /* two workers with the same ids, the rerun's */
enum { MAXREC = 4 };

struct state {
    /* the filesystem */
    unsigned char tmp[NW];    /* the offer of worker w exists */
    signed char part[MAXREC]; /* part n's file: whose offer (-1: none) */
    /* the journal */
    signed char durable[MAXREC]; /* record n: whose offer, synced (-1: none) */
    int n_durable;
    signed char buf[MAXREC];  /* records buffered, not synced */
    int n_buf;
    /* the coordinator's memory */
    int alive, crashes;
    int committed;            /* the ids are committed in memory */
    signed char inbox[NW];    /* offers received, in order */
    int n_inbox;
    int linked, unlinked;     /* of the synced records, how many linked / unlinked */
    /* the workers */
    int stage[NW];            /* 0 nothing, 1 offer written, 2 sent, 3 answered */
    int dead[NW];
    /* the stranger */
    unsigned char held[NW]; /* it holds a second link to the offer of worker w */
    int refused;              /* a commit was refused for its link */
};

enum variant { SOUND, LINK_BEFORE_SYNC, WORKER_REMOVES, OFFERS_AT_TOP, OLD_OFFERS_IGNORED };

static enum variant variant;
static long ends, violations;
static char first_violation[200];

static void violation(const char *what)
{
    if (!violations++)
        snprintf(first_violation, sizeof first_violation, "%s", what);
}

/* The next step over the journal: recovery, then the ids done by R if no
 * record committed them, then the end state checked. */
static void finish(struct state s)
{
    for (int n = s.n_durable; n < MAXREC; n++)
        if (s.part[n] >= 0) {
            violation("a part the journal does not record (the next step refuses to start)");
            return;
        }
    for (int n = 0; n < s.n_durable; n++) {
        int w = s.durable[n];
        if (s.part[n] < 0 && !s.tmp[w]) {
            violation("a recorded part whose offer is gone: results lost");
            return;
        }
        if (s.part[n] < 0)
            s.part[n] = (signed char)w;
        s.tmp[w] = 0;
    }
    memset(s.tmp, 0, sizeof s.tmp); /* offers no record names */
    if (s.n_durable == 0) { /* the ids are done again, without crashes */
        s.durable[s.n_durable++] = R;
        s.part[0] = R;
    }
    ends++;
    int parts = 0;
    for (int n = 0; n < MAXREC; n++)
        parts += s.part[n] >= 0;
    if (s.n_durable != 1)
        violation("the ids committed twice in the journal");
    else if (parts != 1)
        violation("the ids' results in more or fewer than one part");
    else if (s.part[0] != s.durable[0])
        violation("a part whose bytes are not the winning worker's");
    for (int w = 0; w < NW; w++)
        if (s.tmp[w])
            violation("an offer left behind");
    if (s.refused)
        violation("a commit refused for a stranger's hard link to its offer");
}

static void explore(struct state s);

/* The coordinator's steps that are possible now, each explored. */
static void coordinator(const struct state *s)
{
    struct state t;
    if (s->n_inbox) { /* take the first offer */
        t = *s;
        int w = t.inbox[0];
        memmove(t.inbox, t.inbox + 1, sizeof t.inbox[0] * (size_t)--t.n_inbox);
        if (t.held[w]) { /* two links: refused, the ids back, the offer its worker's */
            t.refused = 1;
            if (!t.dead[w]) {
                t.tmp[w] = 0;
                t.stage[w] = 3;
            }
        } else if (!t.committed) {
            t.committed = 1;
            t.buf[t.n_buf++] = (signed char)w;
            if (variant == LINK_BEFORE_SYNC)
                t.part[t.n_durable + t.n_buf - 1] = (signed char)w;
        } else {
            t.tmp[w] = 0; /* lost: its offer removed, the answer stale */
            if (!t.dead[w])
                t.stage[w] = 3;
        }
        explore(t);
    }
    if (s->n_buf) { /* the journal's sync: every buffered record */
        t = *s;
        for (int i = 0; i < t.n_buf; i++)
            t.durable[t.n_durable++] = t.buf[i];
        t.n_buf = 0;
        explore(t);
    }
    if (s->linked < s->n_durable) { /* link the next synced part */
        t = *s;
        int n = t.linked++, w = t.durable[n];
        if (t.part[n] < 0 && t.tmp[w])
            t.part[n] = (signed char)w;
        explore(t);
    }
    if (s->unlinked < s->linked) { /* its offer's name removed, the answer sent */
        t = *s;
        int w = t.durable[t.unlinked++];
        t.tmp[w] = 0;
        if (!t.dead[w])
            t.stage[w] = 3;
        explore(t);
    }
    if (s->crashes == 0) { /* dies: its memory is lost */
        t = *s;
        t.alive = 0;
        t.crashes = 1;
        explore(t);
    }
}

static void explore(struct state s)
{
    int moved = 0;
    for (int w = A; w <= B; w++) {
        if (s.dead[w])
            continue;
        struct state t = s;
        if (s.stage[w] == 0) { /* writes its offer */
            t.tmp[w] = 1;
            t.stage[w] = 1;
            explore(t), moved = 1;
        } else if (s.stage[w] == 1 && s.alive) { /* sends it */
            t.inbox[t.n_inbox++] = (signed char)w;
            t.stage[w] = 2;
            explore(t), moved = 1;
        } else if (s.stage[w] == 2 && !s.alive && variant == WORKER_REMOVES) {
            t.tmp[w] = 0; /* the coordinator went away: the worker cleans up */
            t.stage[w] = 3;
            explore(t), moved = 1;
        }
        if (s.stage[w] < 3) { /* dies */
            t = s;
            t.dead[w] = 1;
            explore(t), moved = 1;
        }
    }
    for (int w = A; w <= B; w++) /* the stranger links an offer it reaches */
        if (variant == OFFERS_AT_TOP && s.tmp[w] && !s.held[w]) {
            struct state t = s;
            t.held[w] = 1;
            explore(t), moved = 1;
        }
    if (s.alive) {
        coordinator(&s);
        moved = 1;
    }
    if (!moved)
        finish(s);
}

static long search(enum variant v, char *first, size_t len)
{
    struct state s;
    memset(&s, 0, sizeof s);
    memset(s.part, -1, sizeof s.part);
    memset(s.durable, -1, sizeof s.durable);
    s.alive = 1;
    variant = v;
    ends = violations = 0;
    first_violation[0] = 0;
    explore(s);
    snprintf(first, len, "%s", first_violation);
    return violations;
}

/* The second search's state: the offer an older cohort left, by its
 * names, its part and the journal's record, and the start's progress. */
struct old {
    int top, folder, part, recorded; /* the offer's names, its part, its record */
    int step, crashes;               /* the start's next step, crashes so far */
};

static void old_end(const struct old *o)
{
    ends++;
    if (o->recorded && !o->part)
        violation("a recorded part left unpublished (its offer not found)");
    else if (!o->recorded && o->part)
        violation("a part the journal does not record");
    else if (o->top || o->folder)
        violation("an offer left behind");
}

/* The start's next step, then (at most twice) a crash after it and the
 * start again from its first step. */
static void old_explore(struct old o)
{
    struct old t = o;
    switch (o.step) {
    case 0: /* the old offer linked into the folder */
        t.folder |= variant != OLD_OFFERS_IGNORED && t.top;
        break;
    case 1: /* the folder synced, the old name removed */
        t.top = variant == OLD_OFFERS_IGNORED && t.top;
        break;
    case 2: /* a recorded publication finished: its part linked from the folder */
        if (t.recorded && !t.part && !t.folder) {
            ends++; /* the start refuses: an end */
            violation("a recorded part whose offer is gone: results lost");
            return;
        }
        t.part |= t.recorded;
        break;
    case 3: /* the offer's name in the folder removed (published, or never committed) */
        t.folder = 0;
        break;
    default:
        old_end(&o);
        return;
    }
    t.step++;
    old_explore(t);
    if (t.crashes < 2) {
        t.step = 0;
        t.crashes++;
        old_explore(t);
    }
}

static long old_search(enum variant v, char *first, size_t len)
{
    static const struct old left[] = { /* an offer at the top: unrecorded; recorded;
                                        * recorded and linked to its part */
        {.top = 1}, {.top = 1, .recorded = 1}, {.top = 1, .recorded = 1, .part = 1}};
    variant = v;
    ends = violations = 0;
    first_violation[0] = 0;
    for (size_t i = 0; i < sizeof left / sizeof left[0]; i++)
        old_explore(left[i]);
    snprintf(first, len, "%s", first_violation);
    return violations;
}

int main(void)
{
    char first[200];
    long bad = search(SOUND, first, sizeof first);
    ok(bad == 0 && ends > 1000,
       "every interleaving of two workers offering the same ids, a crash of either and of "
       "the coordinator after any step, and the rerun: results in exactly one part, the "
       "winner's, as journaled, no offer left (%ld end states, %ld violations%s%s)",
       ends, bad, bad ? ": " : "", first);
    bad = search(LINK_BEFORE_SYNC, first, sizeof first);
    ok(bad > 0, "the model finds the fault of a part linked before the journal's sync "
       "(%ld of %ld end states: %s)", bad, ends, first);
    bad = search(WORKER_REMOVES, first, sizeof first);
    ok(bad > 0, "the model finds the fault of a worker removing its offer when the "
       "coordinator goes away (%ld of %ld end states: %s)", bad, ends, first);
    bad = search(OFFERS_AT_TOP, first, sizeof first);
    ok(bad > 0, "the model finds the fault of offers written in the output directory itself, "
       "where a stranger can hard-link them (%ld of %ld end states: %s)", bad, ends, first);
    bad = old_search(SOUND, first, sizeof first);
    ok(bad == 0 && ends > 10,
       "an offer an older cohort left in the directory itself (unrecorded, recorded, "
       "recorded and linked), moved into the offers' folder at start with up to two crashes "
       "after any step: the recorded results in their part, no offer left (%ld end states, "
       "%ld violations%s%s)", ends, bad, bad ? ": " : "", first);
    bad = old_search(OLD_OFFERS_IGNORED, first, sizeof first);
    ok(bad > 0, "the model finds the fault of a start that looks for offers in the folder "
       "alone (%ld of %ld end states: %s)", bad, ends, first);
    return tap_done();
}
