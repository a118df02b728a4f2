## runtime/net/local.mk - the connection layer every part of the runtime
## uses: frames on the wire, proofs of belonging to the step (Nettle's
## HMAC; munge without a secret), the handshake, per-frame MACs, the event
## loop with its listeners, dials and deadlines.
noinst_LTLIBRARIES += runtime/net/libcohort_net.la
runtime_net_libcohort_net_la_SOURCES = \
	runtime/net/wire.c runtime/net/wire.h \
	runtime/net/auth.c runtime/net/auth.h \
	runtime/net/session.c runtime/net/session.h \
	runtime/net/handshake.c runtime/net/handshake.h \
	runtime/net/conn.c runtime/net/conn.h \
	runtime/net/net.c runtime/net/net_dial.c runtime/net/net.h \
	runtime/net/net_pool.c runtime/net/net_origin.c \
	runtime/net/net_private.h
runtime_net_libcohort_net_la_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS) $(MUNGE_CFLAGS)
runtime_net_libcohort_net_la_LIBADD = $(CRYPTO_LIBS) $(MUNGE_LIBS)
