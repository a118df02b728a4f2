## runtime/work/local.mk - the work queue: the coordinator's pure scheduling
## and lease logic (no sockets, no clock) and its throughput bench
## (`make bench/sched_bench`); the messages and start record libcohort's
## client shares with the coordinator; the coordinator's process.
noinst_LTLIBRARIES += runtime/work/libcohort_work_sched.la
runtime_work_libcohort_work_sched_la_SOURCES = runtime/work/work_sched.h \
	runtime/work/sched_private.h runtime/work/sched.c runtime/work/sched_lease.c \
	runtime/work/sched_return.c runtime/work/sched_check.c
runtime_work_libcohort_work_sched_la_LIBADD = -lm

EXTRA_PROGRAMS += bench/sched_bench
bench_sched_bench_LDADD = runtime/work/libcohort_work_sched.la \
	runtime/planner/libcohort_planner_base.la
bench_sched_bench_LDFLAGS = -no-install

noinst_LTLIBRARIES += runtime/work/libcohort_work_msg.la
runtime_work_libcohort_work_msg_la_SOURCES = runtime/work/work_msg.c runtime/work/work_msg.h \
	runtime/work/coord_config.c runtime/work/coord_config.h

pkglibexec_PROGRAMS = runtime/work/cohort-work-coord
runtime_work_cohort_work_coord_SOURCES = runtime/work/coord_main.c runtime/work/coord.c \
	runtime/work/coord.h runtime/work/coord_private.h runtime/work/coord_loop.c \
	runtime/work/coord_report.c runtime/work/coord_journal.c
runtime_work_cohort_work_coord_LDADD = runtime/streams/libcohort_streams_coord.la \
	runtime/streams/libcohort_place.la runtime/work/libcohort_work_sched.la \
	runtime/work/libcohort_work_journal.la runtime/work/libcohort_work_msg.la \
	runtime/bootstrap/libcohort_bootstrap.la runtime/planner/libcohort_planner_base.la

## The work queue's journal (the coordinator's durable commits, resume) and
## cohort-work, which reads one.
noinst_LTLIBRARIES += runtime/work/libcohort_work_journal.la
runtime_work_libcohort_work_journal_la_SOURCES = runtime/work/journal.h \
	runtime/work/journal_private.h runtime/work/journal.c runtime/work/journal_format.c \
	runtime/work/journal_spans.c runtime/work/journal_read.c
runtime_work_libcohort_work_journal_la_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS)
runtime_work_libcohort_work_journal_la_LIBADD = $(CRYPTO_LIBS)

## How long a hostile journal takes to read (`make bench/journal_bench`;
## numbers in docs/performance.md, "Reading a journal").
EXTRA_PROGRAMS += bench/journal_bench
bench_journal_bench_LDADD = runtime/work/libcohort_work_journal.la \
	runtime/work/libcohort_work_sched.la runtime/planner/libcohort_planner_base.la
bench_journal_bench_LDFLAGS = -no-install

bin_PROGRAMS += runtime/tools/cohort-work
runtime_tools_cohort_work_SOURCES = runtime/tools/cohort-work.c
runtime_tools_cohort_work_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
runtime_tools_cohort_work_LDADD = runtime/work/libcohort_work_journal.la \
	runtime/planner/libcohort_planner_base.la $(JANSSON_LIBS)
dist_man_MANS += docs/man/cohort-work.1

## ---- The work queue's benchmarks (bench/work-bench.sh; numbers in
## docs/performance.md, "Work queue"): the worker run by
## tests/bootstrap/spawn (`make bench/work_bench`) and the Redis
## reliable-queue client it is compared with (`make bench/redis_queue`,
## needs hiredis). Built only on demand, never by `make` or `make check`.
EXTRA_PROGRAMS += bench/work_bench bench/redis_queue
bench_work_bench_LDADD = runtime/libcohort/libcohort.la
bench_work_bench_LDFLAGS = -no-install
bench_redis_queue_LDADD = -lhiredis
EXTRA_DIST += bench/work-bench.sh
