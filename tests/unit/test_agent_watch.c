/* test_agent_watch.c - the plugin's watch of the node agent (agent_watch.c)
 * with real task processes, as slurmstepd drives it: a socketpair stands
 * for the agent's input, and closing its other end is the agent's death.
 * Checked: a task whose stderr takes no line (poll calls it writable, the
 * write blocks: here a pipe nobody reads with less room than the line, as
 * a pty with a little room or a file on a hung FUSE or NFS mount) neither
 * hangs the telling nor the watch's stop; a task that has exited before
 * the telling is neither told nor counted; the line is written with the
 * job's user's ids (65534 when the test runs as root). The node's log
 * (slurm_info, caught here) says how many tasks were told. No check waits
 * on time: each waits on an event, and alarm() only guards a hang. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <slurm/spank.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_watch.h"
#include "linux_calls.h"
#include "tap.h"

#define HANG_GUARD_S 60 /* the test's own deadline: only a hang reaches it */
#define PIPE_ROOM 4096  /* the stuck task's stderr pipe */
#define NOBODY 65534

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
    s->w = agent_watch_start(s->agent[0], 1, s->line, &u);
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
    struct agent_watch *w = agent_watch_start(agent[0], 2, "the agent died", &u);
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
    waitpid(gone, NULL, 0);
    end_task(t);
    close(err0[0]);
    close(err1[0]);
    close(agent[0]);
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
    return tap_done();
}
