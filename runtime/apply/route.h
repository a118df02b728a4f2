/* route.h - which network interface this host uses to reach a host: the
 * value for NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME. Asks the kernel's
 * routing table (a UDP connect, which sends nothing) and getifaddrs(). */
#ifndef COHORT_ROUTE_H
#define COHORT_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Resolves host and writes the name of the interface that holds the
 * source address the kernel picks for it (for a host of this machine: the
 * interface holding that address). loopback tells whether it is a loopback
 * interface. Returns 0, or -1 with err naming host and the reason. */
int route_interface(const char *host, char *ifname, size_t len, bool *loopback,
                    struct cohort_err *err);

#endif
