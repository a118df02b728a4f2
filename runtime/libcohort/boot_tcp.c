/* boot_tcp.c - libcohort's TCP bootstrap (boot_ops.h): the step's key
 * (auth_step_key), the directory of the node sockets under munge, the
 * fanout of the tree of nodes and where its leaders listen
 * (COHORT_BOOTSTRAP_FANOUT, COHORT_BOOTSTRAP_BIND), and the tree (tree.h). */
#include "boot_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "tree.h"

/* COHORT_BOOTSTRAP_BIND: "any" (every address, the default) or "name"
 * (MASTER_ADDR's and the node names' only: several nodes on one host). */
static int bind_names(const struct envlist *env, bool *out, struct cohort_err *err)
{
    const char *v = envlist_get(env, "COHORT_BOOTSTRAP_BIND");
    *out = v && strcmp(v, "name") == 0;
    if (!v || !*v || *out || strcmp(v, "any") == 0)
        return 0;
    return cohort_fail_code(err, COHORT_E_CONFIG,
                            "COHORT_BOOTSTRAP_BIND='%.40s' is neither 'any' nor 'name': unset "
                            "it (every address) or give 'name' (the node names' addresses only)",
                            v);
}

/* COHORT_BOOTSTRAP_FANOUT: leaders below one leader (the same on every
 * task: srun gives them one environment), 0 for the default. */
static int fanout(const struct envlist *env, uint32_t *out, struct cohort_err *err)
{
    const char *v = envlist_get(env, "COHORT_BOOTSTRAP_FANOUT");
    uint32_t n;
    *out = 0;
    if (!v || !*v)
        return 0;
    if (parse_u32("COHORT_BOOTSTRAP_FANOUT", v, &n, err) < 0 || n < 1 || n > TREE_MAX_FANOUT)
        return cohort_fail_code(err, COHORT_E_CONFIG,
                                "COHORT_BOOTSTRAP_FANOUT='%.40s' is not a number from 1 to %u: "
                                "give one, or unset it for the default (%u)",
                                v, TREE_MAX_FANOUT, TREE_DEFAULT_FANOUT);
    *out = n;
    return 0;
}

static int tcp_open(const struct boot_args *a, void **b, struct cohort_err *err)
{
    struct auth_key key = {0};
    struct tree *t = NULL;
    uint32_t fan = 0;
    bool names = false;
    int rc = fanout(a->env, &fan, err);
    if (rc == 0)
        rc = bind_names(a->env, &names, err);
    if (rc == 0)
        rc = auth_step_key(a->env, &key, err);
    if (rc == 0) {
        char socket_dir[96];
        const char *dir = envlist_get(a->env, "COHORT_SOCKET_DIR");
        if (dir)
            snprintf(socket_dir, sizeof socket_dir, "%s", dir);
        else /* under munge: a directory of this user's, mode 0700 */
            snprintf(socket_dir, sizeof socket_dir, "/tmp/cohort-%u", (unsigned)geteuid());
        struct tree_layout layout = {
            .rank = a->step->rank,
            .size = a->step->num_tasks,
            .num_nodes = a->step->num_nodes,
            .rank_node = a->rank_node,
            .nodes = a->step->nodes,
            .master_addr = a->master,
            .port = a->port,
            .job_id = a->step->job_id,
            .step_id = a->step->step_id,
            .socket_dir = socket_dir,
            .fanout = fan,
            .bind_names = names,
        };
        rc = tree_open(&layout, &key, a->timeout_s * 1000, &t, err);
    }
    auth_key_clear(&key);
    *b = t;
    return rc;
}

static int tcp_exchange(void *b, const void *mine, uint32_t len, uint32_t want,
                        const char *what, uint8_t **down, uint32_t *down_len,
                        struct cohort_err *err)
{
    (void)want; /* the tree sends every block down */
    return tree_exchange(b, mine, len, what, down, down_len, err);
}

static void tcp_set_timeout(void *b, int seconds)
{
    tree_set_timeout(b, seconds * 1000);
}

static void tcp_close(void *b)
{
    tree_close(b);
}

const struct boot_ops boot_tcp_ops = {
    .name = "tcp",
    .open = tcp_open,
    .exchange = tcp_exchange,
    .set_timeout = tcp_set_timeout,
    .close = tcp_close,
};
