/* plan_step.h - the step-wide values of a plan that need no topology:
 * MASTER_ADDR, MASTER_PORT and COHORT_BOOTSTRAP_PORT as the plan will set
 * them. Shells need them before planning (route.c finds the route to
 * MASTER_ADDR) or without planning at all (libcohort), and, like the rest
 * of the step, they need no hwloc. */
#ifndef COHORT_PLAN_STEP_H
#define COHORT_PLAN_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "envlist.h"
#include "ports.h"
#include "step.h"

/* The step's MASTER_ADDR as the plan will set it: COHORT_MASTER_ADDR (set
 * where MASTER_ADDR names a node's store agent), else the user's
 * MASTER_ADDR, else the host of task 0. Lets a shell find the route to it before planning. */
void plan_master_addr(const struct cohort_step *step, const struct envlist *task_env,
                      char *buf, size_t len);

/* The step's MASTER_PORT and COHORT_BOOTSTRAP_PORT before a user's
 * MASTER_PORT: Slurm's first two reserved ports, else the pair hashed from
 * job and step ids into range, the bootstrap port keyed by the step's
 * secret when secret (COHORT_SECRET) is not NULL (ports.h). */
void plan_step_ports(const struct cohort_step *step, struct port_range range, const char *secret,
                     uint16_t *master, uint16_t *bootstrap);

#endif
