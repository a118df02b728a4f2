#!/bin/bash
# scale-sim.sh - the work queue simulated at 1,024, 16,384 and 131,072
# ranks (bench/scale_sim: the real scheduler, a simulated clock, a model of
# the coordinator and the network; see its header): 10^8 items, speeds
# 1:2:4, the item time chosen so that the ideal makespan is 400 s at every
# size; each size with the coordinator's measured cost per request (REQ_US,
# 30), with none (what the scheduler alone loses), and with node 1's 8
# workers killed at 200 s; at 131,072 ranks also with requests of 15 and
# 10 us (not measured: what a cheaper request would give). Prints a
# Markdown table.
#   bench/scale-sim.sh BUILDDIR ["SIZES"]
set -u
build=$(cd "${1:?usage: scale-sim.sh BUILDDIR [SIZES]}" && pwd)
sizes=${2:-1024 16384 131072}
req_us=${REQ_US:-30}
make -s -C "$build" bench/scale_sim >/dev/null || exit 1
echo "| ranks | items | item at speed 1 (us) | ideal (s) | makespan (s) | / ideal | requests/s, mean | most in 10 s (/s) | coordinator busy, mean | most in 10 s | scheduler CPU per request (us) | items re-queued | items copied | simulator wall (s) | case |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for n in $sizes; do
    # ideal = 10^8 x item / (n x 7/3) = 400 s
    item=$(awk -v n="$n" 'BEGIN { printf "%d", 400e6 * n * 7 / 3 / 1e8 + 0.5 }')
    cases=("$req_us 0:requests at $req_us us" "0 0:requests free" "$req_us 200:node 1 killed at 200 s")
    [ "$n" -ge 131072 ] && cases+=("15 0:requests at 15 us" "10 0:requests at 10 us")
    for c in "${cases[@]}"; do
        args=${c%%:*}
        row=$("$build/bench/scale_sim" "$n" 100000000 "$item" ${args}) || { echo "| $n | failed | ${c#*:} |"; continue; }
        echo "$row ${c#*:} |"
    done
done
echo
echo "$(nproc) CPUs; $(date -u +%Y-%m-%d)"
