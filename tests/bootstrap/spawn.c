/* spawn.c - starts the N tasks of a simulated Slurm step on this machine,
 * as srun would: SLURM_* of a block layout over NODES nodes (n1, n2, ...;
 * each node's tasks share an abstract-socket namespace, which is what a
 * node is to the bootstrap), MASTER_ADDR=127.0.0.1, a free
 * COHORT_BOOTSTRAP_PORT and a random COHORT_SECRET. Waits for them all and
 * prints "spawn: N exited 0, M did not", naming each rank that did not and
 * how it ended.
 *   spawn N NODES [--stranger garbage|wrong-mac|silent] [--bad-secret RANK]
 *         [--attack CMD | --attack-first CMD] [--proxy-port]
 *         [--env-rank RANK VAR=VALUE] -- PROG [ARGS...]
 * With SPAWN_IP_NODES=1 the nodes are named 127.0.0.1, 127.0.0.2, ...
 * instead, and COHORT_BOOTSTRAP_BIND=name: names that resolve, where the
 * bootstrap leaders between the root and the others listen
 * (COHORT_BOOTSTRAP_FANOUT), each on its own address.
 * The port is drawn at random below the kernel's ephemeral range and checked
 * free: no outgoing connection of another program on this machine can be
 * given it, and a connect to it can never connect to itself.
 * --stranger: a process without the secret connects to the root's port
 * while rank 1 (a direct child of the root, so the root is still accepting)
 * is held back; it misbehaves, and once the root has dropped it (or, when
 * silent, once it was challenged and keeps quiet) rank 1 starts. It prints
 * one line of what happened to it: "stranger: dropped after ...", or why
 * not. --bad-secret: that rank gets another secret. Everything is killed
 * after 150 s (past cohort's default deadline of 120 s), or $SPAWN_TIMEOUT,
 * with "spawn: timeout after S s; still running: ...". For the benchmark,
 * $SPAWN_START_DELAY_MS gives every task SPAWN_START_NS: a common instant
 * (CLOCK_MONOTONIC) that long after the start, at which they all begin at
 * once. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STRANGER_WAIT_S 30 /* the stranger's own deadline for each step */

static pid_t *pids;
static int n_tasks;
static pid_t stranger_pid, attack_pid;
static int other_port, env_rank = -1;
static const char *env_set;
static unsigned limit_s;

static void put(const char *s)
{
    (void)!write(1, s, strlen(s));
}

/* On the alarm: names what still runs (async-signal-safe calls only). */
static void on_alarm(int sig)
{
    (void)sig;
    char num[16];
    put("spawn: timeout after ");
    snprintf(num, sizeof num, "%u", limit_s); /* glibc's is signal-safe for %u */
    put(num);
    put(" s; still running:");
    int shown = 0;
    for (int i = 0; i < n_tasks; i++)
        if (pids[i] > 0) {
            kill(pids[i], SIGKILL);
            if (shown++ < 16) {
                snprintf(num, sizeof num, " %d", i);
                put(num);
            }
        }
    if (shown > 16)
        put(" ...");
    if (stranger_pid > 0) {
        kill(stranger_pid, SIGKILL);
        put(" (and the stranger)");
    }
    if (attack_pid > 0)
        kill(-attack_pid, SIGKILL);
    put("\n");
    _exit(3);
}

/* A free TCP port below the ephemeral range, drawn at random: bindable on
 * the wildcard address as the root binds it. */
static int free_port(void)
{
    int lo = 32768;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f) {
        if (fscanf(f, "%d", &lo) != 1)
            lo = 32768;
        fclose(f);
    }
    if (lo <= 10000)
        lo = 65536; /* no room below: draw from 10000-65535, checked all the same */
    for (int tries = 0; tries < 1000; tries++) {
        unsigned r;
        if (getrandom(&r, sizeof r, 0) != sizeof r)
            exit(2);
        int port = 10000 + (int)(r % (unsigned)(lo - 10000));
        int fd = socket(AF_INET6, SOCK_STREAM, 0), zero = 0;
        struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = in6addr_any,
                                 .sin6_port = htons((uint16_t)port)};
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        int ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
        if (fd >= 0)
            close(fd);
        if (ok)
            return port;
    }
    fprintf(stderr, "spawn: no free port found below %d\n", lo);
    exit(2);
}

static void random_hex(char *out, size_t bytes)
{
    unsigned char raw[64];
    if (getrandom(raw, bytes, 0) != (ssize_t)bytes)
        exit(2);
    for (size_t i = 0; i < bytes; i++)
        sprintf(out + 2 * i, "%02x", raw[i]);
}

static pid_t start(int rank, int nodes, const char *tpn, int port, const char *secret,
                   char **argv)
{
    int per = n_tasks / nodes, extra = n_tasks % nodes, node = 0, first = 0;
    for (; node < nodes; node++) {
        int here = per + (node < extra);
        if (rank < first + here)
            break;
        first += here;
    }
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    char buf[64];
    const char *ip = getenv("SPAWN_IP_NODES");
    if (ip && strcmp(ip, "1") == 0) { /* names that resolve, one loopback address a node */
        snprintf(buf, sizeof buf, "127.0.0.[1-%d]", nodes);
        setenv("COHORT_BOOTSTRAP_BIND", "name", 1);
    } else {
        snprintf(buf, sizeof buf, "n[1-%d]", nodes);
    }
    setenv("SLURM_STEP_NODELIST", buf, 1);
    snprintf(buf, sizeof buf, "%d", n_tasks);
    setenv("SLURM_STEP_NUM_TASKS", buf, 1);
    setenv("SLURM_STEP_TASKS_PER_NODE", tpn, 1);
    snprintf(buf, sizeof buf, "%d", (int)getppid());
    setenv("SLURM_JOB_ID", buf, 1);
    setenv("SLURM_STEP_ID", "0", 1);
    snprintf(buf, sizeof buf, "%d", node);
    setenv("SLURM_NODEID", buf, 1);
    snprintf(buf, sizeof buf, "%d", rank);
    setenv("SLURM_PROCID", buf, 1);
    snprintf(buf, sizeof buf, "%d", rank - first);
    setenv("SLURM_LOCALID", buf, 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    snprintf(buf, sizeof buf, "%d", rank && other_port ? other_port : port);
    setenv("COHORT_BOOTSTRAP_PORT", buf, 1);
    setenv("COHORT_SECRET", secret, 1);
    if (rank == env_rank) { /* "VAR=VALUE VAR=VALUE" */
        char *list = strdup(env_set), *save = NULL;
        for (char *v = strtok_r(list, " ", &save); v; v = strtok_r(NULL, " ", &save)) {
            char *eq = strchr(v, '=');
            if (eq) {
                *eq = '\0';
                setenv(v, eq + 1, 1);
            }
        }
    }
    execvp(argv[0], argv);
    fprintf(stderr, "spawn: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Reads exactly len bytes (each read bounded by the socket's timeout). */
static int read_all(int fd, unsigned char *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    return 0;
}

/* Connects to the root's port, retrying while it does not listen yet. */
static int stranger_connect(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
            struct timeval tv = {STRANGER_WAIT_S, 0};
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            return fd;
        }
        if (fd >= 0)
            close(fd);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec >= STRANGER_WAIT_S)
            return -1;
        struct timespec ts = {0, 2 * 1000000L}; /* the root is not listening yet: retry */
        nanosleep(&ts, NULL);
    }
}

/* The stranger's life, in a process of its own: returns its line. Tells
 * spawn (one byte on ready_fd) when rank 1 may start. */
static const char *stranger(int port, const char *mode, int ready_fd)
{
    int fd = stranger_connect(port);
    if (fd < 0)
        return "stranger: the root did not listen within 30 s";
    unsigned char buf[256];
    /* the root's challenge: a header and a 32-byte nonce */
    if (read_all(fd, buf, 16 + 32) < 0)
        return errno == EAGAIN ? "stranger: not challenged within 30 s"
                               : "stranger: dropped before its challenge";
    if (strcmp(mode, "silent") == 0) {
        (void)!write(ready_fd, "s", 1); /* challenged, and it keeps quiet */
        while (read(fd, buf, sizeof buf) > 0) {
        }
        return "stranger: silent, closed when the root was done";
    }
    if (strcmp(mode, "garbage") == 0) {
        static const char get[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        (void)!write(fd, get, sizeof get - 1);
    } else {
        /* a hello of rank 1 (on the root's node) with a made-up proof */
        unsigned char hello[16 + 72] = {'C', 'H', 'R', 'T', 1, 2, 0, 0, 0, 0, 0, 72, 0, 0, 0, 1};
        hello[16 + 3] = 1;
        if (getrandom(hello + 24, 64, 0) != 64)
            exit(2);
        (void)!write(fd, hello, sizeof hello);
    }
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
    }
    if (n < 0 && errno == EAGAIN)
        return "stranger: still connected 30 s after misbehaving (not dropped)";
    (void)!write(ready_fd, "d", 1);
    return strcmp(mode, "garbage") == 0 ? "stranger: dropped after its garbage"
                                        : "stranger: dropped after its made-up proof";
}

static pid_t start_stranger(int port, const char *mode, int *ready_fd)
{
    int p[2];
    if (pipe(p) < 0)
        exit(2);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        printf("%s\n", stranger(port, mode, p[1]));
        fflush(stdout);
        _exit(0);
    }
    close(p[1]);
    *ready_fd = p[0];
    return pid;
}

/* Runs the attack and prints its first line (it is then in place). */
static void start_attack(const char *cmd, int port, const char *secret)
{
    int p[2];
    char buf[512];
    if (pipe(p) < 0)
        exit(2);
    attack_pid = fork();
    if (attack_pid == 0) {
        setpgid(0, 0);
        dup2(p[1], 1);
        close(p[0]);
        snprintf(buf, sizeof buf, "%d", port);
        setenv("SPAWN_PORT", buf, 1);
        snprintf(buf, sizeof buf, "%d", other_port);
        setenv("SPAWN_PROXY_PORT", buf, 1);
        setenv("COHORT_SECRET", secret, 1);
        snprintf(buf, sizeof buf, "%d", (int)getppid());
        setenv("SLURM_JOB_ID", buf, 1);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    FILE *f = fdopen(p[0], "r");
    if (f && fgets(buf, sizeof buf, f))
        printf("%s", buf);
    else
        printf("attack: no line from %s\n", cmd);
    /* the rest of its output is not read: it has said what it does */
}

/* "rank 3: exit 1", "rank 5: signal 9". */
static void how(char *buf, size_t len, int rank, int status)
{
    if (WIFEXITED(status))
        snprintf(buf, len, " rank %d: exit %d;", rank, WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, " rank %d: signal %d;", rank, WTERMSIG(status));
    else
        snprintf(buf, len, " rank %d: ?;", rank);
}

static int wait_all(void)
{
    int ok = 0, not_ok = 0;
    char why[512] = "";
    for (int r = 0; r < n_tasks; r++) {
        int status = 0;
        if (waitpid(pids[r], &status, 0) > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            ok++;
        } else {
            not_ok++;
            size_t used = strlen(why);
            if (not_ok <= 8)
                how(why + used, sizeof why - used, r, status);
        }
        pids[r] = 0;
    }
    if (stranger_pid > 0) {
        waitpid(stranger_pid, NULL, 0);
        stranger_pid = 0;
    }
    if (attack_pid > 0) {
        kill(-attack_pid, SIGKILL);
        waitpid(attack_pid, NULL, 0);
        attack_pid = 0;
    }
    printf("spawn: %d exited 0, %d did not%s%s\n", ok, not_ok, not_ok ? ":" : "", why);
    return not_ok ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: spawn N NODES [--stranger MODE] [--bad-secret RANK] -- PROG\n");
        return 2;
    }
    n_tasks = atoi(argv[1]);
    int nodes = atoi(argv[2]), bad = -1, i = 3;
    const char *mode = NULL, *attack = NULL, *attack_first = NULL;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--stranger") == 0 && i + 1 < argc)
            mode = argv[++i];
        else if (strcmp(argv[i], "--bad-secret") == 0 && i + 1 < argc)
            bad = atoi(argv[++i]);
        else if (strcmp(argv[i], "--attack") == 0 && i + 1 < argc)
            attack = argv[++i];
        else if (strcmp(argv[i], "--attack-first") == 0 && i + 1 < argc)
            attack_first = argv[++i];
        else if (strcmp(argv[i], "--proxy-port") == 0)
            other_port = -1;
        else if (strcmp(argv[i], "--env-rank") == 0 && i + 2 < argc) {
            env_rank = atoi(argv[++i]);
            env_set = argv[++i];
        }
    }
    if (n_tasks < 1 || nodes < 1 || nodes > n_tasks || i + 1 >= argc || (mode && n_tasks < 2))
        return 2;
    char **prog = argv + i + 1;
    char tpn[8192] = "";
    for (int n = 0; n < nodes; n++)
        snprintf(tpn + strlen(tpn), sizeof tpn - strlen(tpn), "%s%d", n ? "," : "",
                 n_tasks / nodes + (n < n_tasks % nodes));
    int port = free_port();
    while (other_port == -1 || other_port == port)
        other_port = free_port();
    char secret[65], other[65];
    random_hex(secret, 32);
    random_hex(other, 32);
    pids = calloc((size_t)n_tasks, sizeof *pids);
    signal(SIGALRM, on_alarm);
    const char *limit = getenv("SPAWN_TIMEOUT");
    limit_s = limit && atoi(limit) > 0 ? (unsigned)atoi(limit) : 150;
    alarm(limit_s);
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *delay = getenv("SPAWN_START_DELAY_MS");
    if (delay) {
        struct timespec now;
        char at[32];
        clock_gettime(CLOCK_MONOTONIC, &now);
        snprintf(at, sizeof at, "%lld",
                 (long long)now.tv_sec * 1000000000LL + now.tv_nsec + atoll(delay) * 1000000LL);
        setenv("SPAWN_START_NS", at, 1);
    }
    int ready_fd = -1;
    if (mode)
        stranger_pid = start_stranger(port, mode, &ready_fd);
    if (attack_first)
        start_attack(attack_first, port, secret);
    for (int r = 0; r < n_tasks; r++) {
        if (!mode || r != 1)
            pids[r] = start(r, nodes, tpn, port, r == bad ? other : secret, prog);
        if (r == 0 && attack)
            start_attack(attack, port, secret);
    }
    if (mode) {
        char c;
        (void)!read(ready_fd, &c, 1); /* the stranger was dealt with (or gave up) */
        close(ready_fd);
        pids[1] = start(1, nodes, tpn, port, 1 == bad ? other : secret, prog);
    }
    return wait_all();
}
