/* ports.h - the step's rendezvous ports: MASTER_PORT and the runtime's
 * bootstrap port. Sources, in order: a value the user set (MASTER_PORT only),
 * Slurm's reserved ports (SLURM_STEP_RESV_PORTS: first for MASTER_PORT,
 * second for the bootstrap), else a hash into an admin-set range. The hash
 * of (job id, step id) gives every step of a job two ports of its own (steps
 * of one job never collide while there are fewer than range/2 of them) and
 * is the same in every task of the step. Where the step has a secret, the
 * bootstrap port is hashed from it instead, so that nobody without the
 * secret can tell the port in advance and take it first. */
#ifndef COHORT_PORTS_H
#define COHORT_PORTS_H

#include <stdint.h>

#include "error.h"

/* Default hash range: below Linux's default ephemeral range (32768-60999),
 * above the well-known and most registered service ports. */
#define PORTS_DEFAULT_LO 20000
#define PORTS_DEFAULT_HI 32767

struct port_range {
    uint16_t lo, hi;
};

/* Parses "A-B" (1024 <= A < B <= 65535, at least 2 ports). */
int port_range_parse(const char *text, struct port_range *out, struct cohort_err *err);

/* Parses SLURM_STEP_RESV_PORTS ("12000-12003" or "12000,12002-12003") and
 * returns up to max ports in order in out; *n gets how many. */
int resv_ports_parse(const char *text, uint16_t *out, unsigned max, unsigned *n,
                     struct cohort_err *err);

/* The hashed pair for (job, step): master = lo + (h + 2 step) mod size,
 * bootstrap the port after it (wrapping inside the range). */
void ports_hashed(uint32_t job_id, uint32_t step_id, struct port_range range,
                  uint16_t *master, uint16_t *bootstrap);

/* The bootstrap port keyed by the step's secret (any text, the same in
 * every task): a hash of (job, step, secret) into range, never equal to
 * master. Not a cryptographic function: the port is unpredictable because
 * the secret is (256 random bits), and 16 bits need no more. */
uint16_t ports_keyed(uint32_t job_id, uint32_t step_id, const char *secret,
                     struct port_range range, uint16_t master);

/* Parses a decimal port 1-65535 given in variable name. */
int port_parse(const char *name, const char *text, uint16_t *out,
               struct cohort_err *err);

#endif
