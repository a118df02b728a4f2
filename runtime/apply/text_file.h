/* text_file.h - reading a whole small text file (a hostfile, an environment
 * file) with one clear error line when it cannot be read or is too large. */
#ifndef COHORT_TEXT_FILE_H
#define COHORT_TEXT_FILE_H

#include <stdbool.h>

#include "error.h"

/* Reads path (at most 16 MiB) into a malloc'd string; NULL with err naming
 * what and path on failure. regular_only: path must be a regular file, and
 * is opened without blocking (for files named by the environment, such as
 * SLURM_HOSTFILE: a FIFO there must not hang the task). */
char *read_text_file(const char *what, const char *path, bool regular_only,
                     struct cohort_err *err);

#endif
