#!/bin/sh
# nccl.sh - cohort_nccl_init. Without a GPU: a clear "no CUDA device" line
# on every rank. With one: a 1-rank communicator and an allreduce, then 4
# ranks on the one GPU as 4 hosts (NCCL refuses two ranks of one host on
# one GPU; a distinct NCCL_HOSTID each makes them distinct hosts), and the
# same with 2 ranks per root (ncclCommInitRankScalable, 2 roots), with
# non-blocking communicators, and a rank that never starts NCCL: the others
# abort at the deadline. TAP.
. "$COHORT_SRCDIR/tests/tap.sh"
# seen: the first failure or result line and spawn's summary, for a failure line.
seen() { printf '%s; %s' "$(grep -m1 'FAIL\|allreduce\|skipped' "$tmp/out")" "$(grep -m1 '^spawn:' "$tmp/out")"; }
spawn="$COHORT_BUILDDIR/tests/bootstrap/spawn"
check="$COHORT_BUILDDIR/tests/bootstrap/nccl_check"
[ -x "$check" ] || skip_all "built without CUDA and NCCL"
if ! nvidia-smi -L >/dev/null 2>&1; then
    "$spawn" 2 1 -- "$check" >"$tmp/out" 2>&1
    [ "$(grep -c 'FAIL: cohort: no CUDA device for rank' "$tmp/out")" = 2 ]
    ok $? "no GPU: each rank fails with one clear line ($(seen))"
    for t in "1-rank allreduce" "4 ranks on one GPU" "2 roots" "non-blocking" "NCCL deadline"; do
        skip "$t on a GPU" "no GPU on this machine (nvidia-smi -L finds none)"
    done
    tap_done
    exit
fi
"$spawn" 1 1 -- "$check" >"$tmp/out" 2>&1
grep -q '^rank 0: allreduce 1 (expected 1)$' "$tmp/out"
ok $? "1-rank communicator and allreduce ($(seen))"
"$spawn" 4 2 -- sh -c 'NCCL_HOSTID=cohort-test-$SLURM_PROCID exec "$0"' "$check" >"$tmp/out" 2>&1
[ "$(grep -c 'allreduce 10 (expected 10)$' "$tmp/out")" = 4 ]
ok $? "4 ranks on one GPU as 4 hosts: allreduce right on all ($(seen))"
NCCL_CHECK_RANKS_PER_ROOT=2 "$spawn" 4 2 -- sh -c 'NCCL_HOSTID=cohort-test-$SLURM_PROCID exec "$0"' "$check" >"$tmp/out" 2>&1
[ "$(grep -c 'allreduce 10 (expected 10)$' "$tmp/out")" = 4 ]
ok $? "the same with 2 roots (ncclCommInitRankScalable): allreduce right on all ($(seen))"
NCCL_CHECK_NONBLOCKING=1 "$spawn" 4 2 -- sh -c 'NCCL_HOSTID=cohort-test-$SLURM_PROCID exec "$0"' "$check" >"$tmp/out" 2>&1
[ "$(grep -c 'allreduce 10 (expected 10)$' "$tmp/out")" = 4 ]
ok $? "the same with non-blocking communicators: allreduce right on all ($(seen))"
NCCL_CHECK_SKIP_RANK=3 NCCL_CHECK_TIMEOUT=5 "$spawn" 4 2 -- sh -c 'NCCL_HOSTID=cohort-test-$SLURM_PROCID exec "$0"' "$check" >"$tmp/out" 2>&1
[ "$(grep -c 'FAIL: cohort: the NCCL world communicator did not come up within 5 s on rank [0-2]; aborted$' "$tmp/out")" = 3 ] &&
    grep -q '^rank 3: skipped NCCL' "$tmp/out"
ok $? "a rank that never starts NCCL: the 3 others abort at the 5 s deadline ($(seen))"
tap_done
