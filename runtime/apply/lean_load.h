/* lean_load.h - topology_load without hwloc plugins the plan never uses.
 * hwloc dlopens every plugin it finds at each topology init (OpenCL, GL and
 * libxml2 with ICU: about 3 ms here, every step); the built-in XML parser
 * reads cohort's caches and only discovery needs the PCI plugin. The
 * shells load through this; the planner itself never touches the
 * environment. */
#ifndef COHORT_LEAN_LOAD_H
#define COHORT_LEAN_LOAD_H

#include "topology.h"

/* topology_load() with HWLOC_PLUGINS_BLACKLIST naming those plugins for the
 * duration of the call (left alone when already set), then unset again so
 * that nothing this process starts inherits it. */
int topology_load_lean(const char *xml_path, bool xml_is_this_system,
                       struct cohort_topology **out, struct cohort_err *err);

/* topology_export_node() the same way. */
int topology_export_node_lean(const char *path, struct cohort_err *err);

#endif
