/* tree.c - the two-level authenticated bootstrap tree (tree.h). */
#include "tree.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
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

#define HELLO_LEN (4 + 4 + AUTH_NONCE_LEN + AUTH_MAC_LEN)
#define UNAUTH_MAX_PAYLOAD 128 /* what a peer may send before it proved itself */
#define MAX_STRANGERS 256      /* unauthenticated connections held at once */
#define LEADER_GRACE_MS 500    /* leaders wait this long past the root's deadline */
#define TASK_GRACE_MS 1000     /* tasks, this long */

struct tree {
    struct tree_layout l;
    uint32_t *node_first;      /* lowest rank of each node: its leader */
    uint32_t node, local_size; /* this task's node and its task count */
    bool is_root, is_leader;
    struct auth_key key;
    int timeout_ms;
    uint32_t max_payload;
    int listen_tcp, listen_unix;
    struct conn parent;
    struct conn *kids;
    size_t n_kids, cap_kids;
    uint32_t expected_kids, ready_kids;
    uint16_t seq;
    bool broken; /* a past exchange failed: every later one fails at once */
    char broken_msg[COHORT_ERR_LEN];
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void put32(uint8_t *p, uint32_t v)
{
    uint32_t be = htonl(v);
    memcpy(p, &be, 4);
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t be;
    memcpy(&be, p, 4);
    return ntohl(be);
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
static void describe_ranks(const struct tree *t, const uint32_t *ranks, size_t n, char *buf,
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
static uint32_t *ranks_of_node(const struct tree *t, uint32_t node, size_t *n)
{
    uint32_t *r = malloc(sizeof *r * (t->l.size ? t->l.size : 1));
    *n = 0;
    for (uint32_t i = 0; r && i < t->l.size; i++)
        if (t->l.rank_node[i] == node)
            r[(*n)++] = i;
    return r;
}

/* --- sockets ---------------------------------------------------------- */

static int nonblocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

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

/* Connects fd to sa, waiting at most until deadline; 0 when connected. */
static int connect_by(int fd, const struct sockaddr *sa, socklen_t len, long long deadline)
{
    if (nonblocking(fd) < 0)
        return -1;
    if (connect(fd, sa, len) == 0)
        return 0;
    if (errno != EINPROGRESS)
        return -1;
    long long left = deadline - now_ms();
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
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
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
        int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
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
    put32(msg, t->l.job_id);
    put32(msg + 4, t->l.step_id);
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
        long long left = deadline - now_ms();
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

static int write_all(struct conn *c, long long deadline, struct cohort_err *err)
{
    while (c->out_len) {
        if (conn_flush(c) < 0)
            return cohort_fail(err, "connection closed");
        if (!c->out_len)
            break;
        long long left = deadline - now_ms();
        struct pollfd p = {.fd = c->fd, .events = POLLOUT};
        if (left <= 0)
            return cohort_fail(err, "timeout");
        poll(&p, 1, (int)left);
    }
    return 0;
}

/* The parent's name for messages. */
static void parent_name(const struct tree *t, char *buf, size_t len)
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
    parent_name(t, name, sizeof name);
    int fd = -1, wait = 1;
    while (connect_parent(t, deadline, &fd) < 0) {
        long long left = deadline - now_ms();
        if (left <= 0)
            return cohort_fail(err, "%s did not answer within %d s", name,
                               t->timeout_ms / 1000);
        /* the parent may not listen yet: back off, 1 ms doubling to 64 ms */
        struct timespec ts = {0, (long)(wait < left ? wait : left) * 1000000L};
        nanosleep(&ts, NULL);
        wait = wait < 64 ? wait * 2 : 64;
    }
    conn_init(&t->parent, fd);
    struct wire_frame f;
    struct cohort_err why;
    uint8_t hello[HELLO_LEN], msg[8 + AUTH_NONCE_LEN + 8 + AUTH_NONCE_LEN];
    if (wait_frame(&t->parent, deadline, UNAUTH_MAX_PAYLOAD, &f, &why) < 0 ||
        f.type != WIRE_CHALLENGE || f.len != AUTH_NONCE_LEN)
        return cohort_fail(err, "%s did not send a bootstrap challenge (%s)", name,
                           f.type == WIRE_ABORT ? "it refused" : why.msg);
    uint8_t parent_nonce[AUTH_NONCE_LEN];
    memcpy(parent_nonce, f.payload, AUTH_NONCE_LEN);
    conn_consume(&t->parent, &f);
    put32(hello, t->l.rank);
    put32(hello + 4, t->node);
    if (auth_nonce(hello + 8, err) < 0)
        return -1;
    hello_message(t, parent_nonce, hello, msg);
    auth_mac(&t->key, "cohort-hello", msg, sizeof msg, hello + 8 + AUTH_NONCE_LEN);
    if (conn_queue(&t->parent, WIRE_HELLO, 0, t->l.rank, hello, sizeof hello) < 0 ||
        write_all(&t->parent, deadline, &why) < 0)
        return cohort_fail(err, "cannot send the bootstrap hello to %s (%s)", name, why.msg);
    if (wait_frame(&t->parent, deadline, UNAUTH_MAX_PAYLOAD, &f, &why) < 0)
        return cohort_fail(err, "%s did not welcome rank %u (%s): does it hold this step's "
                                "COHORT_SECRET?",
                           name, t->l.rank, why.msg);
    if (f.type != WIRE_WELCOME || f.len != AUTH_MAC_LEN ||
        !auth_check(&t->key, "cohort-welcome", msg, sizeof msg, f.payload))
        return cohort_fail(err, "%s did not prove it holds this step's COHORT_SECRET", name);
    conn_consume(&t->parent, &f);
    t->parent.ready = true;
    return 0;
}

/* Parent side: whether a hello names a child we expect and is signed. */
static bool hello_ok(struct tree *t, struct conn *c, const struct wire_frame *f)
{
    if (f->type != WIRE_HELLO || f->len != HELLO_LEN)
        return false;
    uint32_t rank = get32(f->payload), node = get32(f->payload + 4);
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
    if (!auth_check(&t->key, "cohort-hello", msg, sizeof msg, f->payload + 8 + AUTH_NONCE_LEN))
        return false;
    uint8_t mac[AUTH_MAC_LEN];
    auth_mac(&t->key, "cohort-welcome", msg, sizeof msg, mac);
    if (conn_queue(c, WIRE_WELCOME, 0, t->l.rank, mac, sizeof mac) < 0)
        return false;
    c->rank = rank;
    c->node = node;
    c->ready = true;
    return true;
}

static void drop_kid(struct tree *t, size_t i)
{
    if (t->kids[i].ready)
        t->ready_kids--;
    conn_close(&t->kids[i]);
    t->kids[i] = t->kids[--t->n_kids];
}

static void accept_kids(struct tree *t, int lfd)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        size_t strangers = t->n_kids - t->ready_kids;
        if (strangers >= MAX_STRANGERS) {
            for (size_t i = 0; i < t->n_kids; i++)
                if (!t->kids[i].ready) {
                    drop_kid(t, i); /* the oldest unproven one goes */
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
            drop_kid(t, t->n_kids - 1);
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
    long long deadline = now_ms() + timeout_ms;
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

unsigned tree_connections(const struct tree *t)
{
    return (unsigned)t->ready_kids + (t->parent.fd >= 0);
}

/* --- the exchange ----------------------------------------------------- */

struct exchange {
    uint16_t seq;
    const char *what;
    long long start;
    uint8_t **data; /* root: each rank's block */
    uint32_t *len;
    bool *have;
    uint32_t count;
    uint8_t *pending; /* leader: blocks to send up */
    size_t pending_len, pending_cap;
    uint8_t *down;    /* the result */
    uint32_t down_len;
    bool done;
};

static int add_entry(uint8_t **buf, size_t *len, size_t *cap, uint32_t rank,
                     const uint8_t *data, uint32_t n)
{
    size_t need = *len + 8 + n;
    if (need > *cap) {
        size_t c = *cap ? *cap : 256;
        while (c < need)
            c *= 2;
        uint8_t *p = realloc(*buf, c);
        if (!p)
            return -1;
        *buf = p;
        *cap = c;
    }
    put32(*buf + *len, rank);
    put32(*buf + *len + 4, n);
    if (n)
        memcpy(*buf + *len + 8, data, n);
    *len = need;
    return 0;
}

/* Flushes every queued byte, giving up on peers that do not take it by
 * deadline (they are failing anyway). */
static void flush_all(struct tree *t, long long deadline)
{
    struct cohort_err ignored;
    if (t->parent.fd >= 0)
        write_all(&t->parent, deadline, &ignored);
    for (size_t i = 0; i < t->n_kids; i++)
        if (t->kids[i].ready)
            write_all(&t->kids[i], deadline, &ignored);
}

/* Fails this task with msg, after passing it to every peer but from. */
static int spread_abort(struct tree *t, const struct conn *from, const char *msg,
                        struct cohort_err *err)
{
    uint32_t len = (uint32_t)strlen(msg);
    if (t->parent.ready && &t->parent != from)
        conn_queue(&t->parent, WIRE_ABORT, 0, t->l.rank, msg, len);
    for (size_t i = 0; i < t->n_kids; i++)
        if (t->kids[i].ready && &t->kids[i] != from)
            conn_queue(&t->kids[i], WIRE_ABORT, 0, t->l.rank, msg, len);
    flush_all(t, now_ms() + 1000);
    t->broken = true;
    snprintf(t->broken_msg, sizeof t->broken_msg, "%s", msg);
    return cohort_fail(err, "%s", msg);
}

static int root_finish(struct tree *t, struct exchange *x)
{
    size_t len = 0, cap = 0;
    uint8_t *buf = NULL;
    for (uint32_t r = 0; r < t->l.size; r++)
        if (x->len[r] && add_entry(&buf, &len, &cap, r, x->data[r], x->len[r]) < 0) {
            free(buf);
            return -1;
        }
    x->down = buf;
    x->down_len = (uint32_t)len;
    x->done = true;
    for (size_t i = 0; i < t->n_kids; i++)
        if (t->kids[i].ready &&
            conn_queue(&t->kids[i], WIRE_DOWN, x->seq, t->l.rank, buf, (uint32_t)len) < 0)
            return -1;
    return 0;
}

/* Takes the blocks of an UP frame from kid c. Returns -1 on malformed data. */
static int take_up(struct tree *t, struct exchange *x, const struct conn *c,
                   const struct wire_frame *f)
{
    const uint8_t *p = f->payload, *end = f->payload + f->len;
    while (p < end) {
        if (end - p < 8)
            return -1;
        uint32_t rank = get32(p), n = get32(p + 4);
        if ((size_t)(end - p - 8) < n || rank >= t->l.size)
            return -1;
        bool from_leader = c->rank == t->node_first[c->node] && c->node != t->node;
        if (from_leader ? t->l.rank_node[rank] != c->node : rank != c->rank)
            return -1;
        if (t->is_root) {
            if (x->have[rank])
                return -1;
            x->have[rank] = true;
            x->count++;
            x->len[rank] = n;
            if (n && !(x->data[rank] = malloc(n)))
                return -1;
            if (n)
                memcpy(x->data[rank], p + 8, n);
        } else if (add_entry(&x->pending, &x->pending_len, &x->pending_cap, rank, p + 8, n) < 0)
            return -1;
        p += 8 + n;
    }
    return 0;
}

static int lost_kid(struct tree *t, struct exchange *x, const struct conn *c,
                    struct cohort_err *err)
{
    char who[COHORT_ERR_LEN - 120], msg[COHORT_ERR_LEN];
    if (c->node != t->node) {
        size_t n;
        uint32_t *ranks = ranks_of_node(t, c->node, &n);
        describe_ranks(t, ranks ? ranks : &c->rank, ranks ? n : 1, who, sizeof who);
        free(ranks);
        snprintf(msg, sizeof msg, "the bootstrap connection of %s closed during %s "
                                  "(a task exited or crashed?)", who, x->what);
    } else {
        describe_ranks(t, &c->rank, 1, who, sizeof who);
        snprintf(msg, sizeof msg, "%s closed its bootstrap connection during %s (exited or "
                                  "crashed?)", who, x->what);
    }
    return spread_abort(t, c, msg, err);
}

static int root_timeout(struct tree *t, struct exchange *x, struct cohort_err *err)
{
    uint32_t *missing = malloc(sizeof *missing * t->l.size);
    size_t n = 0;
    for (uint32_t r = 0; missing && r < t->l.size; r++)
        if (!x->have[r])
            missing[n++] = r;
    char who[COHORT_ERR_LEN - 120], msg[COHORT_ERR_LEN];
    describe_ranks(t, missing, n, who, sizeof who);
    free(missing);
    if (x->seq == 1)
        snprintf(msg, sizeof msg, "%s did not join within %d s", who, t->timeout_ms / 1000);
    else
        snprintf(msg, sizeof msg, "%s did not reach %s within %d s", who, x->what,
                 t->timeout_ms / 1000);
    return spread_abort(t, NULL, msg, err);
}

/* Handles what kid i sent. Returns 0, 1 when the kid was dropped (i now
 * holds another), -1 when the exchange failed. */
static int serve_kid(struct tree *t, struct exchange *x, size_t i, short revents,
                     struct cohort_err *err)
{
    struct conn *c = &t->kids[i];
    bool closed = false;
    if (revents & POLLOUT && conn_flush(c) < 0)
        closed = true;
    if (revents & (POLLIN | POLLHUP | POLLERR) &&
        conn_fill(c, c->ready ? t->max_payload : UNAUTH_MAX_PAYLOAD) < 0)
        closed = true;
    struct wire_frame f;
    struct cohort_err bad;
    int got;
    while ((got = conn_next(c, c->ready ? t->max_payload : UNAUTH_MAX_PAYLOAD, &f, &bad)) > 0) {
        if (!c->ready) {
            if (!hello_ok(t, c, &f) || conn_flush(c) < 0) {
                drop_kid(t, i); /* a stranger, or a bad proof: the job goes on */
                return 1;
            }
            t->ready_kids++;
            conn_consume(c, &f);
            continue;
        }
        if (f.type == WIRE_ABORT) {
            char msg[COHORT_ERR_LEN];
            snprintf(msg, sizeof msg, "%.*s", (int)(f.len < sizeof msg ? f.len : sizeof msg - 1),
                     (const char *)f.payload);
            return spread_abort(t, c, msg, err);
        }
        if (f.type != WIRE_UP)
            got = -1;
        else if (f.flags == (uint16_t)(x->seq + 1))
            return 0; /* the next exchange's: leave it for then */
        else if (f.flags != x->seq || take_up(t, x, c, &f) < 0)
            got = -1;
        if (got < 0)
            break;
        conn_consume(c, &f);
    }
    if (got < 0 && !c->ready) {
        drop_kid(t, i);
        return 1;
    }
    if (got < 0) {
        char msg[COHORT_ERR_LEN];
        snprintf(msg, sizeof msg, "rank %u sent malformed bootstrap data during %s", c->rank,
                 x->what);
        return spread_abort(t, c, msg, err);
    }
    if (closed) {
        if (!c->ready || x->done) {
            drop_kid(t, i); /* a stranger left, or a task finished */
            return 1;
        }
        return lost_kid(t, x, c, err);
    }
    return 0;
}

/* Handles what the parent sent. Returns 0, or -1 when the exchange failed. */
static int serve_parent(struct tree *t, struct exchange *x, short revents,
                        struct cohort_err *err)
{
    struct conn *c = &t->parent;
    char name[200], msg[COHORT_ERR_LEN];
    bool closed = false;
    if (revents & POLLOUT && conn_flush(c) < 0)
        closed = true;
    if (revents & (POLLIN | POLLHUP | POLLERR) && conn_fill(c, t->max_payload) < 0)
        closed = true;
    struct wire_frame f;
    struct cohort_err bad;
    int got = 0;
    while (!x->done && (got = conn_next(c, t->max_payload, &f, &bad)) > 0) {
        if (f.type == WIRE_ABORT) {
            snprintf(msg, sizeof msg, "%.*s", (int)(f.len < sizeof msg ? f.len : sizeof msg - 1),
                     (const char *)f.payload);
            return spread_abort(t, c, msg, err);
        }
        if (f.type != WIRE_DOWN || f.flags != x->seq) {
            got = -1;
            break;
        }
        x->down = malloc(f.len ? f.len : 1);
        if (!x->down)
            return spread_abort(t, NULL, "out of memory in the bootstrap", err);
        memcpy(x->down, f.payload, f.len);
        x->down_len = f.len;
        x->done = true;
        for (size_t i = 0; i < t->n_kids; i++)
            if (t->kids[i].ready &&
                conn_queue(&t->kids[i], WIRE_DOWN, x->seq, t->l.rank, f.payload, f.len) < 0)
                return spread_abort(t, NULL, "out of memory in the bootstrap", err);
        conn_consume(c, &f);
    }
    parent_name(t, name, sizeof name);
    if (!x->done && got < 0) {
        snprintf(msg, sizeof msg, "%s sent malformed bootstrap data during %s", name, x->what);
        return spread_abort(t, c, msg, err);
    }
    if (closed && !x->done) {
        snprintf(msg, sizeof msg, "%s closed the bootstrap connection during %s (exited or "
                                  "crashed?)", name, x->what);
        return spread_abort(t, c, msg, err);
    }
    return 0;
}

static void exchange_free(struct tree *t, struct exchange *x)
{
    for (uint32_t r = 0; x->data && r < t->l.size; r++)
        free(x->data[r]);
    free(x->data);
    free(x->len);
    free(x->have);
    free(x->pending);
}

static int run_exchange(struct tree *t, struct exchange *x, struct cohort_err *err)
{
    char name[200], msg[COHORT_ERR_LEN + 256];
    long long deadline = x->start + t->timeout_ms +
                         (t->is_root ? 0 : t->is_leader ? LEADER_GRACE_MS : TASK_GRACE_MS);
    struct pollfd *p = NULL;
    size_t cap = 0;
    int rc = -1;
    for (;;) {
        if (t->is_root && !x->done && x->count == t->l.size && root_finish(t, x) < 0) {
            rc = spread_abort(t, NULL, "out of memory in the bootstrap", err);
            break;
        }
        if (!t->is_root && x->pending_len) {
            if (conn_queue(&t->parent, WIRE_UP, x->seq, t->l.rank, x->pending,
                           (uint32_t)x->pending_len) < 0) {
                rc = spread_abort(t, NULL, "out of memory in the bootstrap", err);
                break;
            }
            x->pending_len = 0;
        }
        bool queued = t->parent.out_len > 0;
        for (size_t i = 0; i < t->n_kids; i++)
            queued |= t->kids[i].ready && t->kids[i].out_len > 0;
        if (x->done && !queued) {
            rc = 0;
            break;
        }
        long long left = deadline - now_ms();
        if (left <= 0 && !x->done) {
            if (t->is_root) {
                rc = root_timeout(t, x, err);
                break;
            }
            parent_name(t, name, sizeof name);
            snprintf(msg, sizeof msg, "no answer from %s within %d s during %s", name,
                     t->timeout_ms / 1000, x->what);
            rc = spread_abort(t, &t->parent, msg, err);
            break;
        }
        if (left <= 0) { /* done, but some peer does not take its result */
            flush_all(t, now_ms() + 1000);
            rc = 0;
            break;
        }
        size_t need = t->n_kids + 3, n = 0;
        if (need > cap) {
            struct pollfd *q = realloc(p, need * sizeof *q);
            if (!q) {
                rc = spread_abort(t, NULL, "out of memory in the bootstrap", err);
                break;
            }
            p = q;
            cap = need;
        }
        size_t first_kid = 0;
        bool accepting = t->ready_kids < t->expected_kids || t->n_kids > t->ready_kids;
        if (t->listen_unix >= 0 && accepting)
            p[n++] = (struct pollfd){.fd = t->listen_unix, .events = POLLIN};
        if (t->listen_tcp >= 0 && accepting)
            p[n++] = (struct pollfd){.fd = t->listen_tcp, .events = POLLIN};
        size_t parent_at = n;
        if (t->parent.fd >= 0)
            p[n++] = (struct pollfd){.fd = t->parent.fd,
                                     .events = (short)(POLLIN | (t->parent.out_len ? POLLOUT : 0))};
        first_kid = n;
        for (size_t i = 0; i < t->n_kids; i++)
            p[n++] = (struct pollfd){.fd = t->kids[i].fd,
                                     .events = (short)(POLLIN | (t->kids[i].out_len ? POLLOUT : 0))};
        int ready = poll(p, n, (int)(left < 1000 ? left : 1000));
        if (ready < 0 && errno != EINTR) {
            rc = spread_abort(t, NULL, "poll failed in the bootstrap", err);
            break;
        }
        if (ready <= 0)
            continue;
        /* Kids first (their fds are in p after first_kid, in kids order as
         * of the poll): walk backwards so that drops do not shift the rest. */
        bool failed = false;
        size_t polled = n - first_kid;
        for (size_t k = polled; k-- > 0 && !failed;) {
            if (!p[first_kid + k].revents || k >= t->n_kids)
                continue;
            if (serve_kid(t, x, k, p[first_kid + k].revents, err) < 0)
                failed = true;
        }
        if (!failed && t->parent.fd >= 0 && p[parent_at].revents &&
            serve_parent(t, x, p[parent_at].revents, err) < 0)
            failed = true;
        if (failed)
            break;
        for (size_t k = 0; k < first_kid; k++)
            if (k != parent_at && p[k].revents & POLLIN)
                accept_kids(t, p[k].fd);
    }
    free(p);
    return rc;
}

int tree_exchange(struct tree *t, const void *mine, uint32_t len, const char *what,
                  uint8_t **down, uint32_t *down_len, struct cohort_err *err)
{
    *down = NULL;
    *down_len = 0;
    if (t->broken)
        return cohort_fail(err, "%s", t->broken_msg);
    struct exchange x = {.seq = ++t->seq, .what = what, .start = now_ms()};
    int rc = -1;
    if (t->is_root) {
        x.data = calloc(t->l.size, sizeof *x.data);
        x.len = calloc(t->l.size, sizeof *x.len);
        x.have = calloc(t->l.size, sizeof *x.have);
        if (!x.data || !x.len || !x.have) {
            cohort_fail(err, "out of memory in the bootstrap");
            goto out;
        }
        x.have[0] = true;
        x.count = 1;
        x.len[0] = len;
        if (len && !(x.data[0] = malloc(len))) {
            cohort_fail(err, "out of memory in the bootstrap");
            goto out;
        }
        if (len)
            memcpy(x.data[0], mine, len);
    } else if (add_entry(&x.pending, &x.pending_len, &x.pending_cap, t->l.rank, mine, len) < 0) {
        cohort_fail(err, "out of memory in the bootstrap");
        goto out;
    }
    rc = run_exchange(t, &x, err);
    if (rc == 0) {
        *down = x.down;
        *down_len = x.down_len;
        x.down = NULL;
    }
out:
    free(x.down);
    exchange_free(t, &x);
    return rc;
}
