## runtime/tools/local.mk - command-line shells around the planner.
noinst_LTLIBRARIES += runtime/tools/libcohort_tools.la
runtime_tools_libcohort_tools_la_SOURCES = \
	runtime/tools/task_plan.c runtime/tools/task_plan.h \
	runtime/tools/plan_format.c runtime/tools/plan_format.h
runtime_tools_libcohort_tools_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
runtime_tools_libcohort_tools_la_LIBADD = runtime/planner/libcohort_planner.la $(JANSSON_LIBS)

bin_PROGRAMS += runtime/tools/cohort-info
runtime_tools_cohort_info_SOURCES = runtime/tools/cohort-info.c
runtime_tools_cohort_info_LDADD = runtime/tools/libcohort_tools.la runtime/apply/libcohort_apply.la

bin_PROGRAMS += runtime/tools/cohort-launch
runtime_tools_cohort_launch_SOURCES = runtime/tools/cohort-launch.c
runtime_tools_cohort_launch_LDADD = runtime/tools/libcohort_tools.la runtime/apply/libcohort_apply.la
