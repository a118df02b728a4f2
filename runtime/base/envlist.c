/* envlist.c - ordered NAME=VALUE lists (see envlist.h). */
#include "envlist.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void envlist_init(struct envlist *e)
{
    memset(e, 0, sizeof *e);
}

void envlist_clear(struct envlist *e)
{
    for (size_t i = 0; i < e->n; i++) {
        free(e->names[i]);
        free(e->values[i]);
    }
    free(e->names);
    free(e->values);
    envlist_init(e);
}

static long find(const struct envlist *e, const char *name, size_t len)
{
    for (size_t i = 0; i < e->n; i++)
        if (strlen(e->names[i]) == len && memcmp(e->names[i], name, len) == 0)
            return (long)i;
    return -1;
}

const char *envlist_get(const struct envlist *e, const char *name)
{
    long i = find(e, name, strlen(name));
    return i < 0 ? NULL : e->values[i];
}

static int set_span(struct envlist *e, const char *name, size_t name_len,
                    const char *value)
{
    char *v = strdup(value);
    if (!v)
        return -1;
    long i = find(e, name, name_len);
    if (i >= 0) {
        free(e->values[i]);
        e->values[i] = v;
        return 0;
    }
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 16;
        char **nn = realloc(e->names, cap * sizeof *nn);
        if (nn)
            e->names = nn;
        char **nv = nn ? realloc(e->values, cap * sizeof *nv) : NULL;
        if (!nv) {
            free(v);
            return -1;
        }
        e->values = nv;
        e->cap = cap;
    }
    char *n = malloc(name_len + 1);
    if (!n) {
        free(v);
        return -1;
    }
    memcpy(n, name, name_len);
    n[name_len] = '\0';
    e->names[e->n] = n;
    e->values[e->n] = v;
    e->n++;
    return 0;
}

int envlist_set(struct envlist *e, const char *name, const char *value)
{
    return set_span(e, name, strlen(name), value);
}

int envlist_setf(struct envlist *e, const char *name, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf)
        return -1;
    return envlist_set(e, name, buf);
}

int envlist_from_envp(struct envlist *e, char *const *envp)
{
    for (; envp && *envp; envp++) {
        const char *eq = strchr(*envp, '=');
        if (eq && eq != *envp && set_span(e, *envp, (size_t)(eq - *envp), eq + 1) < 0)
            return -1;
    }
    return 0;
}
