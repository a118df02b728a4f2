## runtime/base/local.mk - layer 0, the helpers every layer may use: the
## error convention, the environment list, and (libc only) the clock,
## random bytes, whole-buffer I/O, array growth, strict numbers, hex and
## sorted runs of ids.
## The planner's base library carries it inside it, so every link that has
## the planner has these too.
noinst_LTLIBRARIES += runtime/base/libcohort_base.la
runtime_base_libcohort_base_la_SOURCES = \
	runtime/base/error.c runtime/base/error.h \
	runtime/base/envlist.c runtime/base/envlist.h \
	runtime/base/base_sys.c runtime/base/base_sys.h \
	runtime/base/base_text.c runtime/base/base_text.h \
	runtime/base/base_runs.c runtime/base/base_runs.h
