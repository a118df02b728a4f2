## python/local.mk - the Python package `cohort` (pure Python over ctypes):
## installed into python3's site directory with a _config.py naming where
## make install put libcohort and the tools (written at install time, so
## that it names the directories of that install), byte-compiled there;
## checked after installation (installcheck) against the installed headers.
cohort_py = python/cohort/__init__.py python/cohort/__main__.py python/cohort/_core.py \
	python/cohort/_lib.py python/cohort/_progress.py python/cohort/_session.py python/cohort/errors.py python/cohort/info.py \
	python/cohort/output.py python/cohort/streams.py python/cohort/work.py python/cohort/py.typed
EXTRA_DIST += $(cohort_py)
if HAVE_PYTHON
cohortpy_DATA = $(cohort_py)

install-data-hook:
	{ echo '"""cohort._config - where make install put libcohort and the tools."""'; \
	echo 'LIBDIR = "$(libdir)"'; \
	echo 'BINDIR = "$(bindir)"'; } >"$(DESTDIR)$(cohortpydir)/_config.py"
	$(PYTHON) -m compileall -q "$(DESTDIR)$(cohortpydir)"
uninstall-hook:
	rm -rf "$(DESTDIR)$(cohortpydir)/__pycache__" "$(DESTDIR)$(cohortpydir)/_config.py"
	-rmdir "$(DESTDIR)$(cohortpydir)"

# The installed package loads the installed libcohort (no COHORT_LIBRARY;
# under a DESTDIR, the library there) and its prototypes match the
# installed headers.
installcheck-local:
	@if ! $(PYTHON) -c 'import pytest' 2>/dev/null; then \
	echo "installcheck: $(PYTHON) has no pytest: the installed package is not checked"; \
	else cd "$(abs_top_srcdir)/tests/python" && env -u COHORT_LIBRARY \
	$$(test -z "$(DESTDIR)" || echo "COHORT_LIBRARY=$(DESTDIR)$(libdir)/libcohort.so.0") \
	PYTHONPATH="$(DESTDIR)$(cohortpydir)/..:$(abs_top_srcdir)/tests/python" \
	COHORT_INCLUDEDIR="$(DESTDIR)$(includedir)" COHORT_SRCDIR="$(abs_top_srcdir)" \
	$(PYTHON) -c 'import cohort, test_prototypes as t; \
	assert cohort.__file__.startswith("$(DESTDIR)$(cohortpydir)/"), cohort.__file__; \
	assert cohort.api_version() == cohort.API_VERSION; \
	[f() for n, f in sorted(vars(t).items()) if n.startswith("test_") and "layout" not in n]; \
	print("installed package: libcohort API", cohort.api_version(), "prototypes match", \
	      "$(DESTDIR)$(includedir)")'; fi
endif
