/* agent_watch.h - the node agent's side of its socketpair read from
 * slurmstepd: a thread that waits on slurmstepd's end of the pair that is
 * the agent's standard input. The agent is meant to end only when that
 * input closes (the step's end on this node), so the pair closing from
 * the agent's side while the step runs means that it ended early: killed
 * (by hand, by the OOM killer, or with the whole step by Slurm), crashed,
 * or stopped on an error of its own. The other nodes' ranks are then told
 * by the store holder, and this node's tasks by this thread: each task
 * still running gets one line in its stderr (task_tell.h). Without the
 * step watch the tasks are not killed: their store connections are
 * closed, and PyTorch fails their store calls as it fails the other
 * nodes' waits at its timeout.
 *
 * With the step watch (--cohort-watch) the agent also sends lines of its
 * own: "end TELL TEXT" (TELL 1 or 0) when the step is to end. The first
 * such line ends the node's tasks: when TELL is 1, TEXT is written into
 * the stderr of one running task (their stderr is the step's); then every
 * running task gets SIGTERM, and those still running WATCH_GRACE_MS later
 * SIGKILL, each through the pidfd taken as it was forked, so that a
 * reused pid is never hit. The node's log gets one line ("cohort: watch:
 * ending the node's N tasks: TEXT"). Later ends, and lines that are
 * neither an end nor "bye", are ignored. The agent's death, watched, ends
 * the node's running tasks the same way after they are told of it: the
 * node is unwatched from then on, and the holder names it lost to the
 * others. Its "bye" (once every task of the node ended, its goodbye to
 * the holder is out) lets slurmstepd's last task hook go on: Slurm kills
 * what is left of the node's step right after it, the agent with it.
 *
 * Decisions: the tasks are told of a death only after 300 ms, and only
 * those still running then: a step killed by Slurm (scancel, time limit)
 * kills the agent with its tasks, which is no death to tell. The node's
 * log gets one line saying how many running tasks were told and why the
 * first one not told was not. Once the thread is stopped (the step's end
 * on the node), it ends nothing. */
#ifndef COHORT_AGENT_WATCH_H
#define COHORT_AGENT_WATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "mps_proc.h"

struct agent_watch;

/* Starts watching fd (kept open by the caller until agent_watch_stop) for
 * a node of n_tasks tasks; line (copied) is what each task is told of the
 * agent's death, and user (copied) whose rights the writes take; ends:
 * the step is watched (the agent's "end" lines and its death end the
 * node's tasks). NULL when no thread could be started (the step runs
 * unwatched). */
struct agent_watch *agent_watch_start(int fd, uint32_t n_tasks, const char *line,
                                      const struct mps_user *user, bool ends);

/* The node's task local (its local id) was forked as pid: told, and
 * ended, from now on. */
void agent_watch_task(struct agent_watch *w, uint32_t local, pid_t pid);

/* The node's task local ended: never told nor signalled. */
void agent_watch_task_ended(struct agent_watch *w, uint32_t local);

/* Waits up to ms (-1: no limit) for the agent's "bye" line (its goodbye
 * to the holder is out, so that the end of the node's part of the step is
 * no loss to the others), its death or the thread's end: true when one
 * came; false at once for NULL. */
bool agent_watch_wait_bye(const struct agent_watch *w, int ms);

/* Stops the thread (before the caller closes fd) and frees w; NULL: no-op.
 * Returns within about half a second whatever the tasks' stderr files do:
 * a telling under way is ended (its child killed), and an ending under
 * way sends no more signals. */
void agent_watch_stop(struct agent_watch *w);

#endif
