/* route.h - which network interface this host uses to reach a host: the
 * value for NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME. Asks the kernel's
 * routing table (a UDP connect, which sends nothing) and getifaddrs(). */
#ifndef COHORT_ROUTE_H
#define COHORT_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include <net/if.h>

#include "envlist.h"
#include "error.h"
#include "plan.h"
#include "step.h"

/* Resolves host and writes the name of the interface that holds the
 * source address the kernel picks for it (for a host of this machine: the
 * interface holding that address). loopback tells whether it is a loopback
 * interface. Returns 0, or -1 with err naming host and the reason. */
int route_interface(const char *host, char *ifname, size_t len, bool *loopback,
                    struct cohort_err *err);

/* The route to the step's MASTER_ADDR, as a shell hands it to the planner. */
struct master_route {
    char ifname[IF_NAMESIZE]; /* "" when not found */
    bool loopback;
    char error[COHORT_ERR_LEN]; /* why not found, or "" */
};

/* Finds the interface to MASTER_ADDR as plan_master_addr() gives it. */
void master_route_find(const struct cohort_step *step, const struct envlist *task_env,
                       struct master_route *r);

/* Points the policy's socket_ifname fields at r (which must outlive it). */
void master_route_policy(const struct master_route *r, struct cohort_policy *pol);

#endif
