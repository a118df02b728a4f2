/* attack.c - what a hostile neighbour does to a step's bootstrap, for
 * tests/bootstrap.sh (run by spawn's --attack options, which give it the
 * root's port as SPAWN_PORT and the step's COHORT_SECRET and SLURM_JOB_ID).
 * Each mode prints one line once it is in place, then holds until killed.
 *   attack flood N         N connections to the root's TCP port, silent
 *   attack flood-unix N    N connections to node 0's Unix socket, as uid
 *                          65534 (the name is worked out from the secret,
 *                          which a real attacker would not have: this tests
 *                          SO_PEERCRED alone)
 *   attack squat           listens on the root's port first, never accepts
 *   attack proxy MODE      forwards connections on SPAWN_PROXY_PORT to the root's port
 *                          and, on the first one, does MODE to the first
 *                          MAC'd frame a leader sends: flip (a payload bit),
 *                          replay (sends it twice), inject (a made-up frame
 *                          before it) */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "session.h"
#include "wire.h"

static int port_of(const char *name)
{
    const char *v = getenv(name);
    return v ? atoi(v) : 0;
}

static void pause_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Connects to 127.0.0.1:port, retrying for 30 s while nothing listens. */
static int tcp_connect(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    for (int tries = 0; tries < 15000; tries++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
            return fd;
        if (fd >= 0)
            close(fd);
        pause_ms(2);
    }
    return -1;
}

static void hold(void) __attribute__((noreturn));
static void hold(void)
{
    for (;;)
        pause();
}

static int flood(int n)
{
    int done = 0;
    for (int i = 0; i < n; i++)
        done += tcp_connect(port_of("SPAWN_PORT")) >= 0;
    printf("flood: %d of %d connections held\n", done, n);
    fflush(stdout);
    hold();
}

/* Node 0's abstract socket name, as libcohort derives it from the secret. */
static socklen_t unix_name(struct sockaddr_un *sa)
{
    struct auth_key key;
    struct cohort_err err;
    uint8_t msg[12], mac[AUTH_MAC_LEN];
    if (auth_key_from_hex("COHORT_SECRET", getenv("COHORT_SECRET"), &key, &err) < 0)
        exit(2);
    wire_put32(msg, (uint32_t)port_of("SLURM_JOB_ID"));
    wire_put32(msg + 4, 0);
    wire_put32(msg + 8, 0);
    auth_mac(&key, "cohort-socket", msg, sizeof msg, mac);
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    char *p = sa->sun_path + 1 + sprintf(sa->sun_path + 1, "cohort-");
    for (int i = 0; i < 16; i++)
        p += sprintf(p, "%02x", mac[i]);
    return (socklen_t)(p - (char *)sa);
}

static int flood_unix(int n)
{
    struct sockaddr_un sa;
    socklen_t len = unix_name(&sa);
    if (setgid(65534) < 0 || setuid(65534) < 0) {
        printf("flood-unix: cannot become uid 65534: %s\n", strerror(errno));
        fflush(stdout);
        hold();
    }
    int done = 0, refused = 0;
    for (int i = 0; i < n; i++) {
        int fd = -1;
        for (int tries = 0; tries < 15000 && fd < 0; tries++) {
            fd = socket(AF_UNIX, SOCK_STREAM, 0);
            if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, len) < 0) {
                close(fd);
                fd = -1;
                pause_ms(2);
            }
        }
        done += fd >= 0;
        char c;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        /* the leader closes another uid's connection at once */
        if (fd >= 0 && poll(&p, 1, 5000) == 1 && read(fd, &c, 1) == 0)
            refused++;
    }
    printf("flood-unix: %d connections as uid 65534, %d closed at once by the leader\n", done,
           refused);
    fflush(stdout);
    hold();
}

static int squat(void)
{
    int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port_of("SPAWN_PORT")),
                            .sin_addr.s_addr = htonl(INADDR_ANY)};
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 64) < 0)
        printf("squat: cannot take port %d: %s\n", port_of("SPAWN_PORT"), strerror(errno));
    else
        printf("squat: holding port %d\n", port_of("SPAWN_PORT"));
    fflush(stdout);
    hold();
}

/* Writes all of buf. */
static void put_all(int fd, const uint8_t *buf, size_t len)
{
    while (len) {
        ssize_t n = write(fd, buf, len);
        if (n <= 0)
            exit(0);
        buf += n;
        len -= (size_t)n;
    }
}

/* Up the first connection, frame by frame until the first MAC'd one is
 * dealt with: returns once that is done (the rest passes as bytes). */
static void tamper_up(int from, int to, const char *mode, uint8_t *buf, size_t *have)
{
    int frames = 0;
    for (;;) {
        while (*have >= WIRE_HEADER_LEN) {
            size_t trailer = frames ? SESSION_MAC_LEN : 0; /* the hello has none */
            size_t len = WIRE_HEADER_LEN + wire_get32(buf + 8) + trailer;
            if (*have < len)
                break;
            if (frames++ == 0) {
                put_all(to, buf, len);
            } else {
                if (strcmp(mode, "inject") == 0) {
                    uint8_t fake[WIRE_HEADER_LEN + 8 + SESSION_MAC_LEN] = {0};
                    memcpy(fake, buf, WIRE_HEADER_LEN);
                    wire_put32(fake + 8, 8);
                    put_all(to, fake, sizeof fake);
                }
                if (strcmp(mode, "flip") == 0)
                    buf[WIRE_HEADER_LEN] ^= 1;
                put_all(to, buf, len);
                if (strcmp(mode, "replay") == 0)
                    put_all(to, buf, len);
                memmove(buf, buf + len, *have - len);
                *have -= len;
                return;
            }
            memmove(buf, buf + len, *have - len);
            *have -= len;
        }
        ssize_t n = read(from, buf + *have, 65536);
        if (n <= 0)
            exit(0);
        *have += (size_t)n;
    }
}

/* One connection through the proxy, in a process of its own. */
static void pump(int client, const char *mode)
{
    int server = tcp_connect(port_of("SPAWN_PORT"));
    static uint8_t buf[1 << 20];
    size_t have = 0;
    if (server < 0)
        exit(0);
    if (fork() == 0) { /* down: as it comes */
        ssize_t n;
        while ((n = read(server, buf, sizeof buf)) > 0)
            put_all(client, buf, (size_t)n);
        exit(0);
    }
    if (mode)
        tamper_up(client, server, mode, buf, &have);
    put_all(server, buf, have);
    ssize_t n;
    while ((n = read(client, buf, sizeof buf)) > 0)
        put_all(server, buf, (size_t)n);
    exit(0);
}

static int proxy(int port, const char *mode)
{
    int one = 1, lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, 64) < 0) {
        printf("proxy: cannot listen on port %d: %s\n", port, strerror(errno));
        fflush(stdout);
        hold();
    }
    printf("proxy: port %d to %d, %s\n", port, port_of("SPAWN_PORT"), mode);
    fflush(stdout);
    for (int k = 0;; k++) {
        int c = accept(lfd, NULL, NULL);
        if (c >= 0 && fork() == 0)
            pump(c, k == 0 ? mode : NULL);
        if (c >= 0)
            close(c);
    }
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 3 && strcmp(argv[1], "flood") == 0)
        return flood(atoi(argv[2]));
    if (argc == 3 && strcmp(argv[1], "flood-unix") == 0)
        return flood_unix(atoi(argv[2]));
    if (argc == 2 && strcmp(argv[1], "squat") == 0)
        return squat();
    if (argc == 3 && strcmp(argv[1], "proxy") == 0)
        return proxy(port_of("SPAWN_PROXY_PORT"), argv[2]);
    fprintf(stderr, "usage: attack flood N | flood-unix N | squat | proxy flip|replay|inject\n");
    return 2;
}
