/* store_bench.c - one rank of the store benchmark (bench/store-bench.sh), no
 * torch: it speaks PyTorch's TCPStore wire protocol (the torch 1.x
 * dialect, little-endian) to MASTER_ADDR:MASTER_PORT and does the store
 * work of an unchanged init_process_group("nccl") and one store-based
 * barrier, over one connection:
 *   - ADD "init/" 1, what TCPStore's client does when given a world size;
 *   - rank 0 SETs a 128-byte key (NCCL's unique id), every rank WAITs for
 *     it, then GETs it;
 *   - a barrier: ADD "arrived" 1; the rank whose ADD returns the world size
 *     SETs "go"; every rank WAITs for "go".
 * Prints "T0 T1" in ns (CLOCK_MONOTONIC, shared by all processes of the
 * machine, as boot_bench.c): T0 just before connecting, T1 once through
 * the barrier, as one write (the ranks share their output file).
 * Environment: SLURM_PROCID (the rank), SLURM_STEP_NUM_TASKS (the world
 * size), MASTER_ADDR (127.0.0.1 if unset), MASTER_PORT; or, for a launcher
 * that gives every rank the same environment (tests/bootstrap/spawn),
 * STORE_RANK_PORTS: the ports of nodes 0, 1, ... (space-separated), of which
 * this rank takes entry SLURM_NODEID, as the plugin gives each node's tasks
 * their own agent's port as MASTER_PORT. SPAWN_START_NS: first sleep until
 * that instant (spawn.c). STORE_RANK_TIMEOUT: seconds (120 if unset) for
 * connecting and for each answer. Exit status 0, or 1 with one line on
 * stderr naming the rank and what failed. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum { T_SET = 0, T_GET = 2, T_ADD = 3, T_WAIT = 5 }; /* torch 1.x's type bytes */

#define BLOB_LEN 128
#define BLOB_BYTE 0x5a

static int rank = -1;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int fail(const char *what)
{
    fprintf(stderr, "store_bench %d: %s%s%s\n", rank, what, errno ? ": " : "",
            errno ? strerror(errno) : "");
    return -1;
}

/* A query being built: the type byte, then its fields. */
struct query {
    uint8_t buf[512];
    size_t len;
};

static void put64(struct query *q, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        q->buf[q->len++] = (uint8_t)(v >> (8 * i));
}

static void put_string(struct query *q, const void *s, size_t n)
{
    put64(q, n);
    memcpy(q->buf + q->len, s, n);
    q->len += n;
}

static void start(struct query *q, uint8_t type, const char *key)
{
    q->len = 0;
    q->buf[q->len++] = type;
    if (type == T_WAIT)
        put64(q, 1); /* one key */
    put_string(q, key, strlen(key));
}

static int send_all(int fd, const struct query *q)
{
    size_t off = 0;
    while (off < q->len) {
        ssize_t n = send(fd, q->buf + off, q->len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return fail("cannot send a query");
        off += (size_t)n;
    }
    return 0;
}

/* Reads exactly len bytes (each read bounded by the socket's timeout). */
static int read_all(int fd, void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = recv(fd, (uint8_t *)buf + got, len - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0)
            errno = 0;
        if (n <= 0)
            return fail(n == 0 ? "the store closed the connection" : "no answer");
        got += (size_t)n;
    }
    return 0;
}

static int read64(int fd, uint64_t *v)
{
    uint8_t b[8];
    if (read_all(fd, b, 8) < 0)
        return -1;
    *v = 0;
    for (int i = 7; i >= 0; i--)
        *v = *v << 8 | b[i];
    return 0;
}

static int add(int fd, const char *key, int64_t by, int64_t *result)
{
    struct query q;
    uint64_t v;
    start(&q, T_ADD, key);
    put64(&q, (uint64_t)by);
    if (send_all(fd, &q) < 0 || read64(fd, &v) < 0)
        return -1;
    *result = (int64_t)v;
    return 0;
}

static int set(int fd, const char *key, const void *value, size_t n)
{
    struct query q;
    start(&q, T_SET, key);
    put_string(&q, value, n);
    return send_all(fd, &q);
}

static int wait_key(int fd, const char *key)
{
    struct query q;
    uint8_t answer;
    start(&q, T_WAIT, key);
    if (send_all(fd, &q) < 0 || read_all(fd, &answer, 1) < 0)
        return -1;
    errno = 0;
    return answer == 0 ? 0 : fail("WAIT not answered with STOP_WAITING");
}

/* GET of the 128-byte key: its value checked. */
static int get_blob(int fd, const char *key)
{
    struct query q;
    uint64_t n;
    uint8_t value[BLOB_LEN];
    start(&q, T_GET, key);
    if (send_all(fd, &q) < 0 || read64(fd, &n) < 0)
        return -1;
    errno = 0;
    if (n != BLOB_LEN)
        return fail("GET answered a value of the wrong length");
    if (read_all(fd, value, BLOB_LEN) < 0)
        return -1;
    for (size_t i = 0; i < BLOB_LEN; i++)
        if (value[i] != BLOB_BYTE)
            return fail("GET answered the wrong value");
    return 0;
}

/* Connects, retrying every 10 ms while nothing listens, until the deadline. */
static int dial(const char *host, int port, int timeout_s)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
        errno = 0;
        return fail("MASTER_ADDR is not an IPv4 address");
    }
    long long deadline = now_ns() + timeout_s * 1000000000LL;
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
        if (fd < 0)
            return fail("no socket");
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
            struct timeval tv = {timeout_s, 0};
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* as TCPStore's */
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            return fd;
        }
        int e = errno;
        close(fd);
        errno = e;
        if ((e != ECONNREFUSED && e != EAGAIN && e != EINTR) || now_ns() > deadline)
            return fail("cannot connect to the store");
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* The port: MASTER_PORT, or entry SLURM_NODEID of STORE_RANK_PORTS. */
static int store_port(void)
{
    const char *ports = getenv("STORE_RANK_PORTS"), *node = getenv("SLURM_NODEID");
    if (!ports) {
        const char *p = getenv("MASTER_PORT");
        return p ? atoi(p) : 0;
    }
    char *end = (char *)ports;
    for (int k = node ? atoi(node) : 0; k >= 0; k--) {
        long v = strtol(end, &end, 10);
        if (k == 0)
            return (int)v;
        if (*end == '\0')
            return 0;
    }
    return 0;
}

/* The store work of init_process_group and one barrier. */
static int work(int fd, int size)
{
    uint8_t blob[BLOB_LEN];
    int64_t v;
    memset(blob, BLOB_BYTE, sizeof blob);
    if (add(fd, "init/", 1, &v) < 0)
        return -1;
    if (rank == 0 && set(fd, "unique_id", blob, sizeof blob) < 0)
        return -1;
    if (wait_key(fd, "unique_id") < 0 || get_blob(fd, "unique_id") < 0)
        return -1;
    if (add(fd, "arrived", 1, &v) < 0)
        return -1;
    if (v == size && set(fd, "go", "1", 1) < 0)
        return -1;
    return wait_key(fd, "go");
}

int main(void)
{
    const char *r = getenv("SLURM_PROCID"), *n = getenv("SLURM_STEP_NUM_TASKS");
    const char *host = getenv("MASTER_ADDR"), *start_at = getenv("SPAWN_START_NS");
    const char *t = getenv("STORE_RANK_TIMEOUT");
    int size = n ? atoi(n) : 0, port = store_port(), timeout_s = t ? atoi(t) : 120;
    rank = r ? atoi(r) : -1;
    errno = 0;
    if (rank < 0 || size < 1 || rank >= size || port <= 0 || port > 65535) {
        fail("needs SLURM_PROCID, SLURM_STEP_NUM_TASKS and MASTER_PORT (or STORE_RANK_PORTS)");
        return 1;
    }
    if (timeout_s <= 0)
        timeout_s = 120;
    if (start_at) {
        long long at = atoll(start_at);
        struct timespec ts = {.tv_sec = at / 1000000000LL, .tv_nsec = at % 1000000000LL};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
            ;
    }
    long long t0 = now_ns();
    int fd = dial(host ? host : "127.0.0.1", port, timeout_s);
    if (fd < 0 || work(fd, size) < 0)
        return 1;
    long long t1 = now_ns();
    char line[64];
    int len = snprintf(line, sizeof line, "%lld %lld\n", t0, t1);
    if (write(1, line, (size_t)len) != len) /* one write: the ranks share the file */
        return 1;
    close(fd);
    return 0;
}
