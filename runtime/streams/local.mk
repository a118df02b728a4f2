## runtime/streams/local.mk - stream sets (cohort_streams.h): the pure
## placement of streams on workers (consistent hashing with bounded loads,
## ownership and epochs; no sockets, no clock), its bench and its
## simulation at scale (`bench/streams_sim`), the messages libcohort's
## client shares with the coordinator (runtime/coord, which hosts the
## stream sets).
noinst_LTLIBRARIES += runtime/streams/libcohort_place.la
runtime_streams_libcohort_place_la_SOURCES = runtime/streams/place.h \
	runtime/streams/place_types.h runtime/streams/place.c \
	runtime/streams/place_move.c runtime/streams/place_move.h \
	runtime/streams/place_own.c runtime/streams/place_own.h \
	runtime/streams/place_ring.c runtime/streams/place_ring.h \
	runtime/streams/place_tree.c runtime/streams/place_tree.h
runtime_streams_libcohort_place_la_LIBADD = -lm

## The placement against modulo and unbounded consistent hashing
## (`make bench/place_bench`; docs/performance.md, "Streams").
EXTRA_PROGRAMS += bench/place_bench
bench_place_bench_LDADD = runtime/streams/libcohort_place.la \
	runtime/planner/libcohort_planner_base.la
bench_place_bench_LDFLAGS = -no-install
EXTRA_DIST += bench/streams-bench.sh

## A stream set at 1,024 to 131,072 workers, simulated: the real placement
## on a simulated clock (`make bench/streams_sim`; bench/streams-sim.sh).
check_PROGRAMS += bench/streams_sim
bench_streams_sim_LDADD = runtime/streams/libcohort_place.la \
	runtime/planner/libcohort_planner_base.la
bench_streams_sim_LDFLAGS = -no-install
EXTRA_DIST += bench/streams-sim.sh

noinst_LTLIBRARIES += runtime/streams/libcohort_streams_msg.la
runtime_streams_libcohort_streams_msg_la_SOURCES = runtime/streams/streams_msg.h \
	runtime/streams/streams_msg.c
