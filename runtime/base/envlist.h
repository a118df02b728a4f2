/* envlist.h - an ordered list of NAME=VALUE pairs.
 * The planner reads its input environment from one (a snapshot the shell
 * took: environ, spank_getenv, a test table) and writes the variables a task
 * should get into another; it never touches the process environment. */
#ifndef COHORT_ENVLIST_H
#define COHORT_ENVLIST_H

#include <stddef.h>

struct envlist {
    char **names;
    char **values;
    size_t n, cap;
};

void envlist_init(struct envlist *e);
void envlist_clear(struct envlist *e);

/* Copies "NAME=VALUE" strings (entries without '=' are skipped). */
int envlist_from_envp(struct envlist *e, char *const *envp);

/* Value of name, or NULL when unset. */
const char *envlist_get(const struct envlist *e, const char *name);

/* Sets name (replacing an earlier value). Returns -1 on allocation failure. */
int envlist_set(struct envlist *e, const char *name, const char *value);
int envlist_setf(struct envlist *e, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
