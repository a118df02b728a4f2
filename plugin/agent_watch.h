/* agent_watch.h - the node agent watched from slurmstepd (--cohort-store):
 * a thread that waits on slurmstepd's end of the socketpair that is the
 * agent's standard input. The agent is meant to end only when that input
 * closes (the step's end on this node), so the pair closing from the
 * agent's side while the step runs means that it ended early: killed (by
 * hand, by the OOM killer, or with the whole step by Slurm), crashed, or
 * stopped on an error of its own. The other nodes' ranks are then told by
 * the store holder, and this node's tasks by this thread: each task still
 * running gets one line in its stderr, written through the task's own
 * standard error (pidfd_getfd: the very file the task writes, whatever it
 * is, with no path opened again as root). The tasks are not killed: their
 * store connections are closed, and PyTorch fails their store calls as it
 * fails the other nodes' waits at its timeout.
 *
 * Decisions: the writes are made by a child process, never by the thread:
 * a task's stderr is the user's file (a pty, a pipe, a FUSE or NFS file)
 * and a write on it may block for ever, so the child drops to the job's
 * user (each write's checks are the user's) and is killed after 2 s, or at
 * once when the step ends, so that the step's end never waits on it. The
 * tasks are told only after 300 ms, and only those still running then: a
 * step killed by Slurm (scancel, time limit) kills the agent with its tasks,
 * which is no death to tell. The node's log gets one line saying how many
 * running tasks were told and why the first one not told was not (Linux
 * 5.6 or later is needed for pidfd_getfd). */
#ifndef COHORT_AGENT_WATCH_H
#define COHORT_AGENT_WATCH_H

#include <stdint.h>
#include <sys/types.h>

#include "mps_proc.h"

struct agent_watch;

/* Starts watching fd (kept open by the caller until agent_watch_stop) for
 * a node of n_tasks tasks; line (copied) is what each task is told, and
 * user (copied) whose rights the writes take. NULL when no thread could be
 * started (the step runs unwatched). */
struct agent_watch *agent_watch_start(int fd, uint32_t n_tasks, const char *line,
                                      const struct mps_user *user);

/* The node's task local (its local id) was forked as pid: told if the
 * agent dies from now on. */
void agent_watch_task(struct agent_watch *w, uint32_t local, pid_t pid);

/* The node's task local ended: never told. */
void agent_watch_task_ended(struct agent_watch *w, uint32_t local);

/* Stops the thread (before the caller closes fd) and frees w; NULL: no-op.
 * Returns within about half a second whatever the tasks' stderr files do:
 * a telling under way is ended (its child killed). */
void agent_watch_stop(struct agent_watch *w);

#endif
