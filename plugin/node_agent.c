/* store_step.c - the plugin's part of PyTorch's store served by cohort
 * (see store_step.h). */
#include "node_agent.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base_sys.h"
#include "mps_proc.h"
#include "spank_env.h"

#define AGENT_END_MS 2000 /* the agent's time to end once told */

int store_step_want(const struct plugin_args *args, const char *env, bool opt_given,
                    const char *opt, bool *out, struct cohort_err *err)
{
    struct cohort_err e;
    *out = args->store;
    if (env && *env && store_arg_parse(env, out, &e) < 0)
        return cohort_fail(err, "COHORT_STORE=%s", e.msg);
    if (opt_given && store_arg_parse(opt, out, &e) < 0)
        return cohort_fail(err, "--cohort-store=%s", e.msg);
    return 0;
}

#define RECORD_MAX (512u << 10) /* the agent's record at most (it reads 1 MiB at most) */

/* Sends all of p[0..n) on a socket by end (ms): 0, or -1. */
static int send_by(int fd, const char *p, size_t n, long long end)
{
    for (size_t off = 0; off < n;) {
        struct pollfd pf = {.fd = fd, .events = POLLOUT};
        long long left = end - base_now_ms();
        int r = left > 0 ? poll(&pf, 1, (int)left) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        ssize_t w = send(fd, p + off, n - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (w <= 0)
            return -1;
        off += (size_t)w;
    }
    return 0;
}

/* The record, each variable a NAME=VALUE line, and an empty line, by end
 * (ms): slurmstepd never waits on the agent past it. */
static int send_record(int fd, const struct envlist *record, long long end)
{
    int rc = 0;
    size_t total = 0;
    for (size_t i = 0; rc == 0 && i <= record->n; i++) {
        char *line = NULL;
        int n = i < record->n
                    ? asprintf(&line, "%s=%s\n", record->names[i],
                               record->values[i])
                    : asprintf(&line, "\n");
        total += n > 0 ? (size_t)n : 0;
        if (n < 0 || total > RECORD_MAX || send_by(fd, line, (size_t)n, end) < 0)
            rc = -1;
        if (line)
            explicit_bzero(line, strlen(line));
        free(line);
    }
    return rc;
}

/* The agent's one line, by end: "port N" or "error WHY". */
static void read_line(int fd, long long end, char *line, size_t cap)
{
    size_t got = 0;
    line[0] = 0;
    while (got + 1 < cap && !memchr(line, '\n', got)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        long long left = end - base_now_ms();
        int r = left > 0 ? poll(&p, 1, (int)left) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        ssize_t n = r > 0 ? read(fd, line + got, cap - 1 - got) : -1;
        if (n < 0 && r > 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
        line[got] = 0;
    }
    line[strcspn(line, "\n")] = 0;
}

/* Starts the agent; 0 with s->pid and s->events_fd, or -1 with s->error. */
static int spawn(struct store_step *s, uid_t uid, gid_t gid, const char *agent, int out_fd,
                 int in_fd)
{
    struct mps_user u = {.uid = uid, .gid = gid};
    mps_user_groups(&u);
    s->pid = fork();
    if (s->pid == 0) {
        char *argv[] = {(char *)agent, NULL};
        char *envp[] = {"PATH=/usr/bin:/bin", NULL}; /* nothing of slurmstepd's */
        mps_child_become(&u, in_fd, out_fd);
        execve(agent, argv, envp);
        _exit(127);
    }
    mps_user_free(&u);
    pid_t parent;
    if (s->pid < 0 || mps_proc_stat(s->pid, &parent, &s->started) < 0) {
        snprintf(s->error, sizeof s->error, "--cohort-store: cannot start the node agent %s: "
                 "%s", agent, strerror(errno));
        s->pid = 0;
        return -1;
    }
    return 0;
}

/* The agent for the step, as the job's user. */
static void setup(struct store_step *s, bool user_set, uid_t uid, gid_t gid, const char *agent,
                  const struct envlist *record, int timeout_s)
{
    if (user_set) {
        snprintf(s->note, sizeof s->note, "cohort: note: --cohort-store: the job sets "
                 "MASTER_ADDR or MASTER_PORT itself, so PyTorch's store is left to its rank 0");
        return;
    }
    const char *ma = envlist_get(record, "COHORT_STORE_ADDR");
    snprintf(s->master_addr, sizeof s->master_addr, "%s", ma ? ma : "");
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) < 0 ||
        pipe2(out, O_CLOEXEC) < 0) {
        snprintf(s->error, sizeof s->error, "--cohort-store: %s", strerror(errno));
    } else if (spawn(s, uid, gid, agent, out[1], in[0]) == 0) {
        char line[COHORT_ERR_LEN + 16];
        close(out[1]);
        out[1] = -1;
        long long end = base_now_ms() + (long long)timeout_s * 1000;
        if (send_record(in[1], record, end) == 0)
            read_line(out[0], end, line, sizeof line);
        else
            line[0] = 0;
        unsigned port;
        int status = 0;
        if (sscanf(line, "port %u", &port) == 1 && port > 0 && port < 65536) {
            s->port = (uint16_t)port;
            s->up = true;
            s->events_fd = in[1];
            in[1] = -1;
        } else if (strncmp(line, "error ", 6) == 0) {
            snprintf(s->error, sizeof s->error, "--cohort-store: the node agent: %.440s", line + 6);
        } else if (mps_wait(s->pid, 500, &status)) {
            s->pid = 0;
            snprintf(s->error, sizeof s->error, "--cohort-store: the node agent %s exited as "
                     "it started (exit code %d: not there, or not cohort's agent?)", agent,
                     WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        } else {
            snprintf(s->error, sizeof s->error, "--cohort-store: the node agent %s did not "
                     "start within %d s", agent, timeout_s);
        }
    }
    for (int i = 0; i < 2; i++) {
        if (in[i] >= 0)
            close(in[i]);
        if (out[i] >= 0)
            close(out[i]);
    }
    if (!s->up)
        store_step_end(s);
}

static int set_var(spank_t sp, const char *name, const char *value, int overwrite)
{
    spank_err_t rc = spank_setenv(sp, name, value, overwrite);
    return rc != ESPANK_SUCCESS && rc != ESPANK_ENV_EXISTS;
}

int store_step_task(spank_t sp, struct store_step *s, uint32_t local)
{
    if (!s->want)
        return 0;
    if (s->error[0])
        return 1;
    if (s->note[0] && local == 0)
        fprintf(stderr, "%s\n", s->note);
    if (!s->up)
        return 0;
    char port[8];
    snprintf(port, sizeof port, "%u", s->port);
    /* the plan's MASTER_ADDR and MASTER_PORT (the job set neither) become
     * the node agent's; the runtime keeps the step's in COHORT_MASTER_ADDR */
    if (set_var(sp, "MASTER_ADDR", "127.0.0.1", 1) || set_var(sp, "MASTER_PORT", port, 1) ||
        set_var(sp, "COHORT_MASTER_ADDR", s->master_addr, 0) ||
        set_var(sp, "TORCHELASTIC_USE_AGENT_STORE", "True", 0) ||
        set_var(sp, "TORCHELASTIC_RESTART_COUNT", "0", 0)) {
        snprintf(s->error, sizeof s->error, "--cohort-store: cannot set the task's variables");
        return 1;
    }
    return 0;
}

void store_step_forked(struct store_step *s, uint32_t local, pid_t pid)
{
    agent_watch_task(s->watch, local, pid);
}

void store_step_ended(struct store_step *s, uint32_t local, uint32_t rank, int status)
{
    agent_watch_task_ended(s->watch, local);
    char line[48];
    int n = snprintf(line, sizeof line, "ended %u %u\n", rank, (unsigned)status);
    if (s->events_fd >= 0)
        (void)!send(s->events_fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void store_step_end(struct store_step *s)
{
    /* The watch is stopped before the agent's input closes: that closing is no death. */
    agent_watch_stop(s->watch);
    s->watch = NULL;
    if (s->events_fd >= 0) /* never 0: slurmstepd's, when no agent was started */
        close(s->events_fd);
    s->events_fd = -1;
    if (s->pid > 0 && !mps_wait(s->pid, AGENT_END_MS, NULL)) {
        pid_t parent;
        unsigned long long started;
        if (mps_proc_stat(s->pid, &parent, &started) == 0 && started == s->started)
            kill(s->pid, SIGKILL);
        mps_wait(s->pid, AGENT_END_MS, NULL);
    }
    s->pid = 0;
    s->up = false;
}

/* The agent's death watched, with the line its node's tasks get then and
 * the user (the job's: its ids, the groups slurmstepd set for user_init)
 * whose rights the line is written with. */
static void watch_agent(struct store_step *s, const struct cohort_step *step, uint32_t n_tasks,
                        uid_t uid, gid_t gid)
{
    char host[256], line[COHORT_ERR_LEN];
    if (hostlist_nth(step->nodes, step->node_id, host, sizeof host) < 0)
        snprintf(host, sizeof host, "?");
    snprintf(line, sizeof line, "cohort: store: the node agent of node %u (%s) died while the "
             "step was running: this task's store calls fail from now on, and ranks waiting on "
             "the store are told this node's ranks are gone (the node's slurmd log may say "
             "why)", step->node_id, host);
    struct mps_user u = {.uid = uid, .gid = gid};
    mps_user_groups(&u);
    s->watch = agent_watch_start(s->events_fd, n_tasks, line, &u);
    mps_user_free(&u);
    if (!s->watch)
        slurm_error("cohort: --cohort-store: the node agent's death cannot be watched (no "
                    "thread): its tasks would not be told of it");
}

/* The agent's record: what the job's environment says of the step. */
static const char *const record_vars[] = {
    "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE", "SLURM_DISTRIBUTION",
    "SLURM_DIST_PLANESIZE", "SLURM_HOSTFILE", "COHORT_SECRET", "COHORT_MUNGE_SOCKET",
    "COHORT_TIMEOUT", "COHORT_WORK_COORD"};

/* SLURM_GTIDS as Slurm writes it ("0,1,..."): the node's global ranks by
 * local id, which the agent reads back with the rest of the layout. */
static int set_gtids(struct envlist *r, const struct cohort_step *step)
{
    uint32_t n = step->tasks_per_node[step->node_id];
    char *text = malloc((size_t)n * 11 + 1);
    if (!text)
        return -1;
    size_t used = 0;
    text[0] = '\0';
    for (uint32_t i = 0; i < n; i++)
        used += (size_t)sprintf(text + used, "%s%u", i ? "," : "", step->node_ranks[i]);
    int rc = envlist_set(r, "SLURM_GTIDS", text);
    free(text);
    return rc;
}

static int make_record(spank_t sp, const struct cohort_step *step,
                       const struct cohort_node_plan *plan, bool verbose, struct envlist *r)
{
    int rc = collect_env(sp, r, record_vars, sizeof record_vars / sizeof *record_vars);
    rc |= envlist_setf(r, "SLURM_JOB_ID", "%u", step->job_id);
    rc |= envlist_setf(r, "SLURM_STEP_ID", "%u", step->step_id);
    rc |= envlist_setf(r, "SLURM_NODEID", "%u", step->node_id);
    rc |= envlist_setf(r, "SLURM_STEP_NUM_TASKS", "%u", step->num_tasks);
    rc |= set_gtids(r, step);
    rc |= envlist_set(r, "COHORT_STORE_ADDR", plan->master_addr);
    rc |= envlist_setf(r, "COHORT_STORE_PORT", "%u", plan->tasks[0].master_port);
    rc |= envlist_set(r, "COHORT_VERBOSE", verbose ? "1" : "0");
    return rc ? -1 : 0;
}

void store_step_start(struct store_step *s, spank_t sp, const struct plugin_args *args,
                      const char *srun_store, bool opt_given, const char *opt,
                      const struct cohort_step *step, const struct cohort_node_plan *plan,
                      bool verbose)
{
    struct cohort_err err;
    memset(s, 0, sizeof *s);
    s->events_fd = -1;
    char *v = get_env(sp, "COHORT_STORE");
    bool want = false;
    if (store_step_want(args, v ? v : srun_store, opt_given, opt, &want, &err) < 0) {
        s->want = true; /* asked for, wrongly: each task says so */
        snprintf(s->error, sizeof s->error, "%s", err.msg);
    }
    free(v);
    if (!want || s->error[0] || plan->n_tasks == 0)
        return;
    s->want = true;
    struct envlist r;
    uid_t uid;
    gid_t gid;
    envlist_init(&r);
    char *ma = get_env(sp, "MASTER_ADDR"), *mp = get_env(sp, "MASTER_PORT");
    char *agent = get_env(sp, "COHORT_AGENT"), *t = get_env(sp, "COHORT_TIMEOUT");
    int timeout_s = t && atoi(t) > 0 && atoi(t) < 30 ? atoi(t) : 30;
    if (spank_get_item(sp, S_JOB_UID, &uid) || spank_get_item(sp, S_JOB_GID, &gid))
        snprintf(s->error, sizeof s->error, "--cohort-store: slurmstepd did not give the "
                 "job's user");
    else if (make_record(sp, step, plan, verbose, &r) < 0)
        snprintf(s->error, sizeof s->error, "--cohort-store: out of memory");
    else
        setup(s, ma || mp, uid, gid, agent && *agent ? agent : COHORT_AGENT_PATH, &r, timeout_s);
    if (s->up)
        watch_agent(s, step, plan->n_tasks, uid, gid);
    for (size_t i = 0; i < r.n; i++)
        explicit_bzero(r.values[i], strlen(r.values[i]));
    envlist_clear(&r);
    free(ma);
    free(mp);
    free(agent);
    free(t);
}
