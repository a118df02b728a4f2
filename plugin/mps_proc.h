/* mps_proc.h - the processes the plugin starts for a step from slurmstepd
 * (the MPS daemon, the store's node agent):
 * a child turned into the job's user for good (ids, groups, signals, OOM
 * score, groups, descriptors: nothing of slurmstepd's), waits with deadlines, and
 * the kill of what a daemon leaves, by pidfd so that a reused pid is never
 * hit. */
#ifndef COHORT_MPS_PROC_H
#define COHORT_MPS_PROC_H

#include <stdbool.h>
#include <sys/types.h>

/* The job's user as slurmstepd set it up for the step. */
struct mps_user {
    uid_t uid;
    gid_t gid;
    size_t ngroups; /* 0: none (also when they could not be had) */
    gid_t *groups;  /* malloc'd; NULL when ngroups is 0 */
};

/* The supplementary groups of the calling process, however many (slurmstepd
 * set the user's for user_init); when they cannot be had, none, so that a
 * child never keeps slurmstepd's. */
void mps_user_groups(struct mps_user *u);

/* Frees what mps_user_groups allocated. */
void mps_user_free(struct mps_user *u);

/* In a child of slurmstepd (after fork: async-signal-safe): exactly the
 * user's groups (none when they were not known; set only when running as
 * root), then its gid and uid for good. 0, or -1 with errno. */
int mps_user_become(const struct mps_user *u);

/* In a child about to exec: the signal handlers and mask of a new process,
 * an OOM score of 0 (slurmstepd's own protects it), exactly the user's
 * groups (none when they were not known), gid and uid for good, stdin from in_fd (-1:
 * /dev/null), stdout to out_fd (-1: /dev/null), stderr to /dev/null, no other
 * descriptor. Exits the child (status 126) when the ids cannot be set. */
void mps_child_become(const struct mps_user *u, int in_fd, int out_fd);

/* A process's parent and start time from /proc/PID/stat; -1: gone. */
int mps_proc_stat(pid_t pid, pid_t *ppid, unsigned long long *start);

/* Sleeps ms milliseconds (a poll's step). */
void mps_pause_ms(long ms);

/* Waits up to ms for a child to end; true when it has (or is not ours to
 * wait for any more: slurmstepd may reap any child). */
bool mps_wait(pid_t pid, long ms, int *status);

/* SIGKILL to pid if it is still the process that started at started, and
 * to every process whose real uid is uid with var (NAME=VALUE) in its
 * environment; scanned again until none is found (a few rounds at most). */
void mps_kill_left(pid_t pid, unsigned long long started, uid_t uid, const char *var);

#endif
