/* lean_load.c - loading the topology without unused hwloc plugins (see
 * lean_load.h). */
#include "lean_load.h"

#include <stdlib.h>

static const char var[] = "HWLOC_PLUGINS_BLACKLIST";

/* Names the unused plugins (the PCI one too when only reading XML); true
 * when the variable is ours to unset again. */
static bool blacklist(bool xml)
{
    return getenv(var) == NULL &&
           setenv(var, xml ? "hwloc_opencl,hwloc_gl,hwloc_xml_libxml,hwloc_pci"
                           : "hwloc_opencl,hwloc_gl,hwloc_xml_libxml", 0) == 0;
}

int topology_load_lean(const char *xml_path, bool xml_is_this_system,
                       struct cohort_topology **out, struct cohort_err *err)
{
    bool ours = blacklist(xml_path != NULL);
    int rc = topology_load(xml_path, xml_is_this_system, out, err);
    if (ours)
        unsetenv(var);
    return rc;
}

int topology_export_node_lean(const char *path, struct cohort_err *err)
{
    bool ours = blacklist(false);
    int rc = topology_export_node(path, err);
    if (ours)
        unsetenv(var);
    return rc;
}
