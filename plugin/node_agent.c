/* node_agent.c - the step's node agent started, told and ended from
 * slurmstepd (see node_agent.h). */
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
#include "base_text.h"
#include "hostlist.h"
#include "mps_proc.h"
#include "spank_env.h"

#define AGENT_END_MS 2000 /* the agent's time to end once told */

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

/* Starts the agent; 0 with a->pid, or -1 with a->error (what: the option
 * it is started for). */
static int spawn(struct node_agent *a, const char *what, uid_t uid, gid_t gid,
                 const char *agent, int out_fd, int in_fd)
{
    struct mps_user u = {.uid = uid, .gid = gid};
    mps_user_groups(&u);
    a->pid = fork();
    if (a->pid == 0) {
        char *argv[] = {(char *)agent, NULL};
        char *envp[] = {"PATH=/usr/bin:/bin", NULL}; /* nothing of slurmstepd's */
        mps_child_become(&u, in_fd, out_fd);
        execve(agent, argv, envp);
        _exit(127);
    }
    mps_user_free(&u);
    pid_t parent;
    if (a->pid < 0 || mps_proc_stat(a->pid, &parent, &a->started) < 0) {
        snprintf(a->error, sizeof a->error, "%s: cannot start the node agent %s: %s", what,
                 agent, strerror(errno));
        a->pid = 0;
        return -1;
    }
    return 0;
}

/* Takes the agent's answer line into a: "port N", and " dir PATH" after it
 * when it watches the step. 0, or -1 when line is no such answer. */
static int take_answer(struct node_agent *a, const char *line)
{
    uint64_t port;
    const char *rest = line + 5;
    if (strncmp(line, "port ", 5) != 0 ||
        base_parse_decimal(&rest, NULL, 5, 65535, &port, NULL) < 0 || port == 0)
        return -1;
    if (a->watching && (strncmp(rest, " dir /", 6) != 0 || strlen(rest + 5) >= sizeof a->dir))
        return -1;
    if (!a->watching && *rest)
        return -1;
    snprintf(a->dir, sizeof a->dir, "%s", a->watching ? rest + 5 : "");
    a->port = (uint16_t)port;
    return 0;
}

/* Why the agent gave no answer, into a->error: its error line, its exit,
 * another line than an answer, or none in time. */
static void no_answer(struct node_agent *a, const char *what, const char *agent,
                      const char *line, int timeout_s)
{
    int status = 0;
    if (strncmp(line, "error ", 6) == 0) {
        snprintf(a->error, sizeof a->error, "%s: the node agent: %.440s", what, line + 6);
    } else if (mps_wait(a->pid, 500, &status)) {
        a->pid = 0;
        snprintf(a->error, sizeof a->error, "%s: the node agent %s exited as it started (exit "
                 "code %d: not there, or not cohort's agent?)", what, agent,
                 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    } else if (line[0]) {
        snprintf(a->error, sizeof a->error, "%s: the node agent %s answered '%.100s', not "
                 "'port N%s' (not this cohort's agent?)", what, agent, line,
                 a->watching ? " dir PATH" : "");
    } else {
        snprintf(a->error, sizeof a->error, "%s: the node agent %s did not start within %d s",
                 what, agent, timeout_s);
    }
}

/* The agent for the step, as the job's user: started, sent its record,
 * its answer read. */
static void setup(struct node_agent *a, const char *what, uid_t uid, gid_t gid,
                  const char *agent, const struct envlist *record, int timeout_s)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) < 0 ||
        pipe2(out, O_CLOEXEC) < 0) {
        snprintf(a->error, sizeof a->error, "%s: %s", what, strerror(errno));
    } else if (spawn(a, what, uid, gid, agent, out[1], in[0]) == 0) {
        char line[COHORT_ERR_LEN + 16];
        close(out[1]);
        out[1] = -1;
        long long end = base_now_ms() + (long long)timeout_s * 1000;
        if (send_record(in[1], record, end) == 0)
            read_line(out[0], end, line, sizeof line);
        else
            line[0] = 0;
        if (take_answer(a, line) == 0) {
            a->up = true;
            a->events_fd = in[1];
            in[1] = -1;
        } else {
            no_answer(a, what, agent, line, timeout_s);
        }
    }
    for (int i = 0; i < 2; i++) {
        if (in[i] >= 0)
            close(in[i]);
        if (out[i] >= 0)
            close(out[i]);
    }
    if (!a->up)
        node_agent_end(a);
}

/* Sends one line to the agent, never waiting (slurmstepd's hooks must not
 * block): the agent reads its input as it comes, so a full pair means an
 * agent that no longer reads, and the line is dropped. */
static void tell_agent(const struct node_agent *a, const char *line, int n)
{
    if (a->events_fd >= 0 && n > 0)
        (void)!send(a->events_fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void node_agent_forked(struct node_agent *a, uint32_t local, uint32_t rank, pid_t pid)
{
    agent_watch_task(a->guard, local, pid);
    char line[64];
    if (a->watching)
        tell_agent(a, line, snprintf(line, sizeof line, "task %u %u %d\n", local, rank, (int)pid));
}

void node_agent_ended(struct node_agent *a, uint32_t local, uint32_t rank, int status)
{
    agent_watch_task_ended(a->guard, local);
    char line[48];
    tell_agent(a, line, snprintf(line, sizeof line, "ended %u %u\n", rank, (unsigned)status));
    if (a->watching && a->guard && ++a->n_ended == a->n_tasks &&
        !agent_watch_wait_bye(a->guard, NODE_AGENT_BYE_MS))
        slurm_info("cohort: watch: the node agent did not say its goodbye to the step's "
                   "holder within %d s of the node's last task's end: the other nodes may "
                   "take this node's end for its loss", NODE_AGENT_BYE_MS / 1000);
}

void node_agent_end(struct node_agent *a)
{
    /* The thread is stopped before the agent's input closes: that closing is no death. */
    agent_watch_stop(a->guard);
    a->guard = NULL;
    if (a->events_fd >= 0) /* never 0: slurmstepd's, when no agent was started */
        close(a->events_fd);
    a->events_fd = -1;
    if (a->pid > 0 && !mps_wait(a->pid, AGENT_END_MS, NULL)) {
        pid_t parent;
        unsigned long long started;
        if (mps_proc_stat(a->pid, &parent, &started) == 0 && started == a->started)
            kill(a->pid, SIGKILL);
        mps_wait(a->pid, AGENT_END_MS, NULL);
    }
    a->pid = 0;
    a->up = false;
}

/* The agent's side read by a thread, with the line the node's tasks get
 * if it dies and the user (the job's: its ids, the groups slurmstepd set
 * for user_init) whose rights the line is written with. */
static void guard_agent(struct node_agent *a, bool store, const struct cohort_step *step,
                        uint32_t n_tasks, uid_t uid, gid_t gid)
{
    char host[256], line[COHORT_ERR_LEN];
    if (hostlist_nth(step->nodes, step->node_id, host, sizeof host) < 0)
        snprintf(host, sizeof host, "?");
    int n = snprintf(line, sizeof line, "cohort: %s: the node agent of node %u (%s) died while "
                     "the step was running: ", a->watching ? "watch" : "store", step->node_id,
                     host);
    snprintf(line + n, sizeof line - (size_t)n, "%s (the node's slurmd log may say why)",
             !a->watching ? "this task's store calls fail from now on, and ranks waiting on "
                            "the store are told this node's ranks are gone"
             : store ? "this task's store calls fail from now on, the step's other nodes are "
                       "told this node is lost, and this node's tasks are ended"
                     : "this node is no longer watched, the step's other nodes are told it "
                       "is lost, and this node's tasks are ended");
    struct mps_user u = {.uid = uid, .gid = gid};
    mps_user_groups(&u);
    a->guard = agent_watch_start(a->events_fd, n_tasks, line, &u, a->watching);
    mps_user_free(&u);
    if (!a->guard)
        slurm_error("cohort: %s: the node agent cannot be watched (no thread): its death "
                    "would not be told to its tasks%s", a->watching ? "--cohort-watch" :
                    "--cohort-store", a->watching ? ", nor would the watch end them" : "");
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

int node_agent_record(spank_t sp, const struct cohort_step *step, bool verbose,
                      struct envlist *r)
{
    int rc = collect_env(sp, r, record_vars, sizeof record_vars / sizeof *record_vars);
    rc |= envlist_setf(r, "SLURM_JOB_ID", "%u", step->job_id);
    rc |= envlist_setf(r, "SLURM_STEP_ID", "%u", step->step_id);
    rc |= envlist_setf(r, "SLURM_NODEID", "%u", step->node_id);
    rc |= envlist_setf(r, "SLURM_STEP_NUM_TASKS", "%u", step->num_tasks);
    rc |= set_gtids(r, step);
    rc |= envlist_set(r, "COHORT_VERBOSE", verbose ? "1" : "0");
    return rc ? -1 : 0;
}

void node_agent_record_clear(struct envlist *record)
{
    for (size_t i = 0; i < record->n; i++)
        explicit_bzero(record->values[i], strlen(record->values[i]));
    envlist_clear(record);
}

void node_agent_start(struct node_agent *a, spank_t sp, const struct envlist *record,
                      bool store, bool watch, const struct cohort_step *step,
                      uint32_t n_tasks)
{
    memset(a, 0, sizeof *a);
    a->events_fd = -1;
    a->watching = watch;
    a->n_tasks = n_tasks;
    const char *what = store && watch ? "--cohort-store and --cohort-watch"
                       : store        ? "--cohort-store"
                                      : "--cohort-watch";
    uid_t uid = 0;
    gid_t gid = 0;
    char *agent = get_env(sp, "COHORT_AGENT"), *t = get_env(sp, "COHORT_TIMEOUT");
    int timeout_s = t && atoi(t) > 0 && atoi(t) < 30 ? atoi(t) : 30;
    if (!record)
        snprintf(a->error, sizeof a->error, "%s: out of memory", what);
    else if (spank_get_item(sp, S_JOB_UID, &uid) || spank_get_item(sp, S_JOB_GID, &gid))
        snprintf(a->error, sizeof a->error, "%s: slurmstepd did not give the job's user", what);
    else
        setup(a, what, uid, gid, agent && *agent ? agent : COHORT_AGENT_PATH, record, timeout_s);
    if (a->up)
        guard_agent(a, store, step, n_tasks, uid, gid);
    free(agent);
    free(t);
}
