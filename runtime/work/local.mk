## runtime/work/local.mk - the work coordinator's pure scheduling and lease
## logic (no sockets, no clock), and its throughput bench
## (`make bench/sched_bench`).
noinst_LTLIBRARIES += runtime/work/libcohort_work_sched.la
runtime_work_libcohort_work_sched_la_SOURCES = runtime/work/sched.h \
	runtime/work/sched_private.h runtime/work/sched.c runtime/work/sched_lease.c \
	runtime/work/sched_return.c runtime/work/sched_check.c
runtime_work_libcohort_work_sched_la_LIBADD = -lm

EXTRA_PROGRAMS += bench/sched_bench
bench_sched_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/runtime/work
bench_sched_bench_LDADD = runtime/work/libcohort_work_sched.la \
	runtime/planner/libcohort_planner_base.la
bench_sched_bench_LDFLAGS = -no-install
