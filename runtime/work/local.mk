## runtime/work/local.mk - the work queue's pure core: the scheduling and
## lease logic (no sockets, no clock), its throughput bench (`make
## bench/sched_bench`) and its simulation at scale (`bench/scale_sim`); the messages libcohort's client shares with the
## coordinator (runtime/coord, which hosts the queue); the journal.
noinst_LTLIBRARIES += runtime/work/libcohort_work_sched.la
runtime_work_libcohort_work_sched_la_SOURCES = runtime/work/work_sched.h \
	runtime/work/sched_private.h runtime/work/sched.c runtime/work/sched_lease.c \
	runtime/work/sched_return.c runtime/work/sched_check.c
runtime_work_libcohort_work_sched_la_LIBADD = -lm

EXTRA_PROGRAMS += bench/sched_bench
bench_sched_bench_LDADD = runtime/work/libcohort_work_sched.la \
	runtime/planner/libcohort_planner_base.la
bench_sched_bench_LDFLAGS = -no-install
check_PROGRAMS += bench/scale_sim
bench_scale_sim_LDADD = runtime/work/libcohort_work_sched.la \
	runtime/coord_start/libcohort_coord_start.la \
	runtime/work/libcohort_work_msg.la runtime/net/libcohort_net.la \
	runtime/planner/libcohort_planner_base.la -lm
bench_scale_sim_LDFLAGS = -no-install

noinst_LTLIBRARIES += runtime/work/libcohort_work_msg.la
runtime_work_libcohort_work_msg_la_SOURCES = runtime/work/work_msg.c runtime/work/work_msg.h

## A queue's published results: the part files' bytes and names (parts.h),
## shared by the workers, the coordinator and cohort-work.
noinst_LTLIBRARIES += runtime/work/libcohort_work_parts.la
runtime_work_libcohort_work_parts_la_SOURCES = runtime/work/parts.c runtime/work/parts.h
runtime_work_libcohort_work_parts_la_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS)
runtime_work_libcohort_work_parts_la_LIBADD = $(CRYPTO_LIBS)

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
runtime_tools_cohort_work_SOURCES = runtime/tools/cohort-work.c runtime/tools/work_output.c \
	runtime/tools/work_output.h runtime/tools/text_escape.c runtime/tools/text_escape.h
runtime_tools_cohort_work_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
runtime_tools_cohort_work_LDADD = runtime/work/libcohort_work_journal.la \
	runtime/work/libcohort_work_parts.la runtime/work/libcohort_work_msg.la \
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
EXTRA_DIST += bench/work-bench.sh bench/output-bench.sh bench/scale-sim.sh bench/coord-cost.sh
