#!/bin/sh
# cohort-launch.sh - cohort-launch in a step environment made by hand on this
# machine: the variables it sets and keeps, the real CPU affinity of the
# command against the plan, a foreign topology cache, and its errors. TAP.
launch="$COHORT_BUILDDIR/runtime/tools/cohort-launch"
fx="$COHORT_SRCDIR/tests/fixtures"
. "$COHORT_SRCDIR/tests/tap.sh"
step() { # step NTASKS RANK CMD...: CMD as task RANK of a one-node step on this host
    ntasks=$1 rank=$2
    shift 2
    env SLURM_JOB_ID=5 SLURM_STEP_ID=1 SLURM_STEP_NODELIST="$(hostname)" \
        SLURM_STEP_NUM_TASKS="$ntasks" SLURM_STEP_TASKS_PER_NODE="$ntasks" SLURM_NODEID=0 \
        SLURM_PROCID="$rank" SLURM_LOCALID="$rank" "$@"
}
# hwloc's pci component (libpciaccess, dlclosed at exit) leaks a little memory
# on this machine; under LeakSanitizer this machine is loaded without it.
if [ -n "${COHORT_SANITIZED:-}" ]; then HWLOC_COMPONENTS=-pci; export HWLOC_COMPONENTS; fi
ncpu=$(getconf _NPROCESSORS_ONLN)
last=$((ncpu - 1))

step "$ncpu" "$last" "$launch" --membind none -- sh -c \
    'echo "$RANK $WORLD_SIZE $LOCAL_RANK $MASTER_ADDR $COHORT_CPUS"; grep Cpus_allowed_list /proc/self/status' >"$tmp/out" 2>"$tmp/err"
ok $? "runs the command in a step"
read -r rank world local addr cpus <"$tmp/out"
test "$rank $world $local $addr" = "$last $ncpu $last $(hostname)"
ok $? "RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR set ($rank $world $local $addr)"
test -n "$cpus" && test "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$tmp/out")" = "$cpus"
ok $? "the command's real CPU affinity is the planned $cpus"

MASTER_PORT=1234 RANK=9 step 1 0 "$launch" --membind none -- sh -c 'echo $MASTER_PORT $RANK' >"$tmp/out"
test "$(cat "$tmp/out")" = "1234 9"
ok $? "variables the user set are kept"

env SLURM_JOB_ID=5 SLURM_STEP_ID=1 SLURM_STEP_NODELIST=n1 SLURM_STEP_NUM_TASKS=8 \
    SLURM_STEP_TASKS_PER_NODE=8 SLURM_NODEID=0 SLURM_PROCID=3 SLURM_LOCALID=3 \
    "$launch" --verbose --membind none --topology "$fx/dgx-h100.xml" -- \
    sh -c 'echo $CUDA_VISIBLE_DEVICES $LOCAL_RANK' >"$tmp/out" 2>"$tmp/err"
test "$(cat "$tmp/out")" = "0,1,2,3,4,5,6,7 3" && grep -q '^cohort: rank 3/8 .*gpu 0000:5d:00.0 cuda 3' "$tmp/err"
ok $? "a multi-GPU topology cache: planned variables and the verbose line"

# The interface that routes to MASTER_ADDR, for NCCL and Gloo.
MASTER_ADDR=127.0.0.1 step 1 0 "$launch" --membind none --strict -- \
    sh -c 'echo "$NCCL_SOCKET_IFNAME $GLOO_SOCKET_IFNAME"' >"$tmp/out"
lo=$(ip -o link show 2>/dev/null | awk -F': ' '/LOOPBACK/ {print $2; exit}')
test "$(cat "$tmp/out")" = "${lo:-lo} ${lo:-lo}"
ok $? "NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME name the route to MASTER_ADDR ($(cat "$tmp/out"))"
MASTER_ADDR=127.0.0.1 NCCL_SOCKET_IFNAME=^docker step 1 0 "$launch" --membind none -- \
    sh -c 'echo "$NCCL_SOCKET_IFNAME"' >"$tmp/out"
test "$(cat "$tmp/out")" = "^docker"
ok $? "a user's NCCL_SOCKET_IFNAME is kept"
MASTER_ADDR=no-such-host.invalid step 1 0 "$launch" --verbose --membind none -- \
    sh -c 'echo "${NCCL_SOCKET_IFNAME-unset}"' >"$tmp/out" 2>"$tmp/err"
test "$(cat "$tmp/out")" = unset && grep -q "^cohort: note: cannot resolve MASTER_ADDR 'no-such-host.invalid'" "$tmp/err"
ok $? "an unresolvable MASTER_ADDR leaves them unset, with a note"

bad() {
    want="$1"; wantrc="$2"; shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc -eq "$wantrc" ] && grep -q -- "$want" "$tmp/err"; then ok 0 "error names '$want'"; else ok 1 "error names '$want' (rc=$rc: $(cat "$tmp/err"))"; fi
}
bad "not inside a Slurm job step" 1 env -u SLURM_STEP_NODELIST "$launch" -- true
bad "no command given" 2 step 1 0 "$launch"
bad "cannot run /nonexistent" 127 step 1 0 "$launch" --membind none -- /nonexistent
bad "memory binding 'all'" 1 step 1 0 "$launch" --membind all -- true
bad "SLURM_STEP_TASKS_PER_NODE" 1 env SLURM_JOB_ID=5 SLURM_STEP_ID=1 SLURM_STEP_NODELIST=n1 \
    SLURM_STEP_NUM_TASKS=2 SLURM_STEP_TASKS_PER_NODE='2(x' SLURM_NODEID=0 "$launch" -- true

tap_done
