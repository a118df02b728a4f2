## runtime/bootstrap/local.mk - the runtime's bootstrap: frames on the wire,
## proofs of belonging to the step (Nettle's HMAC; munge without a secret),
## the connection layer (handshake, per-frame MACs, the event loop), the
## two-level tree.
noinst_LTLIBRARIES += runtime/bootstrap/libcohort_bootstrap.la
runtime_bootstrap_libcohort_bootstrap_la_SOURCES = \
	runtime/bootstrap/wire.c runtime/bootstrap/wire.h \
	runtime/bootstrap/auth.c runtime/bootstrap/auth.h \
	runtime/bootstrap/session.c runtime/bootstrap/session.h \
	runtime/bootstrap/handshake.c runtime/bootstrap/handshake.h \
	runtime/bootstrap/conn.c runtime/bootstrap/conn.h \
	runtime/bootstrap/net.c runtime/bootstrap/net_dial.c runtime/bootstrap/net.h \
	runtime/bootstrap/net_private.h \
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
