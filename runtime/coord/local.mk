## runtime/coord/local.mk - the step's coordinator process
## (cohort-work-coord): its main and the services it hosts, each named
## for what it serves: the work queues (work_service*.c, over
## runtime/work), the stream sets (streams_service.c, over
## runtime/streams) and the step's store (store_service.c, over
## runtime/store). Its start record is runtime/coord_start's, its node
## relays runtime/relay's.
pkglibexec_PROGRAMS = runtime/coord/cohort-work-coord
runtime_coord_cohort_work_coord_SOURCES = runtime/coord/coord_main.c \
	runtime/coord/coord_service.h \
	runtime/coord/work_service.c runtime/coord/work_service.h \
	runtime/coord/work_service_private.h runtime/coord/work_service_loop.c \
	runtime/coord/work_service_wake.c runtime/coord/work_service_answer.c \
	runtime/coord/work_service_report.c runtime/coord/work_service_journal.c \
	runtime/coord/work_service_output.c \
	runtime/coord/streams_service.c runtime/coord/streams_service.h \
	runtime/coord/store_service.c runtime/coord/store_service.h \
	runtime/coord/watch_holder.c runtime/coord/watch_holder.h
runtime_coord_cohort_work_coord_LDADD = runtime/relay/libcohort_relay.la \
	runtime/watch/libcohort_watch.la \
	runtime/coord_start/libcohort_coord_start.la \
	runtime/store/libcohort_store.la \
	runtime/streams/libcohort_streams_msg.la runtime/streams/libcohort_place.la \
	runtime/work/libcohort_work_sched.la runtime/work/libcohort_work_journal.la \
	runtime/work/libcohort_work_msg.la runtime/work/libcohort_work_parts.la \
	runtime/net/libcohort_net.la \
	runtime/planner/libcohort_planner_base.la
