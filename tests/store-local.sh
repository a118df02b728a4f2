#!/bin/bash
# store-local.sh - cohort's node agents and store holder without Slurm, as
# the plugin starts them (a start record on standard input, "ended RANK
# STATUS" lines after), with PyTorch's own clients from this machine's
# torch (1.x here, 2.x on the GPU machine): every TCPStore query; an
# unchanged init_process_group (Gloo) on one node and across two agents; a
# rank SIGKILLed before it joins (the others fail, none hangs, each told in
# its stderr which key it waits for); the job's user served and the user
# nobody refused on the same port; the holder's port taken first by a
# stranger (one line naming it); with a GPU, NCCL through the store. Runs
# under the sanitizers too (the agent and holder are this build's). TAP.
. "$COHORT_SRCDIR/tests/tap.sh"
py=${COHORT_PYTHON_TORCH:-/usr/bin/python3}
scripts="$COHORT_SRCDIR/tests/store"
agent_bin="$COHORT_BUILDDIR/runtime/agent/cohort-agent"
coord="$COHORT_BUILDDIR/runtime/coord/cohort-work-coord"
"$py" -c 'import torch.distributed' 2>/dev/null || skip_all "$py lacks torch"
secret=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
free_port() { "$py" -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'; }
agents=()
names=()

# agent NAME NODE NODES RANKS_PER_NODE HOLDER_PORT: node NODE's agent of a
# step (block layout), its input held open on a descriptor; sets port_NAME.
agent() {
    local name=$1 node=$2 nodes=$3 per=$4 hport=$5 fd
    mkfifo "$tmp/$name.in"
    "$agent_bin" <"$tmp/$name.in" >"$tmp/$name.out" 2>"$tmp/$name.err" &
    agents+=($!)
    names+=("$name")
    exec {fd}>"$tmp/$name.in"
    eval "fd_$name=$fd"
    local first=$((node * per)) gtids
    gtids=$(seq -s, $first $((first + per - 1)))
    printf '%s\n' SLURM_JOB_ID=7 SLURM_STEP_ID=$hport SLURM_NODEID=$node \
        SLURM_STEP_NUM_TASKS=$((nodes * per)) "SLURM_STEP_NODELIST=n[1-$nodes]" \
        "SLURM_STEP_TASKS_PER_NODE=$per(x$nodes)" SLURM_GTIDS=$gtids COHORT_SECRET=$secret \
        COHORT_STORE_ADDR=127.0.0.1 COHORT_STORE_PORT=$hport COHORT_TIMEOUT=60 \
        COHORT_WORK_COORD=$coord "" >&$fd
    for _ in $(seq 200); do [ -s "$tmp/$name.out" ] && break; sleep 0.05; done
    eval "port_$name=$(awk '/^port / {print $2}' "$tmp/$name.out")"
}
# done_agent NAME: its input closed (the step ends on its node).
done_agent() { local fd; eval "fd=\$fd_$1"; exec {fd}>&-; eval "fd_$1="; }
# ranks OUT FIRST COUNT SIZE PORT SCRIPT ARGS...: ranks FIRST.. of SIZE
# through the agent at PORT, as the plugin's variables make them; waits;
# their output in OUT and OUT.err. A rank's stderr is opened for appending,
# as a stream is (Slurm gives a task a pipe): the agent's notes go at its
# end, and torch 2.x's own warnings after them do not write over them.
ranks() {
    local out=$1 first=$2 count=$3 size=$4 port=$5 pids=() r
    shift 5
    for r in $(seq "$first" $((first + count - 1))); do
        rm -f "$out.err.$r"
        RANK=$r WORLD_SIZE=$size LOCAL_RANK=$((r - first)) MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
            TORCHELASTIC_USE_AGENT_STORE=True TORCHELASTIC_RESTART_COUNT=0 OMP_NUM_THREADS=1 \
            NCCL_HOSTID=cohort-test-$r GLOO_SOCKET_IFNAME=lo timeout 120 "$py" "$@" \
            >"$out.$r" 2>>"$out.err.$r" &
        pids+=($!)
    done
    wait "${pids[@]}"
    for r in $(seq "$first" $((first + count - 1))); do # a file each: lines never interleave
        cat "$out.$r" >>"$out"
        cat "$out.err.$r" >>"$out.err"
    done
}
# At exit: every agent's input closed (an agent then ends its holder and
# itself), each given 10 s, then SIGKILL; nothing else on the machine is
# touched (other tests' coordinators run beside this one).
cleanup() {
    local n fd p
    for n in "${names[@]}"; do eval "fd=\${fd_$n:-}"; [ -n "$fd" ] && eval "exec $fd>&-"; done
    for p in "${agents[@]}"; do
        timeout 10 tail --pid="$p" -f /dev/null 2>/dev/null
        kill -9 "$p" 2>/dev/null
    done
    rm -rf "$tmp" "$public"
}
trap cleanup EXIT
# What the user nobody runs, copied where it can read it: the checkout's
# own directories may be closed to it (a clone under a private directory).
public=$(mktemp -d) && chmod 755 "$public" && cp "$scripts/stranger.py" "$public/" ||
    bail "cannot copy stranger.py where the user nobody can read it"
# stranger ARGS...: stranger.py as the user nobody.
stranger() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$py" "$public/stranger.py" "$@"; }

# --- one node: the client's every query, then a process group -------------
hp=$(free_port)
agent one 0 1 4 "$hp"
grep -q '^port [0-9]' "$tmp/one.out"
ok $? "an agent of a one-node step starts, starts the holder on port $hp and says its port ($(cat "$tmp/one.out" "$tmp/one.err" | head -c 200 | tr '\n' ' '))"
timeout 120 "$py" "$scripts/store_client.py" "$port_one" >"$tmp/client" 2>&1
grep -q '^client ok' "$tmp/client"
ok $? "PyTorch's own TCPStore client, every query it has, answered as TCPStore answers ($(grep -m1 '^client' "$tmp/client" | cut -c1-300))"
ranks "$tmp/pg" 0 4 4 "$port_one" "$scripts/store_pg.py" gloo
[ "$(grep -c '^pg ok' "$tmp/pg")" = 4 ]
ok $? "init_process_group (gloo, env://, the agent store) + all_reduce + barrier + new_group on 4 ranks ($(grep -v '^pg ok' "$tmp/pg" "$tmp/pg.err" | grep -v Warn | head -2 | cut -c1-200))"

# --- the job's user, and a stranger on the same port -------------------------
"$py" "$scripts/stranger.py" 127.0.0.1 "$port_one" >"$tmp/own" 2>&1
grep -q ' accepted: ' "$tmp/own"
ok $? "the job's own user reaches the store with raw TCPStore queries ($(cat "$tmp/own"))"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    stranger 127.0.0.1 "$port_one" >"$tmp/nobody" 2>&1
    grep -q ' refused: ' "$tmp/nobody"
    ok $? "the user nobody on the same port is closed unread ($(cat "$tmp/nobody"))"
    stranger 127.0.0.1 "$hp" >"$tmp/nobody-holder" 2>&1
    grep -q ' refused: ' "$tmp/nobody-holder"
    ok $? "and on the holder's port gets a challenge, not a store ($(cat "$tmp/nobody-holder"))"
    for _ in 1 2 3 4 5; do # a SET sent and the socket closed before the agent looks
        stranger 127.0.0.1 "$port_one" plant >>"$tmp/plant" 2>&1
    done
    "$py" "$scripts/stranger.py" 127.0.0.1 "$port_one" planted >"$tmp/planted" 2>&1
    grep -qx sent "$tmp/plant" && grep -qx 'planted: no' "$tmp/planted"
    ok $? "a stranger that sends a SET and closes at once (its socket gone, no owner left to name) plants nothing, 5 times ($(grep -cx sent "$tmp/plant") of 5 sent; $(cat "$tmp/planted"))"
else
    skip "a stranger's uid" "not root, or no setpriv"
    skip "a stranger on the holder's port" "not root, or no setpriv"
    skip "a stranger's SET sent before it closes" "not root, or no setpriv"
fi
done_agent one

# --- two agents (two simulated nodes), one holder ----------------------------
hp=$(free_port)
agent n1 0 2 2 "$hp"
agent n2 1 2 2 "$hp"
ranks "$tmp/two-a" 0 2 4 "$port_n1" "$scripts/store_pg.py" gloo &
first=$!
ranks "$tmp/two-b" 2 2 4 "$port_n2" "$scripts/store_pg.py" gloo
wait $first
[ "$(cat "$tmp/two-a" "$tmp/two-b" | grep -c '^pg ok')" = 4 ]
ok $? "two agents, 2 ranks each, one holder: init_process_group and collectives on 4 ranks ($(cat "$tmp/two-a.err" "$tmp/two-b.err" | grep -v Warn | head -2 | cut -c1-200))"
done_agent n1
done_agent n2

# --- a rank killed before it joins -------------------------------------------
hp=$(free_port)
agent kill 0 1 4 "$hp"
(
    RANK=3 WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port_kill TORCHELASTIC_USE_AGENT_STORE=True \
        TORCHELASTIC_RESTART_COUNT=0 COHORT_TEST_VICTIM=3 "$py" "$scripts/store_kill.py" 2>/dev/null
    echo "ended 3 $(($? == 137 ? 9 : $? << 8))" >&"$fd_kill" # as the plugin tells it
) &
victim=$!
COHORT_TEST_VICTIM=3 COHORT_TEST_TIMEOUT=10 ranks "$tmp/kill" 0 3 4 "$port_kill" "$scripts/store_kill.py"
wait $victim
failed=$(grep -c '^failed [0-2]: ' "$tmp/kill")
named=$(grep -c "^cohort: store: rank 3 ended (killed by signal 9); this rank has waited over 1 s for key '.*', which may never come" "$tmp/kill.err")
[ "$failed" = 3 ] && [ "$named" = 3 ]
ok $? "rank 3 SIGKILLed before init_process_group: the 3 others fail with PyTorch's error at their timeout, each told which key it waits for and that rank 3 was killed ($failed failed, $named told: $(grep -m1 '^cohort: store' "$tmp/kill.err" | cut -c1-200))"
done_agent kill

# --- the holder's port taken first ---------------------------------------------
hp=$(free_port)
"$py" -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("", int(sys.argv[1]))); s.listen(); print("up", flush=True); time.sleep(60)' "$hp" >"$tmp/squat" &
squat=$!
for _ in $(seq 100); do [ -s "$tmp/squat" ] && break; sleep 0.05; done
agent taken 0 1 2 "$hp"
kill $squat
grep -q "^error the step's store holder: cannot listen on TCP port $hp: Address already in use" "$tmp/taken.out"
ok $? "the holder's port held by another process: the agent fails in one line naming it ($(cut -c1-250 "$tmp/taken.out"))"

# --- NCCL, where there is a GPU ------------------------------------------------
if "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    hp=$(free_port)
    agent gpu 0 1 4 "$hp"
    ranks "$tmp/nccl" 0 4 4 "$port_gpu" "$scripts/store_pg.py" nccl
    [ "$(grep -c '^pg ok' "$tmp/nccl")" = 4 ]
    ok $? "NCCL init_process_group through the store, 4 ranks on GPU 0 ($(grep -v '^pg ok' "$tmp/nccl" "$tmp/nccl.err" | grep -v Warn | head -2 | cut -c1-200))"
    done_agent gpu
else
    skip "NCCL through the store" "no GPU here (torch.cuda.is_available() is false)"
fi
tap_done
