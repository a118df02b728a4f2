#!/bin/bash
# boot-bench.sh - time from the last rank's arrival until every rank holds a
# 128-byte blob broadcast from rank 0 and has passed a barrier: cohort's
# bootstrap (64 ranks per simulated node) and PyTorch's TCPStore (rank 0
# sets a key, everyone waits for it, then a barrier), N processes on this
# machine, both in the same run, REPS (1-9) times each (median, and the
# range). All ranks of a run arrive at once: they sleep until a common
# instant set far enough ahead for every process to have loaded (Python
# ranks import torch first); the largest spread of arrivals is printed
# after the table (PY_MS_PER_RANK: the CPU time, in ms, one Python rank
# takes to load torch, 2500 if unset). Prints a Markdown table; on
# stderr a line per run with its time, the spread of its arrivals and the
# CPU time all of cohort's ranks spent from arrival to the end.
#   bench/boot-bench.sh BUILDDIR ["COHORT_NS"] ["TCPSTORE_NS"] [REPS]
# COHORT_NS: "64 256 1024 4096" if unset; TCPSTORE_NS: "64 256" if unset, ""
# for none (cohort alone, no torch needed).
# BUILDDIR without a Makefile: a copy holding only the built bench/boot_bench
# and tests/bootstrap/spawn, run as is. PYTHON: the interpreter with torch.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: boot-bench.sh BUILDDIR [COHORT_NS] [TCPSTORE_NS]}" && pwd)
cohort_ns=${2:-64 256 1024 4096}
store_ns=${3-64 256}
reps=${4:-1}
if [ -f "$build/Makefile" ]; then
    make -s -C "$build" bench/boot_bench tests/bootstrap/spawn >/dev/null || exit 1
fi
spawn="$build/tests/bootstrap/spawn"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
ulimit -n 65536 2>/dev/null

# span FILE: (max T1 - max T0) in ms over the "T0 T1" lines.
span() { awk 'NF == 2 && $1 ~ /^[0-9]+$/ { if ($1 > a) a = $1; if ($2 > b) b = $2; n++ }
              END { if (n) printf "%.1f", (b - a) / 1e6; else printf "-" }' "$1"; }
ranks() { awk 'NF == 2 && $1 ~ /^[0-9]+$/' "$1" | wc -l; }
# spread FILE: (max T0 - min T0) in ms, how far from simultaneous the arrivals were.
spread() { awk 'NF == 2 && $1 ~ /^[0-9]+$/ { if (!n++ || $1 < a) a = $1; if ($1 > b) b = $1 }
                END { printf "%.1f", (b - a) / 1e6 }' "$1"; }
# cpu FILE: the CPU time (ms) of all ranks between arrival and the end
# (boot_bench's "cpu NS" lines), or "-" where they print none.
cpu() { awk '$1 == "cpu" { s += $2; k++ } END { if (k) printf "%.1f", s / 1e6; else printf "-" }' "$1"; }
cores=$(nproc)
worst_spread=0

# median FILE...: "median (min-max)" of the spans, or the first failure.
median() {
    local f v vals=()
    for f; do
        v=$(span "$f")
        [ "$(ranks "$f")" = "$(cat "$f.n")" ] || { echo "failed ($(head -c 200 "$f.err"))"; return; }
        vals+=("$v")
    done
    printf '%s\n' "${vals[@]}" | sort -n | awk '{ v[NR] = $1 }
        END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
              if (NR > 1) printf "%.1f (%s-%s)", m, v[1], v[NR]; else printf "%.1f", m }'
}
# run NAME N NODES DELAY_MS PROG...: one run into $out/NAME.N.REP (rep from
# $r), all ranks starting DELAY_MS after the launch.
run() {
    local f="$out/$1.$2.$r"
    echo "$2" >"$f.n"
    # appending (O_APPEND): the ranks' lines never overwrite each other
    : >"$f"
    SPAWN_START_DELAY_MS=$4 SPAWN_TIMEOUT=1800 COHORT_TIMEOUT=600 "$spawn" "$2" "$3" -- "${@:5}" \
        >>"$f" 2>"$f.err"
    worst_spread=$(awk -v a="$worst_spread" -v b="$(spread "$f")" 'BEGIN { print (b > a ? b : a) }')
    echo "$1 N=$2 run $r: $(span "$f") ms, arrivals within $(spread "$f") ms, CPU $(cpu "$f") ms" >&2
}

echo "| N | cohort (ms) | root's sockets | TCPStore (ms) | TCPStore / cohort |"
echo "|---|---|---|---|---|"
for n in $cohort_ns; do
    nodes=$(( n / 64 > 0 ? n / 64 : 1 ))
    for r in $(seq "$reps"); do
        run cohort "$n" "$nodes" $((1000 + n * 5 / cores)) "$build/bench/boot_bench"
    done
    c=$(median "$out"/cohort."$n".?)
    sockets=$(awk '/^sockets/ {print $2}' "$out/cohort.$n.1")
    s="not run"
    ratio="-"
    if [[ " $store_ns " == *" $n "* ]]; then
        for r in $(seq "$reps"); do
            run store "$n" "$nodes" $((3000 + n * ${PY_MS_PER_RANK:-2500} / cores)) \
                "${PYTHON:-/usr/bin/python3}" "$here/tcpstore_rank.py"
        done
        s=$(median "$out"/store."$n".?)
        ratio=$(awk -v s="$s" -v c="$c" 'BEGIN { if (c + 0 > 0 && s + 0 > 0) printf "%.1f", s / c; else print "-" }')
    fi
    echo "| $n | $c | $sockets | $s | $ratio |"
done
echo
echo "Arrivals of each run within $worst_spread ms of each other ($cores CPUs)."
