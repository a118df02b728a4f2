/* boot_tcp.c - libcohort's TCP bootstrap (boot_ops.h): the step's key
 * (auth_step_key), the directory of the node sockets under munge, and the
 * two-level tree (tree.h). */
#include "boot_ops.h"

#include <stdio.h>
#include <unistd.h>

#include "auth.h"
#include "tree.h"

static int tcp_open(const struct boot_args *a, void **b, struct cohort_err *err)
{
    struct auth_key key;
    struct tree *t = NULL;
    int rc = auth_step_key(a->env, &key, err);
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
