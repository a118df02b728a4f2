/* boot_sim_costs.c - what bench/boot_sim charges, measured on this machine
 * as it starts, each the best of 5 batches: the handshake's crypto as net.c
 * and net_dial.c call it (hs_*, session_start), a frame's MAC each way,
 * HMAC-SHA256 and memcpy per byte, a block taken up (tree_under +
 * blocks_add); send + recv pairs of 64 B and 64 KiB over AF_UNIX and TCP on
 * 127.0.0.1 (half a send, half a recv), connect and accept4 of both, a Unix
 * listener, epoll_wait, epoll_ctl, getsockopt; a rank's setup (a real
 * tree_open + tree_close of a non-leader rank of the step simulated). The
 * simulation itself is boot_sim.c's. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "blocks.h"
#include "boot_sim.h"
#include "tree_private.h"

#define PAIR_BIG 65536
#define DIALS 20 /* connections a batch: 100 wait in a backlog, under 128 */

double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

void die(const char *what)
{
    fprintf(stderr, "boot_sim: %s: %s\n", what, errno ? strerror(errno) : "failed");
    exit(1);
}

/* out = the best of 5 batches of iters runs of the statements, us a run. */
#define TIMED(out, iters, ...)                                                   \
    do {                                                                         \
        (out) = 1e30;                                                            \
        for (int b_ = 0; b_ < 5; b_++) {                                         \
            double t0_ = now_us(), d_;                                           \
            for (int i_ = 0; i_ < (iters); i_++) { __VA_ARGS__; }                \
            d_ = (now_us() - t0_) / (iters);                                     \
            (out) = d_ < (out) ? d_ : (out);                                     \
        }                                                                        \
    } while (0)

static void time_crypto(struct costs *c, const struct auth_key *key)
{
    struct hs_self par = {.key = key, .job = 1, .rank = 0}, kid = {.key = key, .job = 1, .rank = 1};
    uint8_t nonce[AUTH_NONCE_LEN], ch[HS_CHALLENGE_MAX], hello[HS_HELLO_MAX], w[HS_WELCOME_MAX];
    uint8_t base[32], hdr[WIRE_HEADER_LEN] = {0}, mac[SESSION_MAC_LEN];
    static uint8_t big[BIG], dst[BIG];
    struct hs_child st;
    struct hs_hello h;
    struct cohort_err e;
    struct session s;
    int *n = c->hs_len;
    double mac_big, copy_big;
    TIMED(c->challenge, 2000, n[0] = hs_challenge(&par, nonce, ch, &e));
    TIMED(c->hello, 2000, hs_challenge_check(&kid, ch, (uint32_t)n[0], &st, &e);
          n[1] = hs_hello(&kid, &st, hello, &e));
    TIMED(c->welcome, 2000, hs_hello_check(&par, nonce, hello, (uint32_t)n[1], &h);
          n[2] = hs_welcome(&par, nonce, &h, w, base, &e); session_start(&s, base, true));
    TIMED(c->welcomed, 2000, if (hs_welcome_check(&kid, &st, w, (uint32_t)n[2], base) < 0)
          die("hs_welcome_check"); session_start(&s, base, false));
    TIMED(c->seal, 20000, session_seal(&s, hdr, big, 16, mac));
    TIMED(c->check, 20000, session_check(&s, hdr, big, 16, mac));
    TIMED(mac_big, 20, session_seal(&s, hdr, big, BIG, mac));
    TIMED(copy_big, 20, memcpy(dst, big, BIG); __asm__ volatile("" : : "r"(dst) : "memory"));
    c->mac_b = (mac_big - c->seal) / BIG;
    c->copy_b = copy_big / BIG;
}

/* At the listener lfd (address sa): socket + connect (non-blocking), and
 * accept4; then a send + recv pair of 64 B and of 64 KiB on a connection,
 * half of it each way. */
static void time_dial(struct costs *c, int i, int lfd, const struct sockaddr *sa, socklen_t len)
{
    static uint8_t buf[PAIR_BIG];
    int fd[5 * DIALS], ac[5 * DIALS], k = 0, n = 0, mib = 1 << 20, one = 1, a, b;
    double small, big;
    TIMED(c->connect[i], DIALS, fd[k] = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
          if (fd[k] < 0 || (connect(fd[k++], sa, len) < 0 && errno != EINPROGRESS)) die("connect"));
    TIMED(c->accept[i], DIALS, if ((ac[n++] = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) < 0)
          die("accept"));
    for (k = 0; k < 5 * DIALS; k++) {
        close(fd[k]);
        close(ac[k]);
    }
    if ((a = socket(sa->sa_family, SOCK_STREAM, 0)) < 0 || connect(a, sa, len) < 0 ||
        (b = accept4(lfd, NULL, NULL, 0)) < 0)
        die("a connection");
    if (i)
        setsockopt(a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(a, SOL_SOCKET, SO_SNDBUF, &mib, sizeof mib);
    setsockopt(b, SOL_SOCKET, SO_RCVBUF, &mib, sizeof mib);
    TIMED(small, 5000, if (send(a, buf, 64, 0) != 64 || recv(b, buf, 64, MSG_WAITALL) != 64)
          die("send/recv"));
    TIMED(big, 500, if (send(a, buf, PAIR_BIG, 0) != PAIR_BIG ||
                        recv(b, buf, PAIR_BIG, MSG_WAITALL) != PAIR_BIG) die("send/recv"));
    c->io[i] = small / 2;
    c->io_b[i] = (big - small) / 2 / (PAIR_BIG - 64);
    close(a);
    close(b);
}

static void time_calls(struct costs *c)
{
    int ep = epoll_create1(0), lu, lt = socket(AF_INET, SOCK_STREAM, 0), w, v, k;
    struct sockaddr_un ua = {.sun_family = AF_UNIX};
    struct sockaddr_in ta = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t tl = sizeof ta, vl = sizeof v, ul = (socklen_t)(offsetof(struct sockaddr_un, sun_path)
        + 1 + (size_t)snprintf(ua.sun_path + 1, sizeof ua.sun_path - 1, "boot-sim%d", getpid()));
    struct epoll_event ev = {.events = EPOLLIN}, evs[ROUND_MAX];
    TIMED(c->listen, 200, lu = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
          if (bind(lu, (struct sockaddr *)&ua, ul) < 0 || listen(lu, SOMAXCONN) < 0)
          die("listen"); close(lu));
    lu = socket(AF_UNIX, SOCK_STREAM, 0);
    if (ep < 0 || lu < 0 || lt < 0 || bind(lu, (struct sockaddr *)&ua, ul) < 0 ||
        listen(lu, SOMAXCONN) < 0 || bind(lt, (struct sockaddr *)&ta, tl) < 0 ||
        listen(lt, SOMAXCONN) < 0 || getsockname(lt, (struct sockaddr *)&ta, &tl) < 0)
        die("listeners");
    time_dial(c, 0, lu, (struct sockaddr *)&ua, ul);
    time_dial(c, 1, lt, (struct sockaddr *)&ta, tl);
    /* a readable listener: a connection waits in lu's backlog */
    if ((w = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 || connect(w, (struct sockaddr *)&ua, ul) < 0 ||
        epoll_ctl(ep, EPOLL_CTL_ADD, lu, &ev) < 0)
        die("epoll");
    TIMED(c->epoll, 20000, epoll_wait(ep, evs, ROUND_MAX, 0));
    TIMED(c->ctl, 20000, epoll_ctl(ep, EPOLL_CTL_ADD, lt, &ev);
          epoll_ctl(ep, EPOLL_CTL_DEL, lt, &ev));
    c->ctl /= 2;
    TIMED(c->sysc, 20000, getsockopt(lt, SOL_SOCKET, SO_ERROR, &v, &vl));
    for (k = 0; k < 4; k++)
        close((int[]){w, lu, lt, ep}[k]);
}

/* A real tree_open + tree_close of rank 1 (not a leader) of this step;
 * a block taken up as take_up takes it (tree_under, blocks_add). */
static void time_tree(struct costs *c, uint32_t ranks, uint32_t per_node, uint32_t fanout,
                      const struct auth_key *key)
{
    char expr[40];
    struct hostlist *hl;
    struct cohort_err err;
    struct blocks b = {0};
    uint32_t nodes = (ranks + per_node - 1) / per_node, k = 0;
    uint32_t *rank_node = malloc(sizeof *rank_node * ranks);
    struct tree *t, shape = {.l.num_nodes = nodes, .fanout = fanout};
    snprintf(expr, sizeof expr, "n[1-%u]", nodes);
    if (!rank_node || hostlist_parse(expr, &hl, &err) < 0)
        die("the layout");
    for (uint32_t r = 0; r < ranks; r++)
        rank_node[r] = r / per_node;
    struct tree_layout l = {.rank = 1, .size = ranks, .num_nodes = nodes, .rank_node = rank_node,
                            .nodes = hl, .master_addr = "127.0.0.1", .port = 1, .job_id = 1,
                            .socket_dir = "/tmp", .fanout = fanout};
    TIMED(c->open, 1, if (tree_open(&l, key, 1000, &t, &err) < 0) die(err.msg); tree_close(t));
    TIMED(c->entry, 20000, (void)tree_under(&shape, k++ % nodes, nodes > 1);
          if (blocks_add(&b, k, NULL, 0) < 0) die("blocks_add"));
    hostlist_free(hl);
    free(rank_node);
    free(b.data);
}

static void print_costs(const struct costs *c)
{
    fprintf(stderr, "measured (us): tree_open of a task %.1f, a Unix listener %.1f; handshake: "
            "challenge %.2f, challenge check + hello %.2f, hello check + welcome + session "
            "%.2f, welcome check + session %.2f; frame MAC seal/check %.2f/%.2f, a block taken "
            "up %.3f; per KiB: HMAC %.2f, memcpy %.3f; Unix send or recv %.2f +%.3f/KiB, "
            "connect/accept %.2f/%.2f; TCP send or recv %.2f +%.3f/KiB, connect/accept "
            "%.2f/%.2f; epoll_wait %.2f, epoll_ctl %.2f, getsockopt %.2f\n",
            c->open, c->listen, c->challenge, c->hello, c->welcome, c->welcomed, c->seal,
            c->check, c->entry, c->mac_b * 1024, c->copy_b * 1024, c->io[0], c->io_b[0] * 1024,
            c->connect[0], c->accept[0], c->io[1], c->io_b[1] * 1024, c->connect[1],
            c->accept[1], c->epoll, c->ctl, c->sysc);
}

/* Measures every cost of c for a step of RANKS ranks, PER_NODE a node, in
 * a tree of FANOUT, and prints them to stderr. */
void costs_measure(struct costs *c, uint32_t ranks, uint32_t per_node, uint32_t fanout)
{
    struct auth_key key;
    struct cohort_err err;
    if (auth_key_from_hex("the key", "000102030405060708090a0b0c0d0e0f"
                          "101112131415161718191a1b1c1d1e1f", &key, &err) < 0)
        die(err.msg);
    time_crypto(c, &key);
    time_calls(c);
    time_tree(c, ranks, per_node, fanout, &key);
    print_costs(c);
}
