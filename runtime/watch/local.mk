## runtime/watch/local.mk - the step watch's pure decisions (who died,
## which node is lost, who keeps a collective waiting), its verdict as a
## line and a JSON object, and the record the NCCL profiler plugin shares
## with the node agent.
noinst_LTLIBRARIES += runtime/watch/libcohort_watch.la
runtime_watch_libcohort_watch_la_SOURCES = runtime/watch/watch.h runtime/watch/watch.c \
	runtime/watch/watch_text.h runtime/watch/watch_text.c \
	runtime/watch/watch_shm.h runtime/watch/watch_shm.c \
	runtime/watch/watch_private.h runtime/watch/watch_comm.c
runtime_watch_libcohort_watch_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
runtime_watch_libcohort_watch_la_LIBADD = runtime/watch/libcohort_watch_tree.la $(JANSSON_LIBS)

## The agents' tree's shape, apart: the plugin links it (for the fanout's
## check) without jansson.
noinst_LTLIBRARIES += runtime/watch/libcohort_watch_tree.la
runtime_watch_libcohort_watch_tree_la_SOURCES = runtime/watch/watch_tree.h runtime/watch/watch_tree.c

## The decisions on a simulated clock, and the verdict's line and JSON.
check_PROGRAMS += tests/unit/test_watch tests/unit/test_watch_text tests/unit/test_watch_tree
TESTS += tests/unit/test_watch tests/unit/test_watch_text tests/unit/test_watch_tree
tests_unit_test_watch_tree_LDADD = runtime/watch/libcohort_watch.la $(UNIT_LDADD)
tests_unit_test_watch_LDADD = runtime/watch/libcohort_watch.la $(UNIT_LDADD)
tests_unit_test_watch_text_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_unit_test_watch_text_LDADD = runtime/watch/libcohort_watch.la $(UNIT_LDADD) $(JANSSON_LIBS)

## The holder's part of the watch at 1,024 and 16,384 nodes, simulated: the
## real watch fed as the store holder feeds it, on a simulated clock (`make
## bench/watch_sim`; bench/watch-sim.sh). bench/watch-bench.sh measures the
## watch on the test cluster.
check_PROGRAMS += bench/watch_sim
bench_watch_sim_LDADD = runtime/watch/libcohort_watch.la runtime/base/libcohort_base.la
bench_watch_sim_LDFLAGS = -no-install
EXTRA_DIST += bench/watch-sim.sh bench/watch-bench.sh bench/watch_nccl_bench.py
