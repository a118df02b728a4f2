/* text_file.h - reading a whole small text file (a hostfile, an environment
 * file) with one clear error line when it cannot be read or is too large. */
#ifndef COHORT_TEXT_FILE_H
#define COHORT_TEXT_FILE_H

#include "error.h"

/* Reads path (at most 16 MiB) into a malloc'd string; NULL with err naming
 * what and path on failure. */
char *read_text_file(const char *what, const char *path, struct cohort_err *err);

#endif
