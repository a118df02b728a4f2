## plugin/local.mk - spank_cohort.so, installed in Slurm's plugin directory.
if HAVE_SPANK
spankplugindir = $(slurm_plugindir)
spankplugin_LTLIBRARIES = plugin/spank_cohort.la
plugin_spank_cohort_la_SOURCES = plugin/spank_cohort.c \
	plugin/spank_srun.c plugin/spank_srun.h plugin/spank_slurmstepd.c plugin/spank_slurmstepd.h \
	plugin/plugin_args.c plugin/plugin_args.h plugin/spank_env.c plugin/spank_env.h \
	plugin/mps.c plugin/mps.h plugin/mps_proc.c plugin/mps_proc.h \
	plugin/mps_step.c plugin/mps_step.h plugin/node_agent.c plugin/node_agent.h \
	plugin/store_step.c plugin/store_step.h plugin/watch_step.c plugin/watch_step.h \
	plugin/agent_watch.c plugin/agent_watch.h plugin/task_tell.c plugin/task_tell.h \
	plugin/spank_opts.c plugin/spank_opts.h plugin/linux_calls.h
plugin_spank_cohort_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS) \
	-DCOHORT_AGENT_PATH='"$(pkglibexecdir)/cohort-agent"' \
	-DCOHORT_NCCL_PROFILER_PATH='"$(pkglibdir)/libcohort-nccl-profiler.so"'
plugin_spank_cohort_la_LDFLAGS = $(HARDEN_LDFLAGS) -module -avoid-version -shared \
	-Wl,--version-script=$(top_srcdir)/plugin/spank_cohort.map
plugin_spank_cohort_la_LIBADD = runtime/apply/libcohort_apply.la \
	runtime/watch/libcohort_watch_tree.la \
	runtime/planner/libcohort_planner.la $(HWLOC_LIBS) -lpthread
EXTRA_plugin_spank_cohort_la_DEPENDENCIES = $(top_srcdir)/plugin/spank_cohort.map
endif
EXTRA_DIST += plugin/spank_cohort.map
