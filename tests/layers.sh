#!/bin/bash
# layers.sh - the layering of runtime/README.md holds: tests/layers.py over
# the sources and this build's objects (includes and calls only go down, no
# two files call each other both ways, file and function sizes). TAP.
. "$COHORT_SRCDIR/tests/tap.sh"
py=${COHORT_PYTHON:-$(command -v python3)}
[ -x "$py" ] || skip_all "no python3 to run tests/layers.py"
command -v nm >/dev/null || skip_all "no nm to read the objects"
exec "$py" "$COHORT_SRCDIR/tests/layers.py" "$COHORT_SRCDIR" "$COHORT_BUILDDIR"
