#!/bin/bash
# scale-sim.sh - the work queue simulated at 1,024, 16,384 and 131,072
# ranks (bench/scale_sim: the real scheduler and the real relays' tree, a
# simulated clock, a model of the coordinator's loop and the network; see
# its header): 10^8 items, speeds 1:2:4, the item time chosen so that the
# ideal makespan is 400 s at every size; each size with the coordinator's
# costs fitted to bench/coord-cost.sh's runs (WAKE_US READ_US FRAME_US:
# 14, 10 and 2 us; docs/performance.md, "Scale"), with none (what the scheduler and the
# network alone lose), with node 1's 8 workers killed at 200 s, and with
# the coordinator's host (node 0) killed at 200 s and the step run again
# with its journal 30 s later; at 131,072 ranks also with the split of
# perf's profile (8, 13, 2) and with every cost doubled. Prints a Markdown
# table.
#   bench/scale-sim.sh BUILDDIR ["SIZES"]
set -u
build=$(cd "${1:?usage: scale-sim.sh BUILDDIR [SIZES]}" && pwd)
sizes=${2:-1024 16384 131072}
costs="${WAKE_US:-14} ${READ_US:-10} ${FRAME_US:-2}"
make -s -C "$build" bench/scale_sim >/dev/null || exit 1
echo "| ranks | items | item at speed 1 (us) | ideal (s) | makespan (s) | / ideal | frames/s, mean | most in 10 s (/s) | frames per read | coordinator busy, mean | most in 10 s | scheduler CPU per frame (us) | items re-queued | items copied | relay levels | coordinator's sockets | a relay's most | simulator wall (s) | case |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for n in $sizes; do
    # ideal = 10^8 x item / (n x 7/3) = 400 s
    item=$(awk -v n="$n" 'BEGIN { printf "%d", 400e6 * n * 7 / 3 / 1e8 + 0.5 }')
    cases=("$costs:costs measured" "0 0 0:coordinator free" "$costs 200 node:node 1 killed at 200 s"
           "$costs 200 coord 30:coordinator's host killed at 200 s, rerun 30 s later")
    [ "$n" -ge 131072 ] && cases+=("8 13 2:costs split as perf's profile" "28 20 4:costs doubled")
    for c in "${cases[@]}"; do
        args=${c%%:*}
        row=$("$build/bench/scale_sim" "$n" 100000000 "$item" ${args}) || { echo "| $n | failed | ${c#*:} |"; continue; }
        echo "$row ${c#*:} |"
    done
done
echo
echo "$(nproc) CPUs; $(date -u +%Y-%m-%d)"
