#!/bin/bash
# watch-bench.sh - how fast the step watch (--cohort-watch) ends a step on
# the test cluster (tests/cluster, 2 nodes; root), and what it costs a
# step that ends well. The training loop is tests/watch.sh's: torch (Gloo,
# CPU), tests/watch/watch_loop.py, 2 nodes x 2 tasks, --cohort=train. Each
# of REPEATS runs waits until all 4 ranks are in their loop, then:
# - killed: SIGKILL to rank 3 (on n2); the time until srun returns;
# - stopped: --cohort-watch=3, SIGSTOP to rank 3; the time until srun
#   returns, less the 3 s the rank may keep the others waiting;
# - link: node n2's eth0 taken down; the time until n1's two tasks are
#   gone (looked at every 50 ms); the link then goes up again and srun is
#   waited for.
# A run counts when srun's stderr carries the watch's line naming rank 3
# (node n2 for the link) and no task is left; the others are counted
# apart, with what went wrong. Then the plugin's cost: srun -N2
# --ntasks-per-node=2 --cohort=train /bin/true, RUNS times with
# --cohort-watch and RUNS times without, interleaved, timed inside the head
# node as bench/srun-overhead.sh times them; an srun that fails is not
# timed but listed with its first lines. Prints Markdown tables (median and
# max; seconds for the cases, milliseconds for srun). The cluster lives in
# BUILDDIR/bench-watch-cluster; hold /tmp/cohort-netns.lock while it runs
# (flock /tmp/cohort-netns.lock bash bench/watch-bench.sh ...).
#   bench/watch-bench.sh BUILDDIR [REPEATS [RUNS]]   (5, 20)
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
build=$(cd "${1:?usage: watch-bench.sh BUILDDIR [REPEATS [RUNS]]}" && pwd)
repeats=${2:-5}
runs=${3:-20}
cluster="$src/tests/cluster/cluster.sh"
plugin="$build/plugin/.libs/spank_cohort.so"
py=/usr/bin/python3
loop="$src/tests/watch/watch_loop.py"
[ -e "$plugin" ] || { echo "no $plugin: build first" >&2; exit 1; }
[ -e "$loop" ] || { echo "no $loop" >&2; exit 1; }
"$py" -c 'import torch.distributed' 2>/dev/null || { echo "$py lacks torch (cluster.sh install)" >&2; exit 1; }
dir="$build/bench-watch-cluster"
"$cluster" down "$dir" >/dev/null 2>&1
rm -rf "$dir" && mkdir -p "$dir/etc" "$dir/results" "$dir/work"
echo "required $plugin default=off topology_cache=$dir/cache" >"$dir/etc/plugstack.conf"
"$cluster" up "$dir" 2 "$build" "$src" || exit 1
trap '"$cluster" down "$dir"' EXIT
cd "$dir/work" || exit 1
# start NAME ARGS... (watch-lib.sh) runs the loop on 2 x 2 tasks in the
# background: srun's output in $res/NAME(.err), the loop's files (pids,
# running marks, the verdict) in $work/NAME, srun's pid in $srun.
work="$dir/work" res="$dir/results" tmp="$dir/results" shape=(-N2 --ntasks-per-node=2)
. "$src/tests/watch/watch-lib.sh" # start, running, left
env="ALL,COHORT_AGENT=$build/runtime/agent/cohort-agent,OMP_NUM_THREADS=1"
env="$env,COHORT_WORK_COORD=$build/runtime/coord/cohort-work-coord"
pid_of() { cat "$work/$1/pid.$2"; }
secs() { awk -v a="$1" -v b="$2" -v less="${3:-0}" 'BEGIN { printf "%.3f", b - a - less }'; }
# note CASE NAME TIME PATTERN: files TIME under CASE when NAME's stderr has
# the line and no task is left, else says why under CASE.bad.
note() {
    local line
    line=$(grep -m1 '^cohort: \(rank\|node\)' "$res/$2.err")
    if echo "$line" | grep -q "$4" && [ -z "$(left "$2")" ]; then
        echo "$3" >>"$res/$1.s"
    else
        echo "$2: ${line:-no line} (left:$(left "$2"); $(grep -v '^cohort: ' "$res/$2.err" | head -2 | tr '\n' ' ' | cut -c1-200))" >>"$res/$1.bad"
    fi
}

# signal CASE SIG LESS PATTERN [OPTS...]: SIG to rank 3 mid-loop; from it
# to srun's return, less LESS; the line must match PATTERN.
signal() {
    local what=$1 name="$1.$i" sig=$2 less=$3 pattern=$4 t0
    shift 4
    start "$name" "$@"
    running "$name" || { wait "$srun"; echo "$name: the loop did not start ($(head -c 300 "$res/$name.err"))" >>"$res/$what.bad"; return; }
    t0=$EPOCHREALTIME
    kill "-$sig" "$(pid_of "$name" 3)"
    wait "$srun"
    note "$what" "$name" "$(secs "$t0" "$EPOCHREALTIME" "$less")" "$pattern"
}

link() {
    local name="link.$i" t0 t1
    start "$name" --cohort-watch
    running "$name" || { wait "$srun"; echo "$name: the loop did not start ($(head -c 300 "$res/$name.err"))" >>"$res/link.bad"; return; }
    t0=$EPOCHREALTIME
    "$cluster" exec "$dir" n2 ip link set eth0 down
    for _ in $(seq 1200); do
        [ -z "$(left "$name" 0 1)" ] && break
        sleep 0.05
    done
    t1=$EPOCHREALTIME
    "$cluster" exec "$dir" n2 ip link set eth0 up
    wait "$srun"
    note link "$name" "$(secs "$t0" "$t1")" "^cohort: node n2 (ranks 2-3) has not been heard from"
}

for i in $(seq 1 "$repeats"); do
    signal killed KILL 0 "^cohort: rank 3 (n2.*) was killed by signal 9 at" --cohort-watch
    signal stopped STOP 3 "^cohort: rank 3 (n2.*) has been stopped for" --cohort-watch=3
    link
done

# time_srun NAME ARGS...: one srun, timed inside the head node; its
# milliseconds go to NAME.ms, or what it said to NAME.bad when it failed.
time_srun() {
    local name=$1 out
    shift
    : >"$res/last.err"
    if out=$("$cluster" exec "$dir" head bash -c '
        t0=$EPOCHREALTIME
        srun "$@" 2>"'"$res/last.err"'" || exit 1
        t1=$EPOCHREALTIME
        echo "${t0/./} ${t1/./}"' _ "$@"); then
        awk '{ printf "%.3f\n", ($2 - $1) / 1000 }' <<<"$out" >>"$res/$name.ms"
    else
        echo "srun failed: $(head -3 "$res/last.err" | tr '\n' ' ')" >>"$res/$name.bad"
    fi
    cat "$res/last.err" >>"$res/$name.err"
}
for _ in $(seq 1 "$runs"); do
    time_srun train -N2 --ntasks-per-node=2 --cohort=train --export="$env" /bin/true
    time_srun watch -N2 --ntasks-per-node=2 --cohort=train --cohort-watch --export="$env" /bin/true
done

median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
most() { sort -n "$1" | tail -1; }
bad() { [ -s "$res/$1.bad" ] && wc -l <"$res/$1.bad" || echo 0; }
row() { # row CASE TEXT TARGET
    if [ -s "$res/$1.s" ]; then
        printf '| %s | %s | %s | %s | %s of %s (%s not) |\n' "$2" "$(median "$res/$1.s")" \
            "$(most "$res/$1.s")" "$3" "$(wc -l <"$res/$1.s")" "$repeats" "$(bad "$1")"
    else
        printf '| %s | - | - | %s | 0 of %s |\n' "$2" "$3" "$repeats"
    fi
}
echo "| case | median (s) | max (s) | the design's | runs right |"
echo "|---|---|---|---|---|"
row killed "SIGKILL to rank 3 -> srun returns" "0.3 s settle, then SIGTERM (target: 2 s)"
row stopped "SIGSTOP to rank 3 -> srun returns, less the 3 s stall (--cohort-watch=3)" "up to 1 s to see it, 1 s to SIGKILL it"
row link "n2's eth0 down -> n1's tasks gone" "9-10 s (10 s after n2's last beat; target: 15 s)"
echo
echo "| srun -N2 --ntasks-per-node=2 --cohort=train /bin/true | median (ms) | max (ms) | runs that ended well | ratio of medians |"
echo "|---|---|---|---|---|"
base=$(median "$res/train.ms")
for c in train watch; do
    m=$(median "$res/$c.ms")
    awk -v c="$c" -v m="$m" -v x="$(most "$res/$c.ms")" -v n="$(wc -l <"$res/$c.ms")" -v b="$base" \
        -v r="$runs" 'BEGIN { printf "| %s | %.1f | %.1f | %d of %d | %.3f |\n", c == "train" ? "without --cohort-watch" : "with --cohort-watch", m, x, n, r, m / b }'
done
for f in "$res"/*.bad; do
    [ -e "$f" ] && { echo; echo "Not counted ($(basename "$f" .bad)):"; sed 's/^/- /' "$f"; }
done
echo
echo "$(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%Y-%m-%d)"
