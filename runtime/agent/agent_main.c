/* agent_main.c - cohort-agent, the node agent. It is one process per node
 * of a step, never a rank; the plugin starts it (as the job's user, in the
 * step) when the step serves PyTorch's store (--cohort-store) or is
 * watched (--cohort-watch). It reads
 * its start record on standard input (NAME=VALUE lines up to an empty
 * one: the step's Slurm layout, its secret, the store holder's host and
 * port, the timeout), listens on the loopback interface, and on the
 * step's first node starts the store holder (cohort-work-coord, on the
 * step's MASTER_PORT, or the watch's own port when the store is not
 * served). It writes "port N" (the loopback port the node's ranks reach as
 * MASTER_PORT; "port N dir PATH" in a watched step, PATH being the
 * profiler's directory) or "error WHY" as one line on standard output, then
 * relays the node's TCPStore queries to the holder over one authenticated
 * connection, and the plugin's "ended RANK STATUS" lines (a task of the
 * node ended) too, until its standard input closes (the step ends on this
 * node). In a watched step it also takes the plugin's "task LOCAL RANK PID"
 * lines and answers the verdict with one "end TELL LINE" line on that same
 * socket (node_watch.c). It also holds the node's socket for the step's
 * relays (host.h): the relays of the step's queues and stream sets on the
 * node run in threads of it, so that one process per node serves the
 * store, the queues and the sets. Its exit status is 0, or 2 when it could
 * not start. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "coord_start.h"
#include "envlist.h"
#include "host.h"
#include "layout.h"
#include "ports.h"
#include "step_env.h"
#include "store_msg.h"
#include "text_file.h"

#ifndef COHORT_WORK_COORD_PATH
#error COHORT_WORK_COORD_PATH: where cohort-work-coord is installed (set by the build)
#endif

#define RECORD_MAX (1u << 20)
#define LINE_MAX_ 256
#define HOLDER_OVER_MS 1500 /* the holder's time to end after the watch's end */

/* Reads the record's lines into env, up to the empty line. Returns 0, or
 * -1 with err. */
static int read_record(struct envlist *env, struct cohort_err *err)
{
    char *buf = malloc(RECORD_MAX);
    size_t n = 0;
    int rc = -1;
    while (buf && n < RECORD_MAX - 1) {
        ssize_t got = read(0, buf + n, 1); /* Byte by byte: what follows is the events'. */
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        n++;
        if (n >= 2 && buf[n - 1] == '\n' && (n == 1 || buf[n - 2] == '\n')) {
            rc = 0;
            break;
        }
    }
    if (rc == 0) {
        buf[n] = 0;
        for (char *line = strtok(buf, "\n"); line && rc == 0; line = strtok(NULL, "\n")) {
            char *eq = strchr(line, '=');
            if (eq) {
                *eq = 0;
                rc = envlist_set(env, line, eq + 1);
            }
        }
    }
    if (buf)
        explicit_bzero(buf, n);
    free(buf);
    return rc < 0 ? cohort_fail(err, "no whole start record on standard input") : 0;
}

/* Reads the step from env, and the view every peer's hello must carry.
 * Returns 0, or -1 with err. */
static int describe(struct agent *a, const struct envlist *env, struct cohort_err *err)
{
    const char *hf = step_env_hostfile(env);
    char *text = hf ? read_text_file("SLURM_HOSTFILE", hf, true, err) : NULL;
    if (hf && !text)
        return -1;
    int rc = step_from_env(&a->step, env, text, err);
    free(text);
    const struct cohort_step *s = &a->step;
    if (rc < 0 || !(a->rank_node = malloc(sizeof *a->rank_node * s->num_tasks)))
        return rc < 0 ? -1 : cohort_fail(err, "out of memory");
    if (layout_rank_nodes(s, a->rank_node, err) < 0)
        return -1;
    hs_view(s->num_tasks, s->num_nodes, a->rank_node, NULL, 0, a->view);
    return 0;
}

/* Reads the record's settings into a. Returns 0, or -1 with err. */
static int configure(struct agent *a, const struct envlist *env, struct cohort_err *err)
{
    const char *host = envlist_get(env, "COHORT_STORE_ADDR");
    const char *port = envlist_get(env, "COHORT_STORE_PORT");
    const char *t = envlist_get(env, "COHORT_TIMEOUT");
    const char *v = envlist_get(env, "COHORT_VERBOSE");
    /* When unset, the timeout bounds the dial to the holder and its wait for
     * the agents. */
    uint32_t secs = 300;
    if (t && (parse_u32("COHORT_TIMEOUT", t, &secs, err) < 0 || secs == 0 || secs > 86400))
        return cohort_fail(err, "COHORT_TIMEOUT='%s' is not a number of seconds (1-86400)", t);
    a->timeout_s = (int)secs;
    a->verbose = v && *v && strcmp(v, "0") != 0;
    a->uid = getuid();
    if (!host || !port)
        return cohort_fail(err, "its start record names no store holder");
    if (port_parse("COHORT_STORE_PORT", port, &a->port, err) < 0)
        return -1;
    snprintf(a->host, sizeof a->host, "%s", host);
    return auth_step_key(env, &a->key, err);
}

/* Starts the holder on the step's MASTER_PORT; the first node's agent does
 * this. Returns 0, or -1 with err. */
static int start_holder(struct agent *a, const struct envlist *env, struct cohort_err *err)
{
    struct coord_config cfg = {.kind = COORD_STORE, .key = a->key, .job = a->step.job_id,
                               .step = a->step.step_id, .size = a->step.num_tasks,
                               .num_nodes = a->step.num_nodes, .rank_node = a->rank_node,
                               .join_timeout_s = (uint32_t)a->timeout_s,
                               .verbose = a->verbose, .port = a->port,
                               .watch_stall_s = node_watch_stall(a),
                               .fanout = node_tree_fanout(a)};
    memcpy(cfg.view, a->view, sizeof cfg.view);
    snprintf(cfg.name, sizeof cfg.name, "PyTorch's");
    const char *path = envlist_get(env, "COHORT_WORK_COORD");
    uint16_t port = 0;
    char why[COHORT_ERR_LEN - 40];
    coord_start(&cfg, path && *path ? path : COHORT_WORK_COORD_PATH, "store holder",
                a->timeout_s, &a->holder, &port, NULL, why, sizeof why);
    explicit_bzero(&cfg.key, sizeof cfg.key);
    return port ? 0 : cohort_fail(err, "the step's store holder: %s", why);
}

/* Reads the plugin's lines ("ended RANK STATUS") and sends each up.
 * Returns false once standard input closed. */
static bool events(struct agent *a)
{
    static char line[LINE_MAX_];
    static size_t n;
    ssize_t got = read(0, line + n, sizeof line - 1 - n);
    if (got < 0 && (errno == EINTR || errno == EAGAIN))
        return true;
    if (got <= 0)
        return false;
    n += (size_t)got;
    line[n] = 0;
    char *nl;
    while ((nl = strchr(line, '\n'))) {
        *nl = 0;
        unsigned rank, status;
        if (sscanf(line, "ended %u %u", &rank, &status) == 2)
            node_watch_ended(a, rank, status);
        else
            node_watch_line(a, line);
        n -= (size_t)(nl + 1 - line);
        memmove(line, nl + 1, n + 1);
    }
    if (n == sizeof line - 1)
        n = 0; /* It is not a line of the plugin's. */
    return true;
}

#define POLL_HEAD 4 /* standard input, the listener, the loop, the link's socket */

/* Fills the poll's entries: the plugin's lines, the listener, the loop's
 * epoll descriptor, the link's own socket while it has output (the loop's
 * interest in writing was set at its last poll, maybe before clients queued
 * more), then each client. A closing client is polled for its output alone,
 * and no client is read while the link is backed up (the kernel holds what
 * they send). A client polled for nothing is left out (a negative
 * descriptor), so that a hang-up it cannot be served for yet does not wake
 * the agent again and again. */
static void poll_set(struct agent *a, struct pollfd *p)
{
    bool up_out = a->up_ready && a->up->c.out_len;
    p[0] = (struct pollfd){.fd = 0, .events = POLLIN};
    p[1] = (struct pollfd){.fd = a->lfd, .events = POLLIN};
    p[2] = (struct pollfd){.fd = net_fd(a->net), .events = POLLIN};
    p[3] = (struct pollfd){.fd = up_out ? a->up->c.fd : -1, .events = POLLOUT};
    bool up_full = agent_up_full(a);
    for (size_t i = 0; i < a->n_c; i++) {
        short ev = (short)((a->c[i].closing || up_full ? 0 : POLLIN) |
                           (a->c[i].out_len ? POLLOUT : 0));
        p[POLL_HEAD + i] = (struct pollfd){.fd = ev ? a->c[i].fd : -1, .events = ev};
    }
}

/* Serves until the plugin closes standard input. */
static void serve(struct agent *a)
{
    struct pollfd *p = NULL;
    size_t cap = 0;
    fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
    for (;;) {
        if (cap < a->n_c + POLL_HEAD) {
            struct pollfd *q = realloc(p, (cap = a->n_c + 64) * sizeof *q);
            if (!q)
                break;
            p = q;
        }
        poll_set(a, p);
        bool dialing = !a->up_ready && !a->up_error[0];
        int64_t wait = node_watch_wait(a, base_now_ms());
        if (poll(p, POLL_HEAD + a->n_c, dialing ? 20 : (int)wait) < 0 && errno != EINTR)
            break;
        if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && !events(a))
            break;
        struct net_event *ev;
        struct cohort_err e;
        int n = net_poll(a->net, 0, &ev, &e);
        if (n > 0) {
            agent_local_up_events(a, ev, n);
            node_tree_events(a, ev, n);
        }
        size_t served = a->n_c; /* Clients accepted below are polled next round. */
        for (size_t i = 0; i < served; i++)
            if (p[POLL_HEAD + i].revents)
                agent_local_serve(a, i, p[POLL_HEAD + i].revents);
        if (p[1].revents & POLLIN)
            agent_local_accept(a);
        agent_local_sweep(a);
        node_watch_tick(a, base_now_ms());
        if (node_tree_turn(a, &e) < 0) {
            snprintf(a->up_error, sizeof a->up_error, "%s", e.msg);
            node_watch_link_down(a);
        }
        net_flush(a->net, base_now_ms()); /* It writes what the socket takes now. */
    }
    free(p);
}

/* Ignores Slurm's warning signals and SIGPIPE. */
static void ignore_warnings(void)
{
    /* Slurm's warnings are for the ranks; the agent serves them until the
     * step ends (SIGKILL still ends it). */
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGPIPE};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], SIG_IGN);
}

/* Serves the node's relays of the step's queues and sets in this process
 * (host.h), not in one process each; their descriptors are counted with the
 * agent's own (its clients, its listener and link). When another process
 * holds their socket, they go on without it (said when verbose). */
static void serve_relays(struct agent *a)
{
    struct cohort_err e;
    a->relays = (struct coord_config){.kind = COORD_RELAY, .key = a->key,
                                      .job = a->step.job_id, .step = a->step.step_id,
                                      .node = a->step.node_id,
                                      .join_timeout_s = (uint32_t)a->timeout_s};
    /* Each task has a TCPStore client or two. */
    uint32_t tasks = a->step.tasks_per_node[a->step.node_id];
    if (host_serve(&a->relays, 2 * tasks + 8, &e) < 0 && a->verbose)
        fprintf(stderr, "cohort: agent of node %u: %s\n", a->step.node_id, e.msg);
}

/* Starts the agent: reads its record, listens, serves the relays, starts
 * the holder on the first node and dials it. Returns 0, or -1 with err. */
static int start(struct agent *a, struct cohort_err *err)
{
    struct envlist env;
    envlist_init(&env);
    int rc = read_record(&env, err);
    if (rc == 0)
        rc = describe(a, &env, err);
    if (rc == 0)
        rc = configure(a, &env, err);
    if (rc == 0)
        rc = node_watch_start(a, &env, err);
    if (rc == 0)
        rc = node_tree_start(a, &env, node_watch_stall(a) > 0, err);
    if (rc == 0) {
        net_fd_limit(); /* It raises the soft limit to the hard one. */
        rc = agent_local_listen(a, err);
    }
    if (rc == 0)
        serve_relays(a);
    if (rc == 0 && a->step.node_id == 0)
        rc = start_holder(a, &env, err);
    if (rc == 0)
        rc = agent_up_start(a, node_tree_admit, err);
    if (rc == 0)
        rc = node_tree_attach(a, err);
    if (rc == 0)
        rc = agent_up_dial(a, node_tree_parent(a), node_tree_dial_s(a), err);
    const char *secret = envlist_get(&env, "COHORT_SECRET");
    if (secret)
        explicit_bzero((char *)secret, strlen(secret));
    envlist_clear(&env);
    return rc;
}

/* Lets go of what the agent holds at its end. Its relays' threads, if any,
 * end with the process. */
static void agent_free(struct agent *a)
{
    for (size_t i = 0; i < a->n_c; i++) {
        if (a->c[i].fd >= 0)
            close(a->c[i].fd);
        free(a->c[i].in);
        free(a->c[i].out);
    }
    free(a->c);
    if (a->lfd >= 0)
        close(a->lfd);
    net_free(a->net);
    if (a->addrs)
        freeaddrinfo(a->addrs);
    free(a->rank_node);
    step_free(&a->step);
    auth_key_clear(&a->key);
}

/* Gives the holder, told by this node's goodbye that the watch is over,
 * up to HOLDER_OVER_MS to tell the other nodes' agents and end, so that its
 * end is not taken for a loss. */
static void wait_holder(struct agent *a)
{
    int64_t end = base_now_ms() + HOLDER_OVER_MS;
    while (base_now_ms() < end) {
        if (waitpid(a->holder, NULL, WNOHANG) == a->holder) {
            a->holder = 0;
            return;
        }
        net_poll(a->net, 20, &(struct net_event *){NULL}, &(struct cohort_err){0});
    }
}

int main(void)
{
    struct agent a = {.lfd = -1};
    struct cohort_err err;
    ignore_warnings();
    if (start(&a, &err) < 0) {
        printf("error %s\n", err.msg);
        fflush(stdout);
        if (a.holder > 0)
            coord_end(&a.holder);
        node_watch_end(&a);
        agent_free(&a);
        return 2;
    }
    if (node_watch_dir(&a))
        printf("port %u dir %s\n", a.lport, node_watch_dir(&a));
    else
        printf("port %u\n", a.lport);
    fflush(stdout);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 1);
        close(null);
    }
    serve(&a);
    bool watched = node_watch_dir(&a) != NULL;
    node_watch_end(&a);
    if (a.holder > 0 && watched)
        wait_holder(&a);
    if (a.holder > 0)
        coord_end(&a.holder);
    agent_free(&a);
    return 0;
}
