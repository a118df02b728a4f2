/* tree.c - joining the two-level authenticated bootstrap tree (tree.h):
 * the layout, listening and connecting, the handshake both ways. The
 * exchange is in tree_exchange.c. */
#include "tree.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"
#include "tree_private.h"

/* hello: rank, node, the child's nonce, then its proof */
#define HELLO_HEAD (4 + 4 + AUTH_NONCE_LEN)

long long tree_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void host_of_node(const struct tree *t, uint32_t node, char *buf, size_t len)
{
    if (!t->l.nodes || hostlist_nth(t->l.nodes, node, buf, len) < 0)
        snprintf(buf, len, "node %u", node);
}

static void appendf(char *buf, size_t len, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void appendf(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
    if (*used >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, len - *used, fmt, ap);
    va_end(ap);
    if (n > 0)
        *used += (size_t)n;
}

/* "rank 5 (n2)", "ranks 5, 9 (n2), 12 (n3) and 3 others": ranks sorted. */
void tree_describe_ranks(const struct tree *t, const uint32_t *ranks, size_t n, char *buf,
                           size_t len)
{
    size_t shown = n > 8 ? 8 : n, used = 0;
    char host[HOSTLIST_MAX_NAME + 1];
    buf[0] = '\0';
    appendf(buf, len, &used, "rank%s ", n == 1 ? "" : "s");
    for (size_t i = 0; i < shown; i++) {
        uint32_t node = t->l.rank_node[ranks[i]];
        appendf(buf, len, &used, "%s%u", i ? ", " : "", ranks[i]);
        if (i + 1 == shown || t->l.rank_node[ranks[i + 1]] != node) {
            host_of_node(t, node, host, sizeof host);
            appendf(buf, len, &used, " (%s)", host);
        }
    }
    if (n > shown)
        appendf(buf, len, &used, " and %zu other%s", n - shown, n - shown == 1 ? "" : "s");
}

/* The ranks of node, in order, into a malloc'd array. */
uint32_t *tree_ranks_of_node(const struct tree *t, uint32_t node, size_t *n)
{
    uint32_t *r = malloc(sizeof *r * (t->l.size ? t->l.size : 1));
    *n = 0;
    for (uint32_t i = 0; r && i < t->l.size; i++)
        if (t->l.rank_node[i] == node)
            r[(*n)++] = i;
    return r;
}

/* --- sockets ---------------------------------------------------------- */

static socklen_t unix_address(const struct tree *t, uint32_t node, struct sockaddr_un *sa)
{
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    /* abstract: nothing on disk, gone with the process */
    int n = snprintf(sa->sun_path + 1, sizeof sa->sun_path - 1, "cohort-%u.%u-%u",
                     t->l.job_id, t->l.step_id, node);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static int listen_unix(struct tree *t, struct cohort_err *err)
{
    struct sockaddr_un sa;
    socklen_t len = unix_address(t, t->node, &sa);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, len) < 0 || listen(fd, SOMAXCONN) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return cohort_fail(err, "cannot open the node's bootstrap socket @%s: %s",
                           sa.sun_path + 1, strerror(e));
    }
    t->listen_unix = fd;
    return 0;
}

static int listen_tcp(struct tree *t, struct cohort_err *err)
{
    int one = 1, zero = 0;
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_storage ss;
    socklen_t len;
    memset(&ss, 0, sizeof ss);
    if (fd >= 0) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_any;
        a->sin6_port = htons(t->l.port);
        len = sizeof *a;
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    } else {
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_ANY);
        a->sin_port = htons(t->l.port);
        len = sizeof *a;
    }
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, SOMAXCONN) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return cohort_fail(err, "the bootstrap root cannot listen on port %u: %s%s",
                           t->l.port, strerror(e),
                           e == EADDRINUSE ? " (COHORT_BOOTSTRAP_PORT is taken)" : "");
    }
    t->listen_tcp = fd;
    return 0;
}

/* Connects fd (non-blocking) to sa, waiting at most until deadline; 0 when
 * connected. */
static int connect_by(int fd, const struct sockaddr *sa, socklen_t len, long long deadline)
{
    if (connect(fd, sa, len) == 0)
        return 0;
    if (errno != EINPROGRESS)
        return -1;
    long long left = deadline - tree_now_ms();
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (left <= 0 || poll(&p, 1, (int)left) != 1 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr != 0)
        return -1;
    return 0;
}

/* One connection attempt to the parent; 0 connected, -1 refused or
 * unreachable for now. The socket is non-blocking. */
static int connect_parent(struct tree *t, long long deadline, int *fd_out)
{
    if (!t->is_leader) {
        struct sockaddr_un sa;
        socklen_t len = unix_address(t, t->node, &sa);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0 || connect_by(fd, (struct sockaddr *)&sa, len, deadline) < 0) {
            if (fd >= 0)
                close(fd);
            return -1;
        }
        *fd_out = fd;
        return 0;
    }
    char port[8];
    snprintf(port, sizeof port, "%u", t->l.port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(t->l.master_addr, port, &hints, &res) != 0)
        return -1;
    int rc = -1;
    for (struct addrinfo *ai = res; ai && rc < 0; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd >= 0 && connect_by(fd, ai->ai_addr, ai->ai_addrlen, deadline) == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            *fd_out = fd;
            rc = 0;
        } else if (fd >= 0)
            close(fd);
    }
    freeaddrinfo(res);
    return rc;
}

/* --- the handshake ---------------------------------------------------- */

static void hello_message(const struct tree *t, const uint8_t parent_nonce[AUTH_NONCE_LEN],
                          const uint8_t *hello, uint8_t *msg)
{
    /* job, step, the parent's nonce, then rank, node and the child's nonce */
    wire_put32(msg, t->l.job_id);
    wire_put32(msg + 4, t->l.step_id);
    memcpy(msg + 8, parent_nonce, AUTH_NONCE_LEN);
    memcpy(msg + 8 + AUTH_NONCE_LEN, hello, 8 + AUTH_NONCE_LEN);
}

/* Waits (until deadline) for one whole frame from c, reading as needed. */
static int wait_frame(struct conn *c, long long deadline, uint32_t max, struct wire_frame *f,
                      struct cohort_err *err)
{
    for (;;) {
        int got = conn_next(c, max, f, err);
        if (got)
            return got < 0 ? -1 : 0;
        long long left = deadline - tree_now_ms();
        if (left <= 0)
            return cohort_fail(err, "timeout");
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
            return cohort_fail(err, "poll failed: %s", strerror(errno));
        if ((p.revents & (POLLIN | POLLHUP | POLLERR)) && conn_fill(c, max) < 0 &&
            conn_next(c, max, f, err) == 0)
            return cohort_fail(err, "connection closed");
    }
}

int tree_write_all(struct conn *c, long long deadline, struct cohort_err *err)
{
    while (c->out_len) {
        if (conn_flush(c) < 0)
            return cohort_fail(err, "connection closed");
        if (!c->out_len)
            break;
        long long left = deadline - tree_now_ms();
        struct pollfd p = {.fd = c->fd, .events = POLLOUT};
        if (left <= 0)
            return cohort_fail(err, "timeout");
        poll(&p, 1, (int)left);
    }
    return 0;
}

/* The parent's name for messages. */
void tree_parent_name(const struct tree *t, char *buf, size_t len)
{
    char host[HOSTLIST_MAX_NAME + 1];
    uint32_t parent = t->is_leader ? 0 : t->node_first[t->node];
    host_of_node(t, t->l.rank_node[parent], host, sizeof host);
    if (parent == 0 && t->is_leader)
        snprintf(buf, len, "the bootstrap root (rank 0 on %.60s, %.60s:%u)", host,
                 t->l.master_addr, t->l.port);
    else if (parent == 0)
        snprintf(buf, len, "the bootstrap root (rank 0 on %.60s)", host);
    else
        snprintf(buf, len, "this node's bootstrap leader (rank %u on %.60s)", parent, host);
}

/* Child side: connect to the parent (retrying until it listens) and prove
 * ourselves both ways. */
static int join_parent(struct tree *t, long long deadline, struct cohort_err *err)
{
    char name[200];
    tree_parent_name(t, name, sizeof name);
    int fd = -1, wait = 1;
    while (connect_parent(t, deadline, &fd) < 0) {
        long long left = deadline - tree_now_ms();
        if (left <= 0)
            return cohort_fail(err, "%s did not answer within %d s", name,
                               t->timeout_ms / 1000);
        /* the parent may not listen yet (all tasks start at once): retry after
         * 1, 2, then every 4 ms; a refused connect costs microseconds */
        struct timespec ts = {0, (long)(wait < left ? wait : left) * 1000000L};
        nanosleep(&ts, NULL);
        wait = wait < 4 ? wait * 2 : 4;
    }
    conn_init(&t->parent, fd);
    struct wire_frame f;
    struct cohort_err why;
    uint8_t hello[HELLO_HEAD + AUTH_PROOF_MAX], msg[8 + AUTH_NONCE_LEN + 8 + AUTH_NONCE_LEN];
    if (wait_frame(&t->parent, deadline, UNAUTH_MAX_PAYLOAD, &f, &why) < 0 ||
        f.type != WIRE_CHALLENGE || f.len != AUTH_NONCE_LEN)
        return cohort_fail(err, "%s did not send a bootstrap challenge (%s)", name,
                           f.type == WIRE_ABORT ? "it refused" : why.msg);
    uint8_t parent_nonce[AUTH_NONCE_LEN];
    memcpy(parent_nonce, f.payload, AUTH_NONCE_LEN);
    conn_consume(&t->parent, &f);
    wire_put32(hello, t->l.rank);
    wire_put32(hello + 4, t->node);
    if (auth_nonce(hello + 8, err) < 0)
        return -1;
    hello_message(t, parent_nonce, hello, msg);
    int proof = auth_prove(&t->key, "cohort-hello", msg, sizeof msg, hello + HELLO_HEAD, err);
    if (proof < 0)
        return -1;
    if (conn_queue(&t->parent, WIRE_HELLO, 0, t->l.rank, hello, HELLO_HEAD + (uint32_t)proof) < 0 ||
        tree_write_all(&t->parent, deadline, &why) < 0)
        return cohort_fail(err, "cannot send the bootstrap hello to %s (%s)", name, why.msg);
    if (wait_frame(&t->parent, deadline, UNAUTH_MAX_PAYLOAD, &f, &why) < 0)
        return cohort_fail(err, "%s did not welcome rank %u (%s): does it hold this step's "
                                "COHORT_SECRET?",
                           name, t->l.rank, why.msg);
    if (f.type != WIRE_WELCOME ||
        !auth_verify(&t->key, "cohort-welcome", msg, sizeof msg, f.payload, f.len))
        return cohort_fail(err, "%s did not prove it holds this step's COHORT_SECRET", name);
    conn_consume(&t->parent, &f);
    t->parent.ready = true;
    return 0;
}

/* Parent side: whether a hello names a child we expect and is signed. */
bool tree_hello_ok(struct tree *t, struct conn *c, const struct wire_frame *f)
{
    if (f->type != WIRE_HELLO || f->len <= HELLO_HEAD)
        return false;
    uint32_t rank = wire_get32(f->payload), node = wire_get32(f->payload + 4);
    if (rank >= t->l.size || rank == t->l.rank || node >= t->l.num_nodes ||
        t->l.rank_node[rank] != node)
        return false;
    bool mine = node == t->node;                                   /* a task of this node */
    bool leader = t->is_root && rank == t->node_first[node] && !mine; /* a node's leader */
    if (!mine && !leader)
        return false;
    for (size_t i = 0; i < t->n_kids; i++)
        if (t->kids[i].ready && t->kids[i].rank == rank)
            return false; /* one connection per rank */
    uint8_t msg[8 + AUTH_NONCE_LEN + 8 + AUTH_NONCE_LEN];
    hello_message(t, c->nonce, f->payload, msg);
    if (!auth_verify(&t->key, "cohort-hello", msg, sizeof msg, f->payload + HELLO_HEAD,
                     f->len - HELLO_HEAD))
        return false;
    uint8_t proof[AUTH_PROOF_MAX];
    int n = auth_prove(&t->key, "cohort-welcome", msg, sizeof msg, proof, NULL);
    if (n < 0 || conn_queue(c, WIRE_WELCOME, 0, t->l.rank, proof, (uint32_t)n) < 0)
        return false;
    c->rank = rank;
    c->node = node;
    c->ready = true;
    t->ready_kids++;
    return true;
}

void tree_drop_kid(struct tree *t, size_t i)
{
    if (t->kids[i].ready)
        t->ready_kids--;
    conn_close(&t->kids[i]);
    t->kids[i] = t->kids[--t->n_kids];
}

void tree_accept_kids(struct tree *t, int lfd)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        size_t strangers = t->n_kids - t->ready_kids;
        if (strangers >= MAX_STRANGERS) {
            for (size_t i = 0; i < t->n_kids; i++)
                if (!t->kids[i].ready) {
                    tree_drop_kid(t, i); /* an unproven one makes room */
                    break;
                }
        }
        if (t->n_kids == t->cap_kids) {
            size_t cap = t->cap_kids ? 2 * t->cap_kids : 16;
            struct conn *k = realloc(t->kids, cap * sizeof *k);
            if (!k) {
                close(fd);
                return;
            }
            t->kids = k;
            t->cap_kids = cap;
        }
        struct conn *c = &t->kids[t->n_kids++];
        conn_init(c, fd);
        if (lfd == t->listen_tcp) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
        if (auth_nonce(c->nonce, NULL) < 0 ||
            conn_queue(c, WIRE_CHALLENGE, 0, t->l.rank, c->nonce, AUTH_NONCE_LEN) < 0 ||
            conn_flush(c) < 0)
            tree_drop_kid(t, t->n_kids - 1);
    }
}

/* --- open/close ------------------------------------------------------- */

int tree_open(const struct tree_layout *layout, const struct auth_key *key, int timeout_ms,
              struct tree **out, struct cohort_err *err)
{
    *out = NULL;
    if (layout->rank >= layout->size || layout->num_nodes == 0)
        return cohort_fail(err, "internal: rank %u of %u tasks", layout->rank, layout->size);
    struct tree *t = calloc(1, sizeof *t);
    if (!t)
        return cohort_fail(err, "out of memory");
    t->l = *layout;
    t->key = *key;
    t->timeout_ms = timeout_ms;
    t->max_payload = WIRE_MAX_PAYLOAD_DEFAULT;
    t->listen_tcp = t->listen_unix = -1;
    conn_init(&t->parent, -1);
    t->node_first = malloc(sizeof *t->node_first * layout->num_nodes);
    if (!t->node_first) {
        free(t);
        return cohort_fail(err, "out of memory");
    }
    for (uint32_t n = 0; n < layout->num_nodes; n++)
        t->node_first[n] = UINT32_MAX;
    for (uint32_t r = layout->size; r-- > 0;)
        t->node_first[layout->rank_node[r]] = r;
    t->node = layout->rank_node[layout->rank];
    for (uint32_t r = 0; r < layout->size; r++)
        t->local_size += layout->rank_node[r] == t->node;
    t->is_root = layout->rank == 0;
    t->is_leader = layout->rank == t->node_first[t->node];
    t->expected_kids = t->is_leader ? t->local_size - 1 : 0;
    if (t->is_root)
        t->expected_kids += layout->num_nodes - 1;
    long long deadline = tree_now_ms() + timeout_ms;
    int rc = 0;
    if (t->is_leader)
        rc = listen_unix(t, err);
    if (rc == 0 && t->is_root && layout->num_nodes > 1)
        rc = listen_tcp(t, err);
    if (rc == 0 && !t->is_root)
        rc = join_parent(t, deadline, err);
    if (rc < 0) {
        tree_close(t);
        return -1;
    }
    *out = t;
    return 0;
}

void tree_set_timeout(struct tree *t, int timeout_ms)
{
    t->timeout_ms = timeout_ms;
}

void tree_close(struct tree *t)
{
    if (!t)
        return;
    conn_close(&t->parent);
    for (size_t i = 0; i < t->n_kids; i++)
        conn_close(&t->kids[i]);
    free(t->kids);
    if (t->listen_tcp >= 0)
        close(t->listen_tcp);
    if (t->listen_unix >= 0)
        close(t->listen_unix);
    free(t->node_first);
    auth_key_clear(&t->key);
    free(t);
}
