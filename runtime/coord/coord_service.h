/* coord_service.h - puts the coordinator's services behind one table of
 * operations, so that its main (coord_main.c) starts any of them the same
 * way: new (from the start record), its listener's admit, run (until it is
 * done), free. There is one table per service: the work service
 * (work_service.h), the streams service (streams_service.h) and the store
 * service (store_service.h). */
#ifndef COHORT_COORD_SERVICE_H
#define COHORT_COORD_SERVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "coord_config.h"
#include "error.h"
#include "net.h"

/* A service's table of operations. */
struct coord_service_ops {
    /* What it serves, for the failure's line ("queue"). */
    const char *name;
    /* Who it is and who holds a connection of it, for the open-file
     * check's line (net_fd_check). */
    const char *who, *conns;
    /* Makes a service for cfg (kept by reference: it must outlive the
     * service) in *svc, which free takes even when new fails. Returns 0, or
     * -1 with err. */
    int (*new)(const struct coord_config *cfg, void **svc, struct cohort_err *err);
    /* This is net's admit callback for the service's listener (ctx: the
     * service). */
    enum net_admit (*admit)(void *svc, const struct hs_hello *h, bool via_unix,
                            struct cohort_err *why);
    /* Serves on net until it is done. Returns 0 (every item done, every
     * worker closed, every agent gone), 1 when workers left before, or -1
     * with err when it failed. */
    int (*run)(void *svc, struct net *net, struct cohort_err *err);
    /* Frees the service; NULL frees nothing. */
    void (*free)(void *svc);
};

#endif
