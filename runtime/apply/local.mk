## runtime/apply/local.mk - what the shells do beside planning: binding a
## process, reading input files, finding the route to MASTER_ADDR.
noinst_LTLIBRARIES += runtime/apply/libcohort_apply.la
runtime_apply_libcohort_apply_la_SOURCES = runtime/apply/apply.c runtime/apply/apply.h \
	runtime/apply/text_file.c runtime/apply/text_file.h \
	runtime/apply/route.c runtime/apply/route.h \
	runtime/apply/lean_load.c runtime/apply/lean_load.h
