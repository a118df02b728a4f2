## runtime/libcohort/local.mk - libcohort, the installed runtime library
## (cohort.h, cohort.pc), exporting only its public API (and, under a
## private version, what libcohort-nccl needs); its bootstrap backends.
lib_LTLIBRARIES += runtime/libcohort/libcohort.la
include_HEADERS += runtime/libcohort/cohort.h runtime/libcohort/cohort_work.h \
	runtime/libcohort/cohort_streams.h
pkgconfig_DATA = runtime/libcohort/cohort.pc
runtime_libcohort_libcohort_la_SOURCES = runtime/libcohort/cohort.c runtime/libcohort/cohort.h \
	runtime/libcohort/cohort_internal.h runtime/libcohort/boot_ops.h runtime/libcohort/boot_tcp.c \
	runtime/libcohort/cohort_self.h runtime/libcohort/cohort_work.h \
	runtime/libcohort/cohort_work_private.h runtime/libcohort/cohort_work.c \
	runtime/libcohort/cohort_work_call.c runtime/libcohort/cohort_work_output.c \
	runtime/libcohort/cohort_coord.h \
	runtime/libcohort/cohort_coord.c runtime/libcohort/cohort_streams.h \
	runtime/libcohort/cohort_streams.c
# the work queue starts its coordinator from here (COHORT_WORK_COORD overrides)
runtime_libcohort_libcohort_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DCOHORT_WORK_COORD_PATH='"$(pkglibexecdir)/cohort-work-coord"'
# The PMIx backend's table, where PMIx is found (boot_ops.h).
if HAVE_PMIX
runtime_libcohort_libcohort_la_SOURCES += runtime/libcohort/boot_pmix.c
endif
EXTRA_DIST += runtime/libcohort/boot_pmix.c
# The hwloc-free halves of apply and the planner: libcohort does not link hwloc.
runtime_libcohort_libcohort_la_LIBADD = runtime/coord_start/libcohort_coord_start.la \
	runtime/streams/libcohort_streams_msg.la runtime/work/libcohort_work_msg.la \
	runtime/work/libcohort_work_parts.la \
	runtime/bootstrap/libcohort_bootstrap.la runtime/net/libcohort_net.la \
	runtime/apply/libcohort_apply_base.la runtime/planner/libcohort_planner_base.la \
	$(CRYPTO_LIBS) $(MUNGE_LIBS) $(PMIX_LIBS)
runtime_libcohort_libcohort_la_LDFLAGS = $(HARDEN_LDFLAGS) -version-info 0:0:0 \
	-Wl,--version-script=$(top_srcdir)/runtime/libcohort/cohort.map
EXTRA_runtime_libcohort_libcohort_la_DEPENDENCIES = $(top_srcdir)/runtime/libcohort/cohort.map
EXTRA_DIST += runtime/libcohort/cohort.map
DISTCLEANFILES = runtime/libcohort/cohort.pc

# NCCL communicators: a library of its own, so that programs without NCCL
# never load CUDA.
if HAVE_NCCL
lib_LTLIBRARIES += runtime/libcohort/libcohort-nccl.la
include_HEADERS += runtime/libcohort/cohort_nccl.h
runtime_libcohort_libcohort_nccl_la_SOURCES = runtime/libcohort/cohort_nccl.c \
	runtime/libcohort/cohort_nccl.h
runtime_libcohort_libcohort_nccl_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
runtime_libcohort_libcohort_nccl_la_LIBADD = runtime/libcohort/libcohort.la $(CUDA_LIBS)
runtime_libcohort_libcohort_nccl_la_LDFLAGS = $(HARDEN_LDFLAGS) -version-info 0:0:0
endif
EXTRA_DIST += runtime/libcohort/cohort_nccl.h runtime/libcohort/cohort_nccl.c
