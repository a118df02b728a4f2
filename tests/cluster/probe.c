/* probe.c - what a task of the test cluster really got, as one line:
 * host=H affinity=CPUS mempolicy=MODE:NODES and NAME=VALUE for each NAME
 * given ("-" when unset). affinity is sched_getaffinity's list; mempolicy
 * is get_mempolicy's, or "unsupported" where the kernel has none. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* "0-3,8" from a set of n bits. */
static void list(char *buf, size_t len, int (*isset)(int, const void *), const void *set, int n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (!isset(i, set))
            continue;
        int j = i;
        while (j + 1 < n && isset(j + 1, set))
            j++;
        used += (size_t)snprintf(buf + used, len - used, "%s%d", used ? "," : "", i);
        if (j > i)
            used += (size_t)snprintf(buf + used, len - used, "-%d", j);
        if (used >= len)
            return;
        i = j;
    }
}

static int cpu_isset(int i, const void *set) { return CPU_ISSET((size_t)i, (const cpu_set_t *)set); }

static int node_isset(int i, const void *set)
{
    const unsigned long *mask = set;
    return (mask[i / (8 * (int)sizeof *mask)] >> (i % (8 * (int)sizeof *mask))) & 1;
}

int main(int argc, char **argv)
{
    char host[256] = "", cpus[4096], nodes[1024] = "";
    cpu_set_t set;
    gethostname(host, sizeof host - 1);
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        list(cpus, sizeof cpus, cpu_isset, &set, CPU_SETSIZE);
    else
        snprintf(cpus, sizeof cpus, "error");
    int mode = 0;
    unsigned long mask[16] = {0};
    const char *policy;
    if (syscall(SYS_get_mempolicy, &mode, mask, 8 * sizeof mask, NULL, 0UL) != 0)
        policy = errno == ENOSYS ? "unsupported" : "error";
    else {
        static const char *const names[] = {"default", "preferred", "bind", "interleave",
                                            "local"};
        policy = mode >= 0 && mode < 5 ? names[mode] : "other";
        list(nodes, sizeof nodes, node_isset, mask, 8 * (int)sizeof mask);
    }
    printf("host=%s affinity=%s mempolicy=%s:%s", host, cpus, policy, nodes);
    for (int i = 1; i < argc; i++) {
        const char *v = getenv(argv[i]);
        printf(" %s=%s", argv[i], v && *v ? v : "-");
    }
    putchar('\n');
    return 0;
}
