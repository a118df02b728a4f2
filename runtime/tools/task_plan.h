/* task_plan.h - the pipeline the command-line shells share: environment
 * (this process's, or a file of NAME=VALUE lines) -> step -> topology ->
 * node plan. The plugin has its own front half (spank items). */
#ifndef COHORT_TASK_PLAN_H
#define COHORT_TASK_PLAN_H

#include <stdbool.h>

#include "envlist.h"
#include "plan.h"
#include "step.h"
#include "topology.h"

struct task_plan_request {
    const char *env_file;   /* NULL: this process's environment */
    const char *topology;   /* hwloc XML, NULL: this machine */
    bool topology_is_this_system; /* the XML is this machine's cache */
    const char *mode;       /* NULL: $COHORT_MODE, else train */
    const char *port_range; /* NULL: $COHORT_PORT_RANGE, else the default */
    const char *cpus;       /* CPUs the step may use (hwloc list), NULL: all allowed */
    bool find_route;        /* look up the interface to MASTER_ADDR (a live task) */
};

struct task_plan {
    struct envlist env;
    struct cohort_step step;
    struct cohort_topology *topo;
    struct cohort_node_plan *plan;
};

int task_plan_build(const struct task_plan_request *req, struct task_plan *out,
                    struct cohort_err *err);
void task_plan_free(struct task_plan *tp);

#endif
