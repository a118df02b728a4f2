#!/bin/sh
# bootstrap.sh - libcohort's bootstrap with N processes on this machine as
# simulated nodes (tests/bootstrap/spawn): results of bcast, allgather and
# barrier up to 1024 ranks; strangers without the secret dropped while the
# ranks complete; a rank with another secret, and ranks killed at each
# phase, named in every survivor's one-line failure; bad settings; without
# COHORT_SECRET, munge in its place (a private munged). TAP.
. "$COHORT_SRCDIR/tests/tap.sh"
spawn="$COHORT_BUILDDIR/tests/bootstrap/spawn"
check="$COHORT_BUILDDIR/tests/bootstrap/boot_check"

all_ok() { # all_ok N NODES [spawn options]: every rank prints ok
    count=$1 nodes=$2
    shift 2
    "$spawn" "$count" "$nodes" "$@" -- "$check" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc = 0 ] && [ "$(grep -c ': ok via tcp$' "$tmp/out")" = "$count" ]
    ok $? "$count ranks on $nodes nodes $*: bcast, allgather, barrier right on every rank ($(tail -1 "$tmp/out"); $(grep -m1 FAIL "$tmp/out"))"
}
all_ok 1 1
all_ok 8 2
all_ok 9 3
all_ok 64 4
if [ -n "${COHORT_SANITIZED:-}" ]; then
    skip "1024 ranks on 16 nodes" "1024 processes under ASan need more memory than this machine has"
else
    all_ok 1024 16
fi

for mode in garbage wrong-mac silent; do
    all_ok 8 2 --stranger $mode
    [ $mode = silent ] || { grep -q '^stranger: dropped' "$tmp/out"; ok $? "a stranger sending $mode is dropped"; }
done

# survivors: every rank but the victim fails, each naming want. Joining
# has the default deadline and the calls after it 2 s (cohort_set_timeout);
# the deadline cases stall a rank after everyone joined, so that no slow
# start can be mistaken for the victim.
survivors() { # survivors N NODES VICTIM WANT LABEL [env...]
    count=$1 nodes=$2 victim=$3 want=$4 label=$5
    shift 5
    env COHORT_TEST_CALL_TIMEOUT=2 COHORT_TEST_VICTIM="$victim" "$@" "$spawn" "$count" "$nodes" -- "$check" >"$tmp/out" 2>"$tmp/err"
    failing=$(grep -c ': FAIL: ' "$tmp/out")
    named=$(grep ': FAIL: ' "$tmp/out" | grep -c -- "$want")
    [ "$failing" = $((count - 1)) ] && [ "$named" = "$failing" ] && ! grep -q 'timeout' "$tmp/out"
    ok $? "$label: all $((count - 1)) survivors fail naming it ($(grep -m1 ': FAIL: ' "$tmp/out"))"
}
survivors 8 2 5 "rank 5 (n2) did not reach cohort_bcast within 2 s" "rank 5 stalls after joining" \
    COHORT_TEST_DIE_AT=stall
survivors 64 4 33 "rank 33 (n3) did not reach cohort_bcast within 2 s" "one of 64 stalls" \
    COHORT_TEST_DIE_AT=stall
survivors 8 2 5 "rank 5 (n2) closed its bootstrap connection during cohort_bcast" \
    "rank 5 killed after joining" COHORT_TEST_DIE_AT=joined
survivors 8 2 6 "rank 6 (n2) closed its bootstrap connection during cohort_allgather" \
    "rank 6 killed after the broadcast" COHORT_TEST_DIE_AT=bcast
survivors 8 2 4 "ranks 4, 5, 6, 7 (n2)\|leader (rank 4 on n2)" "node leader rank 4 killed after joining" \
    COHORT_TEST_DIE_AT=joined
survivors 8 2 0 "bootstrap root (rank 0 on n1" "the root killed after joining" COHORT_TEST_DIE_AT=joined
# A rank that never starts, or cannot prove itself: the others wait for the
# deadline (10 s: every other rank has started long before).
survivors 8 2 5 "rank 5 (n2) did not join within 10 s" "rank 5 never starts" \
    COHORT_TEST_DIE_AT=init COHORT_TIMEOUT=10

COHORT_TIMEOUT=10 "$spawn" 8 2 --bad-secret 3 -- "$check" >"$tmp/out" 2>&1
[ "$(grep -c 'rank 3 (n1) did not join within 10 s' "$tmp/out")" = 7 ] &&
    grep -q '^rank 3: FAIL: .*does it hold this step.s COHORT_SECRET' "$tmp/out"
ok $? "a rank with another secret is refused; the others name it ($(grep -m1 '^rank 3: FAIL' "$tmp/out"))"

bad() { # bad WANT VAR=VALUE...: a one-rank step fails at once with one line
    want=$1
    shift
    "$spawn" 1 1 -- env "$@" "$check" >"$tmp/out" 2>&1
    [ "$(grep -c . "$tmp/out")" = 2 ] && grep -q -- "^rank 0: FAIL: cohort: $want" "$tmp/out"
    ok $? "bad setting $*: $(grep -m1 FAIL "$tmp/out")"
}
bad "COHORT_TIMEOUT='soon' is not a number of seconds" COHORT_TIMEOUT=soon
bad "COHORT_SECRET must be 64 hex digits" COHORT_SECRET=abc
bad "COHORT_SECRET is not set and munge cannot stand in" -u COHORT_SECRET \
    COHORT_MUNGE_SOCKET="$tmp/no-munged"
bad "COHORT_BOOTSTRAP_PORT='x'" COHORT_BOOTSTRAP_PORT=x
bad "not inside a Slurm job step" -u SLURM_STEP_NODELIST

# --- no COHORT_SECRET: munge vouches instead (a munged of this test's own) --
if ! grep -q '^#define HAVE_MUNGE 1' "$COHORT_BUILDDIR/config.h"; then
    skip "munge in place of the secret" "built without munge (libmunge-dev)"
elif ! command -v munged >/dev/null || ! command -v mungekey >/dev/null; then
    skip "munge in place of the secret" "munged and mungekey are not installed (munge)"
else
    mkdir -m 700 "$tmp/munge"
    if mungekey -c -k "$tmp/munge/key" 2>"$tmp/munge.err" &&
        munged --key-file="$tmp/munge/key" --socket="$tmp/munge/sock" --force \
            --pid-file="$tmp/munge/pid" --seed-file="$tmp/munge/seed" \
            --log-file="$tmp/munge/log" 2>>"$tmp/munge.err"; then
        trap 'kill "$(cat "$tmp/munge/pid")"; rm -rf "$tmp"' EXIT
        COHORT_MUNGE_SOCKET="$tmp/munge/sock" "$spawn" 64 4 -- \
            sh -c 'unset COHORT_SECRET; exec "$0"' "$check" >"$tmp/out" 2>&1
        [ "$(grep -c ': ok via tcp$' "$tmp/out")" = 64 ]
        ok $? "no COHORT_SECRET, munged running: 64 ranks on 4 nodes authenticate with munge ($(tail -1 "$tmp/out"); $(grep -m1 FAIL "$tmp/out"))"
        COHORT_MUNGE_SOCKET="$tmp/munge/sock" "$spawn" 8 2 --stranger wrong-mac -- \
            sh -c 'unset COHORT_SECRET; exec "$0"' "$check" >"$tmp/out" 2>&1
        [ "$(grep -c ': ok via tcp$' "$tmp/out")" = 8 ] && grep -q '^stranger: dropped' "$tmp/out"
        ok $? "with munge, a stranger with a made-up proof is dropped and the 8 ranks complete ($(grep -m1 FAIL "$tmp/out"))"
    else
        bail "could not start a private munged: $(tail -2 "$tmp/munge.err")"
    fi
fi

tap_done
