#!/bin/bash
# watch-tree.sh - the step watch's tree of nodes (watch_tree.h) under real
# Slurm: boots tests/cluster's cluster with 4 nodes and runs watched steps of
# one task a node without the store, at COHORT_WATCH_FANOUT=1, so that the
# agents form a chain: n1's (the holder's node) and n2's dial the holder,
# n3's dials n2's, n4's dials n3's. Checked: the holder holds 2 links, not
# 4, and n3's agent one to n2 and one from n4; rank 3 (n4, two agents below
# the holder) SIGKILLed in a torch loop is named in one line and every task
# ends; n3's network link taken down: the holder names n3 from n2's report,
# n4's agent, cut off from n3, dials the holder and is ended by its verdict,
# and n3's agent ends its own task once it reaches no one; a parent whose task
# ended first leaves the tree, and the agent below it dials the holder and
# is still watched (a death after it is named); the user nobody on every
# port of the step's processes (the tree's too) names no one; 10 quick
# steps and a whole healthy loop end with no verdict. As in watch.sh, each time is bounded at
# 60 s and printed, never asserted tighter. TAP. Skipped with the reason
# where the cluster cannot run, under the sanitizers, or without torch.
. "$COHORT_SRCDIR/tests/tap.sh"
. "$COHORT_SRCDIR/tests/cluster/test-cluster.sh"
. "$COHORT_SRCDIR/tests/watch/watch-lib.sh"
py=/usr/bin/python3
loop="$COHORT_SRCDIR/tests/watch/watch_loop.py"

cluster_skip
"$py" -c 'import torch.distributed' 2>/dev/null || skip_all "$py lacks torch (cluster.sh install)"
cluster_fresh watch-tree-run
echo "required $plugin default=env" >"$dir/etc/plugstack.conf"
cluster_up 4

env="ALL,COHORT_AGENT=$COHORT_BUILDDIR/runtime/agent/cohort-agent,OMP_NUM_THREADS=1"
env="$env,COHORT_WORK_COORD=$COHORT_BUILDDIR/runtime/coord/cohort-work-coord,COHORT_WATCH_FANOUT=1"
shape=(-N4 --ntasks-per-node=1 --cohort-watch) # start (watch-lib.sh) runs srun with these: 4 nodes of one task, watched.
# links HOST COMM: the established TCP connections of the processes named COMM on HOST.
links() { "$cluster" exec "$dir" "$1" ss -Htnp state established | grep -c "((\"$2\""; }
# peers HOST: the peer addresses of HOST's agent's established connections.
peers() {
    "$cluster" exec "$dir" "$1" ss -Htnp state established | grep '(("cohort-agent"' |
        awk '{ sub(/:[0-9]+$/, "", $4); gsub(/^\[(::ffff:)?|\]$/, "", $4); print $4 }' | sort | tr '\n' ' '
}
# await FILE_OR_CMD...: runs the command every 0.1 s until it succeeds (30 s at most).
await() {
    local i
    for i in $(seq 300); do "$@" && return 0; sleep 0.1; done
    return 1
}

# --- the tree's shape, and a death two agents below the holder -----------------
start kill
if running kill; then
    holder=$(links n1 cohort-work-coo) n3=$(peers n3)
    t0=$(now)
    kill -KILL "$(cat "$work/kill/pid.3")"
    wait "$srun"
    rc=$? took=$(since "$t0" "$(now)")
else
    wait "$srun"
    rc=running took=- holder=- n3=-
fi
[ "$holder" = 2 ] && [ "$n3" = "10.77.0.12 10.77.0.14 " ]
ok $? "COHORT_WATCH_FANOUT=1 on 4 nodes: the holder holds 2 links (n1's and n2's agents), n3's agent one up to n2 and one from n4 (holder $holder; n3's peers: $n3)"
killed3='^cohort: rank 3 \(n4(, GPU [^)]+)?\) was killed by signal 9 at [0-9:]{8}; ending the step$'
died3='v["kind"] == "died" and v["ranks"] == [3] and v["nodes"] == ["n4"]'
named kill 'cohort: rank' "$killed3" "$died3"
ok $? "rank 3 on n4, two agents below the holder, SIGKILLed mid-loop: named in one line, the 3 others ended, srun back in $took s (srun $rc; '$line'; left:$(left kill); $(why "$tmp/kill"))"

# --- a middle node's link lost ---------------------------------------------------
start link
cut_link link n3 ""
named link 'cohort: node' '^cohort: node n3 \(rank 2\) has not been heard from for [0-9]+ s; ending the step$' \
    'v["kind"] == "node_lost" and v["nodes"] == ["n3"] and v["ranks"] == [2]'
ok $? "n3's link taken down mid-loop: the holder names n3 from n2's report in one line; n4, cut off below it, dials the holder and is ended, and n3 ends its own; none left after $took s (srun $rc; '$line'; left:$(left link); $(why "$tmp/link"))"

# --- a parent leaves first -------------------------------------------------------
# Rank 1 (n2, n3's parent in the tree) ends well once n3's agent is seen
# linked to n2's; n3's agent then dials the holder (seen: a link to n1),
# and rank 3 (n4, below n3) dies after that: still named.
cat >"$work/leave.sh" <<'SH'
#!/bin/sh
echo $$ >"$1/pid.$SLURM_PROCID"
case $SLURM_PROCID in
1) while [ ! -e "$1/leave1" ]; do sleep 0.1; done; exit 0 ;;
3) while [ ! -e "$1/die3" ]; do sleep 0.1; done; kill -KILL $$ ;;
*) sleep 100 ;;
esac
SH
chmod +x "$work/leave.sh"
start leave -- "$work/leave.sh" "$work/leave"
pids() { [ "$(ls "$work/leave"/pid.* 2>/dev/null | wc -l)" = 4 ]; }
via() { case " $(peers n3)" in *" $1 "*) return 0 ;; esac; return 1; }
before=- after=-
if await pids && await via 10.77.0.12; then
    before=$(peers n3)
    touch "$work/leave/leave1"
    await via 10.77.0.11 && after=$(peers n3)
fi
t0=$(now)
touch "$work/leave/die3"
wait "$srun"
rc=$? took=$(since "$t0" "$(now)")
named leave 'cohort: rank' "$killed3" "$died3" && [ "$after" != - ]
ok $? "n2's task ends well first: n3's agent leaves n2 for the holder (its peers $before-> $after), and rank 3 on n4 killed after that is named; srun back in $took s (srun $rc; '$line'; left:$(left leave); $(why "$tmp/leave"))"

# --- a stranger ------------------------------------------------------------------
# The user nobody tries PyTorch's TCPStore client on every port the step's
# processes listen on, the tree's ports of n2's and n3's agents among them.
stranger stranger 6 -N4 --ntasks-per-node=1 --cohort=train --cohort-watch=3
ok $? "the user nobody on every port of the step's processes, the tree's too, while the watch runs: no rank named, the step ends well (srun $rc; $tried tried; $(why "$tmp/stranger"))"

# --- healthy steps -----------------------------------------------------------------
bad=0
for i in $(seq 10); do
    SLURM_TIMELIMIT=2 "$cluster" exec "$dir" head timeout 100 \
        srun -N4 -n4 --cohort=train --cohort-watch --export="$env" /bin/true >"$tmp/quick" 2>"$tmp/quick.err" &&
        [ "$(lines quick)" = 0 ] || { bad=$((bad + 1)); cp "$tmp/quick.err" "$tmp/quick-bad.err"; }
done
[ "$bad" = 0 ]
ok $? "10 watched steps of /bin/true on the chain of 4 nodes: none ended by the watch ($bad were; $(head -c 200 "$tmp/quick-bad.err" 2>/dev/null))"

start healthy --export="$env,COHORT_WATCH_FILE=$work/healthy/verdict.json,COHORT_TEST_STEPS=40"
wait "$srun"
rc=$?
[ "$rc" = 0 ] && [ "$(grep -c '^done [0-3] 40$' "$tmp/healthy")" = 4 ] && [ "$(lines healthy)" = 0 ] &&
    [ ! -e "$work/healthy/verdict.json" ]
ok $? "a healthy loop of 40 steps through the tree: never named, the run ends well (srun $rc; $(grep -c '^done' "$tmp/healthy") done; $(why "$tmp/healthy"))"

tap_done
