/* topology.h - the node as the planner sees it: an hwloc topology (this
 * machine's, or one loaded from XML) and its NVIDIA GPUs in PCI bus order
 * (the order of CUDA_DEVICE_ORDER=PCI_BUS_ID and of Slurm's gres), each with
 * its locality: the CPUs of its first non-I/O ancestor and its NUMA nodes. */
#ifndef COHORT_TOPOLOGY_H
#define COHORT_TOPOLOGY_H

#include <hwloc.h>
#include <stdbool.h>

#include "error.h"

struct cohort_gpu {
    char pci_id[16];         /* "0000:03:00.0", lowercase */
    unsigned vendor, device; /* PCI ids */
    hwloc_bitmap_t cpuset;   /* PU OS indexes of its locality */
    hwloc_bitmap_t nodeset;  /* NUMA OS indexes of its locality */
};

struct cohort_topology {
    hwloc_topology_t topo;
    struct cohort_gpu *gpus;
    unsigned n_gpus;
    bool this_system; /* binding through it acts on this machine */
    /* why a cache given as this machine's is not (another CPU count), or "" */
    char not_this_machine[COHORT_ERR_LEN];
};

/* Loads xml_path, or this machine when xml_path is NULL. When
 * xml_is_this_system is set, an XML topology is taken as this machine's (an
 * admin's cache written by `cohort-info --export-topology`), so binding
 * through it works, unless its CPU count differs from this machine's: then
 * it is planned with as another machine's and not_this_machine says so. */
int topology_load(const char *xml_path, bool xml_is_this_system,
                  struct cohort_topology **out, struct cohort_err *err);
void topology_free(struct cohort_topology *t);

/* Discovers this whole machine - CPUs and NUMA nodes the caller may not use
 * included (HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED), so that a caller in a
 * cpuset still sees the node - and writes it as XML to path: a cache of the
 * node for topology_load(path, true, ...). */
int topology_export_node(const char *path, struct cohort_err *err);

/* Writes the topology as XML (PCI devices kept) to path. */
int topology_export(const struct cohort_topology *t, const char *path,
                    struct cohort_err *err);

#endif
