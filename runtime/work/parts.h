/* parts.h - a work queue's published results (cohort_work_commit_output):
 * the bytes of a part file and the names in the output directory. Pure:
 * bytes in, structs out, every length checked before it is trusted; the
 * worker that writes a part, the coordinator that publishes it and the
 * readers (cohort-work output, the Python package) share it.
 *
 * The directory (one queue's, on a filesystem every node sees):
 *   part-NNNNNNNNNNNN   a published part: NNNNNNNNNNNN its number (12
 *                       decimal digits, from 0, in the order of publication)
 *   .offers/            the offers' folder: this user's, mode 0700, on the
 *                       directory's filesystem (a part is published by a hard
 *                       link from its offer), so that no other user can reach
 *                       an offer, nor link it, whatever the directory's mode
 *   .offers/.tmp-HHHH...  a part being written or offered (32 hex digits: a
 *                       random token of the worker's); never read as a part
 *   .lock               held (a POSIX lock) by the coordinator that serves the
 *                       directory's queue: one at a time
 * Nothing else is cohort's. (An older cohort wrote its offers, .tmp-HHHH...,
 * in the directory itself; the coordinator moves any it finds into .offers
 * at its start.)
 *
 * A part file (every integer big-endian):
 *   "COHORTO1", kind (u32: 0 bytes, 1 a Python pickle, others the program's),
 *   spans (u32, 1..PARTS_SPANS_MAX), data length (u64), the token of its
 *   offer (16 bytes, as the journal records it), the spans (each lo u64, hi
 *   u64: ids lo..hi-1, ascending, disjoint, not touching), the check (the
 *   first 8 bytes of the SHA-256, Nettle's, of everything before it), then
 *   the data: the file is exactly that long. */
#ifndef COHORT_PARTS_H
#define COHORT_PARTS_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define PARTS_MAGIC "COHORTO1"
#define PARTS_FIXED 40             /* magic 8, kind 4, spans 4, data length 8, token 16 */
#define PARTS_CHECK 8
#define PARTS_SPANS_MAX 65536u     /* runs of ids in one part */
#define PARTS_TOKEN_LEN 16         /* bytes; 32 hex digits in a name */
#define PARTS_TMP_PREFIX ".tmp-"
#define PARTS_PREFIX "part-"
#define PARTS_NAME_MAX 48          /* a name's bytes with its NUL, at most */
#define PARTS_NUMBER_MAX UINT64_C(999999999999)
#define PARTS_OFFERS ".offers"     /* the offers' folder, in the directory */

/* Bytes of a part's head (all but its data) with n spans. */
size_t parts_head_len(uint32_t n_spans);

/* Writes the head of a part of kind, offered as token, holding ids
 * (ascending, no id twice, forming n_spans runs: work_span_count) and
 * data_len bytes of data into h (parts_head_len(n_spans) bytes). */
void parts_head_put(uint8_t *h, uint32_t kind, const uint8_t token[PARTS_TOKEN_LEN],
                    const uint64_t *ids, size_t n, uint32_t n_spans, uint64_t data_len);

/* What a part's head says. */
struct parts_head {
    uint32_t kind, n_spans;
    uint64_t data_len;
    uint64_t n_ids;
    const uint8_t *token; /* PARTS_TOKEN_LEN bytes, in the caller's buffer */
    const uint8_t *spans; /* n_spans pairs (lo, hi), big-endian, in the caller's buffer */
    size_t head_len;
};

/* Reads the first len bytes of a part (at least PARTS_FIXED; the whole
 * head to check it): 0 with *h, 1 when more bytes are needed (h->head_len
 * says how many in all), -1 with err (not a part, a bad check, spans not
 * ascending or beyond n_items when n_items is not 0). */
int parts_head_get(const uint8_t *p, size_t len, uint64_t n_items, struct parts_head *h,
                   struct cohort_err *err);

/* The names: ".tmp-" and the token in hex; "part-" and the number. */
void parts_tmp_name(const uint8_t token[PARTS_TOKEN_LEN], char out[PARTS_NAME_MAX]);
void parts_name(uint64_t part, char out[PARTS_NAME_MAX]);
/* A directory entry's part number: 0 with *part for a part's name, else -1. */
int parts_number(const char *name, uint64_t *part);
/* An offer's token: 0 with token for an offer's name, else -1. */
int parts_tmp_token(const char *name, uint8_t token[PARTS_TOKEN_LEN]);

/* The offers' folder of the output directory open as dir_fd (named dir in
 * messages): made 0700 when missing (mkdirat), then opened without
 * following a symbolic link and checked to be a folder of this user's,
 * of mode 0700 (nothing for group or others), on dir_fd's filesystem. Its
 * descriptor (close-on-exec), or -1 with err's one line (COHORT_E_CONFIG)
 * naming what is wrong and what to do. The worker that writes an offer and
 * the coordinator that publishes it both call it. */
int parts_offers_open(int dir_fd, const char *dir, struct cohort_err *err);

#endif
