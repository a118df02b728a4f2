#!/bin/bash
# boot-bench-compare.sh - cohort's bootstrap time in two builds, their runs
# interleaved so that a change of load on the machine falls on both: ROUNDS
# rounds; in each, for every N, bench/boot-bench.sh runs REPS times on one
# build and then REPS times on the other (BUILD_A first in odd rounds,
# BUILD_B first in even ones). Measured as boot-bench.sh measures it: from the last
# rank's arrival until every rank holds a 128-byte blob broadcast from rank
# 0 and has passed a barrier, all ranks arriving at once. Prints a Markdown
# table: per N, the median and the range of all ROUNDS x REPS runs of each
# build, B / A of the medians and its 95 % interval (5,000 resamplings of
# the runs, python3); then the same of the CPU time all ranks of a run spent
# in that time (where both builds' boot_bench print it); then the load
# average before and after.
#   bench/boot-bench-compare.sh BUILD_A BUILD_B ["NS"] [ROUNDS] [REPS]
# NS: "64 256" if unset; ROUNDS: 5; REPS: 3 (1-9). TCPStore is not run.
# A run where a rank failed counts as failed and is left out of the figures.
set -u
here=$(cd "$(dirname "$0")" && pwd)
usage="usage: boot-bench-compare.sh BUILD_A BUILD_B [NS] [ROUNDS] [REPS]"
build_a=${1:?$usage}
build_b=${2:?$usage}
ns=${3:-64 256}
rounds=${4:-5}
reps=${5:-3}
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# one BUILD TAG N: a boot-bench.sh call at N; appends "TAG N MS CPU_MS" per
# run (CPU_MS "-" where not printed), or "TAG N failed" once if a run did not
# complete, to $log/runs.
one() {
    "$here/boot-bench.sh" "$1" "$3" "" "$reps" >"$log/table" 2>"$log/err"
    if grep -q '| failed' "$log/table"; then
        echo "$2 $3 failed" >>"$log/runs"
        echo "$2 N=$3: failed: $(grep '| failed' "$log/table")" >&2
        return
    fi
    sed -n "s/^cohort N=\([0-9]*\) run [0-9]*: \([0-9.]*\) ms.*CPU \([0-9.-]*\) ms$/$2 \1 \2 \3/p" \
        "$log/err" >"$log/new"
    echo "$2 N=$3 (ms, CPU ms):" $(awk '{ print $3 "," $4 }' "$log/new") >&2
    cat "$log/new" >>"$log/runs"
}

# stats TAG N [COL]: "median (min-max)" of that build's runs at N, and their
# count: of the times (COL 3, the default) or of the CPU times (COL 4).
stats() {
    local col=${3:-3}
    awk -v t="$1" -v n="$2" -v c="$col" '$1 == t && $2 == n && $3 != "failed" && $c != "-"' \
        "$log/runs" | sort -k"$col,$col"n |
        awk -v c="$col" '{ v[NR] = $c }
             END { if (!NR) { printf "-"; exit }
                   m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                   printf "%.1f (%s-%s), %d runs", m, v[1], v[NR], NR }'
}

# interval N [COL]: the 95 % interval of B / A's medians at N (of column
# COL as in stats), from 5,000 resamplings (with replacement, seeded) of
# each build's runs.
interval() {
    python3 - "$log/runs" "$1" "${2:-3}" <<'EOF2'
import random, statistics, sys
runs = [l.split() for l in open(sys.argv[1])]
col = int(sys.argv[3]) - 1
def of(tag):
    return [float(r[col]) for r in runs
            if r[0] == tag and r[1] == sys.argv[2] and r[2] != "failed" and r[col] != "-"]
a, b = of("A"), of("B")
if not a or not b:
    print("-"); sys.exit()
rng = random.Random(1)
q = sorted(statistics.median(rng.choices(b, k=len(b))) / statistics.median(rng.choices(a, k=len(a)))
           for _ in range(5000))
print("%.2f-%.2f" % (q[124], q[4874]))
EOF2
}

failures() { awk -v t="$1" -v n="$2" '$1 == t && $2 == n && $3 == "failed"' "$log/runs" | wc -l; }

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$log/runs"
for round in $(seq "$rounds"); do
    for n in $ns; do
        if [ $((round % 2)) = 1 ]; then
            one "$build_a" A "$n"
            one "$build_b" B "$n"
        else
            one "$build_b" B "$n"
            one "$build_a" A "$n"
        fi
    done
    echo "round $round of $rounds done; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
echo "| N | A (ms) | B (ms) | B / A (medians) | its 95 % interval | calls with a failed run, A / B |"
echo "|---|---|---|---|---|---|"
for col in 3 4; do
    for n in $ns; do
        a=$(stats A "$n" $col)
        b=$(stats B "$n" $col)
        [ $col = 4 ] && { [ "$a" = - ] || [ "$b" = - ]; } && continue
        ratio=$(awk -v a="${a%% *}" -v b="${b%% *}" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.3f", b / a; else print "-" }')
        label=$n
        [ $col = 4 ] && label="$n, CPU of all ranks"
        echo "| $label | $a | $b | $ratio | $(interval "$n" $col) | $(failures A "$n") / $(failures B "$n") |"
    done
done
echo
echo "A: $build_a; B: $build_b; $rounds rounds of $reps runs each; $(nproc) CPUs."
echo "Load average (1, 5, 15 min) before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg)."
