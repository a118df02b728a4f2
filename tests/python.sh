#!/bin/sh
# python.sh - the Python package's tests (tests/python: pytest, Debian's
# python3-pytest) on the build tree's libcohort, one TAP line per pytest
# test (from pytest's JUnit XML), so that they count like every other test.
# Under the sanitizers the Python interpreter, which is not instrumented,
# loads the instrumented libcohort with ASan's runtime preloaded (leak
# checks off: the interpreter keeps its memory to the end by design).
. "$COHORT_SRCDIR/tests/tap.sh"
py=${COHORT_PYTHON:-}
[ -n "$py" ] || skip_all "no Python package in this build (configure found no python3, or --disable-python)"
"$py" -c 'import pytest' 2>/dev/null || skip_all "$py has no pytest (apt-get install python3-pytest)"
COHORT_LIBRARY="$COHORT_BUILDDIR/runtime/libcohort/.libs/libcohort.so.0"
PYTHONPATH="$COHORT_SRCDIR/python:$COHORT_SRCDIR/tests/python"
COHORT_WORK_COORD="$COHORT_BUILDDIR/runtime/coord/cohort-work-coord"
PATH="$COHORT_BUILDDIR/runtime/tools:$PATH"
export COHORT_LIBRARY PYTHONPATH COHORT_WORK_COORD PATH
if [ -n "${COHORT_SANITIZED:-}" ]; then
    LD_PRELOAD=$(${CC:-cc} -print-file-name=libasan.so)
    ASAN_OPTIONS=detect_leaks=0
    export LD_PRELOAD ASAN_OPTIONS
fi
cd "$tmp" || bail "no $tmp"
"$py" -m pytest -q -p no:cacheprovider --junitxml="$tmp/junit.xml" "$COHORT_SRCDIR/tests/python" >"$tmp/log" 2>&1
[ -s "$tmp/junit.xml" ] || bail "pytest gave no results: $(tail -5 "$tmp/log" | tr '\n' ' ')"
cat "$tmp/log"
unset LD_PRELOAD
"$py" - "$tmp/junit.xml" <<'END'
import sys
import xml.etree.ElementTree as ET
n = 0
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    n += 1
    name = "%s::%s" % (case.get("classname", "").rsplit(".", 1)[-1], case.get("name"))
    bad = case.find("failure")
    if bad is None:
        bad = case.find("error")
    skipped = case.find("skipped")
    if bad is not None:
        print("not ok %d - %s" % (n, name))
        for line in (bad.get("message") or "").splitlines()[:5]:
            print("# " + line)
    elif skipped is not None:
        print("ok %d - %s # SKIP %s" % (n, name, (skipped.get("message") or "").splitlines()[0]))
    else:
        print("ok %d - %s" % (n, name))
print("1..%d" % n)
END
