#!/bin/bash
# demo.sh - boots the test cluster (tests/cluster: slurmctld and 2 slurmd
# nodes, each its own network namespace, fake GPUs) with the plugin built in
# BUILDDIR, runs examples/ddp_allreduce.py as
#   srun -N2 --ntasks-per-node=4 --gres=gpu:8 --cohort=train --cohort-verbose
# (each task prints its plan, then a Gloo allreduce), and stops the cluster.
# Needs root and the packages of `tests/cluster/cluster.sh install`.
#   scripts/demo.sh [BUILDDIR]
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top}" && pwd)
plugin="$build/plugin/.libs/spank_cohort.so"
[ -e "$plugin" ] || { echo "demo.sh: no $plugin; build first (README: Build)" >&2; exit 1; }
cluster="$top/tests/cluster/cluster.sh"
dir="$build/demo-cluster"
"$cluster" down "$dir" >/dev/null 2>&1
rm -rf "$dir" && mkdir -p "$dir/etc"
echo "required $plugin default=env" >"$dir/etc/plugstack.conf"
echo "== booting head, n1, n2 (plugstack: $(cat "$dir/etc/plugstack.conf"))"
"$cluster" up "$dir" 2 "$top" "$build" || exit 1
trap '"$cluster" down "$dir"; echo "== cluster stopped"' EXIT
cd "$dir/work" || exit 1
echo "== srun -N2 --ntasks-per-node=4 --gres=gpu:8 --cohort=train --cohort-verbose python3 ddp_allreduce.py"
"$cluster" exec "$dir" head timeout 300 srun -N2 --ntasks-per-node=4 --gres=gpu:8 \
    --cohort=train --cohort-verbose /usr/bin/python3 "$top/examples/ddp_allreduce.py" 2>&1 |
    sort -V
