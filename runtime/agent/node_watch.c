/* node_watch.c - the node agent's part of the step watch (--cohort-watch;
 * see agent.h). It knows the node's tasks (the plugin's "task LOCAL RANK
 * PID" lines), looks at each one's state in /proc and at its NCCL
 * profiler's record (watch_shm.h) once a second and reports changes to the
 * store holder, beats up, and watches the node above in turn: the holder,
 * or in the watch's tree (node_tree.c) the agent above it. A verdict, the
 * holder's or its own when the node above is lost, becomes one "end TELL
 * LINE" line to the plugin, which ends the node's tasks; the teller's node
 * also writes the JSON object to COHORT_WATCH_FILE.
 *
 * Decisions: a task is stopped when its own process is in state T or t
 * (SIGSTOP, a debugger), never because it computes: a running task is
 * never reported. The profiler's directory is made here, 0700 under
 * /dev/shm (mkdtemp: no name anyone can take first), and only regular
 * files of the job's user in it are read (watch_shm_open). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "base_sys.h"
#include "hostlist.h"
#include "store_msg.h"
#include "watch.h"
#include "watch_shm.h"
#include "watch_text.h"
#include "watch_tree.h"

/* One task of the node, as the plugin told of it. */
struct watched_task {
    uint32_t rank;
    pid_t pid;                /* 0: not forked yet, or ended */
    bool ended;
    bool told;                /* its end was sent to the holder */
    uint32_t status;          /* its wait status, once ended */
    int64_t wall;             /* and the wall clock then */
    bool stopped;             /* as last reported */
    struct watch_shm_reader *rec;
    struct watch_shm_slot sent[WATCH_SHM_COMMS]; /* the counts last reported */
};

struct node_watch {
    uint32_t stall_s;
    char file[4096];          /* COHORT_WATCH_FILE; "": none */
    char gpus[4096];          /* COHORT_WATCH_GPUS */
    char dir[64];             /* the profiler's directory */
    int dirfd;
    struct watched_task *t;   /* by local id */
    uint32_t n_t;
    int64_t next_tick, heard;
    int64_t started_wall;     /* the wall clock (ms) at the agent's start */
    bool over;                /* the holder said it ends as asked */
    bool ended;               /* a verdict was passed to the plugin */
    bool left;                /* every task of the node ended */
    bool bye_sent;            /* and the holder was told so */
    bool ack_over;            /* the plugin is told "bye" once the holder says it ends */
};

int node_watch_start(struct agent *a, const struct envlist *env, struct cohort_err *err)
{
    const char *s = envlist_get(env, "COHORT_WATCH");
    uint32_t stall = 0;
    if (!s || !*s)
        return 0;
    if (parse_u32("COHORT_WATCH", s, &stall, err) < 0 || stall == 0 || stall > 86400)
        return cohort_fail(err, "COHORT_WATCH='%s' is not a number of seconds (1-86400)", s);
    struct node_watch *w = a->watch = calloc(1, sizeof *w);
    uint32_t n = a->step.tasks_per_node[a->step.node_id];
    if (!w || !(w->t = calloc(n ? n : 1, sizeof *w->t)))
        return cohort_fail(err, "out of memory");
    w->stall_s = stall;
    w->started_wall = base_wall_ms();
    w->n_t = n;
    w->dirfd = -1;
    for (uint32_t i = 0; i < n; i++)
        w->t[i].rank = a->step.node_ranks[i];
    const char *f = envlist_get(env, "COHORT_WATCH_FILE");
    const char *g = envlist_get(env, "COHORT_WATCH_GPUS");
    snprintf(w->file, sizeof w->file, "%s", f ? f : "");
    snprintf(w->gpus, sizeof w->gpus, "%s", g ? g : "");
    snprintf(w->dir, sizeof w->dir, "/dev/shm/cohort-watch-XXXXXX");
    if (!mkdtemp(w->dir) || (w->dirfd = open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return cohort_fail(err, "cannot make the watch's directory under /dev/shm: %s",
                           strerror(errno));
    return 0;
}

const char *node_watch_dir(const struct agent *a)
{
    return a->watch ? a->watch->dir : NULL;
}

uint32_t node_watch_stall(const struct agent *a)
{
    return a->watch ? a->watch->stall_s : 0;
}

bool node_watch_line(struct agent *a, const char *line)
{
    unsigned local, rank;
    int pid;
    if (!a->watch || sscanf(line, "task %u %u %d", &local, &rank, &pid) != 3)
        return false;
    struct node_watch *w = a->watch;
    if (local < w->n_t && w->t[local].rank == rank && pid > 0)
        w->t[local].pid = pid;
    return true;
}


/* Tells the plugin that the node's goodbye is out ("bye"), so that the
 * end of the node's part of the step, which Slurm follows by killing what
 * is left of it (this agent, and on the first node the holder), does not
 * come first. */
static void ack(void)
{
    (void)!send(0, "bye\n", 4, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Every task of the node ended: goodbye to the holder, and the holder no
 * longer watched (its end is near, and no loss to this node). The holder's
 * own node waits for the holder to tell every node that the watch is over
 * before it tells the plugin. */
static void leave(struct agent *a)
{
    struct node_watch *w = a->watch;
    w->left = true;
    node_tree_leave(a); /* The agents below dial the holder, whatever this link's state. */
    if (!a->up_ready && !a->up_error[0])
        return; /* The link is still being made: the goodbye follows it. */
    if (a->up_ready && !w->bye_sent) {
        w->bye_sent = true;
        agent_up_send(a, STORE_WATCH_BYE, a->step.node_id, NULL, 0, NULL, 0);
        net_flush(a->net, base_now_ms() + 500);
    }
    if (a->up_ready && a->holder > 0 && !w->over)
        w->ack_over = true;
    else
        ack();
}

/* Sends the ends of the node's tasks not sent yet (those that came before
 * the link was up). */
static void tell_ends(struct agent *a)
{
    struct node_watch *w = a->watch;
    for (uint32_t i = 0; a->up_ready && i < w->n_t; i++) {
        struct watched_task *t = &w->t[i];
        if (!t->ended || t->told)
            continue;
        uint8_t b[12];
        wire_put32(b, t->status);
        wire_put64(b + 4, (uint64_t)t->wall);
        t->told = agent_up_send(a, STORE_ENDED, t->rank, b, 12, NULL, 0) == 0;
    }
}

void node_watch_ended(struct agent *a, uint32_t rank, uint32_t status)
{
    if (!a->watch) {
        uint8_t b[4];
        wire_put32(b, status);
        agent_up_send(a, STORE_ENDED, rank, b, 4, NULL, 0);
        return;
    }
    struct node_watch *w = a->watch;
    uint32_t ended = 0;
    for (uint32_t i = 0; i < w->n_t; i++) {
        struct watched_task *t = &w->t[i];
        if (t->rank == rank && !t->ended) {
            *t = (struct watched_task){.rank = rank, .ended = true, .status = status,
                                       .wall = base_wall_ms(), .rec = t->rec};
        }
        ended += t->ended;
    }
    tell_ends(a);
    if (ended == w->n_t && !w->left)
        leave(a);
}

void node_watch_connected(struct agent *a)
{
    if (!a->watch)
        return;
    char host[256];
    if (hostlist_nth(a->step.nodes, a->step.node_id, host, sizeof host) < 0)
        snprintf(host, sizeof host, "node%u", a->step.node_id);
    size_t hl = strlen(host) + 1, gl = strlen(a->watch->gpus) + 1;
    agent_up_send(a, STORE_WATCH_NODE, a->step.node_id, (const uint8_t *)host, hl,
                  (const uint8_t *)a->watch->gpus, gl);
    a->watch->heard = base_now_ms();
    /* A link made again (in the tree, to the holder in place of the parent)
     * may have lost what the old one carried: every state is told anew,
     * which the holder takes as it is (ends, stops and counts are kept once). */
    for (uint32_t i = 0; i < a->watch->n_t; i++) {
        struct watched_task *t = &a->watch->t[i];
        t->told = t->stopped = false;
        memset(t->sent, 0, sizeof t->sent);
    }
    node_tree_connected(a);
    tell_ends(a);
    if (a->watch->left)
        leave(a);
}

void node_watch_heard(struct agent *a, int64_t now)
{
    if (a->watch)
        a->watch->heard = now;
}

/* Whether COHORT_WATCH_FILE was written since this agent started: by the
 * holder's teller, whose verdict an agent's own (made alone, when the
 * holder is lost: on a split network, each side names the other) does not
 * replace. */
static bool written_since_start(const struct node_watch *w)
{
    struct stat st;
    return stat(w->file, &st) == 0 &&
           (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000 >= w->started_wall;
}

/* Writes json and a newline to path whole or not at all: into a file of
 * its own beside it, renamed over it once written, so that a batch script
 * that reads path after a crash finds the last verdict or none, never half
 * of one. Where the directory takes no new file, path is written in place. */
static void write_verdict(const char *path, const char *json)
{
    char tmp[4200];
    int n = snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    int fd = n > 0 && (size_t)n < sizeof tmp
                 ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)
                 : -1;
    bool renamed = fd >= 0;
    if (fd < 0)
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    bool ok = base_write_all(fd, json, strlen(json)) == 0 && base_write_all(fd, "\n", 1) == 0;
    ok = close(fd) == 0 && ok;
    if (renamed && (!ok || rename(tmp, path) != 0))
        unlink(tmp);
}

/* Tells the plugin to end the node's tasks (tell: this node tells the
 * user line), once; the teller also writes json to COHORT_WATCH_FILE,
 * unless the verdict is this agent's alone and the holder's is there. */
static void end_tasks(struct agent *a, bool tell, bool alone, const char *line,
                      const char *json)
{
    struct node_watch *w = a->watch;
    if (w->ended)
        return;
    w->ended = true;
    /* The plugin is told first: the file may be on a network filesystem
     * that hangs while the network is lost, and the tasks' end must not
     * wait for it. */
    char out[1200];
    int n = snprintf(out, sizeof out, "end %d %.1100s\n", tell ? 1 : 0, line);
    (void)!send(0, out, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (tell && w->file[0] && json && *json && !(alone && written_since_start(w)))
        write_verdict(w->file, json);
}

bool node_watch_frame(struct agent *a, uint16_t op, uint32_t c, const uint8_t *rest,
                      size_t len)
{
    struct node_watch *w = a->watch;
    if (!w || (op != STORE_BEAT && op != STORE_VERDICT && op != STORE_WATCH_OVER &&
               op != STORE_WATCH_BYE))
        return false;
    if (op == STORE_WATCH_BYE) {
        if (c == node_tree_parent(a))
            node_tree_redial(a); /* It left: the holder is dialed. */
        return true;
    }
    if (op == STORE_WATCH_OVER) {
        w->over = true;
        node_tree_pass(a, op, 0, rest, len);
        if (w->ack_over)
            ack();
        w->ack_over = false;
    }
    if (op != STORE_VERDICT || len < 6)
        return true;
    uint32_t teller = wire_get32(rest);
    const char *line = (const char *)rest + 4;
    size_t ll = strnlen(line, len - 4);
    if (ll == len - 4)
        return true; /* not a whole verdict: the holder's, so never */
    const char *json = line + ll + 1;
    if (strnlen(json, len - 4 - ll - 1) == len - 4 - ll - 1)
        json = NULL;
    if (!w->ended)
        node_tree_pass(a, op, 0, rest, len);
    end_tasks(a, teller == a->step.node_id, false, line, json);
    return true;
}

/* The verdict this agent makes alone when the node above it is lost: the
 * holder's (node 0) or, in the watch's tree, its parent's: closed (its
 * link closed) or silent since since. The agents below are told it. */
static void up_lost(struct agent *a, bool closed, int64_t since, int64_t now)
{
    const struct cohort_step *s = &a->step;
    uint32_t up = node_tree_parent(a);
    up = up == WATCH_TREE_TOP ? 0 : up;
    struct watch_verdict v = {.kind = WATCH_NODE_LOST, .node = up, .closed = closed,
                              .since_ms = since, .now_ms = now,
                              .teller = s->num_nodes > 1 && up == 0 ? 1 : 0};
    for (uint32_t r = 0; r < s->num_tasks; r++)
        if (a->rank_node[r] == up && v.n_ranks++ < WATCH_RANKS_MAX)
            v.ranks[v.n_ranks - 1] = r;
    char **host = calloc(s->num_nodes, sizeof *host);
    for (uint32_t n = 0; host && n < s->num_nodes; n++) {
        char h[256];
        if (hostlist_nth(s->nodes, n, h, sizeof h) == 0)
            host[n] = strdup(h);
    }
    struct watch_names names = {.node_host = (const char *const *)host,
                                .rank_node = a->rank_node, .n_nodes = host ? s->num_nodes : 0,
                                .n_ranks = s->num_tasks, .job = s->job_id, .step = s->step_id,
                                .wall_now_ms = base_wall_ms()};
    char line[1024];
    watch_line(&v, &names, line, sizeof line);
    char *json = watch_json(&v, &names, line);
    size_t len;
    uint8_t *p = a->watch->ended ? NULL : store_msg_verdict(v.teller, line, json, &len);
    if (p) /* The agents below are told it, as the holder tells its verdict. */
        node_tree_pass(a, STORE_VERDICT, 0, p, len);
    free(p);
    end_tasks(a, v.teller == s->node_id, true, line, json);
    free(json);
    for (uint32_t n = 0; host && n < s->num_nodes; n++)
        free(host[n]);
    free(host);
}

void node_watch_link_down(struct agent *a)
{
    struct node_watch *w = a->watch;
    /* The agent above left, or never answered: the holder is dialed. */
    if (w && !w->over && !w->ended && !w->left && node_tree_redial(a))
        return;
    if (w && (w->ack_over || (w->left && !w->bye_sent)))
        ack(); /* The holder is gone: nothing more to wait for. */
    if (w)
        w->ack_over = false;
    if (w && !w->over && !w->ended && !w->left)
        up_lost(a, true, w->heard, base_now_ms());
}

/* Returns whether pid's process is stopped (state T or t in /proc). */
static bool is_stopped(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = 0;
    const char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' && (paren[2] == 'T' || paren[2] == 't');
}

/* Reports what changed in task t's profiler record. */
static void report_progress(struct agent *a, struct watched_task *t)
{
    struct node_watch *w = a->watch;
    if (!t->rec && !(t->rec = watch_shm_open(w->dirfd, t->rank, a->uid)))
        return;
    struct watch_shm_slot now[WATCH_SHM_COMMS];
    unsigned n = watch_shm_read(t->rec, now);
    for (unsigned i = 0; i < n; i++) {
        const struct watch_shm_slot *s = &now[i];
        if (s->nranks > a->step.num_tasks)
            continue; /* a launcher's workers inside the task: not the step's ranks */
        if (s->started == t->sent[i].started && s->completed == t->sent[i].completed &&
            t->sent[i].nranks)
            continue;
        uint8_t b[STORE_WATCH_COLL_LEN];
        wire_put64(b, s->comm);
        wire_put32(b + 8, s->nranks);
        wire_put32(b + 12, s->rank);
        wire_put64(b + 16, s->started);
        wire_put64(b + 24, s->completed < s->started ? s->completed : s->started);
        b[32] = (uint8_t)s->op;
        memset(b + 33, 0, 4);
        if (agent_up_send(a, STORE_WATCH_COLL, t->rank, b, sizeof b, NULL, 0) == 0)
            t->sent[i] = *s;
    }
}

void node_watch_tick(struct agent *a, int64_t now)
{
    struct node_watch *w = a->watch;
    if (!w || w->ended || now < w->next_tick)
        return;
    /* A tick seconds late means the agent was stopped (a suspended step
     * stops it with the holder): that time is not the holder's silence. */
    int64_t gap = w->next_tick && now - w->next_tick > WATCH_PAUSE_MS ? now - w->next_tick : 0;
    w->heard += gap;
    w->next_tick = now + WATCH_BEAT_MS;
    node_tree_tick(a, now, gap);
    if (!a->up_ready)
        return;
    if (!w->over && !w->left && now - w->heard >= WATCH_LOST_MS) {
        if (!node_tree_redial(a)) /* The parent is lost: the holder is dialed. */
            up_lost(a, false, w->heard, now);
        return;
    }
    agent_up_send(a, STORE_BEAT, 0, NULL, 0, NULL, 0);
    for (uint32_t i = 0; i < w->n_t; i++) {
        struct watched_task *t = &w->t[i];
        if (t->pid <= 0)
            continue;
        bool stopped = is_stopped(t->pid);
        uint8_t b = stopped;
        if (stopped != t->stopped &&
            agent_up_send(a, STORE_WATCH_STOP, t->rank, &b, 1, NULL, 0) == 0)
            t->stopped = stopped;
        report_progress(a, t);
    }
}

int64_t node_watch_wait(const struct agent *a, int64_t now)
{
    if (!a->watch || a->watch->ended)
        return 1000;
    int64_t left = a->watch->next_tick - now;
    return left < 0 ? 0 : left > 1000 ? 1000 : left;
}

/* Removes the profiler's files and directory. */
static void remove_dir(struct node_watch *w)
{
    DIR *d = w->dirfd >= 0 ? fdopendir(dup(w->dirfd)) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strncmp(e->d_name, "rank-", 5) == 0)
            unlinkat(w->dirfd, e->d_name, 0);
    if (d)
        closedir(d);
    if (w->dir[0] && w->dirfd >= 0)
        rmdir(w->dir);
}

void node_watch_end(struct agent *a)
{
    struct node_watch *w = a->watch;
    if (!w)
        return;
    if (!w->left)
        leave(a);
    for (uint32_t i = 0; i < w->n_t; i++)
        if (w->t[i].rec)
            watch_shm_close(w->t[i].rec);
    remove_dir(w);
    node_tree_end(a);
    if (w->dirfd >= 0)
        close(w->dirfd);
    free(w->t);
    free(w);
    a->watch = NULL;
}
