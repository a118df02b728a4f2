/* text_file.c - whole-file reads for the shells (see text_file.h). */
#include "text_file.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TEXT_FILE (16u << 20)

char *read_text_file(const char *what, const char *path, struct cohort_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        cohort_fail(err, "%s %s cannot be read: %s", what, path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1 || cap >= MAX_TEXT_FILE)
            break;
        char *b = realloc(buf, cap * 2);
        if (!b) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = b;
        cap *= 2;
    }
    bool too_big = buf && n == cap - 1 && !feof(f);
    bool failed = ferror(f);
    fclose(f);
    if (!buf || too_big || failed) {
        free(buf);
        cohort_fail(err, "%s %s %s", what, path,
                    too_big ? "is larger than 16 MiB" : "cannot be read");
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}
