#!/bin/bash
# srun-overhead.sh - what the plugin costs a job: boots the test cluster
# (tests/cluster, 2 nodes), then times `srun -N2 -n8 true` ROUNDS times in
# each configuration, interleaved round by round so that drift hits all
# alike: no plugin in plugstack.conf; the plugin with default=off (installed,
# the job did not ask); default=env; --cohort=train; --cohort=train with the
# plugin's own topology cache switched off (topology_cache=no: discovery in
# every step); --cohort=train with an admin's topology= file. The plugin's
# own cache (written by slurmd at its start) is in a directory of the run.
# Prints a Markdown table of medians and ratios, and the plugin's own time
# per node and per task (from --cohort-verbose, in runs of their own). Needs
# root, like the test cluster.
#   bench/srun-overhead.sh BUILDDIR [ROUNDS]
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: srun-overhead.sh BUILDDIR [ROUNDS]}" && pwd)
rounds=${2:-40}
cluster="$here/../tests/cluster/cluster.sh"
plugin="$build/plugin/.libs/spank_cohort.so"
[ -e "$plugin" ] || { echo "no $plugin: build first" >&2; exit 1; }
dir="$build/bench-cluster"
"$cluster" down "$dir" >/dev/null 2>&1
rm -rf "$dir" && mkdir -p "$dir/etc" "$dir/results"
# slurmd writes the plugin's own cache at its start
echo "required $plugin default=off topology_cache=$dir/cache" >"$dir/etc/plugstack.conf"
"$cluster" up "$dir" 2 "$build" "$here/.." || exit 1
trap '"$cluster" down "$dir"' EXIT
cache="$dir/topology.xml"
"$cluster" exec "$dir" n1 "$build/runtime/tools/cohort-info" --export-topology "$cache" || exit 1

configs="none off env train train-nocache train-cache"
own="topology_cache=$dir/cache"
plugstack() {
    case $1 in
    none) : ;;
    off | train) echo "required $plugin default=off $own" ;;
    env) echo "required $plugin default=env $own" ;;
    train-nocache) echo "required $plugin default=off topology_cache=no" ;;
    train-cache) echo "required $plugin default=off topology=$cache" ;;
    esac >"$dir/etc/plugstack.conf"
}
# time_srun NAME SRUN_ARGS...: one srun, timed inside the head node; its
# milliseconds go to NAME.ms, its stderr to NAME.err.
time_srun() {
    local name=$1
    shift
    "$cluster" exec "$dir" head bash -c '
        t0=$EPOCHREALTIME
        srun "$@" 2>>"'"$dir/results/$name.err"'" || exit 1
        t1=$EPOCHREALTIME
        echo "${t0/./} ${t1/./}"' _ "$@" |
        awk '{ printf "%.3f\n", ($2 - $1) / 1000 }' >>"$dir/results/$name.ms"
}
cd "$dir/work" || exit 1
for round in $(seq 1 "$rounds"); do
    for c in $configs; do
        plugstack "$c"
        case $c in
        train*) time_srun "$c" -N2 -n8 --cohort=train true || exit 1
            # the plugin's own times, from its verbose line: one task alone,
            # and 8 tasks on 2 nodes (contending for this machine's CPUs)
            time_srun "$c-verbose-1" -N1 -n1 --cohort=train --cohort-verbose true || exit 1
            time_srun "$c-verbose-8" -N2 -n8 --cohort=train --cohort-verbose true || exit 1 ;;
        *) time_srun "$c" -N2 -n8 true || exit 1 ;;
        esac
    done
done

median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
base=$(median "$dir/results/none.ms")
echo "| configuration | median of $rounds (ms) | ratio to no plugin |"
echo "|---|---|---|"
for c in $configs; do
    m=$(median "$dir/results/$c.ms")
    awk -v c="$c" -v m="$m" -v b="$base" 'BEGIN { printf "| %s | %.1f | %.3f |\n", c, m, m / b }'
done
echo
echo "| plugin time (--cohort-verbose) | node setup, median (ms) | per task, median (ms) |"
echo "|---|---|---|"
for c in train train-nocache train-cache; do
    for n in 1 8; do
        r="$dir/results/$c-verbose-$n"
        sed -n 's/.*node setup \([0-9.]*\) ms, task \([0-9.]*\) ms.*/\1 \2/p' "$r.err" >"$r.plugin"
        cut -d' ' -f1 "$r.plugin" >"$r.setup"
        cut -d' ' -f2 "$r.plugin" >"$r.task"
        printf '| %s, %s | %.2f | %.3f |\n' "$c" "$([ $n = 1 ] && echo "-N1 -n1" || echo "-N2 -n8")" \
            "$(median "$r.setup")" "$(median "$r.task")"
    done
done
