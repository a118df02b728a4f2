/* journal_private.h - what the journal's files share: journal_format.c
 * (the bytes: integers, checks, the header, frame heads; opening the
 * file), journal_spans.c (the sets of committed ids), journal_read.c (the
 * pass over the frames, the read-only summary) and journal.c (the
 * coordinator's writer); the unit tests craft journals with it. Not for
 * other modules. The format is described in journal.h. */
#ifndef COHORT_JOURNAL_PRIVATE_H
#define COHORT_JOURNAL_PRIVATE_H

#include <stdint.h>
#include <sys/types.h>

#include "base_runs.h"
#include "base_sys.h"
#include "journal.h"

#define JHDR_LEN 156          /* magic 8, n_items 8, name length 4, name 128, check 8 */
#define JFRAME_HEAD 32        /* mark 4, records' length 4, number 8, records' check 8, check 8 */
#define JFRAME_MAX (1u << 22) /* bytes of records in one frame */
#define JREC_HEAD 5           /* type 1, body length 4 */
#define JCHECK_LEN 8
#define JSPAN_LEN 16          /* a COMMITTED body's lo, hi */
#define JASIDE_LEN 12         /* a SET_ASIDE body: id, attempts */
#define JPROG_LEN 36          /* a PROGRESS body: time, committed, leased, set aside, workers */
#define JPUB_LEN 36           /* a PUBLISHED body before its spans: part, length, kind, token */

void jput32(uint8_t *p, uint32_t v);
void jput64(uint8_t *p, uint64_t v);
uint32_t jget32(const uint8_t *p);
uint64_t jget64(const uint8_t *p);

/* The check of len bytes: the first 8 bytes of their SHA-256. */
void jcheck(const uint8_t *p, size_t len, uint8_t out[JCHECK_LEN]);

/* What a valid header says. */
struct jhdr {
    char name[JOURNAL_NAME_MAX + 1];
    uint64_t n_items;
    uint64_t key; /* its check, which every frame's check covers */
};

/* The header of queue name (<= JOURNAL_NAME_MAX bytes) of n_items. */
void jhdr_encode(uint8_t h[JHDR_LEN], const char *name, uint64_t n_items);
/* Reads the len bytes of a file's beginning as a header: 0 with *out, or
 * -1 with the line for the journal at path (a bad header, or a format this
 * cohort does not read). */
int jhdr_decode(const uint8_t *h, size_t len, const char *path, struct jhdr *out,
                struct cohort_err *err);

/* A frame head. */
struct jframe {
    uint32_t len; /* bytes of records after the head */
    uint64_t seq; /* its number: 0 for the first frame */
    uint8_t check[JCHECK_LEN];
};

/* Writes the head at h of frame seq of the journal of key, whose len bytes
 * of records follow the head. */
void jframe_seal(uint8_t *h, uint64_t key, uint64_t seq, uint32_t len);
/* Reads the JFRAME_HEAD bytes at h: 1 when they are a frame head of the
 * journal of key (its mark, a length the writer writes, its check), with
 * *f; else 0. The records are not looked at. */
int jframe_head(const uint8_t *h, uint64_t key, struct jframe *f);
extern const uint8_t jframe_mark[4];

/* Opens the journal at path: for the writer read-write, created (0644,
 * *created set) when missing; else read-only. Never through a symbolic
 * link; the file must be regular, have one hard link and be writable by
 * its owner alone, and for the writer that owner must be this user.
 * Returns the descriptor, or -1 with one line in err naming the file, what
 * is wrong and what to do. */
int jfile_open(const char *path, int writer, int *created, struct cohort_err *err);


/* The ids committed in a journal when a pass over it ended (sorted runs,
 * disjoint and never touching). */
struct jspans {
    struct base_runs runs;
    uint64_t count; /* ids in the set */
    uint64_t moved; /* spans added, sorted or merged into it: the tests' bound */
};

void jspans_free(struct jspans *s);

/* A set of ids as disjoint runs in a balanced tree (an AA tree over an
 * array of nodes), added to one span at a time in any order at a cost
 * logarithmic in its runs: the ids the writer committed since the journal
 * was opened. A span that touches a run extends it; runs are not merged. */
struct jnode {
    uint64_t lo, hi; /* ids lo..hi-1 */
    uint32_t l, r;   /* children: indexes into the array, 0 none */
    uint8_t level;
};

struct jtree {
    struct jnode *v; /* v[0] stands for none (level 0) */
    uint32_t n, cap;
    uint32_t root;
    uint64_t count; /* ids in the set */
    uint64_t steps; /* nodes visited by adds: the tests' bound */
};

/* As base_runs_overlap. */
int jtree_overlap(const struct jtree *t, uint64_t lo, uint64_t hi, uint64_t *dup);
/* Adds ids lo..hi-1 (lo < hi): 0; 1 when some are in already (*dup: the
 * lowest such, nothing added); -1 when out of memory (nothing added). */
int jtree_add(struct jtree *t, uint64_t lo, uint64_t hi, uint64_t *dup);
void jtree_free(struct jtree *t);

/* A key and a value: a span waiting to be merged (lo; hi) or an id set
 * aside (id; attempts). */
struct jpair {
    uint64_t key, val;
};

/* Sorts a[0..n-1] by key, stably (equal keys keep their order), with tmp
 * (room for n) as scratch: a radix sort, a pass of n moves (added to
 * *moved) for each 11-bit digit in which the keys differ. Returns where
 * the sorted elements are: a or tmp. */
struct jpair *jsort(struct jpair *a, struct jpair *tmp, size_t n, uint64_t *moved);

/* The committed spans of a pass, gathered in any order into done: a span
 * above every id in done is added at once; others wait, and are sorted and
 * merged into done, in place, once a quarter as many wait as done has
 * runs. A pass so costs moves linear in its spans (at most about 20 each),
 * never a move of done's runs per span, and memory about one and a half
 * times done's. */
struct jgather {
    struct jspans *done;
    struct jpair *p, *tmp; /* the spans waiting; scratch for their sort */
    size_t n, cap, tmp_cap;
};

/* Adds ids lo..hi-1 (lo < hi): 0; 1 when an id is committed twice (*dup:
 * one such id, found at this call or a later one, or at jgather_settle;
 * done is then of no use); -1 when out of memory. */
int jgather_add(struct jgather *g, uint64_t lo, uint64_t hi, uint64_t *dup);
/* Merges the spans waiting into done: as jgather_add. */
int jgather_settle(struct jgather *g, uint64_t *dup);
void jgather_free(struct jgather *g);

/* A pass over the frames of an open journal whose header was checked. */
struct jscan {
    const char *path;     /* for the messages */
    int fd;
    uint64_t size;        /* bytes of the file to read */
    uint64_t n_items;
    uint64_t key;         /* the header's */
    struct jspans *done;  /* out: the committed ids (empty before) */
    journal_replay_fn fn; /* the facts (may be NULL), with ctx: see journal_replay_fn */
    void *ctx;
    uint64_t end;         /* out: the end of the last valid frame */
    uint64_t frames;      /* out: the valid frames, the next one's number */
    uint64_t bytes_read;  /* out: bytes read from the file: the tests' bound */
};

/* Checks and replays every frame from the header on. A bad frame (cut
 * short, a bad head, records that do not match its check) after which no
 * frame of this journal numbered as it or later begins is a torn tail: the
 * pass ends there (s->end). Returns 0, or -1 with one line in err (damage
 * with its byte offset, a read error, out of memory, or fn's own). */
int jscan_records(struct jscan *s, struct cohort_err *err);

#endif
