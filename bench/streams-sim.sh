#!/bin/bash
# streams-sim.sh - a stream set simulated at 1,024, 16,384 and 131,072
# workers (bench/streams_sim: the real placement on a simulated clock, in
# the order the stream coordinator calls it; see its header): 10^6
# streams of equal cost, workers of capacities 1:2:4 in turn, 8 a node;
# the start (every join, then every add), then node 1's death, then its
# workers joining again, then the steady state (every stream's owner
# reports its load; then 2 s of pings and load reports). Each size
# in its own process (its peak memory its own). Prints a Markdown table,
# then the CPUs and the date.
#   bench/streams-sim.sh BUILDDIR ["SIZES" [STREAMS]]
set -u
build=$(cd "${1:?usage: streams-sim.sh BUILDDIR [SIZES [STREAMS]]}" && pwd)
sizes=${2:-1024 16384 131072}
streams=${3:-1000000}
make -s -C "$build" bench/streams_sim >/dev/null || exit 1
echo "| workers | nodes | streams | start: placement (s) | joins (s) | first add, ring built (s) | adds (s) | of it ticks (s) | start: ASSIGN / REVOKE | most load / bound | node death: placement (s) | streams moved | of them the dead node's, of all it held | death: ASSIGN / REVOKE | most load / bound after | node back: placement (s) | its REVOKEs | set's check (start, death, back, steady) | first reports: placement (s) | steady: placement's CPU | of it ticks | steady: REVOKEs | simulator wall (s) | peak memory (MiB) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for n in $sizes; do
    "$build/bench/streams_sim" "$n" "$streams" || echo "| $n | failed |"
done
echo
echo "$(nproc) CPUs; $(date -u +%Y-%m-%d)"
