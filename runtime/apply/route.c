/* route.c - the interface that routes to a host (see route.h). */
#include "route.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static bool same_address(const struct sockaddr *a, const struct sockaddr *b)
{
    if (!a || !b || a->sa_family != b->sa_family)
        return false;
    if (a->sa_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (a->sa_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)b)->sin6_addr,
                      sizeof(struct in6_addr)) == 0;
    return false;
}

/* The local address the kernel would send from to reach to. */
static int source_address(const struct addrinfo *to, struct sockaddr_storage *src)
{
    int fd = socket(to->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_storage dst;
    memcpy(&dst, to->ai_addr, to->ai_addrlen);
    if (dst.ss_family == AF_INET)
        ((struct sockaddr_in *)&dst)->sin_port = htons(9);
    else
        ((struct sockaddr_in6 *)&dst)->sin6_port = htons(9);
    socklen_t len = sizeof *src;
    int rc = connect(fd, (struct sockaddr *)&dst, to->ai_addrlen) == 0 &&
                     getsockname(fd, (struct sockaddr *)src, &len) == 0
                 ? 0
                 : -1;
    close(fd);
    return rc;
}

int route_interface(const char *host, char *ifname, size_t len, bool *loopback,
                    struct cohort_err *err)
{
    struct addrinfo hints = {.ai_socktype = SOCK_DGRAM, .ai_flags = AI_ADDRCONFIG};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(host, NULL, &hints, &res);
    if (gai != 0)
        return cohort_fail(err, "cannot resolve MASTER_ADDR '%s': %s", host,
                           gai_strerror(gai));
    struct sockaddr_storage src;
    int rc = -1;
    for (const struct addrinfo *ai = res; ai && rc < 0; ai = ai->ai_next)
        if (ai->ai_family == AF_INET || ai->ai_family == AF_INET6)
            rc = source_address(ai, &src);
    freeaddrinfo(res);
    if (rc < 0)
        return cohort_fail(err, "no route to MASTER_ADDR '%s'", host);
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) < 0)
        return cohort_fail(err, "cannot list this host's network interfaces");
    rc = cohort_fail(err, "no interface holds the address this host uses to reach '%s'",
                     host);
    for (const struct ifaddrs *i = ifs; i; i = i->ifa_next)
        if (same_address(i->ifa_addr, (struct sockaddr *)&src) &&
            strlen(i->ifa_name) < len) {
            snprintf(ifname, len, "%s", i->ifa_name);
            *loopback = (i->ifa_flags & IFF_LOOPBACK) != 0;
            rc = 0;
            break;
        }
    freeifaddrs(ifs);
    return rc;
}

void master_route_find(const struct cohort_step *step, const struct envlist *task_env,
                       struct master_route *r)
{
    char master[HOSTLIST_MAX_NAME + 1];
    struct cohort_err err;
    memset(r, 0, sizeof *r);
    plan_master_addr(step, task_env, master, sizeof master);
    if (route_interface(master, r->ifname, sizeof r->ifname, &r->loopback, &err) < 0) {
        r->ifname[0] = '\0';
        snprintf(r->error, sizeof r->error, "%s", err.msg);
    }
}

void master_route_policy(const struct master_route *r, struct cohort_policy *pol)
{
    pol->socket_ifname = r->ifname[0] ? r->ifname : NULL;
    pol->socket_ifname_loopback = r->loopback;
    pol->socket_route_error = r->error[0] ? r->error : NULL;
}
