## runtime/planner/local.mk - the pure planner, shared by every shell, in two
## halves: libcohort_planner_base.la describes a step from Slurm's words and
## derives its step-wide values (no topology, no hwloc; libcohort links only
## this), libcohort_planner.la adds topology, CPU shares and plans with hwloc
## and carries the base inside it (the tools, the plugin and the tests link
## it alone). The base carries layer 0 (runtime/base) inside it, so every
## link that has the planner has the base too.
noinst_LTLIBRARIES += runtime/planner/libcohort_planner_base.la
runtime_planner_libcohort_planner_base_la_SOURCES = \
	runtime/planner/hostlist.c runtime/planner/hostlist.h \
	runtime/planner/tasks_per_node.c runtime/planner/tasks_per_node.h \
	runtime/planner/ports.c runtime/planner/ports.h \
	runtime/planner/cpu_mask.c runtime/planner/cpu_mask.h \
	runtime/planner/step.c runtime/planner/step.h \
	runtime/planner/layout.c runtime/planner/layout.h \
	runtime/planner/step_env.c runtime/planner/step_env.h \
	runtime/planner/plan_step.c runtime/planner/plan_step.h
runtime_planner_libcohort_planner_base_la_LIBADD = runtime/base/libcohort_base.la

noinst_LTLIBRARIES += runtime/planner/libcohort_planner.la
runtime_planner_libcohort_planner_la_SOURCES = \
	runtime/planner/cpu_mask_hwloc.c runtime/planner/cpu_mask_hwloc.h \
	runtime/planner/topology.c runtime/planner/topology.h \
	runtime/planner/cpu_share.c runtime/planner/cpu_share.h \
	runtime/planner/plan.c runtime/planner/plan.h \
	runtime/planner/plan_gpu.c runtime/planner/plan_gpu.h \
	runtime/planner/plan_line.c runtime/planner/plan_line.h \
	runtime/planner/mps_plan.c runtime/planner/mps_plan.h
runtime_planner_libcohort_planner_la_LIBADD = runtime/planner/libcohort_planner_base.la \
	$(HWLOC_LIBS)
