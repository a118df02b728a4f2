/* spank_slurmstepd.h - the plugin's slurmstepd side (S_CTX_REMOTE): the
 * hooks spank_cohort.c hands on in slurmstepd, each working on
 * slurmstepd's state, one struct in spank_slurmstepd.c. */
#ifndef COHORT_SPANK_SLURMSTEPD_H
#define COHORT_SPANK_SLURMSTEPD_H

#include <slurm/spank.h>
#include <stdbool.h>

/* user_init, once per node before the tasks fork: srun's SRUN_* variables
 * taken out of the job's environment, then, for a parallel step whose mode
 * is not off, the step's secret, the node's plan, its MPS daemon and node
 * agent (for the store or the watch). args_ok is false when the plugstack
 * arguments were refused: the step then runs without cohort. A problem is
 * kept for each task to say. */
void stepd_user_init(spank_t sp, bool args_ok);

/* task_init, in each task: its variables, its binding, its MPS, store
 * and watch variables, and the verbose line. 0, or -1 when the task must
 * fail (strict=yes, or a store or watch asked for and not had). */
int stepd_task_init(spank_t sp);

/* task_post_fork: the task's pid, watched from slurmstepd (agent_watch.h)
 * and told to the node agent when the step is watched. */
void stepd_task_post_fork(spank_t sp);

/* task_exit: the node agent told; after the node's last task, the step's
 * MPS daemon stops (before the step is reported complete: when srun
 * returns, it is gone). */
void stepd_task_exit(spank_t sp);

/* exit: the MPS daemon and node agent ended, the topology cache written
 * again when the step discovered the topology, the state freed. */
void stepd_exit(void);

#endif
