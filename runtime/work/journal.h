/* journal.h - the work queue's journal: one file per queue, on a shared
 * filesystem, written only by the queue's coordinator, that makes every
 * committed item durable and lets a later step resume the queue.
 *
 * Format 2 (every integer big-endian):
 *   header, 156 bytes: "COHORTJ2", n_items (u64), the name's length (u32),
 *     the name zero-padded to JOURNAL_NAME_MAX bytes, check (8 bytes: the
 *     first 8 bytes of the SHA-256, Nettle's, of the 148 bytes before it);
 *   frames, appended after it, one per write: a head of 32 bytes, mark
 *     "CJFR", the records' length (u32, at most 4 MiB), the frame's
 *     number (u64: 0 for the first, then one more each), the records'
 *     check (SHA-256 as above), the head's check (a 64-bit mix of the
 *     header's check and the head's three words before it); then the
 *     records, each type (u8), body length (u32), body:
 *     JOURNAL_COMMITTED (1): spans, each lo (u64) and hi (u64): ids lo..hi-1;
 *     JOURNAL_SET_ASIDE (2): id (u64), attempts (u32);
 *     JOURNAL_PUBLISHED (3): part (u64), data length (u64), kind (u32),
 *       token (16 bytes), then spans as COMMITTED's (ascending, disjoint,
 *       1..JOURNAL_PUB_SPANS_MAX): these ids are committed, and their results
 *       are part number `part` of the queue's output directory, offered as
 *       the file named by the token (parts.h);
 *     JOURNAL_PROGRESS (4): time (u64, ms since the epoch), committed (u64),
 *       leased (u64), set aside (u64), workers connected (u32): the
 *       coordinator's totals, every few seconds while they change, for
 *       cohort-work status (rate, ETA, leased); replay ignores them.
 *   A journal of another format (format 1, records without frames, written
 *   before this one) is refused with a line saying so.
 *
 * Durability: journal_sync writes the records added since the last sync
 * as one frame, with one write, and fdatasyncs: the group commit (more
 * than 4 MiB of records go as several frames, each written and
 * synced in turn). A commit is durable once journal_sync returned 0; the
 * coordinator answers commits only after it. A frame counts whole or not
 * at all.
 *
 * A torn tail or damage: a crash can leave only the last write incomplete:
 * a prefix of it, the rest up to the file's end zeros or garbage, or its
 * pages written out of order. So a bad frame (cut short, a bad head,
 * records that do not match its check) is a torn tail when no head of a
 * frame of this journal numbered as it or later begins anywhere after it:
 * it is ignored, and journal_open cuts it away; its commits had not been
 * answered (a last frame damaged after its sync is dropped the same way:
 * nothing tells the two apart). A bad frame with such a head after it is
 * damage (a byte inserted, deleted or changed before the last write moves
 * or breaks its frame but not the head of the frame after it), and so are
 * a frame out of order, a bad header, records that do not parse in a frame
 * whose check holds, an id beyond the queue and an id committed twice: the
 * journal is refused with one line naming the byte offset, and nothing
 * after it is ever dropped. Heads carry no offset, so a head that moved is
 * still found; they are numbered, so that stale pages of an earlier frame
 * are not taken for a later one.
 *
 * Cost: a pass reads each byte of the file at most three times (the frame
 * pass, once more from a bad frame on looking for a later head, whose
 * check is a few multiplications, and a second pass to name the record of
 * an id committed twice), hashes each byte once, and sorts the committed
 * spans in batches (a radix sort and a merge: at most about 20 moves a
 * span), so that any journal, however crafted, reads in time linear in its
 * size. The writer adds its commits to a balanced tree: logarithmic in any
 * order.
 *
 * Memory: the committed ids (for the check that none is committed twice)
 * are kept as sorted, disjoint runs of consecutive ids, 16 bytes a run
 * (32 in the writer's tree), never a bitmap: a queue of 10^9 items costs
 * what its holes cost (about the leases outstanding at a time); a pass
 * holds at most a quarter as many spans again waiting to be merged, and
 * scratch for their sort (16 bytes each).
 *
 * The file: journal_open and journal_summary open the path itself, never
 * through a symbolic link (a link in a shared directory could lead a step
 * to another journal, e.g. the user's own finished one of the same queue,
 * and the step would believe its queue done); a link to a directory on the
 * way is followed. The file must be a regular file with one hard link
 * that its group and others cannot write; journal_open also wants it to
 * belong to this user. A new journal is created 0644 (less the umask).
 *
 * Locking: journal_open takes a POSIX fcntl write lock on the whole file,
 * so that two steps' coordinators cannot write one journal. Such locks
 * belong to the process and go when it closes any descriptor of the file:
 * a process that holds a journal open must not open that file otherwise
 * (journal_summary included). */
#ifndef COHORT_JOURNAL_H
#define COHORT_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define JOURNAL_NAME_MAX 128
#define JOURNAL_MAX_ITEMS ((uint64_t)INT64_MAX) /* ids stay exact in JSON */

enum journal_event_kind {
    JOURNAL_COMMITTED = 1,
    JOURNAL_SET_ASIDE = 2,
    JOURNAL_PUBLISHED = 3,
    JOURNAL_PROGRESS = 4,
};

#define JOURNAL_TOKEN_LEN 16

/* The coordinator's totals at a moment (JOURNAL_PROGRESS). */
struct journal_progress {
    uint64_t time_ms;    /* since the epoch */
    uint64_t committed, leased, set_aside;
    uint32_t workers;
};
#define JOURNAL_PUB_SPANS_MAX 65536u /* runs of ids in one publication */

/* One replayed fact. */
struct journal_event {
    enum journal_event_kind kind;
    uint64_t lo, hi;   /* COMMITTED: ids lo..hi-1; SET_ASIDE: the id is lo, hi = lo + 1;
                          PUBLISHED: the first and last id + 1 of its spans */
    uint32_t attempts; /* SET_ASIDE: the attempts the item had */
    /* PUBLISHED: */
    uint64_t part, data_len;
    uint32_t data_kind;
    uint8_t token[JOURNAL_TOKEN_LEN];
    const uint8_t *spans; /* n_spans (lo, hi) big-endian pairs, valid during the call */
    uint32_t n_spans;
    uint64_t n_ids;
    struct journal_progress progress; /* PROGRESS */
};

/* Called by journal_open for each set-aside id and each publication as
 * the pass meets them (in range; a publication's ids count as committed
 * too), then, once the whole journal is checked, for each run of
 * committed ids, ascending and maximal. Returns 0, or -1 with err to stop
 * journal_open, which then fails with that err. When journal_open fails,
 * whatever fn gathered is to be discarded. An id set aside may be
 * committed by a later record (a later step took it again). */
typedef int (*journal_replay_fn)(void *ctx, const struct journal_event *ev,
                                 struct cohort_err *err);

struct journal;

/* Opens the journal at path for queue name (at most JOURNAL_NAME_MAX
 * bytes) of n_items ids (at most JOURNAL_MAX_ITEMS), locked for writing.
 * A missing or empty file gets its header (synced; a new file's directory
 * entry too); so does a file that holds only the beginning of this queue's
 * header (a creation that was interrupted). Otherwise the
 * header is checked and every frame replayed through fn (may be NULL)
 * with ctx before returning; a torn tail is cut away. Returns 0, or -1
 * with one line in err: the path cannot be opened or locked (another
 * step's coordinator holds it: its pid), the file is refused (see "The
 * file" above), the journal belongs to another
 * queue or size, it is damaged (the byte offset), or out of memory. */
int journal_open(const char *path, const char *name, uint64_t n_items, journal_replay_fn fn,
                 void *ctx, struct journal **out, struct cohort_err *err);

/* Bytes of a torn tail journal_open ignored and cut away (0: none). */
uint64_t journal_torn_bytes(const struct journal *j);

/* Adds ids[0..n-1] (any order; runs of consecutive ids are written as
 * spans) to the records the next journal_sync writes. Returns 0, or -1
 * with err for an id beyond the queue, an id committed before (in the
 * journal or since), out of memory, or an earlier failure. Any failure is
 * final: every later call but journal_close fails with the first line. */
int journal_add_committed(struct journal *j, const uint64_t *ids, size_t n,
                          struct cohort_err *err);

/* Adds a record: ids[0..n-1] (ascending, no id twice, at most
 * JOURNAL_PUB_SPANS_MAX runs) are committed with their results published as
 * part number part (data_len bytes of kind data_kind, offered as the file
 * of token). Fails as journal_add_committed. */
int journal_add_published(struct journal *j, uint64_t part, uint64_t data_len,
                          uint32_t data_kind, const uint8_t token[JOURNAL_TOKEN_LEN],
                          const uint64_t *ids, size_t n, struct cohort_err *err);

/* Adds a progress record. Fails as journal_add_committed. */
int journal_add_progress(struct journal *j, const struct journal_progress *p,
                         struct cohort_err *err);

/* Adds a record: id was set aside after attempts attempts. Fails as
 * journal_add_committed (not for an id committed before). */
int journal_add_set_aside(struct journal *j, uint64_t id, uint32_t attempts,
                          struct cohort_err *err);

/* Writes every record added since the last sync and fdatasyncs the file.
 * Returns 0 (nothing added: nothing written), or -1 with one line naming
 * the journal and the system's reason (the disk is full, ...); that
 * failure is final, as above. */
int journal_sync(struct journal *j, struct cohort_err *err);

/* Closes the file (releasing the lock) and frees j (NULL: nothing).
 * Records added and not synced are lost. */
void journal_close(struct journal *j);

/* An item set aside and not committed afterwards. */
struct journal_aside {
    uint64_t id;
    uint32_t attempts; /* of the last record that set it aside */
};

struct journal_summary {
    char name[JOURNAL_NAME_MAX + 1];
    uint64_t n_items;
    uint64_t committed;          /* ids committed */
    uint64_t remaining;          /* n_items - committed - n_aside */
    struct journal_aside *aside; /* ascending ids; malloc'd */
    size_t n_aside;
    uint64_t torn_bytes;         /* of a torn tail ignored (not cut: read only) */
    struct journal_progress last;  /* the last progress record (time_ms 0: none) */
    struct journal_progress before; /* the earliest one within a minute of it */
    uint64_t size;               /* of the file, in bytes, when it was read */
};

/* Reads the journal at path without locking or changing it: only whole
 * valid frames count, so it may run while a coordinator writes. Returns
 * 0, or -1 with one line in err (as journal_open, and nothing to free).
 * The journal's own name and size are taken, not checked. */
int journal_summary(const char *path, struct journal_summary *s, struct cohort_err *err);
/* journal_summary, with fn (may be NULL) called with ctx for each
 * publication as the pass meets it. */
int journal_summary_each(const char *path, struct journal_summary *s, journal_replay_fn fn,
                         void *ctx, struct cohort_err *err);
void journal_summary_free(struct journal_summary *s);

#endif
