## runtime/agent/local.mk - cohort-agent, the node agent of a step that
## serves PyTorch's store (started by the plugin), and runs the node's
## relays of the step's queues and sets.
pkglibexec_PROGRAMS += runtime/agent/cohort-agent
runtime_agent_cohort_agent_SOURCES = runtime/agent/agent.h runtime/agent/agent_main.c \
	runtime/agent/agent_up.c runtime/agent/agent_local.c runtime/agent/peer.c \
	runtime/agent/node_watch.c runtime/agent/node_tree.c
runtime_agent_cohort_agent_CPPFLAGS = $(AM_CPPFLAGS) \
	-DCOHORT_WORK_COORD_PATH='"$(pkglibexecdir)/cohort-work-coord"'
runtime_agent_cohort_agent_LDADD = runtime/relay/libcohort_relay.la \
	runtime/watch/libcohort_watch.la \
	runtime/coord_start/libcohort_coord_start.la \
	runtime/store/libcohort_store.la runtime/net/libcohort_net.la \
	runtime/apply/libcohort_apply_base.la runtime/planner/libcohort_planner_base.la \
	$(CRYPTO_LIBS) $(MUNGE_LIBS)
