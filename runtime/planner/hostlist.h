/* hostlist.h - Slurm hostlist expressions: parse, count, index, search.
 *
 * Grammar (Slurm 22.05 plus the shared suffix newer Slurm accepts):
 *   list   := item { sep item }        sep: ',' ' ' '\t' '\n' '\r'; empty items skipped
 *   item   := text { '[' ranges ']' text }   (several bracket groups: cartesian product)
 *   ranges := range { ',' range }      range: N | N-M (decimal; width of N is kept)
 * Hosts are produced in Slurm's order; an expression is never expanded in
 * memory: hostlist_nth() computes any host directly. */
#ifndef COHORT_HOSTLIST_H
#define COHORT_HOSTLIST_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Limits, as Slurm enforces them or tighter. */
#define HOSTLIST_MAX_RANGE 65536u          /* hosts in one N-M range */
#define HOSTLIST_MAX_HOSTS (1u << 24)      /* hosts in a whole expression */
#define HOSTLIST_MAX_NAME 255              /* characters in one host name */
#define HOSTLIST_MAX_INPUT (1u << 20)      /* bytes of expression text */
#define HOSTLIST_MAX_DIMS 16               /* bracket groups in one item */

struct hostlist;

/* Parses expr. On error returns -1 and names the offending part in err. */
int hostlist_parse(const char *expr, struct hostlist **out, struct cohort_err *err);
void hostlist_free(struct hostlist *hl);

uint64_t hostlist_count(const struct hostlist *hl);

/* Writes host n (0-based) into buf (HOSTLIST_MAX_NAME + 1 bytes suffice).
 * Returns -1 if n is out of range. */
int hostlist_nth(const struct hostlist *hl, uint64_t n, char *buf, size_t len);

/* Index of the first host equal to name, or -1. */
int64_t hostlist_find(const struct hostlist *hl, const char *name);

#endif
