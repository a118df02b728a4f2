/* lean_load.c - loading the topology without unused hwloc plugins (see
 * lean_load.h). */
#include "lean_load.h"

#include <stdlib.h>

int topology_load_lean(const char *xml_path, bool xml_is_this_system,
                       struct cohort_topology **out, struct cohort_err *err)
{
    static const char var[] = "HWLOC_PLUGINS_BLACKLIST";
    bool ours = getenv(var) == NULL &&
                setenv(var,
                       xml_path ? "hwloc_opencl,hwloc_gl,hwloc_xml_libxml,hwloc_pci"
                                : "hwloc_opencl,hwloc_gl,hwloc_xml_libxml",
                       0) == 0;
    int rc = topology_load(xml_path, xml_is_this_system, out, err);
    if (ours)
        unsetenv(var);
    return rc;
}
