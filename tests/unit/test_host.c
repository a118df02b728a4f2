/* test_host.c - the node's relay process of a step (runtime/relay/host.c:
 * the real cohort-work-coord, started as a node's first rank starts a
 * relay, coord_start_relay). The first relay of a step's node starts a
 * process; a second queue's relay there is run by it (no process started,
 * its socket held by the first process); a record of another key sent to
 * that process is answered with an error; a connection of another uid is
 * closed unread; the relays' descriptors are counted together against
 * the open-file limit (a second relay that does not fit under a hard
 * limit of 128 gets a process of its own); the process ends once its
 * relays have, and a
 * later relay starts a new one; a process of another uid holding the
 * node's socket first gets nothing and the relay starts in a process of
 * its own; where the plugin's node agent (cohort-agent) serves the step,
 * the relay runs in the agent. The
 * checks as another uid need root (skipped otherwise). */
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coord_config.h"
#include "coord_start.h"
#include "net.h"
#include "tap.h"
#include "wire.h"
#include "relay_test.h"

#define RANKS 20 /* all on node 0 */

static uint32_t rank_node[RANKS];

static void bail(const char *why)
{
    printf("Bail out! %s\n", why);
    exit(1);
}

/* s's record: node 0's relay of queue tag in job's step. */
static void record(struct rt_start *s, uint32_t job, uint8_t tag)
{
    struct coord_config *cfg = &s->cfg;
    memset(s, 0, sizeof *s);
    *cfg = (struct coord_config){.kind = COORD_RELAY, .job = job, .step = 3, .size = RANKS,
                                 .num_nodes = 1, .rank_node = rank_node,
                                 .join_timeout_s = 5, .node = 0, .fanout = 128};
    const char *build = getenv("COHORT_BUILDDIR");
    snprintf(s->path, sizeof s->path, "%s/runtime/coord/cohort-work-coord", build ? build : ".");
    struct cohort_err err;
    if (auth_key_from_hex("COHORT_SECRET", rt_hex, &cfg->key, &err) < 0)
        bail(err.msg);
    hs_view(RANKS, 1, rank_node, NULL, 0, cfg->view);
    uint8_t nonce[16];
    for (int i = 0; i < 16; i++)
        nonce[i] = (uint8_t)(job >> (i % 4 * 8)) ^ (uint8_t)(i * 37 + tag);
    coord_relay_name(nonce, 0, cfg->name);
    snprintf(cfg->host, sizeof cfg->host, "127.0.0.1");
}

static void *starter(void *arg)
{
    struct rt_start *s = arg;
    coord_start_relay(&s->cfg, s->path, 10, &s->pid, &s->port, s->addr, s->why, sizeof s->why);
    atomic_store(&s->done, true);
    return NULL;
}

/* s's relay asked for as a rank does, with a coordinator serving it
 * meanwhile: whether its line came (port 1: no relays below). */
static bool start(struct rt_start *s)
{
    s->coord = rt_coordinator(&s->cfg);
    pthread_t t;
    if (!s->coord || pthread_create(&t, NULL, starter, s) != 0)
        bail("no coordinator for the relay");
    struct net_event *ev;
    struct cohort_err err;
    while (!atomic_load(&s->done))
        net_poll(s->coord, 50, &ev, &err);
    pthread_join(t, NULL);
    return s->port == 1;
}

/* The process's (a child's) exit status once it ended, or -1 (the test's
 * alarm bounds the wait). */
static int ended(pid_t pid)
{
    int status;
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status)
                                                                              : -1;
}

/* s's process's exit status once its relays ended (with nothing below,
 * by the join timeout), or -1; its coordinator then closed. */
static int finish(struct rt_start *s)
{
    int st = ended(s->pid);
    net_free(s->coord);
    s->coord = NULL;
    return st;
}

/* Whether process pid holds the Unix socket bound to the abstract name. */
static bool holds(pid_t pid, const char *name)
{
    char line[512], want[300], path[64], link[64];
    unsigned long inode = 0;
    snprintf(want, sizeof want, "@%s", name);
    FILE *f = fopen("/proc/net/unix", "r");
    while (f && !inode && fgets(line, sizeof line, f)) {
        char p[300] = "";
        unsigned long ino;
        if (sscanf(line, "%*s %*s %*s %*s %*s %*s %lu %299s", &ino, p) == 2 && !strcmp(p, want))
            inode = ino;
    }
    if (f)
        fclose(f);
    snprintf(want, sizeof want, "socket:[%lu]", inode);
    for (int fd = 0; inode && fd < 1024; fd++) {
        snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, fd);
        ssize_t n = readlink(path, link, sizeof link - 1);
        if (n > 0 && (link[n] = 0, !strcmp(link, want)))
            return true;
    }
    return false;
}

/* The children of this process named cohort-relay. */
static int relay_children(void)
{
    int n = 0;
    char path[300], stat[512];
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = e->d_name[0] >= '1' && e->d_name[0] <= '9' ? fopen(path, "r") : NULL;
        if (!f)
            continue;
        int ppid = 0;
        if (fgets(stat, sizeof stat, f) && strstr(stat, "(cohort-relay)"))
            sscanf(strrchr(stat, ')') + 2, "%*c %d", &ppid);
        fclose(f);
        n += ppid == getpid();
    }
    if (d)
        closedir(d);
    return n;
}

/* The address of the node's relay process of cfg's step (this uid's:
 * worked out before becoming another); its length. */
static socklen_t host_addr(const struct coord_config *cfg, struct sockaddr_un *ua)
{
    char name[COORD_NAME_MAX + 1];
    coord_host_name(cfg, name);
    return coord_relay_addr(name, ua);
}

/* A connection to ua, or -1. */
static int dial_host(const struct sockaddr_un *ua, socklen_t len)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (const struct sockaddr *)ua, len) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* What comes on fd until it closes, 5 s at most, into buf (cap bytes):
 * the bytes, or -1 when it did not close in time. */
static ssize_t read_all(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 5000) <= 0)
            return -1;
        ssize_t got = read(fd, buf + n, cap - 1 - n);
        if (got <= 0 || (n += (size_t)got) == cap - 1)
            break;
    }
    buf[n] = 0;
    return (ssize_t)n;
}

/* As another uid: connects to the node's relay process of cfg, sends
 * bytes and exits 0 when closed without a byte read. */
static int stranger(const struct coord_config *cfg)
{
    char buf[64];
    struct sockaddr_un ua;
    socklen_t len = host_addr(cfg, &ua);
    if (setgid(65534) < 0 || setuid(65534) < 0)
        return 2;
    int fd = dial_host(&ua, len);
    if (fd < 0)
        return 3;
    send(fd, "hello", 5, MSG_NOSIGNAL);
    return read_all(fd, buf, sizeof buf) == 0 ? 0 : 1;
}

/* Under a hard limit of 128 open files: a process for a relay of job
 * (20 ranks: 88 descriptors counted in a shared process, 4 of the
 * process's own and 16 spare: 108), and a second relay asked of it, which
 * does not fit there (196) and gets a process of its own (38). Exits 0
 * when so; the pids on out. */
static int limited(uint32_t job, int out)
{
    struct rlimit rl = {128, 128};
    struct rt_start a, b;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
        return 2;
    record(&a, job, 1);
    record(&b, job, 2);
    bool first = start(&a), second = start(&b);
    dprintf(out, "first pid %d, second pid %d%s%s", (int)a.pid, (int)b.pid, b.why[0] ? ": " : "",
            b.why);
    close(out);
    bool own = b.pid > 0 && b.pid != a.pid && holds(b.pid, b.cfg.name) &&
               !holds(a.pid, b.cfg.name);
    int st_b = finish(&b), st_a = finish(&a);
    return first && second && own && st_a == 0 && st_b == 0 ? 0 : 1;
}

/* As another uid: holds the node's socket of cfg's step first, then tells
 * ready and exits 0 when whatever connects sends nothing. */
static int squatter(const struct coord_config *cfg, int ready)
{
    char buf[64];
    struct sockaddr_un ua;
    socklen_t len = host_addr(cfg, &ua);
    if (setgid(65534) < 0 || setuid(65534) < 0)
        return 2;
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&ua, len) < 0 || listen(lfd, 8) < 0)
        return 3;
    if (write(ready, "r", 1) != 1)
        return 4;
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    if (poll(&p, 1, 10000) <= 0)
        return 0; /* nobody came */
    int fd = accept(lfd, NULL, NULL);
    return fd >= 0 && read_all(fd, buf, sizeof buf) == 0 ? 0 : 1;
}

/* Rank 0 joined to s's relay by its Unix socket (*n its loop): whether
 * it was welcomed. */
static bool joined(struct net **n, const struct rt_start *s)
{
    struct net_target t = {.is_unix = true, .timeout_s = 10, .role = "node relay",
                           .listening = true};
    t.ua_len = coord_relay_addr(s->cfg.name, &t.ua);
    return rt_dial_as(n, &s->cfg, 0, 0, &t, 10000) != NULL;
}

/* A free TCP port of 127.0.0.1 (the kernel's pick, let go), or 0. */
static uint16_t free_port(void)
{
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof in;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    uint16_t port = fd >= 0 && bind(fd, (struct sockaddr *)&in, sizeof in) == 0 &&
                            getsockname(fd, (struct sockaddr *)&in, &len) == 0
                        ? ntohs(in.sin_port)
                        : 0;
    if (fd >= 0)
        close(fd);
    return port;
}

/* The node agent of node 0 of job's step, as the plugin starts it for the
 * store (its record on its input, which *in keeps open: closing it ends
 * the agent): its pid once it said its port, or -1. */
static pid_t agent(uint32_t job, int *in)
{
    const char *build = getenv("COHORT_BUILDDIR");
    char path[4096], coord[4096], line[256];
    snprintf(path, sizeof path, "%s/runtime/agent/cohort-agent", build ? build : ".");
    snprintf(coord, sizeof coord, "%s/runtime/coord/cohort-work-coord", build ? build : ".");
    int i[2], o[2];
    if (pipe2(i, O_CLOEXEC) < 0 || pipe2(o, O_CLOEXEC) < 0)
        return -1;
    pid_t p = fork();
    if (p == 0) {
        dup2(i[0], 0);
        dup2(o[1], 1);
        execl(path, "cohort-agent", (char *)NULL);
        _exit(127);
    }
    close(i[0]);
    close(o[1]);
    dprintf(i[1], "SLURM_JOB_ID=%u\nSLURM_STEP_ID=3\nSLURM_NODEID=0\nSLURM_STEP_NUM_TASKS=2\n"
            "SLURM_STEP_NODELIST=n1\nSLURM_STEP_TASKS_PER_NODE=2\nSLURM_GTIDS=0,1\n"
            "COHORT_SECRET=%s\nCOHORT_STORE_ADDR=127.0.0.1\nCOHORT_STORE_PORT=%u\n"
            "COHORT_TIMEOUT=10\nCOHORT_WORK_COORD=%s\n\n", job, rt_hex, free_port(), coord);
    *in = i[1];
    ssize_t got = read_all(o[0], line, sizeof line);
    close(o[0]);
    return p > 0 && got > 5 && strncmp(line, "port ", 5) == 0 ? p : -1;
}

int main(void)
{
    struct rt_start a, b, c, d;
    struct coord_config other;
    uint32_t job = (uint32_t)getpid() * 4; /* 4 steps of its own: job .. job + 3 */
    alarm(120); /* the test's own deadline: a hang fails it */
    signal(SIGPIPE, SIG_IGN);
    record(&a, job, 1);
    bool up = start(&a);
    struct net *rank_a = NULL, *rank_b = NULL; /* a rank each: keeps its relay going */
    up = up && joined(&rank_a, &a);
    ok(up && a.pid > 0, "the first relay of the step's node starts a process of its own, "
       "which tells its line, and rank 0 joins it (pid %d, port %u: %s)", (int)a.pid, a.port,
       a.why);
    record(&b, job, 2);
    up = start(&b);
    ok(up && b.pid == 0 && holds(a.pid, b.cfg.name) && relay_children() == 1,
       "a second queue's relay on the node is run by that process: none started, its socket "
       "held by pid %d, one cohort-relay child (%s)", (int)a.pid, b.why);
    ok(joined(&rank_b, &b), "rank 0 of the second queue joins its relay there");

    other = a.cfg;
    other.key.bytes[0] ^= 1;
    uint8_t *rec;
    size_t rec_len;
    char line[COHORT_ERR_LEN];
    struct sockaddr_un ua;
    socklen_t ua_len = host_addr(&a.cfg, &ua);
    int fd = dial_host(&ua, ua_len);
    ssize_t got = -1;
    if (fd >= 0 && coord_config_encode(&other, &rec, &rec_len) == 0) {
        send(fd, rec, rec_len, MSG_NOSIGNAL);
        shutdown(fd, SHUT_WR);
        got = read_all(fd, line, sizeof line);
        free(rec);
    }
    if (fd >= 0)
        close(fd);
    line[strcspn(line, "\n")] = 0;
    ok(got > 0 && strstr(line, "error the node relay process of step ") == line &&
           strstr(line, "another step, node or key"),
       "a record of another key sent to its socket is answered with an error (%s)",
       got > 0 ? line : "no answer");

    if (geteuid() == 0) {
        pid_t p = fork();
        if (p == 0)
            _exit(stranger(&a.cfg));
        int st = ended(p);
        ok(st == 0, "a connection of another uid is closed without an answer (the "
           "stranger's status %d)", st);
    } else {
        tap_skip("a connection of another uid: needs root to be another uid");
    }

    net_free(rank_a); /* the ranks go: nothing is left below either relay */
    net_free(rank_b);
    net_free(b.coord);
    int st = finish(&a);
    ok(st == 0, "the process ends, status 0, once its two relays have (nothing below them: "
       "each ends at the join timeout; status %d)", st);
    record(&c, job, 3);
    up = start(&c);
    ok(up && c.pid > 0 && c.pid != a.pid && finish(&c) == 0,
       "a later queue's relay starts a new process (pid %d), which ends too (%s)", (int)c.pid,
       c.why);

    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0)
        bail("no pipe");
    pid_t p = fork();
    if (p == 0)
        _exit(limited(job + 1, pfd[1]));
    close(pfd[1]);
    got = read_all(pfd[0], line, sizeof line);
    close(pfd[0]);
    st = ended(p);
    ok(st == 0 && got > 0,
       "under a hard limit of 128 open files a second relay that does not fit in the "
       "process (20 ranks: 88 descriptors each there, with strangers' room) gets a process "
       "of its own (%s)", got > 0 ? line : "none");

    if (geteuid() == 0) {
        record(&d, job + 2, 1);
        if (pipe2(pfd, O_CLOEXEC) < 0)
            bail("no pipe");
        p = fork();
        if (p == 0)
            _exit(squatter(&d.cfg, pfd[1]));
        close(pfd[1]);
        char r;
        up = read(pfd[0], &r, 1) == 1;
        close(pfd[0]);
        bool started = up && start(&d);
        int sq = ended(p);
        ok(started && d.pid > 0 && sq == 0 && finish(&d) == 0,
           "another uid holding the node's socket first is sent nothing (its status %d), and "
           "the relay starts in a process of its own (pid %d: %s)", sq, (int)d.pid, d.why);
    } else {
        tap_skip("another uid holding the node's socket first: needs root to be another uid");
    }

    int in = -1;
    struct rt_start e;
    pid_t ag = agent(job + 3, &in);
    record(&e, job + 3, 1);
    up = ag > 0 && start(&e);
    ok(up && e.pid == 0 && holds(ag, e.cfg.name),
       "where the plugin's node agent (cohort-agent, for the store) serves the step, the "
       "node's relay of a queue runs in it: no process started, its socket held by the "
       "agent, pid %d (%s)", (int)ag, ag > 0 ? e.why : "the agent did not start");
    if (in >= 0)
        close(in); /* the step ends on the node: the agent ends, and its relays with it */
    st = ended(ag);
    net_free(e.coord);
    ok(st == 0, "the agent ends with its step, status %d", st);
    return tap_done();
}
