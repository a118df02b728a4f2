# test-cluster.sh - sourced (after tap.sh) by the tests that run jobs on
# tests/cluster's cluster with the freshly built plugin:
#   cluster_skip        skip_all where it cannot run (not root, no Slurm, no
#                       namespaces), under the sanitizers (the plugin runs in
#                       slurmstepd, which is not built with them), or without
#                       the plugin
#   cluster_fresh NAME  an empty run directory $dir (tests/NAME under the
#                       build tree) with $dir/etc and $work ($dir/work)
#   cluster_up NODES    boots it (plugstack.conf written before), stopped at
#                       exit; the test then runs in $work
# $cluster is cluster.sh, $plugin the built spank_cohort.so.
cluster="$COHORT_SRCDIR/tests/cluster/cluster.sh"
plugin="$COHORT_BUILDDIR/plugin/.libs/spank_cohort.so"

cluster_skip() {
    [ -n "${COHORT_SANITIZED:-}" ] && skip_all "the plugin runs in slurmstepd, which is not built with the sanitizers"
    [ -e "$plugin" ] || skip_all "spank_cohort.so was not built (no spank.h)"
    why=$("$cluster" check) || skip_all "no test cluster here: $why"
}

cluster_fresh() {
    dir="$COHORT_BUILDDIR/tests/$1"
    work="$dir/work"
    "$cluster" down "$dir" >/dev/null 2>&1
    rm -rf "$dir"
    mkdir -p "$dir/etc" "$work"
}

cluster_up() {
    "$cluster" up "$dir" "$1" "$COHORT_SRCDIR" "$COHORT_BUILDDIR" >"$tmp/up.log" 2>&1 ||
        bail "the test cluster did not start: $(tail -5 "$tmp/up.log")"
    trap '"$cluster" down "$dir"; rm -rf "$tmp"' EXIT
    cd "$work" || bail "no $work"
}
