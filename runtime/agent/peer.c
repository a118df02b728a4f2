/* peer.c - finds who is at the other end of a loopback TCP connection. The
 * kernel's socket diagnostics (NETLINK_SOCK_DIAG) give the uid that made the
 * peer's socket and its inode, which SO_PEERCRED gives only for Unix
 * sockets. The process holding that socket is found in /proc, to write a
 * note into its standard error. See agent.h. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"

#define TCP_ESTABLISHED_STATE 1 /* linux/tcp_states.h's TCP_ESTABLISHED */

int peer_tcp_owner(int fd, uid_t *uid, unsigned long *inode)
{
    struct sockaddr_in me, peer;
    socklen_t ml = sizeof me, pl = sizeof peer;
    if (getsockname(fd, (struct sockaddr *)&me, &ml) < 0 ||
        getpeername(fd, (struct sockaddr *)&peer, &pl) < 0 || me.sin_family != AF_INET ||
        peer.sin_family != AF_INET)
        return -1;
    int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (nl < 0)
        return -1;
    struct {
        struct nlmsghdr h;
        struct inet_diag_req_v2 r;
    } q = {.h = {.nlmsg_len = sizeof q, .nlmsg_type = SOCK_DIAG_BY_FAMILY,
                 .nlmsg_flags = NLM_F_REQUEST},
           .r = {.sdiag_family = AF_INET, .sdiag_protocol = IPPROTO_TCP, .idiag_states = ~0u}};
    /* The peer's socket is asked for: its end is the source, ours the destination. */
    q.r.id.idiag_sport = peer.sin_port;
    q.r.id.idiag_dport = me.sin_port;
    memcpy(q.r.id.idiag_src, &peer.sin_addr, 4);
    memcpy(q.r.id.idiag_dst, &me.sin_addr, 4);
    q.r.id.idiag_cookie[0] = q.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    struct sockaddr_nl k = {.nl_family = AF_NETLINK};
    int rc = -1;
    long buf[2048];
    struct timeval tv = {1, 0};
    setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (sendto(nl, &q, sizeof q, 0, (struct sockaddr *)&k, sizeof k) == (ssize_t)sizeof q) {
        ssize_t n = recv(nl, buf, sizeof buf, 0);
        struct nlmsghdr *h = (struct nlmsghdr *)buf;
        if (n > 0 && NLMSG_OK(h, (size_t)n) && h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
            h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
            const struct inet_diag_msg *m = NLMSG_DATA(h);
            /* A socket its owner closed already (a time-wait one) has no
             * uid or inode to show, so it is refused like a stranger. */
            if (m->id.idiag_sport == peer.sin_port && m->id.idiag_dport == me.sin_port &&
                m->idiag_state == TCP_ESTABLISHED_STATE && m->idiag_inode != 0) {
                *uid = m->idiag_uid;
                *inode = m->idiag_inode;
                rc = 0;
            }
        }
    }
    close(nl);
    return rc;
}

/* Returns whether process pid (a /proc entry of uid) holds the socket whose
 * fd link reads want. */
static bool holds(const char *pid, const char *want)
{
    char path[300], link[64];
    snprintf(path, sizeof path, "/proc/%s/fd", pid);
    DIR *d = opendir(path);
    if (!d)
        return false;
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        char p[600];
        snprintf(p, sizeof p, "/proc/%s/fd/%s", pid, e->d_name);
        ssize_t n = readlink(p, link, sizeof link - 1);
        found = n > 0 && (size_t)n == strlen(want) && memcmp(link, want, (size_t)n) == 0;
    }
    closedir(d);
    return found;
}

bool peer_note(uid_t uid, unsigned long inode, const char *line)
{
    char want[64];
    snprintf(want, sizeof want, "socket:[%lu]", inode);
    DIR *d = opendir("/proc");
    if (!d)
        return false;
    bool done = false;
    struct dirent *e;
    while (!done && (e = readdir(d))) {
        char path[300];
        struct stat st;
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s", e->d_name);
        if (stat(path, &st) < 0 || st.st_uid != uid || !holds(e->d_name, want))
            continue;
        snprintf(path, sizeof path, "/proc/%s/fd/2", e->d_name);
        int fd = open(path, O_WRONLY | O_APPEND | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd >= 0) {
            char text[COHORT_ERR_LEN + 512];
            int n = snprintf(text, sizeof text, "%s\n", line);
            done = write(fd, text, (size_t)n < sizeof text ? (size_t)n : sizeof text - 1) > 0;
            close(fd);
        }
        break;
    }
    closedir(d);
    return done;
}
