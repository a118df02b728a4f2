/* journal_private.h - what journal.c (the coordinator's writer) and
 * journal_read.c (the format, the set of committed ids, the scan of the
 * records, the read-only summary) share; the unit test crafts journals
 * with it. Not for other modules. The format is described in journal.h. */
#ifndef COHORT_JOURNAL_PRIVATE_H
#define COHORT_JOURNAL_PRIVATE_H

#include <stdint.h>
#include <sys/types.h>

#include "journal.h"

#define JHDR_LEN 156   /* magic 8, n_items 8, name length 4, name 128, check 8 */
#define JREC_HEAD 5    /* type 1, body length 4 */
#define JCHECK_LEN 8
#define JSPAN_LEN 16   /* a COMMITTED body's lo, hi */
#define JASIDE_LEN 12  /* a SET_ASIDE body: id, attempts */

void jput32(uint8_t *p, uint32_t v);
void jput64(uint8_t *p, uint64_t v);
uint32_t jget32(const uint8_t *p);
uint64_t jget64(const uint8_t *p);

/* The check of the len bytes at p that begin at byte offset off. */
void jcheck(uint64_t off, const uint8_t *p, size_t len, uint8_t out[JCHECK_LEN]);

/* The header of queue name (<= JOURNAL_NAME_MAX bytes) of n_items. */
void jhdr_encode(uint8_t h[JHDR_LEN], const char *name, uint64_t n_items);
/* Reads the len bytes of a file's beginning as a header: NULL, with name
 * and *n_items set, or what is wrong with it. */
const char *jhdr_decode(const uint8_t *h, size_t len, char name[JOURNAL_NAME_MAX + 1],
                        uint64_t *n_items);
/* The line for a bad header; returns -1. */
int jhdr_fail(struct cohort_err *err, const char *path, const char *why);

/* Opens the journal at path: for the writer read-write, created (0644,
 * *created set) when missing; else read-only. Never through a symbolic
 * link; the file must be regular, have one hard link and be writable by
 * its owner alone, and for the writer that owner must be this user.
 * Returns the descriptor, or -1 with one line in err naming the file, what
 * is wrong and what to do. */
int jfile_open(const char *path, int writer, int *created, struct cohort_err *err);

/* Reads up to len bytes at off, fewer only where the file ends. Returns
 * the bytes read, or -1 with errno. */
ssize_t jread_at(int fd, void *buf, size_t len, uint64_t off);

struct jrun {
    uint64_t lo, hi; /* ids lo..hi-1 */
};

/* A set of ids as sorted, disjoint, non-adjacent runs. */
struct jspans {
    struct jrun *r;
    size_t n, cap;
    uint64_t count; /* ids in the set */
};

/* Adds ids lo..hi-1 (lo < hi): 0; 1 when some are in already (*dup: the
 * lowest such, nothing added); -1 when out of memory (nothing added). */
int jspans_add(struct jspans *s, uint64_t lo, uint64_t hi, uint64_t *dup);
int jspans_has(const struct jspans *s, uint64_t id);
void jspans_free(struct jspans *s);

/* A pass over the records of an open journal whose header was checked. */
struct jscan {
    const char *path;     /* for the messages */
    int fd;
    uint64_t size;        /* bytes of the file to read */
    uint64_t n_items;
    struct jspans *done;  /* the committed ids: filled, and checked against */
    journal_replay_fn fn; /* each checked fact (may be NULL), with ctx */
    void *ctx;
    uint64_t end;         /* out: the end of the last valid record */
};

/* Checks and replays every record from the header on. A bad record with
 * no valid one after it is a torn tail: the scan ends there (s->end).
 * Returns 0, or -1 with one line in err (damage, a read error, out of
 * memory, or fn's own). */
int jscan_records(struct jscan *s, struct cohort_err *err);

#endif
