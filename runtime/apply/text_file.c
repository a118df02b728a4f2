/* text_file.c - whole-file reads for the shells (see text_file.h). */
#include "text_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_TEXT_FILE (16u << 20)

/* Opens path for reading; with regular_only, without blocking (a FIFO
 * with no writer would wait forever) and only when it is a regular file. */
static FILE *open_text(const char *what, const char *path, bool regular_only,
                       struct cohort_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | (regular_only ? O_NONBLOCK : 0));
    struct stat st;
    if (fd < 0) {
        cohort_fail(err, "%s %s cannot be read: %s", what, path, strerror(errno));
        return NULL;
    }
    if (regular_only && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        cohort_fail(err, "%s %s is not a regular file: it must name a file that lists the "
                         "step's hosts", what, path);
        return NULL;
    }
    if (regular_only)
        fcntl(fd, F_SETFL, 0); /* back to plain reads */
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        cohort_fail(err, "%s %s cannot be read: %s", what, path, strerror(errno));
    }
    return f;
}

char *read_text_file(const char *what, const char *path, bool regular_only,
                     struct cohort_err *err)
{
    FILE *f = open_text(what, path, regular_only, err);
    if (!f)
        return NULL;
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
