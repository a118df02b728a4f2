## runtime/bootstrap/local.mk - the runtime's bootstrap over the connection
## layer (runtime/net): the two-level tree, its blocks, and PMIx.
noinst_LTLIBRARIES += runtime/bootstrap/libcohort_bootstrap.la
runtime_bootstrap_libcohort_bootstrap_la_SOURCES = \
	runtime/bootstrap/blocks.c runtime/bootstrap/blocks.h \
	runtime/bootstrap/tree.c runtime/bootstrap/tree.h \
	runtime/bootstrap/tree_exchange.c runtime/bootstrap/tree_private.h
runtime_bootstrap_libcohort_bootstrap_la_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS) $(MUNGE_CFLAGS)
runtime_bootstrap_libcohort_bootstrap_la_LIBADD = $(CRYPTO_LIBS) $(MUNGE_LIBS)
if HAVE_PMIX
runtime_bootstrap_libcohort_bootstrap_la_SOURCES += runtime/bootstrap/pmix_boot.c \
	runtime/bootstrap/pmix_boot.h
runtime_bootstrap_libcohort_bootstrap_la_CFLAGS += $(PMIX_CFLAGS)
runtime_bootstrap_libcohort_bootstrap_la_LIBADD += $(PMIX_LIBS)
endif
EXTRA_DIST += runtime/bootstrap/pmix_boot.c runtime/bootstrap/pmix_boot.h

## The tree simulated at up to 131,072 ranks (`make bench/boot_sim`,
## bench/boot-sim.sh): tree_up_node and tree_open are the real ones.
check_PROGRAMS += bench/boot_sim
bench_boot_sim_SOURCES = bench/boot_sim.c bench/boot_sim_costs.c bench/boot_sim.h
bench_boot_sim_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS)
bench_boot_sim_LDADD = runtime/bootstrap/libcohort_bootstrap.la runtime/net/libcohort_net.la \
	runtime/planner/libcohort_planner_base.la $(CRYPTO_LIBS)
bench_boot_sim_LDFLAGS = -no-install
EXTRA_DIST += bench/boot-sim.sh
