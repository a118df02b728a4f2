/* plan_step.c - a plan's step-wide values without a topology (see
 * plan_step.h). */
#include "plan_step.h"

#include <stdio.h>

#include "layout.h"

void plan_master_addr(const struct cohort_step *step, const struct envlist *task_env,
                      char *buf, size_t len)
{
    /* COHORT_MASTER_ADDR: the step's, where MASTER_ADDR names the node's
     * store agent (--cohort-store) */
    const char *user_addr = envlist_get(task_env, "COHORT_MASTER_ADDR");
    if (!user_addr)
        user_addr = envlist_get(task_env, "MASTER_ADDR");
    if (user_addr)
        snprintf(buf, len, "%s", user_addr);
    else
        layout_task0_host(step, buf, len);
}

void plan_step_ports(const struct cohort_step *step, struct port_range range, const char *secret,
                     uint16_t *master, uint16_t *bootstrap)
{
    uint16_t hm, hb;
    ports_hashed(step->job_id, step->step_id, range, &hm, &hb);
    *master = step->n_resv_ports >= 1 ? step->resv_ports[0] : hm;
    if (step->n_resv_ports >= 2)
        *bootstrap = step->resv_ports[1];
    else if (secret && *secret)
        *bootstrap = ports_keyed(step->job_id, step->step_id, secret, range, *master);
    else
        *bootstrap = hb;
}
