/* tree.c - joining the authenticated bootstrap tree (tree.h): the layout,
 * the tree of nodes and the view, the names of the sockets, listening,
 * reaching the parent, admitting children, failing early. The exchange is in
 * tree_exchange.c; connections and handshakes in net.c. */
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
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tree_private.h"

#include "base_sys.h"
#include "base_text.h"

long long tree_now_ms(void)
{
    return base_now_ms();
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

/* --- the tree of nodes ----------------------------------------------- */

/* A node's place in the tree: 0 for the root's node, then node order. */
static uint64_t node_pos(const struct tree *t, uint32_t node)
{
    return ((uint64_t)node + t->l.num_nodes - t->root_node) % t->l.num_nodes;
}

static uint32_t node_at(const struct tree *t, uint64_t pos)
{
    return (uint32_t)((pos + t->root_node) % t->l.num_nodes);
}

uint32_t tree_up_node(const struct tree *t, uint32_t node)
{
    uint64_t p = node_pos(t, node);
    return p ? node_at(t, (p - 1) / t->fanout) : UINT32_MAX;
}

/* How many leaders are below node's. */
static uint32_t node_kids(const struct tree *t, uint32_t node)
{
    uint64_t first = node_pos(t, node) * t->fanout + 1, n = t->l.num_nodes;
    return first >= n ? 0 : (uint32_t)(n - first < t->fanout ? n - first : t->fanout);
}

bool tree_under(const struct tree *t, uint32_t node, uint32_t top)
{
    while (node != top && node != UINT32_MAX)
        node = tree_up_node(t, node);
    return node == top;
}

uint32_t *tree_ranks_under(const struct tree *t, uint32_t node, size_t *n)
{
    uint32_t *r = malloc(sizeof *r * (t->l.size ? t->l.size : 1));
    *n = 0;
    for (uint32_t i = 0; r && i < t->l.size; i++)
        if (tree_under(t, t->l.rank_node[i], node))
            r[(*n)++] = i;
    return r;
}

/* --- names and sockets --------------------------------------------------- */

/* A directory fit for sockets only this user can reach: a real directory
 * of ours, mode 0700; /tmp/cohort-UID is made when missing. */
static int socket_dir_ok(const char *dir, bool make, struct cohort_err *err)
{
    struct stat st;
    if (lstat(dir, &st) < 0 &&
        (errno != ENOENT || !make || (mkdir(dir, 0700) < 0 && errno != EEXIST) ||
         lstat(dir, &st) < 0))
        return cohort_fail_code(err, COHORT_E_CONFIG,
                                "cannot use %s for the bootstrap's sockets: %s", dir,
                                strerror(errno));
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
        return cohort_fail_code(err, COHORT_E_CONFIG,
                                "cannot use %s for the bootstrap's sockets: it is %s (it must "
                                "be a directory of uid %u with mode 0700; another user may have "
                                "made it first): set COHORT_SOCKET_DIR to a directory of your own",
                           dir, !S_ISDIR(st.st_mode) ? "not a directory"
                                : st.st_uid != geteuid() ? "another user's" : "open to others",
                           (unsigned)geteuid());
    return 0;
}

/* The node's Unix socket: with the secret an abstract name derived from
 * it (no other user can know it), under munge a file in socket_dir. */
static int unix_address(const struct tree *t, uint32_t node, struct sockaddr_un *sa,
                        socklen_t *len, struct cohort_err *err)
{
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    if (t->key.kind == AUTH_SECRET) {
        uint8_t msg[12], mac[AUTH_MAC_LEN];
        wire_put32(msg, t->l.job_id);
        wire_put32(msg + 4, t->l.step_id);
        wire_put32(msg + 8, node);
        auth_mac(&t->key, "cohort-socket", msg, sizeof msg, mac);
        char *p = sa->sun_path + 1; /* abstract: nothing on disk, gone with the process */
        p += sprintf(p, "cohort-");
        p = base_hex_encode(mac, 16, p) + 32;
        *len = (socklen_t)(p - (char *)sa);
        return 0;
    }
    int n = snprintf(sa->sun_path, sizeof sa->sun_path, "%s/%u.%u-%u.sock", t->l.socket_dir,
                     t->l.job_id, t->l.step_id, node);
    if (n < 0 || (size_t)n >= sizeof sa->sun_path)
        return cohort_fail_code(err, COHORT_E_CONFIG,
                                "the bootstrap socket's path in %s is longer than %zu bytes: set "
                                "COHORT_SOCKET_DIR to a shorter directory",
                           t->l.socket_dir, sizeof sa->sun_path - 1);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n + 1);
    return 0;
}

static int listen_unix(struct tree *t, struct cohort_err *err)
{
    struct sockaddr_un sa;
    socklen_t len;
    if (t->key.kind == AUTH_MUNGE && socket_dir_ok(t->l.socket_dir, true, err) < 0)
        return -1;
    if (unix_address(t, t->node, &sa, &len, err) < 0)
        return -1;
    if (sa.sun_path[0]) {
        unlink(sa.sun_path); /* a dead step's, in a directory only this user can write */
        snprintf(t->sock_path, sizeof t->sock_path, "%s", sa.sun_path);
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, len) < 0 || listen(fd, SOMAXCONN) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        t->sock_path[0] = '\0';
        return cohort_fail_code(err, COHORT_E_NETWORK,
                                "cannot open the node's bootstrap socket %s%s: %s",
                           sa.sun_path[0] ? "" : "@", sa.sun_path[0] ? sa.sun_path : sa.sun_path + 1,
                           strerror(e));
    }
    return net_listen(t->net, fd, true, err);
}

/* The TCP addresses of host: MASTER_ADDR's, or a node's name. */
static int resolve(const char *host, uint16_t port, bool master, struct addrinfo **out,
                   struct cohort_err *err)
{
    char p[8];
    snprintf(p, sizeof p, "%u", port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
    int e = getaddrinfo(host, p, &hints, out);
    if (e != 0)
        return cohort_fail_code(err, COHORT_E_NETWORK, "cannot resolve %s %s%s: %s",
                                master ? "the bootstrap root's host" : "the node name", host,
                                master ? " (MASTER_ADDR)" : " for the bootstrap tree",
                                e == EAI_SYSTEM ? strerror(errno) : gai_strerror(e));
    return 0;
}

/* Listens on address sa (family fd's; v6only for one of several). */
static int listen_at(struct tree *t, int fd, const struct sockaddr *sa, socklen_t len,
                     bool v6only, struct cohort_err *err)
{
    int one = 1, v6 = v6only;
    if (fd >= 0 && sa->sa_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6, sizeof v6);
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, sa, len) < 0 || listen(fd, SOMAXCONN) < 0) {
        int e = errno;
        char who[HOSTLIST_MAX_NAME + 64];
        if (fd >= 0)
            close(fd);
        host_of_node(t, t->node, who, sizeof who);
        return cohort_fail_code(err, COHORT_E_NETWORK,
                                "the bootstrap %s%s cannot listen on port %u: %s%s",
                           t->is_root ? "root" : "leader on ", t->is_root ? "" : who,
                           t->l.port, strerror(e),
                           e == EADDRINUSE ? " (another program holds it: choose another with "
                                             "COHORT_BOOTSTRAP_PORT, or have Slurm reserve "
                                             "ports: srun --resv-ports=2)"
                                           : "");
    }
    return net_listen(t->net, fd, false, err);
}

/* A leader with leaders below it listens on TCP: on every address, or
 * with bind_names (several nodes of a test on one host's loopback
 * addresses) the root on MASTER_ADDR's addresses and the others on their
 * node's name's, each address it can open a socket for. */
static int listen_tcp(struct tree *t, struct cohort_err *err)
{
    if (!t->l.bind_names) {
        struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_addr = in6addr_any,
                                  .sin6_port = htons(t->l.port)};
        struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons(t->l.port),
                                 .sin_addr.s_addr = htonl(INADDR_ANY)};
        int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd >= 0)
            return listen_at(t, fd, (struct sockaddr *)&a6, sizeof a6, false, err);
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        return listen_at(t, fd, (struct sockaddr *)&a4, sizeof a4, false, err);
    }
    struct addrinfo *ai;
    char host[HOSTLIST_MAX_NAME + 1];
    if (t->is_root)
        snprintf(host, sizeof host, "%s", t->l.master_addr);
    else
        host_of_node(t, t->node, host, sizeof host);
    if (resolve(host, t->l.port, t->is_root, &ai, err) < 0)
        return -1;
    int rc = 0, done = 0;
    for (struct addrinfo *a = ai; a && rc == 0; a = a->ai_next) {
        int fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0 && done + (a->ai_next != NULL) > 0)
            continue; /* a family this host cannot open, with another address to go */
        rc = listen_at(t, fd, a->ai_addr, a->ai_addrlen, true, err);
        done += rc == 0;
    }
    freeaddrinfo(ai);
    return rc;
}

/* A leader's addresses of its parent: MASTER_ADDR's, or the name of the
 * node above it. */
static int resolve_up(struct tree *t, struct cohort_err *err)
{
    uint32_t up = tree_up_node(t, t->node);
    if (up == t->root_node)
        return resolve(t->l.master_addr, t->l.port, true, &t->up_addrs, err);
    char host[HOSTLIST_MAX_NAME + 1];
    host_of_node(t, up, host, sizeof host);
    return resolve(host, t->l.port, false, &t->up_addrs, err);
}

/* The parent's name for messages. */
void tree_parent_name(const struct tree *t, char *buf, size_t len)
{
    char host[HOSTLIST_MAX_NAME + 1];
    uint32_t parent = t->is_leader ? t->node_first[tree_up_node(t, t->node)]
                                   : t->node_first[t->node];
    host_of_node(t, t->l.rank_node[parent], host, sizeof host);
    if (parent == 0 && t->is_leader)
        snprintf(buf, len, "the bootstrap root (rank 0 on %.60s, %.60s:%u)", host,
                 t->l.master_addr, t->l.port);
    else if (t->is_leader)
        snprintf(buf, len, "the bootstrap leader above this node (rank %u on %.60s, port %u)",
                 parent, host, t->l.port);
    else if (parent == 0)
        snprintf(buf, len, "the bootstrap root (rank 0 on %.60s)", host);
    else
        snprintf(buf, len, "this node's bootstrap leader (rank %u on %.60s)", parent, host);
}

/* Starts reaching the parent. */
static int dial_parent(struct tree *t, struct cohort_err *err)
{
    struct net_target tg = {.timeout_s = t->timeout_ms / 1000, .port = t->l.port};
    tree_parent_name(t, tg.name, sizeof tg.name);
    bool root = t->is_leader ? tree_up_node(t, t->node) == t->root_node
                             : t->node_first[t->node] == 0;
    tg.role = root ? "bootstrap root" : "bootstrap leader";
    if (t->is_leader) {
        tg.addrs = t->up_addrs;
    } else {
        struct stat st;
        tg.is_unix = true;
        if (unix_address(t, t->node, &tg.ua, &tg.ua_len, err) < 0)
            return -1;
        /* a directory another user took is a failure now, not at the deadline */
        if (t->key.kind == AUTH_MUNGE && lstat(t->l.socket_dir, &st) == 0 &&
            socket_dir_ok(t->l.socket_dir, false, err) < 0)
            return -1;
    }
    t->parent = net_dial(t->net, &tg, tree_now_ms() + t->timeout_ms +
                                          (t->is_leader ? LEADER_GRACE_MS : TASK_GRACE_MS));
    return t->parent ? 0 : cohort_fail_code(err, COHORT_E_RESOURCE, "out of memory");
}

/* --- children ------------------------------------------------------------ */

/* net's admit: a child whose hello holds the proof. One that sees the
 * step otherwise is refused and fails the step; one that is not ours, or
 * comes twice, is refused alone. Both are configuration errors: the tasks
 * were not started as one step. */
static enum net_admit admit(void *ctx, const struct hs_hello *h, bool via_unix,
                            struct cohort_err *why)
{
    struct tree *t = ctx;
    char theirs[96], mine[96], who[128];
    if (memcmp(h->view, t->view, HS_VIEW_LEN) != 0) {
        hs_view_text(h->view, theirs, sizeof theirs);
        hs_view_text(t->view, mine, sizeof mine);
        snprintf(who, sizeof who, "rank %u", h->rank);
        if (h->rank < t->l.size && h->node < t->l.num_nodes &&
            t->l.rank_node[h->rank] == h->node)
            tree_describe_ranks(t, &h->rank, 1, who, sizeof who);
        cohort_fail_code(why, COHORT_E_CONFIG,
                         "%s sees the step as %s, rank %u as %s: every task of a step must "
                         "be started by the same srun with the same environment",
                         who, theirs, t->l.rank, mine);
        if (!t->refused.msg[0])
            t->refused = *why;
        return NET_REFUSE;
    }
    uint32_t rank = h->rank, node = h->node;
    if (rank >= t->l.size || rank == t->l.rank || node >= t->l.num_nodes ||
        t->l.rank_node[rank] != node)
        return NET_DROP;
    bool mine_node = node == t->node;
    bool leader = rank == t->node_first[node] && !mine_node && tree_up_node(t, node) == t->node;
    /* this node's ranks come over its Unix socket, the leaders below over
     * TCP: a key holder on the other way is dropped */
    if ((!mine_node && !leader) || via_unix != mine_node)
        return NET_DROP;
    if (t->joined[rank]) {
        cohort_fail_code(why, COHORT_E_CONFIG,
                         "rank %u has joined already (two tasks with one SLURM_PROCID?)", rank);
        return NET_REFUSE;
    }
    t->joined[rank] = 1;
    return NET_ADMIT;
}

int tree_add_kid(struct tree *t, struct net_conn *c)
{
    if (base_grow((void **)&t->kids, &t->cap_kids, t->n_kids + 1, sizeof *t->kids) < 0)
        return -1;
    t->kids[t->n_kids++] = c;
    return 0;
}

void tree_drop_kid(struct tree *t, size_t i)
{
    t->joined[t->kids[i]->c.rank] = 0;
    net_close(t->net, t->kids[i]);
    t->kids[i] = t->kids[--t->n_kids];
}

void tree_send_abort(struct tree *t, struct net_conn *c, const struct cohort_err *why)
{
    uint8_t abort[WIRE_ABORT_MAX];
    net_send(c, WIRE_ABORT, 0, t->l.rank, abort, wire_abort_encode(why, abort));
}

void tree_tell_parent(struct tree *t, const struct cohort_err *why)
{
    if (t->parent && !t->parent_told && t->parent->state == NET_READY) {
        tree_send_abort(t, t->parent, why);
        t->parent_told = true;
    }
}

int tree_abort_poll(struct tree *t, int timeout_ms, const struct cohort_err *why)
{
    struct net_event *ev;
    int n = net_poll(t->net, timeout_ms, &ev, NULL);
    for (int i = 0; i < n; i++) {
        struct net_conn *c = ev[i].c;
        if (ev[i].what & NET_EV_JOINED) {
            tree_send_abort(t, c, why);
            if (tree_add_kid(t, c) < 0)
                net_close(t->net, c);
        } else if (c == t->parent && (ev[i].what & NET_EV_CONNECTED)) {
            tree_tell_parent(t, why);
        }
    }
    return n;
}

void tree_relay(struct tree *t, const struct cohort_err *why)
{
    net_refuse(t->net, why);
    long long now = tree_now_ms(), last = now + (t->timeout_ms > RELAY_MS ? t->timeout_ms
                                                                          : RELAY_MS);
    long long end = now + RELAY_MS;
    size_t told = t->n_kids + net_refused(t->net);
    while (told < t->expected_kids && (now = tree_now_ms()) < end) {
        if (tree_abort_poll(t, (int)(end - now), why) < 0)
            break;
        size_t now_told = t->n_kids + net_refused(t->net);
        if (now_told > told) /* children still come (slow to start): wait on for the rest */
            end = tree_now_ms() + RELAY_MS < last ? tree_now_ms() + RELAY_MS : last;
        told = now_told;
    }
    net_flush(t->net, tree_now_ms() + 1000);
}

/* --- open/close ------------------------------------------------------- */

/* The view every task of the step must share. */
static int make_view(struct tree *t, struct cohort_err *err)
{
    char (*names)[HOSTLIST_MAX_NAME + 1] = calloc(t->l.num_nodes, sizeof *names);
    const char **ptrs = calloc(t->l.num_nodes, sizeof *ptrs);
    if (!names || !ptrs) {
        free(names);
        free(ptrs);
        return cohort_fail_code(err, COHORT_E_RESOURCE, "out of memory");
    }
    for (uint32_t n = 0; t->l.nodes && n < t->l.num_nodes; n++)
        if (hostlist_nth(t->l.nodes, n, names[n], sizeof names[n]) == 0)
            ptrs[n] = names[n];
    hs_view(t->l.size, t->l.num_nodes, t->l.rank_node, ptrs, t->fanout, t->view);
    free(names);
    free(ptrs);
    return 0;
}

/* A parent needs a descriptor per child and one for its own parent (the
 * slots net_reserve keeps), and room for strangers (net_fd_check's). */
static int fd_check(const struct tree *t, struct cohort_err *err)
{
    char host[HOSTLIST_MAX_NAME + 1], who[HOSTLIST_MAX_NAME + 32];
    host_of_node(t, t->node, host, sizeof host);
    snprintf(who, sizeof who, "rank %u (%s)", t->l.rank, host);
    return net_fd_check(t->expected_kids + !t->is_root, who,
                        t->is_root ? "tasks of the step"
                                   : "tasks of the step, its parent among them",
                        err);
}

static int layout_of(struct tree *t, const struct tree_layout *layout, struct cohort_err *err)
{
    t->l = *layout;
    t->node_first = malloc(sizeof *t->node_first * layout->num_nodes);
    t->joined = calloc(layout->size, 1);
    if (!t->node_first || !t->joined)
        return cohort_fail_code(err, COHORT_E_RESOURCE, "out of memory");
    for (uint32_t n = 0; n < layout->num_nodes; n++)
        t->node_first[n] = UINT32_MAX;
    for (uint32_t r = layout->size; r-- > 0;)
        t->node_first[layout->rank_node[r]] = r;
    t->node = layout->rank_node[layout->rank];
    for (uint32_t r = 0; r < layout->size; r++)
        t->local_size += layout->rank_node[r] == t->node;
    t->is_root = layout->rank == 0;
    t->is_leader = layout->rank == t->node_first[t->node];
    t->root_node = layout->rank_node[0];
    t->fanout = layout->fanout ? layout->fanout : TREE_DEFAULT_FANOUT;
    t->node_kids = t->is_leader ? node_kids(t, t->node) : 0;
    t->expected_kids = t->is_leader ? t->local_size - 1 + t->node_kids : 0;
    return make_view(t, err);
}

int tree_open(const struct tree_layout *layout, const struct auth_key *key, int timeout_ms,
              struct tree **out, struct cohort_err *err)
{
    *out = NULL;
    if (layout->rank >= layout->size || layout->num_nodes == 0)
        return cohort_fail_code(err, COHORT_E_CONFIG, "internal: rank %u of %u tasks",
                                layout->rank, layout->size);
    struct tree *t = calloc(1, sizeof *t);
    if (!t)
        return cohort_fail_code(err, COHORT_E_RESOURCE, "out of memory");
    t->key = *key;
    t->timeout_ms = timeout_ms;
    t->max_payload = WIRE_MAX_PAYLOAD_DEFAULT;
    int rc = layout_of(t, layout, err);
    struct hs_self me = {.key = &t->key, .job = layout->job_id, .step = layout->step_id,
                         .rank = layout->rank, .node = t->node};
    memcpy(me.view, t->view, sizeof me.view);
    struct net_ops ops = {.ctx = t, .max_payload = t->max_payload, .admit = admit};
    if (rc == 0)
        rc = net_new(&me, &ops, &t->net, err);
    if (rc == 0) /* its tasks', the leaders below's and its parent's slots: never a stranger's */
        net_reserve(t->net, (long)t->expected_kids + !t->is_root);
    if (rc == 0 && t->is_leader && !t->is_root)
        rc = resolve_up(t, err);
    if (rc == 0 && t->is_leader)
        rc = listen_unix(t, err);
    bool can_relay = rc == 0; /* the node's tasks (and leaders) can be told why */
    if (rc == 0 && t->node_kids)
        rc = listen_tcp(t, err);
    if (rc == 0 && t->expected_kids)
        rc = fd_check(t, err);
    if (rc == 0 && !t->is_root)
        rc = dial_parent(t, err);
    if (rc < 0) {
        if (can_relay && t->is_leader)
            tree_relay(t, err);
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
    if (t->broken && t->net) /* the peers read why before the sockets close */
        net_linger(t->net, tree_now_ms() + LINGER_MS);
    net_free(t->net);
    if (t->sock_path[0])
        unlink(t->sock_path);
    free(t->kids);
    free(t->joined);
    free(t->node_first);
    if (t->up_addrs)
        freeaddrinfo(t->up_addrs);
    auth_key_clear(&t->key);
    free(t);
}
