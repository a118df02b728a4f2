#!/bin/bash
# watch-sim.sh - the step watch's store holder simulated at 1,024 and
# 16,384 nodes of 8 ranks (bench/watch_sim: the real watch fed as the
# holder feeds it, on a simulated clock; see its header): a training loop
# of 20 collectives a second in each of a rank's two communicators (the
# world and a node-local group, then the world and a group across nodes),
# each agent beating and reporting its ranks' counts every second. For each
# size and layout: a healthy run with the net's work modelled (the work
# coordinator's costs from bench/coord-cost.sh: WAKE_US READ_US FRAME_US,
# 14, 10, 2) and with the watch alone (0 0 0); then a node gone silent, a
# rank killed (its peers failing after it), a rank that starts no further
# collective and a rank stopped, each at 10.37 s, the stall STALL_S (30 s);
# and, without NCCL (no counts: a Gloo loop), a rank stopped and a rank
# hung. The agents form the watch's tree of nodes (watch_tree.h) at its
# default fanout, 128, as in a step watched without the store; the healthy
# and silent runs are repeated with every agent at the holder (fanout 0),
# as in a step whose store is served. Each run in its own process. Prints a
# Markdown table, then the CPUs and the date.
#   bench/watch-sim.sh BUILDDIR ["SIZES"]
set -u
build=$(cd "${1:?usage: watch-sim.sh BUILDDIR [SIZES]}" && pwd)
sizes=${2:-1024 16384}
stall=${STALL_S:-30}
costs="${WAKE_US:-14} ${READ_US:-10} ${FRAME_US:-2}"
make -s -C "$build" bench/watch_sim >/dev/null || exit 1
echo "| nodes | ranks | communicators | case | frames in /s | beats out /s | turns /s | frames a turn | watch CPU in the first reports' second (ms) | watch CPU, mean | of it watch_check + watch_next | watch CPU, busiest second | net, modelled | holder busy, mean | event to verdict (s) | the design's (s) | verdict | right | sockets: holder, busiest agent | simulator wall (s) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for n in $sizes; do
    for layout in node dp; do
        "$build/bench/watch_sim" "$n" "$layout" healthy 20 "$stall" $costs
        "$build/bench/watch_sim" "$n" "$layout" healthy 20 "$stall" 0 0 0 | sed 's/| healthy |/| healthy, the watch alone (net free) |/'
        for c in silent killed hung stopped; do
            "$build/bench/watch_sim" "$n" "$layout" "$c" 20 "$stall" $costs
        done
        for c in healthy silent; do
            WATCH_SIM_FANOUT=0 "$build/bench/watch_sim" "$n" "$layout" "$c" 20 "$stall" $costs |
                sed "s/| $c |/| $c, every agent at the holder (the store's shape) |/"
        done
    done
    for c in stopped hung; do
        "$build/bench/watch_sim" "$n" node "$c" 0 "$stall" $costs
    done
done
echo
echo "$(nproc) CPUs; $(date -u +%Y-%m-%d)"
