/* mps.c - a step's MPS control daemon on one node: start, stop, the tasks'
 * variables (see mps.h). The daemon runs in the foreground (-f) as a child
 * of slurmstepd, made the job's user for good (mps_proc.h), so that its pid
 * is known; before a signal its start time is checked against the one read
 * at the start. What it leaves (MPS servers, also after it was killed with
 * the step) is found by the step's pipe in the environment of the user's
 * processes. Everything done in the step's directories is done by a child
 * with the user's ids and groups, never as root. */
#include "mps.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const default_programs[] = {"/usr/bin/nvidia-cuda-mps-control",
                                               "/usr/local/cuda/bin/nvidia-cuda-mps-control"};

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT;
}

/* Removes d's directory tree in a child with the user's ids and groups
 * (a symlink put in its place leads nowhere the user could not go). */
static void remove_dir(struct mps_daemon *d)
{
    if (!d->dir[0])
        return;
    pid_t pid = fork();
    if (pid == 0) {
        mps_child_become(&d->user, -1, -1);
        _exit(nftw(d->dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0);
    }
    int status;
    if (pid > 0 && !mps_wait(pid, MPS_QUIT_MS, &status)) {
        kill(pid, SIGKILL);
        mps_wait(pid, MPS_QUIT_MS, &status);
    }
    d->dir[0] = '\0';
}

/* The program, if the user (the effective ids now) may run it. */
static const char *find_program(const char *program)
{
    if (program && *program)
        return faccessat(AT_FDCWD, program, X_OK, AT_EACCESS) == 0 ? program : NULL;
    for (size_t i = 0; i < sizeof default_programs / sizeof *default_programs; i++)
        if (faccessat(AT_FDCWD, default_programs[i], X_OK, AT_EACCESS) == 0)
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
    mps_child_become(&d->user, -1, -1);
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
        mps_pause_ms(10);
    }
    return cohort_fail(err, "%s did not open its control pipe within %d s", d->program,
                       MPS_START_MS / 1000);
}

/* The user's ids and groups as slurmstepd set them for user_init. */
static void user_now(struct mps_user *u, uid_t uid, gid_t gid)
{
    u->uid = uid;
    u->gid = gid;
    mps_user_groups(u);
}

int mps_start(struct mps_daemon *d, const char *program, uid_t uid, gid_t gid,
              struct cohort_err *err)
{
    memset(d, 0, sizeof *d);
    const char *found = find_program(program);
    if (!found)
        return cohort_fail(err, "%s is not there for the job's user to run (set mps_control= "
                           "in plugstack.conf)", program && *program ? program :
                           "nvidia-cuda-mps-control (in /usr/bin or /usr/local/cuda/bin)");
    user_now(&d->user, uid, gid);
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
    if (d->pid < 0 || mps_proc_stat(d->pid, &parent, &d->started) < 0) {
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

/* Runs the control program as the user with "quit" on its stdin, for at
 * most MPS_QUIT_MS. */
static void send_quit(const struct mps_daemon *d)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        char pipe_var[128];
        snprintf(pipe_var, sizeof pipe_var, "CUDA_MPS_PIPE_DIRECTORY=%s", d->pipe);
        char *env[] = {"PATH=/usr/bin:/bin", pipe_var, NULL};
        char *argv[] = {(char *)d->program, NULL};
        mps_child_become(&d->user, fds[0], -1);
        execve(d->program, argv, env);
        _exit(127);
    }
    close(fds[0]);
    if (pid > 0) /* 5 bytes into an empty pipe: never blocks; SIGPIPE is blocked in slurmstepd */
        (void)!write(fds[1], "quit\n", 5);
    close(fds[1]);
    int status;
    if (pid > 0 && !mps_wait(pid, MPS_QUIT_MS, &status)) {
        kill(pid, SIGKILL);
        mps_wait(pid, MPS_QUIT_MS, &status);
    }
}

void mps_stop(struct mps_daemon *d)
{
    int status;
    if (d->pid > 0 && !mps_wait(d->pid, 0, &status)) { /* not killed with the step */
        send_quit(d);
        if (mps_wait(d->pid, MPS_QUIT_MS, &status))
            d->pid = 0;
    } else {
        d->pid = 0;
    }
    if (d->dir[0]) {
        char var[128];
        snprintf(var, sizeof var, "CUDA_MPS_PIPE_DIRECTORY=%s", d->pipe);
        mps_kill_left(d->pid, d->started, d->user.uid, var);
        if (d->pid > 0)
            mps_wait(d->pid, MPS_QUIT_MS, &status);
    }
    d->pid = 0;
    remove_dir(d);
    mps_user_free(&d->user);
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
