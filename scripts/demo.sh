#!/bin/bash
# demo.sh - cohort in one command on a fresh Debian 12 machine (as root):
# installs what is missing (the build tools, and Slurm, munge, PyTorch for
# the test cluster), builds the tree (in _build/demo, unless BUILDDIR holds
# a build), boots the repo's test cluster (slurmctld and two slurmd hosts,
# each its own network namespace, 8 fake GPUs each) whose nodes present a
# real GPU server's topology (tests/fixtures/dgx-a100.xml: a DGX A100-like
# machine, where GPU i is not on NUMA node i), then runs
#   srun -N2 --ntasks-per-node=4 --gres=gpu:8 --cohort=train --cohort-verbose \
#       python3 examples/ddp_allreduce.py
# (each task prints its plan: its GPU's PCI id, NUMA node and cores, planned
# on that topology and not applied here, then a Gloo allreduce) and
#   srun -N2 --ntasks-per-node=1 --cohort=infer python3 examples/infer_images.py
# (a resnet18 over synthetic images through cohort's work queue, one task
# per node so that each has a CPU of this 2-CPU machine, the second 4x
# slower: each task's share, the makespan against a static split), and
# stops the cluster.
#   scripts/demo.sh [BUILDDIR]
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
say() { printf '== %s\n' "$*"; }
[ "$(id -u)" = 0 ] || { echo "demo.sh: run as root (the test cluster needs namespaces)" >&2; exit 1; }

# --- what is missing ----------------------------------------------------
need=""
for pkg in build-essential autoconf automake libtool pkg-config libhwloc-dev hwloc \
    libjansson-dev nettle-dev libslurm-dev libpmix-dev libmunge-dev python3; do
    dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || need="$need $pkg"
done
if [ -n "$need" ]; then
    say "installing:$need"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need ||
        { echo "demo.sh: apt-get failed" >&2; exit 1; }
fi
cluster="$top/tests/cluster/cluster.sh"
if ! "$cluster" check >/dev/null 2>&1 || ! /usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null; then
    say "installing the test cluster's packages (Slurm, munge, PyTorch)"
    "$cluster" install || { echo "demo.sh: cluster.sh install failed" >&2; exit 1; }
fi
why=$("$cluster" check) || { echo "demo.sh: the test cluster cannot run here: $why" >&2; exit 1; }

# --- the build ------------------------------------------------------------
build=${1:-$top/_build/demo}
if [ ! -e "$build/plugin/.libs/spank_cohort.so" ] || [ ! -e "$build/runtime/libcohort/.libs/libcohort.so.0" ]; then
    say "building in $build"
    mkdir -p "$build" || exit 1
    log="$build/demo-build.log"
    { { [ -x "$top/configure" ] || (cd "$top" && autoreconf -fi); } &&
        (cd "$build" && "$top/configure" && make -j"$(nproc)"); } >"$log" 2>&1 ||
        { tail -20 "$log"; echo "demo.sh: the build failed ($log)" >&2; exit 1; }
fi
build=$(cd "$build" && pwd)

# --- the cluster ---------------------------------------------------------
dir="$build/demo-cluster"
"$cluster" down "$dir" >/dev/null 2>&1
rm -rf "$dir" && mkdir -p "$dir/etc"
echo "required $build/plugin/.libs/spank_cohort.so default=env topology=$top/tests/fixtures/dgx-a100.xml" \
    >"$dir/etc/plugstack.conf"
say "booting head, n1, n2 (plugstack.conf: $(sed "s|$top/||; s|$build/||" "$dir/etc/plugstack.conf"))"
"$cluster" up "$dir" 2 "$top" "$build" >"$dir/up.log" 2>&1 || { tail -5 "$dir/up.log"; exit 1; }
trap '"$cluster" down "$dir" >/dev/null 2>&1; say "cluster stopped"' EXIT
cd "$dir/work" || exit 1
on_head() { "$cluster" exec "$dir" head timeout 600 "$@"; }

say "srun -N2 --ntasks-per-node=4 --gres=gpu:8 --cohort=train --cohort-verbose python3 examples/ddp_allreduce.py"
echo "   (the nodes present a DGX A100-like topology: each task's GPU, NUMA node and cores are"
echo "    planned on it; this machine is another, so the binding is planned, not applied)"
on_head srun -N2 --ntasks-per-node=4 --gres=gpu:8 --cohort=train --cohort-verbose \
    /usr/bin/python3 "$top/examples/ddp_allreduce.py" 2>&1 | sort -V

say "srun -N2 --ntasks-per-node=1 --cohort=infer python3 examples/infer_images.py --images 400 --size 96"
echo "   (cohort's work queue from Python; rank 1 is 4x slower on purpose)"
on_head srun -N2 --ntasks-per-node=1 --cohort=infer \
    --export=ALL,OMP_NUM_THREADS=1,PYTHONPATH="$top/python",COHORT_LIBRARY="$build/runtime/libcohort/.libs/libcohort.so.0",COHORT_WORK_COORD="$build/runtime/coord/cohort-work-coord" \
    /usr/bin/python3 "$top/examples/infer_images.py" --images 400 --size 96 --batch 16 2>&1
