#!/bin/bash
# watch.sh - the step watch (--cohort-watch) under real Slurm: boots
# tests/cluster's cluster (2 nodes) with the freshly built plugin, node
# agent and store holder, and runs an unchanged torch 1.13 training loop
# (Gloo, CPU: tests/watch/watch_loop.py) on 2 nodes x 2 tasks. A rank
# SIGKILLed (with the watch alone, and with --cohort-store too), a rank
# SIGSTOPped, node n2's network link taken down, and a healthy run with
# one step slower than the watch's SECONDS. Each case checks the one line
# that names what happened (and no other), the JSON verdict in
# COHORT_WATCH_FILE, that no task is left, and that the step ended in a
# bound far below the waits it replaces (Gloo's 30 min, SlurmdTimeout's
# 300 s): 60 s. The seconds each took are printed with each result; speed
# is measured by bench/watch-bench.sh. TAP. Skipped with the reason where
# the cluster cannot run, under the sanitizers, or without torch.
. "$COHORT_SRCDIR/tests/tap.sh"
. "$COHORT_SRCDIR/tests/cluster/test-cluster.sh"
. "$COHORT_SRCDIR/tests/watch/watch-lib.sh"
py=/usr/bin/python3
loop="$COHORT_SRCDIR/tests/watch/watch_loop.py"

cluster_skip
"$py" -c 'import torch.distributed' 2>/dev/null || skip_all "$py lacks torch (cluster.sh install)"
cluster_fresh watch-run
echo "required $plugin default=env" >"$dir/etc/plugstack.conf"
cluster_up 2

env="ALL,COHORT_AGENT=$COHORT_BUILDDIR/runtime/agent/cohort-agent,OMP_NUM_THREADS=1"
env="$env,COHORT_WORK_COORD=$COHORT_BUILDDIR/runtime/coord/cohort-work-coord"
shape=(-N2 --ntasks-per-node=2) # start (watch-lib.sh) runs srun with these: 2 nodes of 2 tasks.
# hit NAME SIGNAL RANK: once NAME's loop runs, sends SIGNAL to RANK and waits
# for srun; sets rc (srun's status, or "running" when the loop never ran)
# and took (the seconds from the signal to srun's return, or -).
hit() {
    if running "$1"; then
        local t0
        t0=$(now)
        kill -"$2" "$(cat "$work/$1/pid.$3")"
        wait "$srun"
        rc=$?
        took=$(since "$t0" "$(now)")
    else
        wait "$srun"
        rc=running
        took=-
    fi
}

# --- a rank killed -----------------------------------------------------------
for how in "watch" "watch-store"; do
    opts="--cohort-watch"
    [ "$how" = watch-store ] && opts="--cohort-watch --cohort-store"
    start "$how" $opts
    hit "$how" KILL 3
    named "$how" 'cohort: rank' '^cohort: rank 3 \(n2(, GPU [^)]+)?\) was killed by signal 9 at [0-9]{2}:[0-9]{2}:[0-9]{2}; ending the step$' \
        'v["kind"] == "died" and v["ranks"] == [3] and v["nodes"] == ["n2"] and v["status"] == {"signal": 9}'
    ok $? "$opts: rank 3 SIGKILLed mid-loop: named in one line, the 3 others ended, srun back in $took s (srun $rc; '$line'; left:$(left "$how"); $(why "$tmp/$how"))"
done

# --- a rank stopped ----------------------------------------------------------
start stop --cohort-watch=3
hit stop STOP 1
named stop 'cohort: rank' '^cohort: rank 1 \(n1(, GPU [^)]+)?\) has been stopped for [0-9]+ s; ending the step$' \
    'v["kind"] == "stopped" and v["ranks"] == [1] and v["nodes"] == ["n1"]'
ok $? "--cohort-watch=3: rank 1 SIGSTOPped mid-loop: named in one line, every task ended (the stopped one too), srun back in $took s (srun $rc; '$line'; left:$(left stop); $(why "$tmp/stop"))"

# --- a node's link lost --------------------------------------------------------
start link --cohort-watch=60
cut_link link n2 23
line=$(grep '^cohort: node n2' "$tmp/link.err" | head -1)
echo "$line" | grep -Eq '^cohort: node n2 \(ranks 2-3\) has not been heard from for [0-9]+ s; ending the step$' &&
    [ "$rc" != 0 ] && [ "$rc" != 124 ] && awk -v t="$took" 'BEGIN { exit !(t < 60) }' &&
    [ -z "$(left link)" ] &&
    verdict link 'v["kind"] == "node_lost" and v["nodes"] == ["n2"] and v["ranks"] == [2, 3]'
ok $? "n2's link taken down mid-loop: n2 named with its ranks in a line, n1's tasks ended in $took s, and n2's by its own agent (srun $rc; '$line'; left:$(left link); $(why "$tmp/link"))"

# --- a healthy run with one slow step ------------------------------------------
start slow --cohort-watch=3 --export="$env,COHORT_WATCH_FILE=$work/slow/verdict.json,COHORT_TEST_STEPS=8,COHORT_TEST_SLOW_RANK=2,COHORT_TEST_SLOW_S=8"
wait "$srun"
rc=$?
[ "$rc" = 0 ] && [ "$(grep -c '^done [0-3] 8$' "$tmp/slow")" = 4 ] && [ "$(lines slow)" = 0 ] &&
    [ ! -e "$work/slow/verdict.json" ]
ok $? "--cohort-watch=3, rank 2 computing 8 s in one step while the others wait in all_reduce: never named, the run ends well (srun $rc; $(grep -c '^done' "$tmp/slow") done; $(why "$tmp/slow"))"

# --- steps that end at once ----------------------------------------------------
# n2's one task ends before its agent's link to the holder is up, and Slurm
# kills what is left of the step there right after: a goodbye must still get
# out first, or n2 is taken for lost.
bad=0
for i in $(seq 15); do
    SLURM_TIMELIMIT=2 "$cluster" exec "$dir" head timeout 100 \
        srun -N2 -n4 --cohort=train --cohort-watch --export="$env" /bin/true >"$tmp/quick" 2>"$tmp/quick.err" &&
        [ "$(lines quick)" = 0 ] || { bad=$((bad + 1)); cp "$tmp/quick.err" "$tmp/quick-bad.err"; }
done
[ "$bad" = 0 ]
ok $? "15 watched steps of /bin/true on 3 + 1 tasks: none ended by the watch ($bad were; $(head -c 200 "$tmp/quick-bad.err" 2>/dev/null))"

# --- a stranger ----------------------------------------------------------------
# The user nobody tries PyTorch's TCPStore client on every port the step's
# processes listen on (the holder's among them), while the watch runs.
stranger stranger 3 -N2 --ntasks-per-node=2 --cohort=train --cohort-watch=3 --cohort-store
ok $? "the user nobody on every port of the step's processes, the holder's too, while the watch runs: no rank named, the step ends well (srun $rc; $tried tried; $(why "$tmp/stranger"))"

# --- where the choice comes from, and bad values --------------------------------
cat >"$work/env.sh" <<'SH'
#!/bin/sh
echo "rank=$SLURM_PROCID dir=${COHORT_WATCH_DIR:-none} prof=${NCCL_PROFILER_PLUGIN:-none} master=$MASTER_ADDR"
if [ -n "${COHORT_WATCH_DIR:-}" ]; then
    setpriv --reuid=65534 --regid=65534 --clear-groups touch "$COHORT_WATCH_DIR/rank-9" 2>/dev/null &&
        echo "stranger planted" || echo "stranger refused $(stat -c %a "$COHORT_WATCH_DIR")"
fi
SH
chmod +x "$work/env.sh"
plain() { # plain NAME ARGS...: env.sh on 2 tasks
    local name=$1
    shift
    SLURM_TIMELIMIT=2 "$cluster" exec "$dir" head timeout 100 \
        srun -N2 -n2 --cohort=train --export="$env" "$@" "$work/env.sh" >"$tmp/$name" 2>"$tmp/$name.err"
}
plain on --cohort-watch
[ "$(grep -c 'dir=/dev/shm/cohort-watch-[A-Za-z0-9]\{6\} prof=/.*libcohort-nccl-profiler.so master=n1$' "$tmp/on")" = 2 ]
ok $? "--cohort-watch: each task has its node's watch directory and the profiler plugin, and MASTER_ADDR stays the step's ($(head -1 "$tmp/on"); $(why "$tmp/on"))"
[ "$(grep -c '^stranger refused 700$' "$tmp/on")" = 2 ]
ok $? "the watch directory is 0700: the user nobody cannot plant a record in it ($(grep -m1 '^stranger' "$tmp/on"))"
plain user --cohort-watch --export="$env,NCCL_PROFILER_PLUGIN=/mine.so"
[ "$(grep -c 'prof=/mine.so' "$tmp/user")" = 2 ]
ok $? "a job's own NCCL_PROFILER_PLUGIN is kept ($(head -1 "$tmp/user"))"
plain off
[ "$(grep -c 'dir=none prof=none' "$tmp/off")" = 2 ]
ok $? "without the option nothing is set ($(head -1 "$tmp/off"))"
COHORT_WATCH=5 plain envvar
[ "$(grep -c 'dir=/dev/shm/cohort-watch-' "$tmp/envvar")" = 2 ]
ok $? "COHORT_WATCH=5 exported before srun turns the watch on ($(head -1 "$tmp/envvar"); $(why "$tmp/envvar"))"
plain bad --cohort-watch=soon
[ $? != 0 ] && grep -q "cohort: --cohort-watch='soon'" "$tmp/bad.err"
ok $? "a bad --cohort-watch fails srun in one line ($(grep -m1 'cohort:' "$tmp/bad.err" | cut -c1-200))"

tap_done
