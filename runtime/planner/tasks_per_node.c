/* tasks_per_node.c - parsing of "2(x3),1" count lists (see tasks_per_node.h). */
#include "tasks_per_node.h"

#include "base_text.h"

#include <stdlib.h>
#include <string.h>

/* Reads an unsigned decimal (no sign, no spaces) of at most 9 digits. */
static int read_uint(const char **p, uint32_t *v)
{
    uint64_t acc;
    if (base_parse_decimal(p, NULL, 9, UINT32_MAX, &acc, NULL) < 0)
        return -1;
    *v = (uint32_t)acc;
    return 0;
}

int tasks_per_node_parse(const char *name, const char *text, uint32_t max_entries,
                         uint32_t **counts, uint32_t *n, struct cohort_err *err)
{
    *counts = NULL;
    *n = 0;
    if (!text || !*text)
        return cohort_fail(err, "%s is empty; expected counts such as '4' or '2(x3),1'",
                           name);
    uint32_t total = 0;
    /* First pass validates and counts, second fills. */
    for (int pass = 0; pass < 2; pass++) {
        const char *p = text;
        uint32_t at = 0;
        for (;;) {
            uint32_t count, repeat = 1;
            if (read_uint(&p, &count) < 0)
                goto bad;
            if (count == 0)
                return cohort_fail(err, "%s='%s': a count of 0 is not a valid layout",
                                   name, text);
            if (*p == '(') {
                p++;
                if (*p++ != 'x' || read_uint(&p, &repeat) < 0 || *p++ != ')' ||
                    repeat == 0)
                    goto bad;
            }
            if (repeat > max_entries - at)
                return cohort_fail(err, "%s='%s' lists more than %u entries", name, text,
                                   max_entries);
            if (pass == 1)
                for (uint32_t r = 0; r < repeat; r++)
                    (*counts)[at + r] = count;
            at += repeat;
            if (*p == '\0')
                break;
            if (*p++ != ',')
                goto bad;
        }
        if (pass == 0) {
            total = at;
            *counts = malloc(total * sizeof **counts);
            if (!*counts)
                return cohort_fail(err, "out of memory parsing %s", name);
        }
    }
    *n = total;
    return 0;
bad:
    free(*counts);
    *counts = NULL;
    return cohort_fail(err, "%s='%s' is malformed; expected counts such as '4' or "
                            "'2(x3),1'",
                       name, text);
}
