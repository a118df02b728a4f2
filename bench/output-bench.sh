#!/bin/bash
# output-bench.sh - what publishing results exactly once costs
# (cohort_work_commit_output), on simulated steps of this machine
# (tests/bootstrap/spawn running tests/work/work_check): WORKERS (16)
# workers on NODES (2) simulated nodes, every queue with a journal, items
# of ITEM_US (2000) microseconds of sleep, leases of at most CAP (64) ids,
# so that a batch is CAP items and its results CAP x BYTES bytes (BYTES,
# 16384: 1 MiB a batch). Three kinds, in turn in each of REPS (5) reps:
#   none     results kept nowhere: cohort_work_commit;
#   hand     each worker writes a batch's results to a file of its own and
#            syncs it, then commits (save, then commit: what a job does by
#            hand, doubling results when it dies between the two);
#   output   cohort_work_commit_output (the worker writes and syncs the
#            part; the coordinator links it after the journal's sync).
# And output again with SMALL_BYTES (1024) per item, to compare the
# coordinator's CPU per part at another payload size. Prints a Markdown
# table: per kind the median wall time of the step (spawn to exit), its
# range, the ratio to none's median, the coordinator's CPU time (its
# final line, COHORT_VERBOSE) and that CPU per GiB and per part published.
# The results go to OUT_DIR (default a temporary directory under /tmp;
# point it at the filesystem to measure, e.g. a shared one).
#
# Usage: bench/output-bench.sh BUILDDIR   (after make check built
# tests/work/work_check)
set -u
build=$(cd "${1:?usage: output-bench.sh BUILDDIR}" && pwd)
spawn=$build/tests/bootstrap/spawn
check=$build/tests/work/work_check
export COHORT_WORK_COORD=$build/runtime/coord/cohort-work-coord
[ -x "$check" ] && [ -x "$spawn" ] || { echo "build tests/work/work_check first (make check)"; exit 1; }
workers=${WORKERS:-16} nodes=${NODES:-2} reps=${REPS:-5} cap=${CAP:-64}
item_us=${ITEM_US:-2000} bytes=${BYTES:-16384} small=${SMALL_BYTES:-1024}
items=${ITEMS:-$((workers * cap * 20))}
dir=$(mktemp -d "${OUT_DIR:-/tmp}/output-bench.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT

# one KIND BYTES: a step; prints "seconds coordinator_cpu parts"
one() {
    local kind=$1 per=$2 extra=()
    rm -rf "$dir/r" "$dir/j" "$dir/hand" && mkdir -p "$dir/hand"
    case $kind in
    hand) extra=(COHORT_TEST_HAND="$dir/hand") ;;
    output*) extra=(COHORT_TEST_OUTPUT="$dir/r") ;;
    esac
    local t0 t1
    t0=$(date +%s.%N)
    env COHORT_TEST_ITEMS="$items" COHORT_TEST_CAP="$cap" COHORT_TEST_US="$item_us" \
        COHORT_TEST_BYTES="$per" COHORT_TEST_JOURNAL="$dir/j" COHORT_VERBOSE=1 "${extra[@]}" \
        "$spawn" "$workers" "$nodes" -- "$check" >"$dir/out" 2>&1
    t1=$(date +%s.%N)
    grep -q "^spawn: $workers exited 0" "$dir/out" || { echo "FAILED: $(tail -3 "$dir/out")" >&2; exit 1; }
    local cpu parts
    cpu=$(sed -n 's/.*coordinator CPU \([0-9.]*\) s.*/\1/p' "$dir/out" | tail -1)
    parts=$(sed -n 's/.* \([0-9]*\) parts published.*/\1/p' "$dir/out" | tail -1)
    echo "$(echo "$t1 - $t0" | bc) ${cpu:-0} ${parts:-0}"
}

kinds="none hand output output-small"
for k in $kinds; do : >"$dir/$k.runs"; done
for r in $(seq "$reps"); do
    for k in $kinds; do
        per=$bytes
        [ "$k" = output-small ] && per=$small
        one "$k" "$per" >>"$dir/$k.runs"
    done
done

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
base=$(cut -d' ' -f1 "$dir/none.runs" | median)
echo "| kind | bytes a batch | wall time, median (range) | vs none | coordinator CPU (median) | per GiB published | per part |"
echo "|---|---|---|---|---|---|---|"
for k in $kinds; do
    per=$bytes
    [ "$k" = output-small ] && per=$small
    w=$(cut -d' ' -f1 "$dir/$k.runs" | median)
    lo=$(cut -d' ' -f1 "$dir/$k.runs" | sort -n | head -1)
    hi=$(cut -d' ' -f1 "$dir/$k.runs" | sort -n | tail -1)
    c=$(cut -d' ' -f2 "$dir/$k.runs" | median)
    p=$(cut -d' ' -f3 "$dir/$k.runs" | median)
    gib=$(echo "$items * $per / 1073741824" | bc -l)
    awk -v k="$k" -v b=$((cap * per)) -v w="$w" -v lo="$lo" -v hi="$hi" -v base="$base" \
        -v c="$c" -v p="$p" -v gib="$gib" 'BEGIN {
        pg = (k ~ /^output/) ? sprintf("%.3f s", c / gib) : "-"
        pp = (k ~ /^output/ && p > 0) ? sprintf("%.0f us", 1e6 * c / p) : "-"
        kb = (k == "none") ? "-" : sprintf("%d KiB", b / 1024)
        printf "| %s | %s | %.2f s (%.2f-%.2f) | %.3fx | %.3f s | %s | %s |\n",
            k, kb, w, lo, hi, w / base, c, pg, pp }'
done
echo
echo "($workers workers on $nodes simulated nodes, $items items of $item_us us, cap $cap, $reps reps; results in $(df -T "$dir" | awk 'NR == 2 {print $2}') at ${OUT_DIR:-/tmp}; load before $(cut -d' ' -f1 /proc/loadavg))"
