/* spank_srun.h - the plugin's srun side (S_CTX_LOCAL): the job's choices
 * checked before the allocation, and what srun passes on to slurmstepd
 * just before the launch. Its state (the step's secret made here) is one
 * struct in spank_srun.c. */
#ifndef COHORT_SPANK_SRUN_H
#define COHORT_SPANK_SRUN_H

#include <stdbool.h>

/* What slurmstepd must know of srun's environment whatever srun --export
 * says: srun passes its environment to the tasks only with --export=ALL,
 * but its SLURM* variables always (NONE, a list, ALL). srun sets these in
 * local_user_init, after every cli_filter hook; slurmstepd takes them out
 * of the job's environment in user_init, so that no task sees them. */
#define SRUN_SECRET "SLURM_COHORT_SRUN_SECRET"   /* the step's secret */
#define SRUN_MODE "SLURM_COHORT_SRUN_MODE"       /* srun's COHORT_MODE */
#define SRUN_VERBOSE "SLURM_COHORT_SRUN_VERBOSE" /* srun's COHORT_VERBOSE */
#define SRUN_MPS "SLURM_COHORT_SRUN_MPS"         /* srun's COHORT_MPS */
#define SRUN_STORE "SLURM_COHORT_SRUN_STORE"     /* srun's COHORT_STORE */
#define SRUN_WATCH "SLURM_COHORT_SRUN_WATCH"     /* srun's COHORT_WATCH */

/* slurm_spank_init_post_opt in srun: the mode, MPS, store and watch the
 * job chose. 0, or -1 after one error line naming the bad value (srun fails). */
int srun_check_options(void);

/* slurm_spank_local_user_init: the SRUN_* variables for slurmstepd, the
 * step's secret among them (see spank_srun.c). args_ok is false when the
 * plugstack arguments were refused: only stale SRUN_* are then removed. */
void srun_pass_on(bool args_ok);

#endif
