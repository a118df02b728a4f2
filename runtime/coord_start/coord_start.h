/* coord_start.h - starts a coordinator process (cohort-work-coord) for a
 * start record (coord_config.h). The process runs in a session of its own
 * with a minimal environment (never the step's secret: the record carries
 * the key); it gets the record on its standard input and must send its one
 * line back (its port, or "error WHY") by a deadline. A coordinator that
 * failed or missed the deadline is killed and reaped. libcohort's rank 0
 * uses it (work queues, stream sets), and so does the first node's agent
 * (the store). */
#ifndef COHORT_COORD_START_H
#define COHORT_COORD_START_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "coord_config.h"
#include "error.h"

#define COORD_ADDR_LEN 256 /* an address or host name and its NUL */

/* Starts path for cfg; role names it in messages ("work coordinator").
 * On success it sets *port and *pid (and, when addr is not NULL, the
 * address a relay told, else ""). On failure it sets *port to 0 and says
 * why; the process has ended, and *pid is 0 unless it could not be reaped
 * within the deadline. */
void coord_start(const struct coord_config *cfg, const char *path, const char *role,
                 int timeout_s, pid_t *pid, uint16_t *port, char addr[COORD_ADDR_LEN],
                 char *why, size_t len);

/* Gets a node relay for cfg (a relay's record). The node's relay process
 * for the step (host.h) serves it when one listens and is this user's;
 * *pid is 0 then, since that process is never this rank's to end, and its
 * silence past timeout_s is the failure. Otherwise, or when that process
 * has no room for it or closed without an answer as it ended, it starts one
 * as coord_start does (which then becomes that process, or a relay alone
 * when another took the node's socket first). Its results are
 * coord_start's. The record's key goes to a process of this user only. */
void coord_start_relay(const struct coord_config *cfg, const char *path, int timeout_s,
                       pid_t *pid, uint16_t *port, char addr[COORD_ADDR_LEN], char *why,
                       size_t len);

/* The started process's side: writes its line on standard output (its
 * port; for a relay, the port its relays below dial or 1, and addr, where
 * it is reached), then points standard input and output at /dev/null,
 * since the starting rank may go and has nothing more to read. Returns 0,
 * or -1 with err. */
int coord_started(unsigned port, const char *addr, struct cohort_err *err);

/* The started process's side: reads its start record from fd to its end
 * (by end, ms; none when end < 0; fewer than max bytes) and decodes it into
 * cfg; the buffers that held the key are wiped. Returns 0, -1 with err when
 * it is not a record, or -2 when none could be read. */
int coord_record_read(int fd, long long end, size_t max, struct coord_config *cfg,
                      struct cohort_err *err);

/* Sends the same line on the stream socket *fd (a rank's connection to the
 * node's relay process, host.h), then closes it and sets it to -1. Returns
 * 0, or -1 with err. */
int coord_tell(int *fd, unsigned port, const char *addr, struct cohort_err *err);

/* Makes a listening TCP socket on every address (IPv6 with IPv4 mapped
 * where the host has IPv6), on *port or, when it is 0, on a port the kernel
 * picks (then written to *port). Returns the descriptor, or -1 with err. */
int coord_listen_any(uint16_t *port, struct cohort_err *err);

/* Ends a started coordinator's process group with SIGKILL (a stopped one
 * takes it too) and reaps it, so that nothing it holds outlives it. It
 * waits 2 s at most (a process in an uninterruptible wait dies once that
 * ends) and sets *pid to 0 once reaped. */
void coord_end(pid_t *pid);

#endif
