## runtime/apply/local.mk - what the shells do beside planning, in two
## halves: libcohort_apply_base.la reads input files and finds the route to
## MASTER_ADDR (no hwloc; libcohort links only this), libcohort_apply.la
## binds a process and loads a lean topology with hwloc and carries the base
## inside it (the tools and the plugin link it).
noinst_LTLIBRARIES += runtime/apply/libcohort_apply_base.la
runtime_apply_libcohort_apply_base_la_SOURCES = \
	runtime/apply/text_file.c runtime/apply/text_file.h \
	runtime/apply/route.c runtime/apply/route.h \
	runtime/apply/mps_site.c runtime/apply/mps_site.h

noinst_LTLIBRARIES += runtime/apply/libcohort_apply.la
runtime_apply_libcohort_apply_la_SOURCES = runtime/apply/apply.c runtime/apply/apply.h \
	runtime/apply/lean_load.c runtime/apply/lean_load.h \
	runtime/apply/topo_cache.c runtime/apply/topo_cache.h
runtime_apply_libcohort_apply_la_LIBADD = runtime/apply/libcohort_apply_base.la $(HWLOC_LIBS)
