## runtime/store/local.mk - the step's store (PyTorch's rendezvous served
## by cohort): the TCPStore protocol, the keys and waits (no sockets, no
## clock), and the frames between node agents and the store holder.
noinst_LTLIBRARIES += runtime/store/libcohort_store.la
runtime_store_libcohort_store_la_SOURCES = runtime/store/tcpstore.h runtime/store/tcpstore.c \
	runtime/store/store_kv.h runtime/store/store_kv.c runtime/store/store_kv_private.h \
	runtime/store/store_query.c runtime/store/store_watch.c runtime/store/store_msg.h \
	runtime/store/store_msg.c

## One rank of the store benchmark: the store work of init_process_group and
## a barrier in TCPStore's wire protocol, no torch (`make bench/store_bench`;
## bench/store-bench.sh, docs/performance.md, "PyTorch's store").
EXTRA_PROGRAMS += bench/store_bench
bench_store_bench_LDFLAGS = -no-install
EXTRA_DIST += bench/store-bench.sh
