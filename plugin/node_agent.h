/* node_agent.h - the step's node agent (cohort-agent) as the plugin runs
 * it on each node of a step that serves PyTorch's store (store_step.h) or
 * is watched (watch_step.h): started from slurmstepd as the job's user
 * with its start record on a socketpair that stays open as the way to
 * tell it of the node's tasks ("task LOCAL RANK PID" as each is forked,
 * when watched; "ended RANK STATUS" as each ends), and ended when the
 * step ends on the node (its input closes). A thread of slurmstepd reads
 * the agent's side of the pair (agent_watch.h): its early death is told
 * to the node's running tasks and, when watched, its "end" lines and its
 * death end them. */
#ifndef COHORT_NODE_AGENT_H
#define COHORT_NODE_AGENT_H

#include <slurm/spank.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent_watch.h"
#include "envlist.h"
#include "error.h"
#include "step.h"

/* The most the node's last task's end waits for the agent's "bye": its
 * goodbye's flush (0.5 s at most) and, on the holder's node, the holder's
 * settle window (0.3 s) and its word to every node, with room for a
 * loaded node. */
#define NODE_AGENT_BYE_MS 3000

struct node_agent {
    bool up;                    /* started and answered: it serves the node */
    bool watching;              /* started for the watch (it sends "end" lines) */
    pid_t pid;                  /* the agent */
    unsigned long long started; /* its start time, against pid reuse */
    int events_fd;              /* the agent's standard input; -1: none */
    struct agent_watch *guard;  /* the thread reading the agent's side */
    uint32_t n_tasks;           /* the node's tasks */
    uint32_t n_ended;           /* those that ended */
    uint16_t port;              /* its loopback port (its answer's "port N") */
    char dir[256];              /* its directory for the NCCL profiler
                                   (its answer's "dir PATH"), "" unwatched */
    char error[COHORT_ERR_LEN]; /* not started: each task fails with it */
};

/* The agent's record, the part every agent gets (NAME=VALUE each): what
 * the job's environment says of the step (its layout, secret, timeout),
 * the step's ids and the node's global ranks from step->node_ranks, and
 * whether it is verbose. 0, or -1 when out of memory. */
int node_agent_record(spank_t sp, const struct cohort_step *step, bool verbose,
                      struct envlist *record);

/* Clears the record, its values wiped first (the secret is among them). */
void node_agent_record_clear(struct envlist *record);

/* slurmstepd, user_init, once per node: the agent started as the job's
 * user with record (NULL: it could not be made, for want of memory) for a
 * node of n_tasks tasks, serving the store (store) and watching the step
 * (watch); its answer read within COHORT_TIMEOUT (30 s at most), then its
 * side watched. A failure lands in a->error (the tasks fail with it). */
void node_agent_start(struct node_agent *a, spank_t sp, const struct envlist *record,
                      bool store, bool watch, const struct cohort_step *step,
                      uint32_t n_tasks);

/* slurmstepd, task_post_fork: the node's task local (global rank) was
 * forked as pid: watched from now on, and told to the agent when it
 * watches the step. */
void node_agent_forked(struct node_agent *a, uint32_t local, uint32_t rank, pid_t pid);

/* A task of the node ended (its local id, its global rank, its wait
 * status): told to the agent. After the node's last one, when the agent
 * watches the step, waits up to NODE_AGENT_BYE_MS for its "bye": Slurm
 * kills what is left of the node's step once this hook returns, and the
 * agent's goodbye to the holder must be out first, or the node's end
 * would be taken for its loss. */
void node_agent_ended(struct node_agent *a, uint32_t local, uint32_t rank, int status);

/* The step ends on this node: the thread stopped (nothing is ended by it
 * then), the agent told (its input closes) and reaped, killed if it does
 * not end within 2 s. */
void node_agent_end(struct node_agent *a);

#endif
