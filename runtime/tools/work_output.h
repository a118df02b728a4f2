/* work_output.h - `cohort-work output DIR`: lists and checks what a work
 * queue published in its output directory (parts.h): each part's file,
 * ids as ranges, kind and size; every id in at most one part; with the
 * queue's journal, every publication it records present as recorded, and
 * no part it does not record, so that every id committed with results is
 * published exactly once. */
#ifndef COHORT_WORK_OUTPUT_H
#define COHORT_WORK_OUTPUT_H

/* Prints the listing (text, or JSON when json) and one line per problem.
 * journal may be NULL. Returns the exit status: 0 all checks hold, 1 a
 * problem (or the directory or journal cannot be read). */
int work_output(const char *dir, const char *journal, int json);

#endif
