#!/bin/bash
# boot-sim.sh - the TCP bootstrap tree simulated at 1,024, 16,384 and
# 131,072 ranks, 8 a node, fanout 128 (bench/boot_sim: tree.c's own tree of
# nodes and tree_open, the handshake's and the frames' crypto and the system
# calls measured on this machine as it starts, a model of the rest: see its
# header), two cases a size: cohort_init alone (its one exchange, a barrier
# of empty blocks), and cohort_init then an allgather of 64-byte blocks (a
# result of RANKS x 72 bytes, which every leader MACs and sends to each of
# its children). Then, unless REAL=0, real bootstraps on this machine beside
# the simulator's prediction of the same: 64 ranks on 8 simulated nodes and
# 256 on 32 (tests/bootstrap/spawn, bench/boot_bench: cohort_init, a 128-byte
# bcast and a barrier, every rank released at one instant; time from the
# last rank's arrival to the last rank's end, as bench/boot-bench.sh; the
# median of REPS runs, 3 if unset). The real runs put every process on this
# machine's few CPUs: they are CPU-bound, where the simulator gives each
# rank a core of its own. Prints Markdown tables, the measured costs, the
# CPUs and the date.
#   bench/boot-sim.sh BUILDDIR ["SIZES"]
set -u
build=$(cd "${1:?usage: boot-sim.sh BUILDDIR [SIZES]}" && pwd)
sizes=${2:-1024 16384 131072}
reps=${REPS:-3}
make -s -C "$build" bench/boot_sim >/dev/null || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cores=$(nproc)

echo "| ranks | nodes | fanout | levels of nodes | exchanges | bootstrap, simulated (ms) | most sockets of a process = listeners + node's ranks + nodes below + parent | its connections below <= fanout + node's tasks (tree.h) | frames sent and received by the busiest process | its CPU (ms) | CPU of all processes (s) | dials refused | simulator wall (s) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for n in $sizes; do
    for x in barrier barrier,allgather64; do
        "$build/bench/boot_sim" "$n" 8 128 "$x" 2>"$tmp/costs" ||
            echo "| $n | failed: $(head -c 200 "$tmp/costs") |"
    done
done
echo
echo "Costs measured by the last run, in us: $(sed 's/^measured (us): //' "$tmp/costs")"

if [ "${REAL:-1}" != 0 ]; then
    make -s -C "$build" bench/boot_bench tests/bootstrap/spawn >/dev/null || exit 1
    ulimit -n 65536 2>/dev/null
    echo
    echo "| ranks | nodes | real on this machine (ms, median of $reps, range) | arrivals spread over (ms, largest) | simulated (ms) | simulated CPU of all processes / $cores CPUs (ms) | sockets of rank 0, real / simulated (the most of any process) |"
    echo "|---|---|---|---|---|---|---|"
    for nn in 64:8 256:32; do
        n=${nn%:*} nodes=${nn#*:} spans=() spread=0 sockets=-
        for r in $(seq "$reps"); do
            SPAWN_START_DELAY_MS=$((1000 + n * 5 / cores)) SPAWN_TIMEOUT=300 COHORT_TIMEOUT=120 \
                "$build/tests/bootstrap/spawn" "$n" "$nodes" -- "$build/bench/boot_bench" \
                >"$tmp/run" 2>"$tmp/err"
            # span: max T1 - max T0; spread: max T0 - min T0 (ms)
            read -r got span s < <(awk 'NF == 2 && $1 ~ /^[0-9]+$/ {
                    if (!k++ || $1 < lo) lo = $1; if ($1 > a) a = $1; if ($2 > b) b = $2 }
                END { printf "%d %.1f %.1f\n", k, (b - a) / 1e6, (a - lo) / 1e6 }' "$tmp/run")
            [ "$got" = "$n" ] || { spans=("failed: $(head -c 200 "$tmp/err")"); break; }
            spans+=("$span")
            sockets=$(awk '/^sockets/ { print $2 }' "$tmp/run")
            spread=$(awk -v a="$spread" -v b="$s" 'BEGIN { print (b > a ? b : a) }')
        done
        real=$(printf '%s\n' "${spans[@]}" | sort -n | awk '/failed/ { print; exit }
            { v[NR] = $1 }
            END { if (NR && !/failed/) printf "%.1f (%s-%s)", v[int((NR + 1) / 2)], v[1], v[NR] }')
        row=$("$build/bench/boot_sim" "$n" $((n / nodes)) 128 barrier,bcast128,barrier 2>/dev/null)
        sim=$(echo "$row" | awk -F'|' '{ gsub(/ /, "", $7); print $7 }')
        cpu=$(echo "$row" | awk -F'|' -v c="$cores" '{ printf "%.2f", $12 * 1000 / c }')
        root=$(echo "$row" | awk -F'|' '{ split($8, w, " "); print w[1] }')
        echo "| $n | $nodes | $real | $spread | $sim | $cpu | $sockets / $root |"
    done
fi
echo
echo "$cores CPUs; $(date -u +%Y-%m-%d)"
