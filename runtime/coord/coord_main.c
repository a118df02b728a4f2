/* coord_main.c - cohort-work-coord, the coordinator's process. One rank of
 * the step starts it (cohort_work_open, cohort_streams_open); it is never a
 * part of a worker. It reads its start record (coord_config.h) from
 * standard input, checks that a connection per relay at the top of
 * the relays' tree (coord_config.h) fits under its open-file limit (the
 * soft one raised to the hard one), listens on a TCP port of its own (any
 * address, a port the kernel picks), writes
 * that port as one line on standard output ("error WHY" when it cannot
 * start), and serves the queue (work_service.h), the stream set
 * (streams_service.h) or the step's store (store_service.h, on the port
 * its record names) until it is done or no worker (agent) is left; it
 * starts each service the same way, through its table (coord_service.h).
 * With a relay's record it is that node's relay instead, started by the
 * node's first rank, and the node's relay process for the step's later
 * queues and sets (host.h). Its exit status is 0 when every item is done
 * (every worker closed the set; for a relay, its coordinator ended), 1 when
 * workers left before, and 2 when it could not start or failed (with one
 * line on standard error). */
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "coord_service.h"
#include "coord_start.h"
#include "host.h"
#include "store_service.h"
#include "streams_service.h"
#include "work_service.h"

#define RECORD_MAX (64u << 20)

/* Reads the start record from standard input into cfg. Returns 0, or -1
 * with err. */
static int record(struct coord_config *cfg, struct cohort_err *err)
{
    int rc = coord_record_read(0, -1, RECORD_MAX, cfg, err);
    return rc == -2 ? cohort_fail(err, "cannot read its start record from standard input") : rc;
}

/* Returns how many connections a coordinator of cfg serves: the store
 * holder serves one per node's agent, a queue or set one per relay at the
 * top of the relays' tree. */
static uint32_t peers_of(const struct coord_config *cfg)
{
    return cfg->kind == COORD_STORE ? cfg->num_nodes : coord_relay_kids(cfg, COORD_TOP);
}

/* Makes *net and a listener on a port of its own, keeps its peers' slots
 * from strangers, and tells the starting rank the port. Returns 0, or -1
 * with err. */
static int listen_and_tell(const struct coord_config *cfg, const struct net_ops *ops,
                           struct net **net, struct cohort_err *err)
{
    struct hs_self me = {.key = &cfg->key, .job = cfg->job, .step = cfg->step,
                         .rank = UINT32_MAX, .node = UINT32_MAX};
    memcpy(me.view, cfg->view, sizeof me.view);
    uint16_t port = cfg->port;
    int fd;
    if (net_new(&me, ops, net, err) < 0 || (fd = coord_listen_any(&port, err)) < 0)
        return -1;
    net_reserve(*net, peers_of(cfg));
    if (net_listen(*net, fd, false, err) < 0)
        return -1;
    return coord_started(port, NULL, err);
}

/* Returns the service of cfg's kind (its start record is not a relay's). */
static const struct coord_service_ops *service_of(const struct coord_config *cfg)
{
    return cfg->kind == COORD_STORE     ? &store_service_ops
           : cfg->kind == COORD_STREAMS ? &streams_service_ops
                                        : &work_service_ops;
}

/* Serves cfg with service s. It first checks its peers' connections against
 * the open-file limit: every relay at the top of the relays' tree holds one
 * of its own, and when they cannot all fit, every rank is told at once
 * rather than left out until its deadline. Then it calls s's new, listens
 * with s's admit, and calls s's run and free. Returns s's run's result, or
 * -2 when it could not start (err says why). */
static int serve(const struct coord_service_ops *s, const struct coord_config *cfg,
                 struct cohort_err *err)
{
    void *svc = NULL;
    struct net *net = NULL;
    int rc = -2;
    if (net_fd_check(peers_of(cfg), s->who, s->conns, err) == 0 && s->new(cfg, &svc, err) == 0) {
        struct net_ops ops = {.ctx = svc, .max_payload = WIRE_MAX_PAYLOAD_DEFAULT,
                              .admit = s->admit};
        if (listen_and_tell(cfg, &ops, &net, err) == 0)
            rc = s->run(svc, net, err);
    }
    s->free(svc);
    net_free(net);
    return rc;
}

/* Ignores Slurm's warnings (a time limit's or preemption's SIGTERM,
 * --signal's USR1 or USR2) and a terminal's: they are for the workers,
 * which drain. The coordinator serves their last commits and closes, then
 * ends once they have gone (SIGKILL still ends it). A write to a closed
 * pipe (its starting rank's standard error gone) fails instead of ending
 * the process, and with it every relay the process runs. */
static void ignore_warnings(void)
{
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGPIPE};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], SIG_IGN);
}

int main(void)
{
    struct coord_config cfg = {0};
    struct cohort_err err;
    int rc = -2;
    ignore_warnings();
    int got = record(&cfg, &err);
    if (got == 0 && cfg.kind == COORD_RELAY) {
        rc = host_main(&cfg); /* host_main said its own lines. */
        coord_config_free(&cfg);
        return rc;
    }
    const struct coord_service_ops *s = service_of(&cfg);
    if (got == 0)
        rc = serve(s, &cfg, &err);
    if (rc == -2) {
        /* This is the starting rank's failure, seen on every rank. */
        printf("error %s\n", err.msg);
        fflush(stdout);
        rc = 2;
    } else if (rc < 0) {
        rc = 2;
        fprintf(stderr, "cohort: the coordinator of %s '%s' failed: %s\n", s->name, cfg.name,
                err.msg);
    }
    coord_config_free(&cfg);
    return rc;
}
