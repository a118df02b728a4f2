## runtime/relay/local.mk - a node's relays, in one process per node of a
## step (cohort-work-coord's, or the node agent's), and the coordinator's
## side of them (its ranks through the relays at the tree's top).
noinst_LTLIBRARIES += runtime/relay/libcohort_relay.la
runtime_relay_libcohort_relay_la_SOURCES = runtime/relay/relay.c runtime/relay/relay.h \
	runtime/relay/host.c runtime/relay/host.h runtime/relay/peers.c runtime/relay/peers.h
runtime_relay_libcohort_relay_la_LIBADD = -lpthread
