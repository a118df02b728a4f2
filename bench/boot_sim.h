/* boot_sim.h - what bench/boot_sim's two files share: the costs
 * boot_sim_costs.c measures on this machine as it starts, which the
 * simulation (boot_sim.c) charges for each call, message and byte. */
#ifndef COHORT_BOOT_SIM_H
#define COHORT_BOOT_SIM_H

#include <stdint.h>

#define ROUND_MAX 256 /* events one net_poll takes (epoll_wait's 256) */
#define BIG (1u << 20) /* the largest block an exchange takes */

struct costs { /* us; _b: us a byte; [0] Unix, [1] TCP */
    double open, listen, challenge, hello, welcome, welcomed; /* setup; the handshake's steps */
    double seal, check, entry, mac_b, copy_b; /* frame MACs, a block taken up, per byte */
    double io[2], io_b[2], connect[2], accept[2]; /* io: a send or a recv (half a pair) */
    double epoll, ctl, sysc;
    int hs_len[3]; /* challenge, hello, welcome payloads */
};

/* Returns CLOCK_MONOTONIC's time in us. */
double now_us(void);
/* Says "boot_sim: what: why" on stderr and exits 1. */
void die(const char *what);
/* Measures every cost of c for a step of RANKS ranks, PER_NODE a node, in
 * a tree of FANOUT, and prints them to stderr. */
void costs_measure(struct costs *c, uint32_t ranks, uint32_t per_node, uint32_t fanout);

#endif
