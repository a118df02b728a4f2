/* spawn.c - starts the N tasks of a simulated Slurm step on this machine,
 * as srun would: SLURM_* of a block layout over NODES nodes (n1, n2, ...;
 * each node's tasks share an abstract-socket namespace, which is what a
 * node is to the bootstrap), MASTER_ADDR=127.0.0.1, a free
 * COHORT_BOOTSTRAP_PORT and a random COHORT_SECRET. Waits for them all and
 * prints "spawn: N exited 0, M did not".
 *   spawn N NODES [--stranger garbage|wrong-mac|silent] [--bad-secret RANK]
 *         -- PROG [ARGS...]
 * --stranger: once ranks 0..N-2 run, a process without the secret connects
 * to the root's port and misbehaves (it prints "stranger: dropped" when the
 * root closes it); then the last rank starts. --bad-secret: that rank gets
 * another secret. Everything is killed after 120 s, or $SPAWN_TIMEOUT
 * ("spawn: timeout"). For the benchmark, $SPAWN_START_DELAY_MS gives every
 * task SPAWN_START_NS: a common instant (CLOCK_MONOTONIC) that long after
 * the start, at which they all begin at once. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pid_t *pids;
static int n_tasks;

static void on_alarm(int sig)
{
    (void)sig;
    for (int i = 0; i < n_tasks; i++)
        if (pids[i] > 0)
            kill(pids[i], SIGKILL);
    static const char msg[] = "spawn: timeout\n";
    (void)!write(1, msg, sizeof msg - 1);
    _exit(3);
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) < 0)
        return -1;
    close(fd);
    return ntohs(a.sin_port);
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
    snprintf(buf, sizeof buf, "n[1-%d]", nodes);
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
    snprintf(buf, sizeof buf, "%d", port);
    setenv("COHORT_BOOTSTRAP_PORT", buf, 1);
    setenv("COHORT_SECRET", secret, 1);
    execvp(argv[0], argv);
    fprintf(stderr, "spawn: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* A process without the secret at the root's door. Returns its fd when it
 * keeps the connection (silent), else -1. */
static int stranger(int port, const char *mode)
{
    int fd = -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    for (int tries = 0; tries < 10000; tries++) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
            break;
        close(fd);
        fd = -1;
        struct timespec ts = {0, 10 * 1000000L}; /* the root is not listening yet */
        nanosleep(&ts, NULL);
    }
    if (fd < 0) {
        printf("stranger: the root never listened\n");
        return -1;
    }
    if (strcmp(mode, "silent") == 0)
        return fd;
    unsigned char buf[256];
    if (strcmp(mode, "garbage") == 0) {
        static const char get[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        (void)!write(fd, get, sizeof get - 1);
    } else {
        /* read the challenge, answer with a hello of rank 1 and a made-up MAC */
        size_t got = 0;
        while (got < 16 + 32) {
            ssize_t n = read(fd, buf + got, 16 + 32 - got);
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        unsigned char hello[16 + 72] = {'C', 'H', 'R', 'T', 1, 2, 0, 0, 0, 0, 0, 72, 0, 0, 0, 1};
        hello[16 + 3] = 1; /* rank 1 */
        if (getrandom(hello + 24, 64, 0) != 64)
            exit(2);
        (void)!write(fd, hello, sizeof hello);
    }
    while (read(fd, buf, sizeof buf) > 0) {
    }
    printf("stranger: dropped\n");
    fflush(stdout);
    close(fd);
    return -1;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: spawn N NODES [--stranger MODE] [--bad-secret RANK] -- PROG\n");
        return 2;
    }
    n_tasks = atoi(argv[1]);
    int nodes = atoi(argv[2]), bad = -1, i = 3;
    const char *mode = NULL;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--stranger") == 0 && i + 1 < argc)
            mode = argv[++i];
        else if (strcmp(argv[i], "--bad-secret") == 0 && i + 1 < argc)
            bad = atoi(argv[++i]);
    }
    if (n_tasks < 1 || nodes < 1 || nodes > n_tasks || i + 1 >= argc)
        return 2;
    char **prog = argv + i + 1;
    char tpn[8192] = "";
    for (int n = 0; n < nodes; n++)
        snprintf(tpn + strlen(tpn), sizeof tpn - strlen(tpn), "%s%d", n ? "," : "",
                 n_tasks / nodes + (n < n_tasks % nodes));
    int port = free_port();
    char secret[65], other[65];
    random_hex(secret, 32);
    random_hex(other, 32);
    pids = calloc((size_t)n_tasks, sizeof *pids);
    signal(SIGALRM, on_alarm);
    const char *limit = getenv("SPAWN_TIMEOUT");
    alarm(limit && atoi(limit) > 0 ? (unsigned)atoi(limit) : 120);
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
    int held = -1;
    for (int r = 0; r < n_tasks; r++) {
        if (mode && r == n_tasks - 1)
            held = stranger(port, mode);
        pids[r] = start(r, nodes, tpn, port, r == bad ? other : secret, prog);
    }
    int ok = 0, not_ok = 0;
    for (int r = 0; r < n_tasks; r++) {
        int status;
        if (waitpid(pids[r], &status, 0) > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
            ok++;
        else
            not_ok++;
        pids[r] = 0;
    }
    if (held >= 0)
        close(held);
    printf("spawn: %d exited 0, %d did not\n", ok, not_ok);
    return not_ok ? 1 : 0;
}
