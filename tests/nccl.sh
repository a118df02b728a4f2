#!/bin/sh
# nccl.sh - cohort_nccl_init. Everywhere, its sequence of NCCL calls against
# a stand-in for CUDA and NCCL that records them (tests/bootstrap/nccl_seq,
# 2 ranks; the stand-in checks no GPU code): by default one non-blocking
# init, blocking world and node-local communicators split off it, and the
# first released on another thread than the caller's (cohort_nccl_init does
# not wait for it); with non-blocking communicators no split of the world;
# 2 roots; an init that never comes up aborted at the deadline. Each run
# leaves no communicator behind. Without a GPU: a clear "no CUDA device"
# line on every rank. With one: a 1-rank communicator and an allreduce, then 4
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
# standin [VAR=VALUE...]: tests/bootstrap/nccl_seq on 2 ranks (1 node) into $tmp/out.
standin() { env "$@" "$spawn" 2 1 -- "$COHORT_BUILDDIR/tests/bootstrap/nccl_seq" >"$tmp/out" 2>&1; }
# calls WHAT: how many ranks' stand-ins logged WHAT (a line's text, exactly).
calls() { grep -c "^standin rank [01]: $1\$" "$tmp/out"; }
# released: how rank 0 released the first communicator, and what was left.
released() { grep -m1 '^standin rank 0: \(finalize\|destroy\|abort\) #1\|^standin rank 0: [0-9]* comm' "$tmp/out" | tr '\n' ' '; }
# all_left: both ranks' stand-ins were left with no communicator at exit.
all_left() { [ "$(calls '0 communicators left (caller)')" = 2 ]; }
standin
[ "$(calls 'init #1 rank [01] of 2, 1 root, blocking 0 (caller)')" = 2 ] &&
    [ "$(calls 'split #1 color 0 into #2, blocking 1, shared 1 (caller)')" = 2 ] &&
    [ "$(calls 'split #1 color 0 into #3, blocking 1, shared 1 (caller)')" = 2 ] &&
    [ "$(calls 'destroy #1 (other thread)')" = 2 ] &&
    ! grep -q '^standin rank [01]: \(finalize\|destroy\|abort\) #1 (caller)$' "$tmp/out" &&
    [ "$(calls 'allreduce on #2 (caller)')" = 2 ] && all_left
ok $? "stand-in: a non-blocking init, blocking world and node-local communicators split off it, the first released off the caller's thread ($(released); $(seen))"
standin NCCL_CHECK_NONBLOCKING=1
[ "$(calls 'init #1 rank [01] of 2, 1 root, blocking 0 (caller)')" = 2 ] &&
    [ "$(calls 'split #1 color 0 into #2, blocking 0, shared 1 (caller)')" = 2 ] &&
    [ "$(grep -c 'split' "$tmp/out")" = 2 ] && [ "$(calls 'allreduce on #1 (caller)')" = 2 ] &&
    [ "$(calls 'destroy #1 (caller)')" = 2 ] && all_left
ok $? "stand-in, non-blocking: the world communicator is the init's own, only the node-local one split ($(seen))"
standin NCCL_CHECK_RANKS_PER_ROOT=1
[ "$(calls 'init #1 rank [01] of 2, 2 roots, blocking 0 (caller)')" = 2 ] && all_left
ok $? "stand-in, 1 rank per root: ncclCommInitRankScalable with 2 roots ($(seen))"
standin NCCL_STANDIN_HANG=1 NCCL_CHECK_TIMEOUT=1
[ "$(grep -c 'FAIL: cohort: the NCCL world communicator did not come up within 1 s on rank [01]; aborted$' "$tmp/out")" = 2 ] &&
    [ "$(calls 'abort #1 (caller)')" = 2 ] && ! grep -q split "$tmp/out" && all_left
ok $? "stand-in, an init that never comes up: aborted at the 1 s deadline, one line on each rank ($(seen))"
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
