/* mps.c - a step's MPS control daemon on one node: start, stop, the tasks'
 * variables (see mps.h). The daemon runs in the foreground (-f) as a child
 * of slurmstepd, so that its pid is known and cannot be mistaken: before a
 * signal, its start time is checked against the one read at the start.
 * What it leaves (MPS servers, also after the daemon was killed with the
 * step) is found by the step's pipe in the environment of the user's
 * processes.
 * Everything done in the step's directories is done with the user's ids
 * (a child that drops to them), never as root. */
#include "mps.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SITE_PIPE "/tmp/nvidia-mps/control"
#define KILL_MAX 64 /* processes left by a daemon killed at most */

static const char *const default_programs[] = {"/usr/bin/nvidia-cuda-mps-control",
                                               "/usr/local/cuda/bin/nvidia-cuda-mps-control"};

bool mps_site_daemon(void)
{
    struct stat st;
    return lstat(SITE_PIPE, &st) == 0;
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* A process's parent and start time from /proc/PID/stat; -1: gone. */
static int proc_stat(pid_t pid, pid_t *ppid, unsigned long long *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
    int parent;
    if (!p || sscanf(p + 2, "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
                            "%*d %*d %*d %llu", &parent, start) != 2)
        return -1;
    *ppid = parent;
    return 0;
}

/* Waits up to ms for a child to end; true when it has (or is not ours to
 * wait for any more: slurmstepd reaped it). */
static bool wait_exit(pid_t pid, long ms, int *status)
{
    for (long waited = 0;; waited += 10) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            return true;
        if (waited >= ms)
            return false;
        pause_ms(10);
    }
}

/* In a child: the user's ids for good, no descriptor of slurmstepd's. */
static void become_user(uid_t uid, gid_t gid)
{
    if (setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
        _exit(126);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 1);
        dup2(null, 2);
    }
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT;
}

/* Removes d's directory tree with the user's ids (a child), within ms. */
static void remove_dir(struct mps_daemon *d)
{
    if (!d->dir[0])
        return;
    pid_t pid = fork();
    if (pid == 0) {
        become_user(d->uid, d->gid);
        _exit(nftw(d->dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0);
    }
    int status;
    if (pid > 0 && !wait_exit(pid, MPS_QUIT_MS, &status)) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    d->dir[0] = '\0';
}

static const char *find_program(const char *program)
{
    if (program && *program)
        return access(program, X_OK) == 0 ? program : NULL;
    for (size_t i = 0; i < sizeof default_programs / sizeof *default_programs; i++)
        if (access(default_programs[i], X_OK) == 0)
            return default_programs[i];
    return NULL;
}

/* The daemon's environment: its directories, CUDA's device order as the
 * tasks have it, and no CUDA_VISIBLE_DEVICES: it sees what the step's
 * device cgroup lets it see, the space the tasks' indexes refer to. */
static void exec_daemon(const struct mps_daemon *d)
{
    char pipe_var[128], log_var[128];
    snprintf(pipe_var, sizeof pipe_var, "CUDA_MPS_PIPE_DIRECTORY=%s", d->pipe);
    snprintf(log_var, sizeof log_var, "CUDA_MPS_LOG_DIRECTORY=%s", d->log);
    char *env[] = {"PATH=/usr/bin:/bin", "CUDA_DEVICE_ORDER=PCI_BUS_ID", pipe_var, log_var,
                   NULL};
    char *argv[] = {(char *)d->program, "-f", NULL};
    setsid();
    become_user(d->uid, d->gid);
    execve(d->program, argv, env);
    _exit(127);
}

/* Waits for the daemon's control pipe; 0, or -1 with why. */
static int wait_up(struct mps_daemon *d, struct cohort_err *err)
{
    char control[128];
    snprintf(control, sizeof control, "%s/control", d->pipe);
    for (long waited = 0; waited < MPS_START_MS; waited += 10) {
        struct stat st;
        int status;
        if (lstat(control, &st) == 0)
            return 0;
        if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
            d->pid = 0;
            return cohort_fail(err, "%s %s %d before its control pipe appeared (its log: %s)",
                               d->program, WIFEXITED(status) ? "exited with status" :
                               "was killed by signal", WIFEXITED(status) ?
                               WEXITSTATUS(status) : WTERMSIG(status), d->log);
        }
        pause_ms(10);
    }
    return cohort_fail(err, "%s did not open its control pipe within %d s", d->program,
                       MPS_START_MS / 1000);
}

int mps_start(struct mps_daemon *d, const char *program, uid_t uid, gid_t gid,
              struct cohort_err *err)
{
    memset(d, 0, sizeof *d);
    d->uid = uid;
    d->gid = gid;
    const char *found = find_program(program);
    if (!found)
        return cohort_fail(err, "%s is not there to run (set mps_control= in plugstack.conf)",
                           program && *program ? program : "nvidia-cuda-mps-control (in "
                           "/usr/bin or /usr/local/cuda/bin)");
    snprintf(d->program, sizeof d->program, "%s", found);
    snprintf(d->dir, sizeof d->dir, "/tmp/cohort-mps-XXXXXX");
    if (!mkdtemp(d->dir)) {
        d->dir[0] = '\0';
        return cohort_fail(err, "cannot create a directory in /tmp for the MPS daemon: %s",
                           strerror(errno));
    }
    snprintf(d->pipe, sizeof d->pipe, "%s/pipe", d->dir);
    snprintf(d->log, sizeof d->log, "%s/log", d->dir);
    if (mkdir(d->pipe, 0700) < 0 || mkdir(d->log, 0700) < 0) {
        cohort_fail(err, "cannot create %s/{pipe,log}: %s", d->dir, strerror(errno));
        mps_stop(d);
        return -1;
    }
    d->pid = fork();
    if (d->pid == 0)
        exec_daemon(d);
    pid_t parent;
    if (d->pid < 0 || proc_stat(d->pid, &parent, &d->started) < 0) {
        cohort_fail(err, "cannot start %s: %s", d->program, strerror(errno));
        mps_stop(d);
        return -1;
    }
    if (wait_up(d, err) < 0) {
        mps_stop(d);
        return -1;
    }
    return 0;
}

/* Whether process pid runs as uid with var (NAME=VALUE) in its environment. */
static bool has_var(pid_t pid, uid_t uid, const char *var)
{
    char path[64], buf[65536];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d", (int)pid);
    if (stat(path, &st) < 0 || st.st_uid != uid)
        return false;
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    size_t len = strlen(var);
    for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strnlen(buf + i, (size_t)(n - i)) + 1)
        if ((size_t)(n - i) > len && !memcmp(buf + i, var, len) && buf[i + len] == '\0')
            return true;
    return false;
}

/* What is left of the daemon: itself, if it is still the process started,
 * and every process of the user with the step's pipe in its environment
 * (the MPS servers it started, also once it is gone). */
static unsigned leftovers(const struct mps_daemon *d, pid_t *out)
{
    pid_t ppid;
    unsigned long long start;
    unsigned n = 0;
    if (d->pid > 0 && proc_stat(d->pid, &ppid, &start) == 0 && start == d->started)
        out[n++] = d->pid;
    char var[128];
    snprintf(var, sizeof var, "CUDA_MPS_PIPE_DIRECTORY=%s", d->pipe);
    DIR *dir = opendir("/proc");
    struct dirent *e;
    while (dir && (e = readdir(dir)) && n < KILL_MAX) {
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid > 0 && pid != d->pid && has_var(pid, d->uid, var))
            out[n++] = pid;
    }
    if (dir)
        closedir(dir);
    return n;
}

/* Runs the control program as the user with "quit" on its stdin. */
static void send_quit(const struct mps_daemon *d)
{
    int fds[2];
    if (pipe(fds) < 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        char pipe_var[128];
        snprintf(pipe_var, sizeof pipe_var, "CUDA_MPS_PIPE_DIRECTORY=%s", d->pipe);
        char *env[] = {"PATH=/usr/bin:/bin", pipe_var, NULL};
        char *argv[] = {(char *)d->program, NULL};
        dup2(fds[0], 0);
        become_user(d->uid, d->gid);
        execve(d->program, argv, env);
        _exit(127);
    }
    close(fds[0]);
    if (pid > 0)
        (void)!write(fds[1], "quit\n", 5);
    close(fds[1]);
    int status;
    if (pid > 0 && !wait_exit(pid, MPS_QUIT_MS, &status)) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
}

void mps_stop(struct mps_daemon *d)
{
    int status;
    if (d->pid > 0 && !wait_exit(d->pid, 0, &status)) { /* not killed with the step */
        send_quit(d);
        if (wait_exit(d->pid, MPS_QUIT_MS, &status))
            d->pid = 0;
    } else {
        d->pid = 0;
    }
    if (d->dir[0]) {
        pid_t all[KILL_MAX];
        unsigned n = leftovers(d, all);
        for (unsigned i = 0; i < n; i++)
            kill(all[i], SIGKILL);
        if (d->pid > 0)
            waitpid(d->pid, &status, 0);
    }
    d->pid = 0;
    remove_dir(d);
}

int mps_task_env(const struct mps_daemon *d, const struct mps_args *a,
                 int (*set)(const char *name, const char *value, void *ctx), void *ctx)
{
    char buf[64];
    int rc = set("CUDA_MPS_PIPE_DIRECTORY", d->pipe, ctx) | set("CUDA_MPS_LOG_DIRECTORY",
                                                                 d->log, ctx);
    if (a->threads) {
        snprintf(buf, sizeof buf, "%u", a->threads);
        rc |= set("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", buf, ctx);
    }
    if (a->mem[0]) {
        snprintf(buf, sizeof buf, "0=%s", a->mem); /* the task's own GPU is its device 0 */
        rc |= set("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", buf, ctx);
    }
    return rc;
}
