## runtime/apply/local.mk - applying a plan to a process (binding).
noinst_LTLIBRARIES += runtime/apply/libcohort_apply.la
runtime_apply_libcohort_apply_la_SOURCES = runtime/apply/apply.c runtime/apply/apply.h
