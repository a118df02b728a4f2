/* mps.h - one step's MPS control daemon on one node, run by the plugin in
 * slurmstepd: started as the job's user before the tasks fork, with pipe
 * and log directories private to the step (mode 0700, under a short path:
 * a Unix socket's path holds 107 bytes), given to every task, stopped when
 * the step ends (quit, then SIGKILL to what is left after a few seconds),
 * its directories removed. No Slurm calls: the plugin passes what Slurm
 * says (the user, the program to run). */
#ifndef COHORT_PLUGIN_MPS_H
#define COHORT_PLUGIN_MPS_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "mps_proc.h"
#include "plugin_args.h"

#define MPS_START_MS 10000 /* the daemon's control pipe must appear within this */
#define MPS_QUIT_MS 5000   /* after "quit", what is left is killed */

struct mps_daemon {
    char dir[64];               /* /tmp/cohort-mps-XXXXXX; "" when none */
    char pipe[80], log[80];     /* dir/pipe, dir/log */
    pid_t pid;                  /* the control daemon (a child); 0: none */
    unsigned long long started; /* its start time (/proc), against pid reuse */
    struct mps_user user;       /* the job's user: ids and groups */
    char program[4096];         /* nvidia-cuda-mps-control */
};

/* Starts the daemon for a step of user uid:gid, running (in slurmstepd's
 * user_init) with that user's effective ids and groups. program: the
 * admin's mps_control, or "" for the usual places. 0, or -1 with one
 * sentence in err (nothing is left then). */
int mps_start(struct mps_daemon *d, const char *program, uid_t uid, gid_t gid,
              struct cohort_err *err);

/* Stops the daemon and removes its directories (as root at the step's
 * end, or as the user): quit, MPS_QUIT_MS, then SIGKILL. d may hold none. */
void mps_stop(struct mps_daemon *d);

/* The task's MPS variables (never overwriting the user's): the pipe and
 * log directories, and the per-task limits of a. set as apply_env's. */
int mps_task_env(const struct mps_daemon *d, const struct mps_args *a,
                 int (*set)(const char *name, const char *value, void *ctx), void *ctx);

#endif
