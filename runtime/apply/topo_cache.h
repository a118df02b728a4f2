/* topo_cache.h - the plugin's own cache of this node's hwloc topology, so
 * that no step pays for hwloc's discovery (its PCI scan costs a step more
 * than all the rest of cohort) and no admin has to set one up. Written as
 * root, at slurmd's start and after a step found it stale, into a
 * directory only root can write (a topology a user could write would steer
 * other users' binding); used only when it and its directory are root's
 * and nobody else can write them, and when it was written on this boot of
 * this machine: its file name carries a hash of hwloc's and cohort's
 * versions, the boot id, the online CPUs and NUMA nodes and the PCI
 * devices. Every directory on the way to it must be root's and writable by
 * nobody else (or sticky, as /tmp): then nobody else can change what is
 * read or written there. Anything else - no cache, a stale one, a foreign
 * owner - means discovery, as without a cache; never an error for a job. */
#ifndef COHORT_TOPO_CACHE_H
#define COHORT_TOPO_CACHE_H

#include <stddef.h>

#include "topology.h"

#define TOPO_CACHE_DIR "/run/cohort" /* the default: cleared at every boot */

/* Loads dir's cache for this machine as this machine's topology: 0; -1
 * with why (a phrase for the verbose line) when there is none to use. */
int topo_cache_load(const char *dir, struct cohort_topology **out, char *why, size_t len);

/* Discovers this whole node (topology_export_node: whatever cpuset the
 * caller runs in) and writes it as dir's cache for this machine's key, taken
 * before the discovery (dir made 0755 when missing), removing the caches of
 * other keys. Root only; 0, or -1 with the reason. */
int topo_cache_refresh(const char *dir, struct cohort_err *err);

#endif
