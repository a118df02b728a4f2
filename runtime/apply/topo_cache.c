/* topo_cache.c - the plugin's topology cache (see topo_cache.h). */
#include "topo_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "lean_load.h"

#define PREFIX "topology-"

/* FNV-1a over a string, continued from h. */
static uint64_t fnv(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

/* A small file's first line into h ("" when unreadable). */
static uint64_t hash_file(uint64_t h, const char *path)
{
    char buf[256] = "";
    FILE *f = fopen(path, "re");
    if (f) {
        if (!fgets(buf, sizeof buf, f))
            buf[0] = '\0';
        fclose(f);
    }
    return fnv(fnv(h, path), buf);
}

/* The running machine's key: hwloc's and cohort's versions, the boot, the
 * online CPUs and NUMA nodes, the PCI devices (their addresses; a device
 * hot-plugged changes it). */
static void cache_name(char *buf, size_t len)
{
    char v[64];
    snprintf(v, sizeof v, "hwloc %x cohort %s", hwloc_get_api_version(), PACKAGE_VERSION);
    uint64_t h = fnv(0xcbf29ce484222325ULL, v);
    h = hash_file(h, "/proc/sys/kernel/random/boot_id");
    h = hash_file(h, "/sys/devices/system/cpu/online");
    h = hash_file(h, "/sys/devices/system/node/online");
    DIR *d = opendir("/sys/bus/pci/devices");
    uint64_t pci = 0; /* order-free: the sum of the devices' hashes */
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.')
            pci += fnv(0xcbf29ce484222325ULL, e->d_name);
    if (d)
        closedir(d);
    snprintf(v, sizeof v, "%016llx", (unsigned long long)pci);
    h = fnv(h, v);
    snprintf(buf, len, PREFIX "%016llx.xml", (unsigned long long)h);
}

/* Root's and writable by root alone. */
static int root_only(const struct stat *st)
{
    return st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/* dir and every directory above it real directories (no symlink) of
 * root's that nobody else can change: writable by root alone, or sticky
 * (others may not rename or remove root's entries there); dir itself
 * writable by root alone. */
static int root_chain(const char *dir)
{
    char path[4096];
    struct stat st;
    if (dir[0] != '/' || strlen(dir) >= sizeof path)
        return 0;
    snprintf(path, sizeof path, "%s", dir);
    for (char *end = path + strlen(path);; *end = '\0') {
        if (lstat(path[0] ? path : "/", &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0)
            return 0;
        bool top = strcmp(path, dir) == 0;
        if (!root_only(&st) && (top || !(st.st_mode & S_ISVTX)))
            return 0;
        if (!path[0])
            return 1;
        end = strrchr(path, '/');
        while (end > path && end[-1] == '/')
            end--;
    }
}

int topo_cache_load(const char *dir, struct cohort_topology **out, char *why, size_t len)
{
    char name[64], path[4200];
    struct stat st;
    struct cohort_err err = {0};
    *out = NULL;
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, len, "no topology cache in %s", dir);
        return -1;
    }
    if (!root_chain(dir)) {
        snprintf(why, len, "topology cache %s is not root's alone: not used", dir);
        return -1;
    }
    cache_name(name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, len, "no topology cache for this boot of this machine in %s", dir);
        return -1;
    }
    if (!root_only(&st)) {
        snprintf(why, len, "topology cache %s is not root's alone: not used", path);
        return -1;
    }
    if (topology_load_lean(path, true, out, &err) < 0 || (*out)->not_this_machine[0]) {
        topology_free(*out);
        *out = NULL;
        snprintf(why, len, "topology cache %s not used: %.200s", path,
                 err.msg[0] ? err.msg : "written for another machine");
        return -1;
    }
    return 0;
}

/* Removes dir's caches but keep. */
static void remove_others(const char *dir, const char *keep)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (!strncmp(e->d_name, PREFIX, strlen(PREFIX)) && strcmp(e->d_name, keep))
            unlinkat(dirfd(d), e->d_name, 0);
    if (d)
        closedir(d);
}

int topo_cache_refresh(const char *dir, struct cohort_err *err)
{
    char name[64], path[4200], tmp[4200];
    if (geteuid() != 0)
        return cohort_fail(err, "only root writes the topology cache");
    if (mkdir(dir, 0755) == 0)
        chmod(dir, 0755); /* whatever the umask */
    else if (errno != EEXIST)
        return cohort_fail(err, "cannot create %s: %s", dir, strerror(errno));
    if (!root_chain(dir))
        return cohort_fail(err, "%s, or a directory above it, is not root's alone: no "
                           "topology cache there", dir);
    cache_name(name, sizeof name); /* the machine as the discovery will see it */
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s/.%s.%ld", dir, name, (long)getpid());
    int rc = topology_export_node_lean(tmp, err);
    if (rc == 0 && chmod(tmp, 0644) < 0)
        rc = cohort_fail(err, "cannot chmod %s: %s", tmp, strerror(errno));
    if (rc == 0 && rename(tmp, path) < 0)
        rc = cohort_fail(err, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    if (rc < 0)
        unlink(tmp);
    else
        remove_others(dir, name);
    return rc;
}
