/* agent_watch.h - the node agent watched from slurmstepd (--cohort-store):
 * a thread that waits on slurmstepd's end of the socketpair that is the
 * agent's standard input. The agent ends only when that input closes (the
 * step's end on this node), so the pair closing from the agent's side
 * while the step runs means the agent died; the other nodes' ranks are
 * then told by the store holder, and this node's tasks by this thread:
 * each task still running gets one line in its stderr, written through
 * the task's own standard error (pidfd_getfd: the very file the task
 * writes, whatever it is, with no path opened again as root). The tasks
 * are not killed: their store connections are closed, and PyTorch fails
 * their store calls as it fails the other nodes' waits at its timeout. */
#ifndef COHORT_AGENT_WATCH_H
#define COHORT_AGENT_WATCH_H

#include <stdint.h>
#include <sys/types.h>

struct agent_watch;

/* Starts watching fd (kept open by the caller until agent_watch_stop) for
 * a node of n_tasks tasks; line (copied) is what each task is told.
 * NULL when no thread could be started (the step runs unwatched). */
struct agent_watch *agent_watch_start(int fd, uint32_t n_tasks, const char *line);

/* The node's task local (its local id) was forked as pid: told if the
 * agent dies from now on. */
void agent_watch_task(struct agent_watch *w, uint32_t local, pid_t pid);

/* The node's task local ended: never told. */
void agent_watch_task_ended(struct agent_watch *w, uint32_t local);

/* Stops the thread (before the caller closes fd) and frees w; NULL: no-op. */
void agent_watch_stop(struct agent_watch *w);

#endif
