/* coord_start.h - a coordinator process (cohort-work-coord) started for
 * a start record (coord_config.h): in a session of its own, with a
 * minimal environment (never the step's secret: the record carries the
 * key), the record on its standard input, and its one line back (its
 * port, or "error WHY") by a deadline. A coordinator that failed or
 * missed the deadline is killed and reaped. Used by libcohort's rank 0
 * (work queues, stream sets) and by the first node's agent (the store). */
#ifndef COHORT_COORD_START_H
#define COHORT_COORD_START_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "coord_config.h"
#include "error.h"

#define COORD_ADDR_LEN 256 /* an address or host name and its NUL */

/* Starts path for cfg; role names it in messages ("work coordinator").
 * *port and *pid (and, when addr is not NULL, the address a relay told,
 * else ""), or *port 0 with why (the process ended, *pid 0 unless it
 * could not be reaped within the deadline). */
void coord_start(const struct coord_config *cfg, const char *path, const char *role,
                 int timeout_s, pid_t *pid, uint16_t *port, char addr[COORD_ADDR_LEN],
                 char *why, size_t len);

/* A node relay for cfg (a relay's record): served by the node's relay
 * process for the step (host.h) when one listens and is this user's
 * (*pid 0 then: it is never this rank's to end; its silence past
 * timeout_s is the failure), else, or when that process has no room for
 * it or closed without an answer as it ended, started as coord_start
 * starts one (which then becomes that process, or a relay alone when
 * another took the node's socket first). The same results as
 * coord_start's. The record's key goes to a process of this user only. */
void coord_start_relay(const struct coord_config *cfg, const char *path, int timeout_s,
                       pid_t *pid, uint16_t *port, char addr[COORD_ADDR_LEN], char *why,
                       size_t len);

/* The started process's side: writes its line (its port; a relay's, the
 * port its relays below dial or 1, and addr, where it is reached) on
 * standard output, then points standard input and output at /dev/null
 * (the starting rank may go: nothing more for it to read). 0, or -1 with
 * err. */
int coord_started(unsigned port, const char *addr, struct cohort_err *err);

/* The started process's side: its start record read from fd to its end
 * (by end, ms; none when end < 0; fewer than max bytes; the buffers that
 * held the key wiped) and decoded into cfg. 0; -1 with err when it is not
 * a record; -2 when none could be read. */
int coord_record_read(int fd, long long end, size_t max, struct coord_config *cfg,
                      struct cohort_err *err);

/* The same line sent on the stream socket *fd (a rank's connection to
 * the node's relay process, host.h), which is then closed and set to -1.
 * 0, or -1 with err. */
int coord_tell(int *fd, unsigned port, const char *addr, struct cohort_err *err);

/* A listening TCP socket on every address (IPv6 with IPv4 mapped where
 * the host has IPv6), on *port, or when it is 0 a port the kernel picks
 * (then in *port): the descriptor, or -1 with err. */
int coord_listen_any(uint16_t *port, struct cohort_err *err);

/* Ends a started coordinator's process group with SIGKILL (a stopped one
 * takes it too) and reaps it, so that nothing it holds outlives it; waits
 * 2 s at most (a process in an uninterruptible wait dies once that ends),
 * *pid 0 once reaped. */
void coord_end(pid_t *pid);

#endif
