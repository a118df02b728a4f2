## runtime/planner/local.mk - the pure planner, shared by every shell.
noinst_LTLIBRARIES += runtime/planner/libcohort_planner.la
runtime_planner_libcohort_planner_la_SOURCES = \
	runtime/planner/error.c runtime/planner/error.h \
	runtime/planner/hostlist.c runtime/planner/hostlist.h \
	runtime/planner/tasks_per_node.c runtime/planner/tasks_per_node.h \
	runtime/planner/envlist.c runtime/planner/envlist.h \
	runtime/planner/ports.c runtime/planner/ports.h \
	runtime/planner/step.c runtime/planner/step.h \
	runtime/planner/layout.c runtime/planner/layout.h \
	runtime/planner/step_env.c runtime/planner/step_env.h \
	runtime/planner/topology.c runtime/planner/topology.h \
	runtime/planner/cpu_share.c runtime/planner/cpu_share.h \
	runtime/planner/plan.c runtime/planner/plan.h \
	runtime/planner/plan_line.c runtime/planner/plan_line.h
runtime_planner_libcohort_planner_la_LIBADD = $(HWLOC_LIBS)
