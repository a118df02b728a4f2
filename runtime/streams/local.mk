## runtime/streams/local.mk - streams (cohort_streams.h): the pure
## placement of streams on workers (consistent hashing with bounded loads,
## ownership and epochs; no sockets, no clock).
noinst_LTLIBRARIES += runtime/streams/libcohort_place.la
runtime_streams_libcohort_place_la_SOURCES = runtime/streams/place.h \
	runtime/streams/place_private.h runtime/streams/place.c runtime/streams/place_ring.c \
	runtime/streams/place_move.c
runtime_streams_libcohort_place_la_LIBADD = -lm
