/* coord_start.c - starts a coordinator process for a start record, and
 * serves the started process's side of it (see coord_start.h). */
#include "coord_start.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base_text.h"
#include "net.h"

#define COORD_END_MS 2000 /* A coordinator given up on is reaped within this (ms). */

extern char **environ;

/* Waits until fd is ready for events, or until end (ms; none when end <
 * 0). Returns 1 when ready, 0 at end, or -1 on an error. */
static int ready(int fd, short events, long long end)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events};
        long long left = end < 0 ? -1 : end - base_now_ms();
        int r = end < 0 || left > 0 ? poll(&p, 1, (int)left) : 0;
        if (r >= 0 || errno != EINTR)
            return r;
    }
}

/* Sends the start record on the coordinator's standard input, closes it
 * (or, when in and out are one socket, its sending half), and reads the
 * coordinator's one line (the port, or "error WHY"), all by end (ms). The
 * input is a socket so that sending never blocks and raises no SIGPIPE when
 * the coordinator is gone. Returns 0, -1 when the coordinator closed its end
 * first, or -2 at end. */
static int talk(int *in, int out, const uint8_t *rec, size_t len, long long end, char *line,
                size_t cap)
{
    for (size_t off = 0; off < len;) {
        int r = ready(*in, POLLOUT, end);
        ssize_t n = r > 0 ? send(*in, rec + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT) : -1;
        if (r == 0)
            return -2;
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0)
            return -1;
        off += (size_t)n;
    }
    if (*in == out)
        shutdown(out, SHUT_WR); /* One socket goes both ways: the record ends here. */
    else
        close(*in);
    *in = -1;
    size_t got = 0;
    while (got + 1 < cap && !memchr(line, '\n', got)) {
        int r = ready(out, POLLIN, end);
        ssize_t n = r > 0 ? read(out, line + got, cap - 1 - got) : -1;
        if (r == 0)
            return -2;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    line[got] = 0;
    line[strcspn(line, "\n")] = 0;
    return 0;
}

/* These are the variables of its starter's environment that the coordinator
 * keeps (docs/work.md): the search path, for a COHORT_WORK_COORD that is a
 * script; the loader's path, for libraries installed out of its default
 * places; the sanitizers' options, for builds with them. It never keeps the
 * step's secret (the start record carries the key) nor any other variable
 * of the user's. */
static const char *const coord_env[] = {"PATH", "LD_LIBRARY_PATH", "ASAN_OPTIONS",
                                        "LSAN_OPTIONS", "UBSAN_OPTIONS"};
#define COORD_ENV_N (sizeof coord_env / sizeof *coord_env)

/* Fills envp with the first entry of environ for each name of coord_env
 * that is set, then NULL. */
static void coord_environ(char *envp[COORD_ENV_N + 1])
{
    size_t k = 0;
    for (size_t i = 0; i < COORD_ENV_N; i++) {
        size_t len = strlen(coord_env[i]);
        char **e = environ;
        while (*e && (strncmp(*e, coord_env[i], len) != 0 || (*e)[len] != '='))
            e++;
        if (*e)
            envp[k++] = *e;
    }
    envp[k] = NULL;
}

/* Starts path in a session of its own, with in and out as its standard
 * input and output and the environment of coord_environ. Returns 0 with
 * *pid, or an errno. The new session means that it leads its own process
 * group, so no signal to the starter's group reaches it. */
static int spawn(pid_t *pid, const char *path, int in, int out)
{
    char *envp[COORD_ENV_N + 1];
    coord_environ(envp);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in, 0);
    posix_spawn_file_actions_adddup2(&fa, out, 1);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID);
    char *argv[] = {(char *)path, NULL};
    int e = posix_spawn(pid, path, &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (e != 0)
        *pid = 0;
    return e;
}

/* Writes a started process's line into line: its port and, when addr is
 * not NULL, where it is reached. Returns the line's length. */
static int start_line(char line[COORD_ADDR_LEN + 16], unsigned port, const char *addr)
{
    return snprintf(line, COORD_ADDR_LEN + 16, "%u%s%s\n", port, addr ? " " : "",
                    addr ? addr : "");
}

int coord_started(unsigned port, const char *addr, struct cohort_err *err)
{
    char line[COORD_ADDR_LEN + 16];
    start_line(line, port, addr);
    if (fputs(line, stdout) < 0 || fflush(stdout) != 0)
        return cohort_fail(err, "cannot tell the starting rank it listens");
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        close(null);
    }
    return 0;
}

/* Grows buf (n bytes of cap) to twice cap and wipes the old copy, since a
 * record holds the key. Returns the new buffer, or NULL; buf is freed
 * either way. */
static uint8_t *grow(uint8_t *buf, size_t n, size_t cap)
{
    uint8_t *b = malloc(2 * cap);
    if (b)
        memcpy(b, buf, n);
    explicit_bzero(buf, n);
    free(buf);
    return b;
}

/* Reads fd's bytes up to its end (by end, ms; none when end < 0), fewer
 * than max. Returns 0 with *out (malloc'd) and *len, or -1 with nothing
 * kept. */
static int read_all(int fd, long long end, size_t max, uint8_t **out, size_t *len)
{
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    ssize_t got = -1;
    while (buf && n < max && ready(fd, POLLIN, end) > 0) {
        if ((got = read(fd, buf + n, cap - n)) < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        if ((n += (size_t)got) == cap) {
            buf = grow(buf, n, cap);
            cap *= 2;
        }
    }
    if (got != 0 && buf) {
        explicit_bzero(buf, n);
        free(buf);
        buf = NULL;
    }
    *out = buf;
    *len = n;
    return buf ? 0 : -1;
}

int coord_record_read(int fd, long long end, size_t max, struct coord_config *cfg,
                      struct cohort_err *err)
{
    uint8_t *rec;
    size_t len;
    if (read_all(fd, end, max, &rec, &len) < 0)
        return -2;
    int rc = coord_config_decode(rec, len, cfg, err);
    explicit_bzero(rec, len);
    free(rec);
    return rc;
}

int coord_tell(int *fd, unsigned port, const char *addr, struct cohort_err *err)
{
    char line[COORD_ADDR_LEN + 16];
    int n = start_line(line, port, addr);
    ssize_t sent = send(*fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
    close(*fd);
    *fd = -1;
    if (sent != n)
        return cohort_fail(err, "cannot tell the starting rank it listens");
    return 0;
}

void coord_end(pid_t *pid)
{
    if (kill(-*pid, SIGKILL) < 0)
        kill(*pid, SIGKILL);
    long long end = base_now_ms() + COORD_END_MS;
    for (int nap = 1;; nap = nap < 32 ? 2 * nap : 50) {
        pid_t r = waitpid(*pid, NULL, WNOHANG);
        if (r == *pid || (r < 0 && errno != EINTR)) {
            *pid = 0;
            return;
        }
        long long left = end - base_now_ms();
        if (left <= 0)
            return;
        poll(NULL, 0, left < nap ? (int)left : nap);
    }
}

/* Reads a start's line (talk's rc and line) into *port and a, or says in
 * why what went wrong. */
static void take_line(int rc, const char *line, const char *role, const char *path,
                      int timeout_s, uint16_t *port, char a[COORD_ADDR_LEN], char *why,
                      size_t len)
{
    uint64_t p;
    const char *rest = line;
    if (rc == 0 && strncmp(line, "error ", 6) == 0)
        snprintf(why, len, "%.*s", (int)len - 1, line + 6);
    else if (rc == 0 && base_parse_decimal(&rest, NULL, 5, 65535, &p, NULL) == 0 && p > 0 &&
             (!*rest || (*rest == ' ' && sscanf(rest, " %255s", a) == 1)))
        *port = (uint16_t)p;
    else if (rc == -2)
        snprintf(why, len, "the %s %s did not start within %d s (stopped, or its node "
                 "overloaded?): it was killed", role, path, timeout_s);
    else
        snprintf(why, len, "the %s %s exited as it started", role, path);
}

void coord_start(const struct coord_config *cfg, const char *path, const char *role,
                 int timeout_s, pid_t *pid, uint16_t *port, char addr[COORD_ADDR_LEN],
                 char *why, size_t len)
{
    char a[COORD_ADDR_LEN] = "";
    uint8_t *rec = NULL;
    size_t rec_len = 0;
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    *port = 0;
    if (coord_config_encode(cfg, &rec, &rec_len) < 0 ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) < 0 || pipe2(out, O_CLOEXEC) < 0) {
        snprintf(why, len, "cannot start the coordinator: %s", strerror(errno));
        goto done;
    }
    int e = spawn(pid, path, in[0], out[1]);
    close(in[0]);
    close(out[1]);
    in[0] = out[1] = -1;
    if (e != 0) {
        snprintf(why, len, "cannot start the %s %s: %s (set COHORT_WORK_COORD to "
                 "cohort-work-coord's path)", role, path, strerror(e));
        goto done;
    }
    char line[COHORT_ERR_LEN + 16];
    int rc = talk(&in[1], out[0], rec, rec_len, base_now_ms() + (long long)timeout_s * 1000,
                  line, sizeof line);
    take_line(rc, line, role, path, timeout_s, port, a, why, len);
    if (!*port && *pid > 0)
        coord_end(pid);
done:
    if (addr)
        memcpy(addr, a, sizeof a);
    if (rec)
        explicit_bzero(rec, rec_len);
    free(rec);
    for (int i = 0; i < 2; i++) {
        if (in[i] >= 0)
            close(in[i]);
        if (out[i] >= 0)
            close(out[i]);
    }
}

/* Connects to the node's relay process of cfg's step, when one listens and
 * is this user's. Returns the descriptor with the process's pid in *pid,
 * or -1. */
static int dial_host(const struct coord_config *cfg, pid_t *pid)
{
    char name[COORD_NAME_MAX + 1];
    struct sockaddr_un ua;
    coord_host_name(cfg, name);
    socklen_t ua_len = coord_relay_addr(name, &ua);
    struct ucred cr;
    socklen_t cr_len = sizeof cr;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&ua, ua_len) == 0 &&
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cr_len) == 0 && cr.uid == geteuid()) {
        *pid = cr.pid;
        return fd;
    }
    if (fd >= 0)
        close(fd);
    return -1;
}

void coord_start_relay(const struct coord_config *cfg, const char *path, int timeout_s,
                       pid_t *pid, uint16_t *port, char addr[COORD_ADDR_LEN], char *why,
                       size_t len)
{
    pid_t host;
    uint8_t *rec = NULL;
    size_t rec_len = 0;
    int fd = dial_host(cfg, &host);
    *port = 0;
    if (fd >= 0 && coord_config_encode(cfg, &rec, &rec_len) == 0) {
        char line[COHORT_ERR_LEN + 16], a[COORD_ADDR_LEN] = "";
        int in = fd;
        int rc = talk(&in, fd, rec, rec_len, base_now_ms() + (long long)timeout_s * 1000, line,
                      sizeof line);
        explicit_bzero(rec, rec_len);
        free(rec);
        close(fd);
        *pid = 0; /* It serves this rank and is never this rank's to end. */
        if (rc == -2) {
            snprintf(why, len, "the node's relay process (pid %d) did not answer within %d s "
                     "(stopped, or its node overloaded?)", (int)host, timeout_s);
            return;
        }
        if (rc == 0 && strncmp(line, "busy ", 5) != 0) {
            take_line(rc, line, "node relay", path, timeout_s, port, a, why, len);
            if (addr)
                memcpy(addr, a, sizeof a);
            return;
        }
    } else if (fd >= 0) {
        close(fd);
    }
    /* No relay process listens, the one that does is too full for this relay
     * ("busy"), or it closed unasked as it ended: the rank starts a process
     * of its own. */
    coord_start(cfg, path, "node relay", timeout_s, pid, port, addr, why, len);
}

int coord_listen_any(uint16_t *port, struct cohort_err *err)
{
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT,
                              .sin6_port = htons(*port)};
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY),
                             .sin_port = htons(*port)};
    int off = 0, on = 1;
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    /* A given port is free again while the connections of a step before
     * linger in TIME_WAIT (a port another socket listens on stays taken). */
    if (fd >= 0 && *port)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (fd >= 0 && (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off) < 0 ||
                    bind(fd, (struct sockaddr *)&a6, sizeof a6) < 0)) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd >= 0 && *port)
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
        if (fd >= 0 && bind(fd, (struct sockaddr *)&a4, sizeof a4) < 0) {
            close(fd);
            fd = -1;
        }
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (fd < 0 || listen(fd, 4096) < 0 || getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        if (*port)
            return cohort_fail(err, "cannot listen on TCP port %u: %s (another process "
                               "holds it: choose other ports with plugstack port_range=LO-HI, or "
                               "srun --resv-ports)", *port, strerror(e));
        return cohort_fail(err, "cannot listen on a TCP port: %s", strerror(e));
    }
    *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                           : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}
