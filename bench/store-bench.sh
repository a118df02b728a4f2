#!/bin/bash
# store-bench.sh - PyTorch's store, cohort's (--cohort-store: one node agent
# per simulated node, node 0's agent starting the store holder) against
# PyTorch's own TCPStore (torch 1.x, hosted by one Python process as rank 0
# would host it), both in the same run. N ranks of bench/store_bench (no
# torch: the store work of init_process_group("nccl") and one store-based
# barrier, in TCPStore's wire protocol) on this machine, RANKS_PER_NODE to
# a simulated node (8 if unset) in a block layout (tests/bootstrap/spawn);
# with cohort each node's ranks reach their node's agent, with TCPStore all
# reach the one server. All ranks of a run arrive at once: they sleep until
# a common instant set far enough ahead for every process to have been
# started (1 s + N * MS_PER_RANK / CPUs ahead; MS_PER_RANK, 15 if unset, is
# the CPU time in ms that spawn takes to start one rank). Measured: from the
# last arrival until every rank is through the barrier (the largest end
# time minus the largest arrival time, CLOCK_MONOTONIC). REPS runs of each
# (1-9, 3 if unset; median and range), cohort and TCPStore alternating.
# Prints a Markdown table, then how far apart the arrivals were and the
# time per rank. A failure (ranks missing, an agent or the TCPStore host
# not starting, out of memory, descriptors) shows in its cell with the
# reason.
#   bench/store-bench.sh BUILDDIR ["NS"] [REPS] [RANKS_PER_NODE]
# NS: "64 256 1024" if unset. PYTHON: the interpreter with torch
# (/usr/bin/python3 if unset); without torch the TCPStore column says so.
# BUILDDIR without a Makefile: a copy holding the built bench/store_bench,
# tests/bootstrap/spawn, runtime/agent/cohort-agent and
# runtime/coord/cohort-work-coord, run as is.
set -u
build=$(cd "${1:?usage: store-bench.sh BUILDDIR [NS] [REPS] [RANKS_PER_NODE]}" && pwd)
ns=${2:-64 256 1024}
reps=${3:-3}
per_node=${4:-8}
py=${PYTHON:-/usr/bin/python3}
ms_per_rank=${MS_PER_RANK:-15}
if [ -f "$build/Makefile" ]; then
    make -s -C "$build" bench/store_bench tests/bootstrap/spawn runtime/agent/cohort-agent \
        runtime/coord/cohort-work-coord >/dev/null || exit 1
fi
rank_bin="$build/bench/store_bench"
spawn="$build/tests/bootstrap/spawn"
agent_bin="$build/runtime/agent/cohort-agent"
coord_bin="$build/runtime/coord/cohort-work-coord"
out=$(mktemp -d)
servers=() # the agents or TCPStore host of the current run
cleanup() {
    local p
    for p in $(feeders) "${servers[@]}"; do kill -9 "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$out"
}
trap cleanup EXIT
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null
cores=$(nproc)
secret=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')

# span FILE: (max T1 - max T0) in ms over the "T0 T1" lines.
span() { awk 'NF == 2 && $1 ~ /^[0-9]+$/ { if ($1 > a) a = $1; if ($2 > b) b = $2; n++ }
              END { if (n) printf "%.1f", (b - a) / 1e6; else printf "-" }' "$1"; }
ranks() { awk 'NF == 2 && $1 ~ /^[0-9]+$/' "$1" | wc -l; }
# spread FILE: (max T0 - min T0) in ms, how far from simultaneous the arrivals were.
spread() { awk 'NF == 2 && $1 ~ /^[0-9]+$/ { if (!n++ || $1 < a) a = $1; if ($1 > b) b = $1 }
                END { if (n) printf "%.1f", (b - a) / 1e6; else printf "-" }' "$1"; }
# oneline TEXT: at most 300 characters on one line, no table bars.
oneline() { printf '%s' "$1" | tr '\n|' ' /' | sed 's/  */ /g; s/ $//' | cut -c1-300; }
free_port() { "$py" -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $((20000 + RANDOM % 10000)); }

# median NAME N: "median (min-max)" of the spans of the runs of NAME at N,
# or the first failure.
median() {
    local f v i vals=()
    for ((i = 1; i <= reps; i++)); do
        f="$out/$1.$2.$i"
        if [ -f "$f.fail" ]; then cat "$f.fail"; return; fi
        v=$(span "$f")
        if [ "$(ranks "$f")" != "$(cat "$f.n")" ]; then
            echo "failed: $(ranks "$f") of $(cat "$f.n") ranks through ($(oneline \
                "$(head -n 2 "$f.err"; grep -h '^spawn' "$f")"))"
            return
        fi
        vals+=("$v")
    done
    printf '%s\n' "${vals[@]}" | sort -n | awk '{ v[NR] = $1 }
        END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
              if (NR > 1) printf "%.1f (%s-%s)", m, v[1], v[NR]; else printf "%.1f", m }'
}

# agent N M K HOLDER_PORT STEP: starts node K's agent (spawn's block
# layout: N/M ranks a node, the first N%M nodes one more); its input is a
# pipe from a process (its pid in $out/feed.K) that writes the start record
# and then sleeps, holding it open until killed.
agent() {
    local n=$1 m=$2 k=$3 j gtids list=""
    local here=$((n / m + (k < n % m))) first=$((k * (n / m) + (k < n % m ? k : n % m)))
    for ((j = 0; j < m; j++)); do list+="${list:+,}$((n / m + (j < n % m)))"; done
    gtids=$(seq -s, "$first" $((first + here - 1)))
    (
        echo "$BASHPID" >"$out/feed.$k"
        printf '%s\n' SLURM_JOB_ID=5 "SLURM_STEP_ID=$5" "SLURM_NODEID=$k" \
            "SLURM_STEP_NUM_TASKS=$n" "SLURM_STEP_NODELIST=n[1-$m]" \
            "SLURM_STEP_TASKS_PER_NODE=$list" "SLURM_GTIDS=$gtids" "COHORT_SECRET=$secret" \
            COHORT_STORE_ADDR=127.0.0.1 "COHORT_STORE_PORT=$4" COHORT_TIMEOUT=120 \
            "COHORT_WORK_COORD=$coord_bin" ""
        exec sleep 100000
    ) | "$agent_bin" >"$out/agent.$k.out" 2>"$out/agent.$k.err" &
    servers+=($!)
}

# wait_lines FILE...: waits (30 s at most) until every file holds a line.
wait_lines() {
    local f i missing
    for ((i = 0; i < 600; i++)); do
        missing=0
        for f; do [ -s "$f" ] || missing=1; done
        [ "$missing" = 0 ] && return 0
        sleep 0.05
    done
    return 1
}

# agents N M STEP: node 0's agent (it starts the holder), then the others
# at once; sets $ports ("P0 P1 ..."), or writes the failure to $f.fail.
agents() {
    local n=$1 m=$2 j k hport line why=""
    hport=$(free_port)
    servers=() ports=""
    agent "$n" "$m" 0 "$hport" "$3"
    for ((k = 0; k < m && ${#why} == 0; k++)); do
        wait_lines "$out/agent.$k.out" || why="node $k's agent said nothing in 30 s"
        line=$(head -n 1 "$out/agent.$k.out" 2>/dev/null)
        [ -z "$why" ] && [ "${line%% *}" != port ] &&
            why="node $k's agent: $line $(head -n 2 "$out/agent.$k.err")"
        ports+="${ports:+ }${line#port }"
        if [ "$k" = 0 ] && [ -z "$why" ]; then
            for ((j = 1; j < m; j++)); do agent "$n" "$m" "$j" "$hport" "$3"; done
        fi
    done
    [ -z "$why" ] || { oneline "agents did not start: $why" >"$f.fail"; return 1; }
}

# feeders: the pids of the processes holding the inputs open.
feeders() { cat "$out"/feed.* 2>/dev/null; }

# stop: closes the inputs of the run's agents or host and waits for them
# (10 s at most, then SIGKILL).
stop() {
    local p i
    for p in $(feeders); do kill "$p" 2>/dev/null; done
    for ((i = 0; i < 200; i++)); do
        kill -0 "${servers[@]}" 2>/dev/null || break
        sleep 0.05
    done
    for p in "${servers[@]}"; do kill -9 "$p" 2>/dev/null; done
    wait "${servers[@]}" 2>/dev/null
    servers=()
    rm -f "$out"/feed.* "$out"/agent.* "$out"/host.*
}

# host: one Python process hosting TCPStore (is_master, no waiting for
# workers) on a free port, as rank 0 hosts it; sets $port, or writes the
# failure to $f.fail.
host() {
    local line i
    servers=()
    (
        echo "$BASHPID" >"$out/feed.host"
        exec sleep 100000
    ) | "$py" -c '
import sys
from datetime import timedelta
from torch.distributed import TCPStore
s = TCPStore("127.0.0.1", 0, None, True, timedelta(seconds=600), wait_for_workers=False)
print("port", s.port, flush=True)
sys.stdin.read()  # until the input is closed: the store lives until all ranks are through
' >"$out/host.out" 2>"$out/host.err" &
    servers+=($!)
    for ((i = 0; i < 1200; i++)); do
        [ -s "$out/host.out" ] || ! kill -0 "${servers[0]}" 2>/dev/null && break
        sleep 0.05
    done
    line=$(head -n 1 "$out/host.out")
    port=${line#port }
    [ "${line%% *}" = port ] && return 0
    oneline "TCPStore host did not start: $(tail -n 2 "$out/host.err")" >"$f.fail"
    return 1
}

# run NAME N M PORTS: N store_bench processes (spawn, M nodes) into $f,
# PORTS the port of each node's store (MASTER_PORT where there is one).
run() {
    local var=STORE_RANK_PORTS
    [ "$4" = "${4%% *}" ] && var=MASTER_PORT
    echo "$2" >"$f.n"
    : >"$f"
    env SPAWN_START_DELAY_MS=$((1000 + $2 * ms_per_rank / cores)) SPAWN_TIMEOUT=300 "$var=$4" \
        "$spawn" "$2" "$3" -- "$rank_bin" >>"$f" 2>"$f.err"
    echo "$1 N=$2 run $r: $(span "$f") ms, $(ranks "$f") of $2 ranks, arrivals within $(spread "$f") ms" >&2
}

# blame WHO FILE...: the last 2 lines the servers wrote on stderr, if any,
# put first in the ranks' errors ($f.err), where a failed cell quotes them.
blame() {
    local who=$1
    shift
    [ -n "$(cat "$@" 2>/dev/null)" ] || return 0
    { cat "$@" | tail -n 2 | sed "s/^/$who: /"; cat "$f.err"; } >"$f.err2" && mv "$f.err2" "$f.err"
}

# spreads NAME N: "a-b" ms, the range of the runs' arrival spreads.
spreads() {
    local i
    for ((i = 1; i <= reps; i++)); do
        [ -f "$out/$1.$2.$i" ] && [ ! -f "$out/$1.$2.$i.fail" ] && { spread "$out/$1.$2.$i"; echo; }
    done | grep -v '^-\?$' | sort -n |
        awk 'NR == 1 { a = $1 } { b = $1 } END { if (NR) printf "%s-%s", a, b; else printf "-" }'
}

# per_rank CELL N: the median in microseconds per rank, or "-".
per_rank() { awk -v c="$1" -v n="$2" 'BEGIN { if (c + 0 > 0) printf "%.0f", c * 1000 / n; else print "-" }'; }

has_torch=1
"$py" -c 'import torch.distributed' 2>/dev/null || has_torch=0
notes=()
step=0
echo "| N | nodes | cohort (ms) | TCPStore (ms) | TCPStore / cohort |"
echo "|---|---|---|---|---|"
for n in $ns; do
    m=$((n / per_node > 0 ? n / per_node : 1))
    for r in $(seq "$reps"); do
        step=$((step + 1))
        f="$out/cohort.$n.$r"
        agents "$n" "$m" "$step" && run cohort "$n" "$m" "$ports" && blame agent "$out"/agent.*.err
        [ -f "$f.fail" ] && echo "cohort N=$n run $r: $(cat "$f.fail")" >&2
        stop
        f="$out/store.$n.$r"
        if [ "$has_torch" = 1 ]; then
            host && run store "$n" "$m" "$port" && blame "TCPStore host" "$out/host.err"
            [ -f "$f.fail" ] && echo "store N=$n run $r: $(cat "$f.fail")" >&2
            stop
        else
            echo "not run: $py lacks torch" >"$f.fail"
        fi
    done
    c=$(median cohort "$n")
    s=$(median store "$n")
    ratio=$(awk -v s="$s" -v c="$c" 'BEGIN { if (c + 0 > 0 && s + 0 > 0) printf "%.1f", s / c; else print "-" }')
    echo "| $n | $m | $c | $s | $ratio |"
    notes+=("N=$n: arrivals within $(spreads cohort "$n") ms (cohort), $(spreads store "$n") ms (TCPStore); per rank $(per_rank "$c" "$n") us (cohort), $(per_rank "$s" "$n") us (TCPStore)")
done
echo
printf -- '- %s\n' "${notes[@]}"
echo "- $reps runs each, $per_node ranks per node, $cores CPUs, descriptors $(ulimit -n)."
