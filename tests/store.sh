#!/bin/bash
# store.sh - PyTorch's store served by cohort (--cohort-store) under real
# Slurm: boots tests/cluster's cluster (2 nodes) with the freshly built
# plugin, node agent and store holder, and runs unchanged torch 1.13 (Gloo,
# CPU) scripts: the env:// rendezvous, the store-based barrier, new_group,
# the store's own operations, a DDP training loop, examples/ddp_allreduce.py;
# a work queue in the same step, its relays run by the node agents;
# a rank SIGKILLed while the others initialize (every other rank fails,
# none hangs, each told in its stderr which key it waits for and which rank
# is gone); a node's agent SIGKILLed while the step runs (that node's
# tasks told in one line each by the plugin, and the node's slurmd log
# says so; the other node's by the store holder; all fail with PyTorch's
# error); a stranger (the user nobody, from
# a copy of its client in the node's /tmp) trying TCPStore's SET and GET on
# every port the step's processes listen on, with and without the option
# (without it, rank 0's TCPStore takes the stranger's key: the test can
# tell); the option's sources (srun, COHORT_STORE, plugstack store=) and
# its one-line failures. No timing is judged. TAP. Skipped with the reason
# where the cluster cannot run, under the sanitizers, or without torch.
. "$COHORT_SRCDIR/tests/tap.sh"
. "$COHORT_SRCDIR/tests/cluster/test-cluster.sh"
py=/usr/bin/python3
scripts="$COHORT_SRCDIR/tests/store"

cluster_skip
"$py" -c 'import torch.distributed' 2>/dev/null || skip_all "$py lacks torch (cluster.sh install)"
cluster_fresh store-run
plugstack() { echo "required $plugin default=env $*" >"$dir/etc/plugstack.conf"; }
plugstack
cluster_up 2

env="ALL,COHORT_AGENT=$COHORT_BUILDDIR/runtime/agent/cohort-agent,OMP_NUM_THREADS=1"
env="$env,COHORT_WORK_COORD=$COHORT_BUILDDIR/runtime/coord/cohort-work-coord"
# run OUT ARGS...: srun -N2 ARGS on the head node, bounded; stdout to OUT,
# stderr to OUT.err. Returns srun's status.
run() {
    local out=$1
    shift
    SLURM_TIMELIMIT=3 "$cluster" exec "$dir" head timeout 150 \
        srun -N2 --cohort=train --export="$env" "$@" >"$out" 2>"$out.err"
}
why() { grep -v '^srun: ' "$1.err" | head -3 | cut -c1-200 | tr '\n' ';'; }
store="--ntasks-per-node=4 --cohort-store"

# --- unchanged scripts through the node agents -----------------------------
run "$tmp/ops" $store "$py" "$scripts/store_ops.py"
ok $? "store_ops.py with --cohort-store on 2x4: exits 0 ($(why "$tmp/ops"))"
[ "$(grep -c '^store ok [0-7] MASTER_ADDR=127.0.0.1 TORCHELASTIC_USE_AGENT_STORE=True$' "$tmp/ops")" = 8 ]
ok $? "init_process_group (env://), its store-based barrier, new_group and a subgroup all_reduce, barrier, the store's set/get/add/wait/compare_set/delete_key/num_keys: right on all 8 ranks, each reaching its node's agent on 127.0.0.1 ($(grep -m1 FAILED "$tmp/ops"))"

run "$tmp/ddp" $store "$py" "$COHORT_SRCDIR/tests/cluster/ddp_train.py"
sums=$(awk '/^params/ {print $3}' "$tmp/ddp" | sort -u)
[ "$(grep -c '^params' "$tmp/ddp")" = 8 ] && [ "$(echo "$sums" | wc -l)" = 1 ]
ok $? "a DDP training loop (gloo) with --cohort-store, 2x4: identical parameters on all 8 ranks ($(echo $sums | head -c 40); $(why "$tmp/ddp"))"

run "$tmp/allreduce" $store "$py" "$COHORT_SRCDIR/examples/ddp_allreduce.py"
[ "$(grep -c 'allreduce(sum of ranks)=28 expected=28' "$tmp/allreduce")" = 8 ]
ok $? "examples/ddp_allreduce.py with --cohort-store: 8 ranks, the right sum ($(why "$tmp/allreduce"))"

# --- the store and a work queue: one process per node ----------------------
# The node agent runs the queue's relay too: no cohort-relay process is
# started, and the agent has a thread of that name.
qenv="$env,COHORT_LIBRARY=$COHORT_BUILDDIR/runtime/libcohort/.libs/libcohort.so.0"
qenv="$qenv,PYTHONPATH=$COHORT_SRCDIR/python"
run "$tmp/queue" $store --export="$qenv" "$py" "$scripts/store_queue.py"
total=$(awk '/^rank [0-9]+: [0-9]+ items$/ {s += $3} END {print s + 0}' "$tmp/queue")
[ "$(grep -c '^node [01]: relay children 0, agent relay threads [1-9]' "$tmp/queue")" = 2 ] &&
    [ "$total" = 800 ]
ok $? "with --cohort-store, a work queue's relay on each node runs in the node agent: one process per node for the store and the queue ($(grep '^node' "$tmp/queue" | sort | tr '\n' ';'); $total of 800 items; $(why "$tmp/queue"))"

# --- a rank killed while the others initialize ------------------------------
run "$tmp/kill" $store --export="$env,COHORT_TEST_VICTIM=3,COHORT_TEST_TIMEOUT=15" \
    "$py" "$scripts/store_kill.py"
rc=$?
failed=$(grep -c '^failed [0-7]: ' "$tmp/kill")
named=$(grep -c "^cohort: store: rank 3 ended (killed by signal 9); this rank has waited over 1 s for key '.*', which may never come" "$tmp/kill.err")
[ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$failed" = 7 ] && [ "$named" = 7 ] &&
    ! grep -q '^joined' "$tmp/kill"
ok $? "rank 3 SIGKILLed before init_process_group: the 7 others fail with PyTorch's error within their timeout (srun $rc, not the test's bound), each told which key it waits for and that rank 3 was killed ($failed failed, $named told; $(grep -m1 '^cohort: store' "$tmp/kill.err" | cut -c1-160))"

# --- a node agent killed while the step runs --------------------------------
# Each task's stderr is a file of its own (appended to, as a pipe is).
run "$tmp/dies" --ntasks-per-node=2 --cohort-store --open-mode=append \
    --error="$work/dies-%t.err" --export="$env,COHORT_TEST_TIMEOUT=15" \
    "$py" "$scripts/store_agent_dies.py"
rc=$?
own=$(cat "$work"/dies-[23].err 2>/dev/null | grep -c "^cohort: store: the node agent of node 1 (n2) died while the step was running: this task's store calls fail from now on")
others=$(cat "$work"/dies-[01].err 2>/dev/null | grep -c "^cohort: store: the store agent of node 1 is gone, its ranks with it; this rank has waited over 1 s for key '.*never'")
[ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$(grep -c '^failed [0-3]: ' "$tmp/dies")" = 4 ] &&
    [ "$own" = 2 ] && [ "$others" = 2 ] && ! cat "$work"/dies-*.err | grep -q 'agent of node 0'
ok $? "node 1's agent SIGKILLed after init_process_group: its node's 2 tasks are each told in one line and fail with PyTorch's error, the other node's 2 are told by the store holder and fail at their timeout (srun $rc; $(grep -c '^failed' "$tmp/dies") failed; $own and $others told: $(cat "$work/dies-2.err" 2>/dev/null | grep -m1 '^cohort: store' | cut -c1-200); $(why "$tmp/dies"))"
# The plugin's line in n2's slurmd log is written before the step ends there.
logged=$(grep -c "cohort: store: the node agent died while the step was running: 2 of the node's 2 running tasks were told so in their stderr$" "$dir/log/slurmd-n2.log")
[ "$logged" = 1 ]
ok $? "n2's slurmd log says in one line that its 2 running tasks were told ($(grep -m1 'the node agent died' "$dir/log/slurmd-n2.log" | cut -c1-240))"

# --- a stranger on every port ----------------------------------------------
stranger() { # stranger NAME ARGS...: the step, its stranger lines in $tmp/NAME.lines
    mkdir -p "$work/$1" && chmod 777 "$work/$1"
    local name=$1
    shift
    run "$tmp/$name" --ntasks-per-node=2 "$@" "$py" "$scripts/store_stranger.py" "$work/$name"
    cat "$work/$name"/stranger-* >"$tmp/$name.lines" 2>/dev/null
}
stranger strange-on --cohort-store
tried=$(wc -l <"$tmp/strange-on.lines")
refused=$(grep -c ' refused: ' "$tmp/strange-on.lines")
[ "$(grep -c '^step ok' "$tmp/strange-on")" = 4 ] && [ "$tried" -ge 3 ] && [ "$refused" = "$tried" ]
ok $? "with --cohort-store, the user nobody on either node gets nothing from TCPStore's SET and GET on MASTER_ADDR:MASTER_PORT and every port the step's processes listen on, and the step finishes with its store intact ($refused of $tried refused: $(tr '\n' ';' <"$tmp/strange-on.lines" | cut -c1-300))"
stranger strange-off --cohort-store=no
[ "$(grep -c '^step ok' "$tmp/strange-off")" = 4 ] &&
    grep -q ' accepted: read back ' "$tmp/strange-off.lines"
ok $? "without it, rank 0's own TCPStore gives the stranger its key back (so the test can tell: $(head -1 "$tmp/strange-off.lines"))"

# --- where the choice comes from ---------------------------------------------
cat >"$work/env.sh" <<'SH'
#!/bin/sh
echo "rank=$SLURM_PROCID master=$MASTER_ADDR:$MASTER_PORT agent=${TORCHELASTIC_USE_AGENT_STORE:-none} step=${COHORT_MASTER_ADDR:-none}"
SH
chmod +x "$work/env.sh"
served() { [ "$(grep -c 'master=127.0.0.1:[0-9]* agent=True step=n1$' "$1")" = "$2" ]; }
plain() { [ "$(grep -c 'master=n1:[0-9]* agent=none step=none$' "$1")" = "$2" ]; }
run "$tmp/off" -n2 "$work/env.sh"
plain "$tmp/off" 2
ok $? "a job without the option: MASTER_ADDR is task 0's host, no agent store ($(head -1 "$tmp/off"))"
COHORT_STORE=yes run "$tmp/envvar" -n2 "$work/env.sh"
served "$tmp/envvar" 2
ok $? "COHORT_STORE=yes exported before srun serves the store ($(head -1 "$tmp/envvar"; why "$tmp/envvar"))"
plugstack store=yes
run "$tmp/site" -n2 "$work/env.sh"
served "$tmp/site" 2
ok $? "plugstack store=yes is the site's default ($(head -1 "$tmp/site"))"
run "$tmp/site-no" -n2 --cohort-store=no "$work/env.sh"
plain "$tmp/site-no" 2
ok $? "--cohort-store=no wins over the site's default ($(head -1 "$tmp/site-no"))"
plugstack
run "$tmp/user" -n2 --cohort-store --export="$env,MASTER_PORT=29999" "$work/env.sh"
[ "$(grep -c 'master=n1:29999 agent=none' "$tmp/user")" = 2 ] &&
    grep -q "cohort: note: --cohort-store: the job sets MASTER_ADDR or MASTER_PORT itself" "$tmp/user.err"
ok $? "a job that sets MASTER_PORT keeps it, and is told in one line that the store stays its rank 0's ($(head -1 "$tmp/user"); $(why "$tmp/user"))"
run "$tmp/bad" -n2 --cohort-store=maybe "$work/env.sh"
[ $? != 0 ] && grep -q "cohort: --cohort-store='maybe' is not yes or no" "$tmp/bad.err"
ok $? "a bad --cohort-store fails srun in one line ($(why "$tmp/bad"))"
run "$tmp/noagent" -n2 --cohort-store --export="$env,COHORT_AGENT=/nonexistent/cohort-agent" "$work/env.sh"
[ $? != 0 ] && [ ! -s "$tmp/noagent" ] &&
    grep -q "cohort: --cohort-store: the node agent /nonexistent/cohort-agent exited as it started" "$tmp/noagent.err"
ok $? "an agent that cannot start fails the tasks with one line, never a silent fall back to an open store ($(why "$tmp/noagent"))"

tap_done
