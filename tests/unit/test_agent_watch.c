/* test_agent_watch.c - the plugin's watch of the node agent (agent_watch.c,
 * task_tell.c) with real task processes, as slurmstepd drives it: a
 * socketpair stands for the agent's input, closing its other end is the
 * agent's death, and writing on it is the agent's lines. Checked: a task
 * whose stderr takes no line (poll calls it writable, the write blocks:
 * here a pipe nobody reads with less room than the line, as a pty with a
 * little room or a file on a hung FUSE or NFS mount) neither hangs the
 * telling nor the watch's stop; a task that has exited before the telling
 * is neither told nor counted; the line is written with the job's user's
 * ids (65534 when the test runs as root); without the step watch no task
 * is ended, whatever the agent says. With the step watch: "end 1
 * TEXT" writes TEXT into one task's stderr, once, and ends the tasks with
 * SIGTERM only once the line is out of the pipe (a reader thread, as
 * slurmstepd's, sees the line before any task ends), or TASK_TELL_DRAIN_MS
 * later when nobody reads it (the log then says so); a task that ignores
 * SIGTERM gets SIGKILL; "end 0" writes nothing; only the first end
 * counts, and lines that are no end are ignored; the agent's death ends
 * the tasks after telling them; its "bye" (and its death) lets a wait for
 * it go; the step's end kills nothing. The node's log (slurm_info, caught
 * here) says what was done. No check waits on time: each waits on an event
 * (a task's end, a pipe's end, a log line), and alarm() only guards a
 * hang. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <slurm/spank.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_watch.h"
#include "linux_calls.h"
#include "tap.h"

#define HANG_GUARD_S 60 /* the test's own deadline: only a hang reaches it */
#define PIPE_ROOM 4096  /* the stuck task's stderr pipe */
#define NOBODY 65534
#define LINE_READ 2047  /* the longest line agent_watch.c reads (LINE_CAP - 1) */

static int log_pipe[2];

/* The node's log as the plugin writes it: each line into log_pipe. */
void slurm_info(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    n = n < 0 ? 0 : n < (int)sizeof line - 1 ? n : (int)sizeof line - 2;
    line[n++] = '\n';
    (void)!write(log_pipe[1], line, (size_t)n);
}

/* The next line of the node's log (blocks until the watch writes one). */
static void next_log(char *line, size_t cap)
{
    size_t n = 0;
    while (n + 1 < cap && read(log_pipe[0], line + n, 1) == 1 && line[n] != '\n')
        n++;
    line[n] = '\0';
}

/* A task: a process that waits to be killed, its stderr on err_fd. */
static pid_t task(int err_fd)
{
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* A test killed by its guard leaves no task. */
        dup2(err_fd, 2);
        syscall(SYS_close_range, 3U, ~0U, 0U); /* The agent's pair above all: no copy of it. */
        for (;;)
            pause();
    }
    return pid;
}

static void end_task(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* The job's user: nobody when the test is root, else the test's own ids. */
static struct mps_user user(void)
{
    bool root = geteuid() == 0;
    return (struct mps_user){.uid = root ? NOBODY : getuid(), .gid = root ? NOBODY : getgid()};
}

/* A watch of one task whose stderr is stuck: a pipe of PIPE_ROOM bytes
 * that nobody reads, and a line three times as long. */
struct stuck {
    int agent[2], err[2];
    char *line;
    struct agent_watch *w;
    pid_t task;
};

/* The watch started, the task forked, then the agent's death. */
static void stuck_start(struct stuck *s)
{
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, s->agent) < 0 || pipe(s->err) < 0 ||
        fcntl(s->err[1], F_SETPIPE_SZ, PIPE_ROOM) < 0 || !(s->line = malloc(3 * PIPE_ROOM + 1))) {
        printf("Bail out! %s\n", strerror(errno));
        exit(1);
    }
    memset(s->line, 'x', 3 * PIPE_ROOM);
    s->line[3 * PIPE_ROOM] = '\0';
    struct mps_user u = user();
    s->w = agent_watch_start(s->agent[0], 1, s->line, &u, false);
    s->task = task(s->err[1]);
    close(s->err[1]);
    agent_watch_task(s->w, 0, s->task);
    close(s->agent[1]);
}

static void stuck_end(struct stuck *s)
{
    end_task(s->task);
    close(s->err[0]);
    close(s->agent[0]);
    free(s->line);
}

/* The telling of a task whose stderr never takes the line ends at its
 * deadline by itself, and the watch then stops. */
static void test_deadline(void)
{
    struct stuck s;
    char log[1024];
    stuck_start(&s);
    next_log(log, sizeof log);
    ok(strstr(log, " 0 of the node's 1 running tasks were told") &&
       strstr(log, "did not take the line within"),
       "a stderr that never takes the line: the telling ends by its deadline (%s)", log);
    agent_watch_stop(s.w);
    ok(1, "the watch stops after it");
    stuck_end(&s);
}

/* The step ends while a task's stderr blocks the telling: the stop ends
 * the telling and returns. */
static void test_stop(void)
{
    struct stuck s;
    char log[1024];
    stuck_start(&s);
    struct pollfd p = {.fd = s.err[0], .events = POLLIN};
    int r = poll(&p, 1, -1); /* the line's start is in the pipe: its write now blocks */
    agent_watch_stop(s.w);
    ok(r == 1, "the step's end while a write to a task's stderr blocks: the stop returns");
    next_log(log, sizeof log);
    ok(strstr(log, " 0 of the node's 1 running tasks were told"),
       "the node's log says the task was not told (%s)", log);
    stuck_end(&s);
}

/* Two tasks, one already exited (slurmstepd has not said so yet), one
 * running: only the running one is told and counted, with the user's ids. */
static void test_running_only(void)
{
    int agent[2], err0[2], err1[2], on = 1;
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, agent) < 0 || pipe(err0) < 0 ||
        socketpair(AF_UNIX, SOCK_STREAM, 0, err1) < 0 ||
        setsockopt(err1[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof on) < 0) {
        printf("Bail out! %s\n", strerror(errno));
        exit(1);
    }
    char log[1024];
    struct mps_user u = user();
    struct agent_watch *w = agent_watch_start(agent[0], 2, "the agent died", &u, false);
    pid_t gone = fork();
    if (gone == 0) {
        dup2(err0[1], 2);
        _exit(0);
    }
    pid_t t = task(err1[1]);
    close(err0[1]);
    close(err1[1]);
    siginfo_t info;
    waitid(P_PID, (id_t)gone, &info, WEXITED | WNOWAIT); /* exited, not reaped */
    agent_watch_task(w, 0, gone);
    agent_watch_task(w, 1, t);
    /* Not watched: an "end" line is no more than any other. */
    (void)!write(agent[1], "end 1 not watched\n", 18);
    close(agent[1]);
    char got[64] = "", cbuf[CMSG_SPACE(sizeof(struct ucred))];
    struct iovec v = {got, sizeof got - 1};
    struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1, .msg_control = cbuf,
                       .msg_controllen = sizeof cbuf};
    ssize_t n = recvmsg(err1[0], &m, 0);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    struct ucred cred = {.uid = (uid_t)-1};
    if (c && c->cmsg_type == SCM_CREDENTIALS)
        memcpy(&cred, CMSG_DATA(c), sizeof cred);
    ok(n > 0 && strcmp(got, "the agent died\n") == 0, "the running task is told (%.*s)",
       (int)strcspn(got, "\n"), got);
    ok(cred.uid == u.uid && cred.gid == u.gid,
       "the line is written with the job's user's ids (uid %d gid %d, want %d %d)",
       (int)cred.uid, (int)cred.gid, (int)u.uid, (int)u.gid);
    next_log(log, sizeof log);
    ok(strstr(log, " 1 of the node's 1 running tasks were told so in their stderr") &&
       !strstr(log, "first one not told"),
       "the task that had exited is neither told nor counted (%s)", log);
    agent_watch_stop(w);
    ok(waitpid(t, NULL, WNOHANG) == 0, "unwatched: the agent's end line and death end no task");
    waitpid(gone, NULL, 0);
    end_task(t);
    close(err0[0]);
    close(err1[0]);
    close(agent[0]);
}

/* A task of a watched node: a process that waits to be killed, its
 * stderr on err_fd, ignoring SIGTERM when deaf; it says on ready when its
 * signals are set, so that no signal comes before. */
static pid_t watched_task(int err_fd, bool deaf)
{
    int ready[2];
    if (pipe(ready) < 0) {
        printf("Bail out! %s\n", strerror(errno));
        exit(1);
    }
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (deaf)
            signal(SIGTERM, SIG_IGN);
        (void)!write(ready[1], "", 1);
        dup2(err_fd, 2);
        syscall(SYS_close_range, 3U, ~0U, 0U);
        for (;;)
            pause();
    }
    char b;
    close(ready[1]);
    (void)!read(ready[0], &b, 1);
    close(ready[0]);
    return pid;
}

#define NODE_TASKS 2

/* The reader of one task's stderr pipe, as slurmstepd's I/O thread: all
 * that comes until its end, and whether the task was still running when
 * the first bytes were there to read. */
struct reader {
    pthread_t thread;
    int fd;
    pid_t task;
    char text[256];
    bool alive_at_first; /* the task had not ended when its first bytes came */
};

/* A watched node of NODE_TASKS tasks, each with its stderr a pipe, read
 * as it comes when reading. */
struct node {
    int agent[2];
    int err[NODE_TASKS];
    pid_t task[NODE_TASKS];
    struct agent_watch *w;
    bool reading;
    struct reader rd[NODE_TASKS];
};

/* Whether the test's child pid has not ended (it is not reaped here). */
static bool running(pid_t pid)
{
    siginfo_t info = {0};
    return waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == 0;
}

/* Reads fd until its end into buf (cap bytes with the '\0' after what was
 * read); returns how many bytes were read. */
static size_t read_to_end(int fd, char *buf, size_t cap)
{
    size_t used = 0;
    for (ssize_t r = 1; r > 0 && used + 1 < cap; used += r > 0 ? (size_t)r : 0)
        r = read(fd, buf + used, cap - 1 - used);
    buf[used] = '\0';
    return used;
}

/* A reader's thread: it notes whether the task still runs once bytes wait
 * in the pipe, before it reads any, then reads to the end. */
static void *read_all(void *arg)
{
    struct reader *r = arg;
    struct pollfd p = {.fd = r->fd, .events = POLLIN};
    if (poll(&p, 1, -1) == 1)
        r->alive_at_first = running(r->task);
    read_to_end(r->fd, r->text, sizeof r->text);
    return NULL;
}

/* The watch started with the step watch on, then the tasks forked (the
 * last one deaf to SIGTERM when deaf), their stderr read as it comes when
 * reading. */
static void node_start(struct node *n, bool deaf, bool reading)
{
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, n->agent) < 0) {
        printf("Bail out! %s\n", strerror(errno));
        exit(1);
    }
    struct mps_user u = user();
    n->w = agent_watch_start(n->agent[0], NODE_TASKS, "the agent died", &u, true);
    for (int i = 0; i < NODE_TASKS; i++) {
        int p[2];
        if (pipe(p) < 0) {
            printf("Bail out! %s\n", strerror(errno));
            exit(1);
        }
        n->task[i] = watched_task(p[1], deaf && i == NODE_TASKS - 1);
        close(p[1]);
        n->err[i] = p[0];
        agent_watch_task(n->w, (uint32_t)i, n->task[i]);
        n->rd[i] = (struct reader){.fd = p[0], .task = n->task[i]};
        if ((n->reading = reading) && pthread_create(&n->rd[i].thread, NULL, read_all, &n->rd[i])) {
            printf("Bail out! no thread\n");
            exit(1);
        }
    }
}

/* The agent's lines. */
static void say(const struct node *n, const char *lines)
{
    (void)!write(n->agent[1], lines, strlen(lines));
}

/* The signal that ended task i (reaped here), or 0 if it did not die of one. */
static int died_of(const struct node *n, int i)
{
    int status = 0;
    waitpid(n->task[i], &status, 0);
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

/* All that the node's tasks wrote in their stderr, in task order, once
 * every writer has let go of it. */
static void stderr_text(struct node *n, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < NODE_TASKS; i++) {
        if (!n->reading) {
            used += read_to_end(n->err[i], buf + used, cap - used);
            continue;
        }
        pthread_join(n->rd[i].thread, NULL);
        size_t len = strlen(n->rd[i].text);
        len = len < cap - 1 - used ? len : cap - 1 - used;
        memcpy(buf + used, n->rd[i].text, len);
        buf[used += len] = '\0';
    }
}

/* text with its newlines as '|', for a TAP line. */
static const char *flat(char *text)
{
    for (char *c = text; *c; c++)
        if (*c == '\n')
            *c = '|';
    return text;
}

/* The watch stopped, and whether the node's log then holds no more lines. */
static bool node_end(struct node *n)
{
    agent_watch_stop(n->w);
    for (int i = 0; i < NODE_TASKS; i++)
        close(n->err[i]);
    close(n->agent[0]);
    close(n->agent[1]);
    char b;
    fcntl(log_pipe[0], F_SETFL, O_NONBLOCK);
    bool quiet = read(log_pipe[0], &b, 1) < 0 && errno == EAGAIN;
    fcntl(log_pipe[0], F_SETFL, 0);
    return quiet;
}

/* "end 1 TEXT": TEXT in one task's stderr, once, and SIGTERM to all. */
static void test_end_tell(void)
{
    struct node n;
    char log[1024], err[256];
    node_start(&n, false, true);
    say(&n, "end 1 cohort: rank 3 (n2) exited with status 1 at 12:00:03; ending the step\n");
    int sig0 = died_of(&n, 0), sig1 = died_of(&n, 1);
    ok(sig0 == SIGTERM && sig1 == SIGTERM, "end 1: every task ends by SIGTERM (%d, %d)", sig0,
       sig1);
    stderr_text(&n, err, sizeof err);
    bool once = !strcmp(err, "cohort: rank 3 (n2) exited with status 1 at 12:00:03; ending the "
                             "step\n");
    ok(once, "end 1: the line is written once, in one task's stderr (%s)", flat(err));
    ok(n.rd[0].alive_at_first, "and it was there to read before any task was signalled: srun "
       "drops what it has not read once every task has ended by a signal");
    next_log(log, sizeof log);
    ok(!strcmp(log, "cohort: watch: ending the node's 2 tasks: cohort: rank 3 (n2) exited with "
                    "status 1 at 12:00:03; ending the step"),
       "the node's log says it in one line (%s)", log);
    ok(!agent_watch_wait_bye(n.w, 0), "after its end, the agent's bye is still waited for");
    say(&n, "bye\n");
    ok(agent_watch_wait_bye(n.w, -1), "and read when it comes");
    ok(node_end(&n), "and in no other");
}

/* "end 0": no line; a task deaf to SIGTERM gets SIGKILL after the grace. */
static void test_end_kill(void)
{
    struct node n;
    char log[1024], err[256];
    node_start(&n, true, false);
    say(&n, "end 0 cohort: node n1 (ranks 0-1) has not been heard from for 10 s; ending the "
            "step\n");
    int sig0 = died_of(&n, 0), sig1 = died_of(&n, 1);
    ok(sig0 == SIGTERM, "end 0: the task ends by SIGTERM (%d)", sig0);
    ok(sig1 == SIGKILL, "a task that ignores SIGTERM is killed by SIGKILL (%d)", sig1);
    stderr_text(&n, err, sizeof err);
    bool none = !err[0];
    ok(none, "end 0: no line in any task's stderr (%s)", flat(err));
    next_log(log, sizeof log);
    ok(strstr(log, "cohort: watch: ending the node's 2 tasks (1 of them needed SIGKILL): "
                   "cohort: node n1"),
       "the node's log counts the SIGKILL (%s)", log);
    ok(node_end(&n), "and says nothing more");
}

/* Lines that are no end are ignored, and only the first end counts. */
static void test_first_end_only(void)
{
    struct node n;
    char log[1024], err[256], too_long[LINE_READ + 16];
    /* A line longer than the watch reads (2,047 bytes) is dropped whole: its
     * tail, here an end line of its own, too. */
    memset(too_long, 'x', LINE_READ);
    snprintf(too_long + LINE_READ, sizeof too_long - LINE_READ, "end 1 hidden\n");
    node_start(&n, false, true);
    say(&n, "hello\nend 2 two\nend\nendx 1 y\nend 10 ten\nEND 1 up\n");
    say(&n, too_long);
    say(&n, "end 1 first\nend 1 second\n");
    int sig0 = died_of(&n, 0), sig1 = died_of(&n, 1);
    stderr_text(&n, err, sizeof err);
    bool first = !strcmp(err, "first\n") && sig0 == SIGTERM && sig1 == SIGTERM;
    ok(first, "no other line is an end, and only the first end is written (%s)", flat(err));
    next_log(log, sizeof log);
    ok(!strcmp(log, "cohort: watch: ending the node's 2 tasks: first"), "one log line (%s)", log);
    ok(node_end(&n), "the second end is ignored: nothing more in the log");
}

/* A line nobody reads from the task's stderr pipe does not keep the tasks
 * from ending, and the node's log says it may be lost. */
static void test_unread(void)
{
    struct node n;
    char log[1024], err[256];
    node_start(&n, false, false);
    say(&n, "end 1 a line nobody reads\n");
    int sig0 = died_of(&n, 0), sig1 = died_of(&n, 1);
    stderr_text(&n, err, sizeof err);
    bool ended = sig0 == SIGTERM && sig1 == SIGTERM && !strcmp(err, "a line nobody reads\n");
    ok(ended, "a stderr pipe nobody reads: the line is written and the tasks end by SIGTERM after "
       "TASK_TELL_DRAIN_MS (%d, %d; %s)", sig0, sig1, flat(err));
    next_log(log, sizeof log);
    ok(!strcmp(log, "cohort: watch: ending the node's 2 tasks (the task's stderr pipe was not "
                    "seen empty within 1 s, so srun may drop the line): a line nobody reads"),
       "the node's log says the line may be lost (%s)", log);
    node_end(&n);
}

/* With the step watch, the agent's death is told, then the tasks ended. */
static void test_death_ends(void)
{
    struct node n;
    char log[1024], err[256];
    node_start(&n, false, true);
    close(n.agent[1]);
    n.agent[1] = -1;
    int sig0 = died_of(&n, 0), sig1 = died_of(&n, 1);
    ok(sig0 == SIGTERM && sig1 == SIGTERM, "the agent's death: every task ends by SIGTERM");
    stderr_text(&n, err, sizeof err);
    bool told = !strcmp(err, "the agent died\nthe agent died\n") && n.rd[0].alive_at_first &&
                n.rd[1].alive_at_first;
    ok(told, "after each was told of it, its line there to read before it was signalled (%s)",
       flat(err));
    next_log(log, sizeof log);
    ok(strstr(log, "cohort: watch: the node agent died while the step was running: 2 of the "
                   "node's 2 running tasks were told so"),
       "the node's log says they were told (%s)", log);
    next_log(log, sizeof log);
    ok(!strcmp(log, "cohort: watch: ending the node's 2 tasks: the node agent died while the "
                    "step was running"),
       "and ended (%s)", log);
    ok(agent_watch_wait_bye(n.w, -1), "the agent's death lets a wait for its bye go");
    node_end(&n);
}

/* The agent's "bye" lets the node's last task's hook go on, and only it. */
static void test_bye(void)
{
    struct node n;
    node_start(&n, false, false);
    ok(!agent_watch_wait_bye(n.w, 0) && !agent_watch_wait_bye(NULL, -1),
       "no bye yet: a wait goes on (and none on no watch)");
    say(&n, "bye\n");
    ok(agent_watch_wait_bye(n.w, -1) && agent_watch_wait_bye(n.w, 0),
       "the agent's bye lets it go, for good");
    bool quiet = node_end(&n);
    bool alive = true;
    for (int i = 0; i < NODE_TASKS; i++) {
        alive = alive && waitpid(n.task[i], NULL, WNOHANG) == 0;
        end_task(n.task[i]);
    }
    ok(alive && quiet, "a bye ends nothing");
}

/* A task in process group g (0: its own, as slurmstepd makes the first
 * task's) whose child, in the same group, holds the write end of a pipe
 * until it dies; the read end is returned in *held. */
static pid_t group_task(pid_t g, int *held)
{
    int ready[2], hold[2];
    if (pipe(ready) < 0 || pipe(hold) < 0) {
        printf("Bail out! %s\n", strerror(errno));
        exit(1);
    }
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        setpgid(0, g);
        if (fork() == 0) { /* the task's child: a shell's command, say */
            /* It holds the pipe alone (not the test's output), and ends by
             * itself after the test's guard should the watch miss it. */
            int null = open("/dev/null", O_RDWR);
            dup2(null, 1);
            dup2(null, 2);
            dup2(hold[1], 3);
            syscall(SYS_close_range, 4U, ~0U, 0U);
            alarm(HANG_GUARD_S + 5);
            for (;;)
                pause();
        }
        (void)!write(ready[1], "", 1);
        for (;;)
            pause();
    }
    char b;
    close(ready[1]);
    close(hold[1]);
    (void)!read(ready[0], &b, 1); /* The child is forked and the group set. */
    close(ready[0]);
    *held = hold[0];
    return pid;
}

/* The tasks' children in the tasks' process group end with them: srun
 * waits for their output otherwise. */
static void test_group(void)
{
    struct node n = {.err = {-1, -1}};
    int held[NODE_TASKS];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, n.agent) < 0) {
        printf("Bail out! %s\n", strerror(errno));
        exit(1);
    }
    struct mps_user u = user();
    n.w = agent_watch_start(n.agent[0], NODE_TASKS, "the agent died", &u, true);
    for (int i = 0; i < NODE_TASKS; i++) {
        n.task[i] = group_task(i ? n.task[0] : 0, &held[i]);
        n.err[i] = open("/dev/null", O_RDONLY);
        agent_watch_task(n.w, (uint32_t)i, n.task[i]);
    }
    say(&n, "end 0 a line nobody reads\n");
    int sig0 = died_of(&n, 0), sig1 = died_of(&n, 1);
    char b;
    bool gone = read(held[0], &b, 1) == 0 && read(held[1], &b, 1) == 0;
    char log[512];
    next_log(log, sizeof log); /* "ending the node's 2 tasks" */
    node_end(&n);
    close(held[0]);
    close(held[1]);
    ok(sig0 == SIGTERM && sig1 == SIGTERM && gone,
       "the tasks end, and so do their children in the tasks' process group (signals %d %d)",
       sig0, sig1);
}

/* The step's end on the node (the watch stopped) kills nothing. */
static void test_stop_kills_nothing(void)
{
    struct node n;
    node_start(&n, false, false);
    bool quiet = node_end(&n);
    bool alive = true;
    for (int i = 0; i < NODE_TASKS; i++) {
        alive = alive && waitpid(n.task[i], NULL, WNOHANG) == 0;
        end_task(n.task[i]);
    }
    ok(alive && quiet, "the watch stopped: every task still runs, and the log is quiet");
}

int main(void)
{
    alarm(HANG_GUARD_S);
    signal(SIGPIPE, SIG_IGN);
    if (pipe(log_pipe) < 0) {
        printf("Bail out! %s\n", strerror(errno));
        return 1;
    }
    test_deadline();
    test_stop();
    test_running_only();
    test_end_tell();
    test_end_kill();
    test_unread();
    test_first_end_only();
    test_death_ends();
    test_bye();
    test_group();
    test_stop_kills_nothing();
    return tap_done();
}
