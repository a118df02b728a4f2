/* task_tell.h - a line written into running tasks' stderr from slurmstepd
 * (the node agent's death, the step watch's verdict): through each task's
 * own standard error (pidfd_getfd: the very file the task writes,
 * whatever it is, with no path opened again as root).
 *
 * Decisions: the writes are made by a child process, never by the caller:
 * a task's stderr is the user's file (a pty, a pipe, a FUSE or NFS file)
 * and a write on it may block for ever, so the child drops to the job's
 * user (each write's checks are the user's) and is killed after
 * TASK_TELL_MS, or at once when the caller's stop descriptor becomes
 * readable (the step's end), so that the step's end never waits on it.
 * A stderr that is a pipe (as Slurm gives it) is waited on until its
 * reader, slurmstepd, has taken the line, TASK_TELL_DRAIN_MS at most: once
 * a task of the step ends by SIGTERM or SIGKILL, srun stops reading the
 * step's output as soon as every task has ended (Slurm's step_launch.c),
 * so a line still in the pipe when the watch signals the tasks can be lost.
 * Linux 5.6 or later is needed for pidfd_getfd. */
#ifndef COHORT_TASK_TELL_H
#define COHORT_TASK_TELL_H

#include <stddef.h>
#include <stdint.h>

#include "mps_proc.h"

#define TASK_TELL_MS 2000 /* the most the child that tells the tasks may take */
#define TASK_TELL_DRAIN_MS 1000 /* the most it waits for its pipes to be read */

/* How the telling of a task went: TELL_TOLD, TELL_LATE (the child was
 * killed at TASK_TELL_MS first), TELL_STOPPED (the stop came first), or
 * one of the stages below with the errno it failed with. */
enum { TELL_TOLD = 0, TELL_LATE = -1, TELL_STOPPED = -2 };
enum {
    TELL_PIDFD = 1 << 16,  /* the task's pidfd could not be had */
    TELL_TAKE = 2 << 16,   /* pidfd_getfd on its descriptor 2 */
    TELL_BECOME = 3 << 16, /* the child becoming the job's user */
    TELL_WRITE = 4 << 16,  /* the write */
    TELL_START = 5 << 16,  /* starting the child */
};

/* Writes line and a newline into the stderr of n tasks, task i given by
 * pidfd[i] (the caller's, kept open by it; negative when there is none,
 * err[i] then saying why, as one of the stages above), from a child that
 * is the job's user, and waits for the pipes among them to be read (see
 * above); returns once the child ended, or was killed at TASK_TELL_MS or
 * as soon as stop_fd is readable. how[i] gets how task i's telling went.
 * Returns how many of the pipes written were not seen empty within
 * TASK_TELL_DRAIN_MS (0 when the child was killed first): their reader did
 * not keep up, or their task went on writing. */
int task_tell(const int *pidfd, const int *err, uint32_t n, const char *line,
              const struct mps_user *user, int stop_fd, int *how);

/* How a telling went (one of how's values but TELL_TOLD), in words, in
 * buf; returns buf. */
const char *task_tell_why(int how, char *buf, size_t len);

#endif
