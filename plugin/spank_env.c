/* spank_env.c - the job's environment as slurmstepd holds it, read through
 * SPANK (see spank_env.h). */
#include "spank_env.h"

#include <stdlib.h>

/* spank_getenv into a malloc'd string, or NULL when unset. */
char *get_env(spank_t sp, const char *name)
{
    for (int len = 4096; len <= (16 << 20); len *= 4) {
        char *buf = malloc((size_t)len);
        if (!buf)
            return NULL;
        spank_err_t rc = spank_getenv(sp, name, buf, len);
        if (rc == ESPANK_SUCCESS)
            return buf;
        free(buf);
        if (rc != ESPANK_NOSPACE)
            return NULL;
    }
    return NULL;
}

/* The variables of names that are set, from the job. */
int collect_env(spank_t sp, struct envlist *env, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *v = get_env(sp, names[i]);
        int rc = v ? envlist_set(env, names[i], v) : 0;
        free(v);
        if (rc)
            return -1;
    }
    return 0;
}

/* slurmstepd: NAME's value taken out of the job's environment, or NULL. */
char *take_env(spank_t sp, const char *name)
{
    char *v = get_env(sp, name);
    if (v)
        spank_unsetenv(sp, name);
    return v;
}
