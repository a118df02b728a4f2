## runtime/coord_start/local.mk - a coordinator's start record and its
## start: what libcohort's rank 0 (or a node agent, for the store) writes
## and how it starts cohort-work-coord, read back by the coordinator and
## the node relays.
noinst_LTLIBRARIES += runtime/coord_start/libcohort_coord_start.la
runtime_coord_start_libcohort_coord_start_la_SOURCES = runtime/coord_start/coord_config.c \
	runtime/coord_start/coord_config.h runtime/coord_start/coord_start.c \
	runtime/coord_start/coord_start.h
