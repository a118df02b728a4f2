/* topology.c - hwloc discovery of GPUs and their locality (see topology.h). */
#include "topology.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PCI_VENDOR_NVIDIA 0x10de
#define PCI_BASE_CLASS_DISPLAY 0x03

static int cmp_pci(const void *a, const void *b)
{
    const struct hwloc_pcidev_attr_s *x = &(*(hwloc_obj_t const *)a)->attr->pcidev;
    const struct hwloc_pcidev_attr_s *y = &(*(hwloc_obj_t const *)b)->attr->pcidev;
    unsigned long kx = ((unsigned long)x->domain << 24) | ((unsigned long)x->bus << 16) |
                       ((unsigned long)x->dev << 8) | x->func;
    unsigned long ky = ((unsigned long)y->domain << 24) | ((unsigned long)y->bus << 16) |
                       ((unsigned long)y->dev << 8) | y->func;
    return kx < ky ? -1 : kx > ky;
}

static bool is_nvidia_gpu(hwloc_obj_t o)
{
    return o->attr->pcidev.vendor_id == PCI_VENDOR_NVIDIA &&
           (o->attr->pcidev.class_id >> 8) == PCI_BASE_CLASS_DISPLAY;
}

static int collect_gpus(struct cohort_topology *t, struct cohort_err *err)
{
    unsigned n = 0;
    hwloc_obj_t o = NULL;
    while ((o = hwloc_get_next_pcidev(t->topo, o)))
        n += is_nvidia_gpu(o);
    if (n == 0)
        return 0;
    hwloc_obj_t *objs = calloc(n, sizeof *objs);
    t->gpus = calloc(n, sizeof *t->gpus);
    if (!objs || !t->gpus) {
        free(objs);
        return cohort_fail(err, "out of memory reading the topology");
    }
    unsigned i = 0;
    for (o = NULL; (o = hwloc_get_next_pcidev(t->topo, o));)
        if (is_nvidia_gpu(o))
            objs[i++] = o;
    qsort(objs, n, sizeof *objs, cmp_pci);
    for (i = 0; i < n; i++) {
        struct cohort_gpu *g = &t->gpus[i];
        const struct hwloc_pcidev_attr_s *a = &objs[i]->attr->pcidev;
        snprintf(g->pci_id, sizeof g->pci_id, "%04x:%02x:%02x.%01x", a->domain, a->bus,
                 a->dev, a->func);
        g->vendor = a->vendor_id;
        g->device = a->device_id;
        hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t->topo, objs[i]);
        g->cpuset = hwloc_bitmap_dup(anc->cpuset);
        g->nodeset = hwloc_bitmap_dup(anc->nodeset);
        t->n_gpus++;
        if (!g->cpuset || !g->nodeset) {
            free(objs);
            return cohort_fail(err, "out of memory reading the topology");
        }
    }
    free(objs);
    return 0;
}

/* Discovers this machine (xml_path NULL) or reads xml_path into t. */
static int load(struct cohort_topology *t, const char *xml_path, unsigned long flags,
                struct cohort_err *err)
{
    if (hwloc_topology_init(&t->topo) < 0)
        return cohort_fail(err, "cannot initialise hwloc");
    /* Only what the plan needs: PCI GPUs and their bridges, no OS devices
     * or misc objects (less to discover, faster to load). */
    hwloc_topology_set_io_types_filter(t->topo, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_type_filter(t->topo, HWLOC_OBJ_PCI_DEVICE,
                                   HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    hwloc_topology_set_type_filter(t->topo, HWLOC_OBJ_BRIDGE,
                                   HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    hwloc_topology_set_icache_types_filter(t->topo, HWLOC_TYPE_FILTER_KEEP_NONE);
    if (xml_path && hwloc_topology_set_xml(t->topo, xml_path) < 0)
        return cohort_fail(err, "topology file %s is not an hwloc XML topology", xml_path);
    hwloc_topology_set_flags(t->topo, flags);
    if (hwloc_topology_load(t->topo) < 0)
        return xml_path ? cohort_fail(err, "topology file %s is not an hwloc XML topology "
                                           "hwloc can load (%m)", xml_path)
                        : cohort_fail(err, "this machine's topology cannot be loaded by "
                                           "hwloc: %m");
    return 0;
}

int topology_load(const char *xml_path, bool xml_is_this_system,
                  struct cohort_topology **out, struct cohort_err *err)
{
    *out = NULL;
    struct cohort_topology *t = calloc(1, sizeof *t);
    if (!t)
        return cohort_fail(err, "out of memory reading the topology");
    unsigned long flags = 0;
    if (xml_path) {
        FILE *f = fopen(xml_path, "r");
        if (!f) {
            free(t);
            return cohort_fail(err, "topology file %s cannot be read: %m", xml_path);
        }
        fclose(f);
        /* A cache of this machine: binding acts here, and the allowed CPUs
         * and NUMA nodes are the ones the OS gives this process now. */
        if (xml_is_this_system)
            flags |= HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM |
                     HWLOC_TOPOLOGY_FLAG_THISSYSTEM_ALLOWED_RESOURCES;
    }
    if (load(t, xml_path, flags, err) < 0) {
        topology_free(t);
        return -1;
    }
    /* A cache with another number of CPUs than this machine has online is
     * another machine's: plan with it as it is, bind nothing. */
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int in_file = hwloc_bitmap_weight(hwloc_topology_get_complete_cpuset(t->topo));
    if (flags && online > 0 && in_file != online) {
        snprintf(t->not_this_machine, sizeof t->not_this_machine,
                 "topology file %s has %d CPUs, this machine %ld", xml_path, in_file,
                 online);
        hwloc_topology_destroy(t->topo);
        t->topo = NULL;
        if (load(t, xml_path, 0, err) < 0) {
            topology_free(t);
            return -1;
        }
    }
    t->this_system = hwloc_topology_is_thissystem(t->topo);
    if (collect_gpus(t, err) < 0) {
        topology_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

void topology_free(struct cohort_topology *t)
{
    if (!t)
        return;
    for (unsigned i = 0; i < t->n_gpus; i++) {
        hwloc_bitmap_free(t->gpus[i].cpuset);
        hwloc_bitmap_free(t->gpus[i].nodeset);
    }
    free(t->gpus);
    if (t->topo)
        hwloc_topology_destroy(t->topo);
    free(t);
}

int topology_export_node(const char *path, struct cohort_err *err)
{
    struct cohort_topology t = {0};
    int rc = load(&t, NULL, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED, err);
    if (rc == 0 && hwloc_topology_export_xml(t.topo, path, 0) < 0)
        rc = cohort_fail(err, "cannot write topology to %s: %m", path);
    if (t.topo)
        hwloc_topology_destroy(t.topo);
    return rc;
}

int topology_export(const struct cohort_topology *t, const char *path,
                    struct cohort_err *err)
{
    if (hwloc_topology_export_xml(t->topo, path, 0) < 0)
        return cohort_fail(err, "cannot write topology to %s: %m", path);
    return 0;
}
