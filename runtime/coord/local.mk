## runtime/coord/local.mk - the step's coordinator process
## (cohort-work-coord): its start record, which libcohort's rank 0 (or a
## node agent, for the store) writes
## (libcohort_coord_config), its main loop and the services it hosts: the
## work queues (runtime/work), the stream sets (runtime/streams) and the
## step's store (runtime/store).
noinst_LTLIBRARIES += runtime/coord/libcohort_coord_config.la
runtime_coord_libcohort_coord_config_la_SOURCES = runtime/coord/coord_config.c \
	runtime/coord/coord_config.h runtime/coord/coord_start.c runtime/coord/coord_start.h

# A node's relays, in one process per node of a step (cohort-work-coord's,
# or the node agent's).
noinst_LTLIBRARIES += runtime/coord/libcohort_relay.la
runtime_coord_libcohort_relay_la_SOURCES = runtime/coord/relay.c runtime/coord/relay.h \
	runtime/coord/host.c runtime/coord/host.h
runtime_coord_libcohort_relay_la_LIBADD = -lpthread

pkglibexec_PROGRAMS = runtime/coord/cohort-work-coord
runtime_coord_cohort_work_coord_SOURCES = runtime/coord/coord_main.c runtime/coord/coord.c \
	runtime/coord/coord.h runtime/coord/coord_private.h runtime/coord/coord_loop.c \
	runtime/coord/coord_wake.c runtime/coord/coord_answer.c runtime/coord/coord_report.c runtime/coord/coord_journal.c runtime/coord/coord_output.c \
	runtime/coord/scoord.c runtime/coord/scoord.h runtime/coord/store_holder.c \
	runtime/coord/store_holder.h runtime/coord/peers.c runtime/coord/peers.h
runtime_coord_cohort_work_coord_LDADD = runtime/coord/libcohort_relay.la \
	runtime/coord/libcohort_coord_config.la \
	runtime/store/libcohort_store.la \
	runtime/streams/libcohort_streams_msg.la runtime/streams/libcohort_place.la \
	runtime/work/libcohort_work_sched.la runtime/work/libcohort_work_journal.la \
	runtime/work/libcohort_work_msg.la runtime/work/libcohort_work_output.la \
	runtime/net/libcohort_net.la \
	runtime/planner/libcohort_planner_base.la
