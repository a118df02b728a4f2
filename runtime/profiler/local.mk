## runtime/profiler/local.mk - the NCCL profiler plugin of the step watch
## (libcohort-nccl-profiler.so).
# A module NCCL dlopens (NCCL_PROFILER_PLUGIN=$(pkglibdir)/libcohort-nccl-profiler.so),
# built with or without CUDA (it declares NCCL's interface itself): libc alone,
# no version in its name, ncclProfiler_v5 and ncclProfiler_v4 its only symbols.
pkglib_LTLIBRARIES = runtime/profiler/libcohort-nccl-profiler.la
runtime_profiler_libcohort_nccl_profiler_la_SOURCES = runtime/profiler/nccl_profiler.c \
	runtime/profiler/nccl_profiler_abi.h runtime/profiler/prof_shm.c runtime/profiler/prof_shm.h \
	runtime/watch/watch_shm.c runtime/watch/watch_shm.h
runtime_profiler_libcohort_nccl_profiler_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
runtime_profiler_libcohort_nccl_profiler_la_LDFLAGS = $(HARDEN_LDFLAGS) -module -avoid-version \
	-shared -export-symbols-regex '^ncclProfiler_v[0-9]+$$'

# The plugin called as NCCL 2.28 and 2.27 call it, read back as the agent
# reads it; the record's reader against planted and foreign files.
check_PROGRAMS += tests/unit/test_nccl_profiler tests/unit/test_watch_shm
TESTS += tests/unit/test_nccl_profiler tests/unit/test_watch_shm
tests_unit_test_nccl_profiler_SOURCES = tests/unit/test_nccl_profiler.c \
	runtime/watch/watch_shm.c
tests_unit_test_nccl_profiler_CPPFLAGS = $(AM_CPPFLAGS) \
	-DPROFILER_SO='"$(abs_top_builddir)/runtime/profiler/.libs/libcohort-nccl-profiler.so"'
tests_unit_test_nccl_profiler_LDADD = -ldl
EXTRA_tests_unit_test_nccl_profiler_DEPENDENCIES = runtime/profiler/libcohort-nccl-profiler.la
tests_unit_test_watch_shm_SOURCES = tests/unit/test_watch_shm.c \
	runtime/watch/watch_shm.c
