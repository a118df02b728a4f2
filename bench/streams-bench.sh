#!/bin/bash
# streams-bench.sh - stream sets' benchmarks, printed as Markdown tables:
#   placement   bench/place_bench: cohort's placement against modulo
#               hashing and unbounded consistent hashing for STREAMS
#               ("200 2000 20000") streams on WORKERS ("16 256") workers:
#               the most loaded worker against the mean, the streams moved
#               by a death, a join, a stream added or removed, and the time
#               the placement took (pure: one process, no sockets).
#   death       RUNS (20) steps of 16 workers on 2 simulated nodes
#               (tests/bootstrap/spawn running tests/streams/streams_check
#               with STREAMS_TEST_VICTIM=5): 200 streams placed, then rank 5
#               SIGKILLs itself; the time from its kill to the last of its
#               streams being polled as an ASSIGN by another worker (one
#               machine, one CLOCK_MONOTONIC), and the other streams moved.
#   bench/streams-bench.sh BUILDDIR ["SECTIONS"]
# SECTIONS: "placement death" if unset. BUILDDIR is a configured build
# directory of this tree; the script makes what it runs.
set -u
usage="usage: streams-bench.sh BUILDDIR [SECTIONS]"
build=$(cd "${1:?$usage}" && pwd)
sections=${2:-placement death}
runs=${RUNS:-20}
make -s -C "$build" bench/place_bench tests/streams/streams_check tests/bootstrap/spawn \
    runtime/coord/cohort-work-coord >/dev/null || exit 1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
load() { cut -d' ' -f1-3 /proc/loadavg | sed 's/ /, /g'; }

if [[ " $sections " == *" placement "* ]]; then
    echo "### placement"
    echo
    before=$(load)
    "$build/bench/place_bench" "${STREAMS:-200 2000 20000}" "${WORKERS:-16 256}"
    echo
    echo "$(nproc) CPUs. Load average (1, 5, 15 min) before: $before; after: $(load)."
    echo
fi

if [[ " $sections " == *" death "* ]]; then
    echo "### death"
    echo
    before=$(load)
    export COHORT_WORK_COORD="$build/runtime/coord/cohort-work-coord"
    for r in $(seq "$runs"); do
        rm -rf "$out/o" && mkdir "$out/o"
        STREAMS_TEST_OUT="$out/o" STREAMS_TEST_VICTIM=5 \
            "$build/tests/bootstrap/spawn" 16 2 -- "$build/tests/streams/streams_check" \
            >"$out/run.$r" 2>&1
        python3 - "$out/o" >>"$out/results" <<'EOF'
import glob, os, sys
d = sys.argv[1]
try:
    killed = int(open(os.path.join(d, "killed")).read().split()[0])
except (OSError, ValueError, IndexError):
    print("failed"); sys.exit()
ev = []
for f in glob.glob(os.path.join(d, "events.*")):
    r = int(f.rsplit(".", 1)[1])
    ev += [(int(t), r, w, k) for t, w, k, e in (l.split() for l in open(f))]
mine = set()
for t, r, w, k in sorted(ev):
    if r == 5 and t <= killed:
        (mine.add if w == "assign" else mine.discard)(k)
after = [(t, k) for t, r, w, k in ev if w == "assign" and t > killed]
got = {k for t, k in after if k in mine}
if got != mine:
    print("failed"); sys.exit()
last = max([t for t, k in after if k in mine] or [killed])
print("%.3f %d %d" % ((last - killed) / 1e6, len(mine), len({k for t, k in after} - mine)))
EOF
    done
    ok=$(grep -vc failed "$out/results")
    stats=$(grep -v failed "$out/results" | sort -g | awk '{ v[NR] = $1; s += $2; o += $3 }
        END { if (NR) printf "%.3f | %.3f | %.3f | %.1f | %d", v[int((NR + 1) / 2)], v[NR], v[1], s / NR, o }')
    echo "| workers (nodes) | streams | runs right | kill to its last stream reassigned, median (ms) | worst (ms) | best (ms) | the victim's streams (mean) | other streams moved (all runs) |"
    echo "|---|---|---|---|---|---|---|---|"
    echo "| 16 (2) | 200 | $ok of $runs | $stats |"
    echo
    echo "$(nproc) CPUs. Load average (1, 5, 15 min) before: $before; after: $(load)."
fi
