#!/bin/sh
# bootstrap.sh - libcohort's bootstrap with N processes on this machine as
# simulated nodes (tests/bootstrap/spawn): results of bcast, allgather and
# barrier up to 1024 ranks; strangers without the secret dropped while the
# ranks complete; a rank with another secret, and ranks killed at each
# phase, named in every survivor's one-line failure; bad settings; restarts
# and limits; attacks (tests/bootstrap/attack: floods, a squatter, frames
# changed, replayed or injected on the way, a rank that sees another step);
# without COHORT_SECRET, munge in its place (a private munged); the error
# code of each kind of failure, the same on every rank it reaches. TAP.
. "$COHORT_SRCDIR/tests/tap.sh"
spawn="$COHORT_BUILDDIR/tests/bootstrap/spawn"
check="$COHORT_BUILDDIR/tests/bootstrap/boot_check"

# seen FILE COUNT: what a run showed, for a failure line: spawn's summary,
# the first failure, the stranger's line, and the ranks that printed nothing.
seen() {
    awk -v count="$2" '
    /^spawn: / { sp = $0 }
    /^stranger: / { st = $0 }
    / FAIL: / && !fail { fail = $0 }
    /^rank [0-9]+: / { r = $2; sub(/:$/, "", r); said[r] = 1 }
    END {
        for (r = 0; r < count; r++) if (!(r in said)) { if (quiet++ < 8) q = q " " r }
        out = sp
        if (fail) out = out "; " fail
        if (st) out = out "; " st
        if (quiet) out = out "; no line from rank" (quiet > 1 ? "s" : "") q (quiet > 8 ? " ..." : "")
        print out
    }' "$1"
}

all_ok() { # all_ok N NODES [spawn options]: every rank prints ok
    count=$1 nodes=$2
    shift 2
    "$spawn" "$count" "$nodes" "$@" -- "$check" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc = 0 ] && [ "$(grep -c ': ok via tcp$' "$tmp/out")" = "$count" ]
    ok $? "$count ranks on $nodes nodes $*: bcast, allgather, barrier right on every rank ($(seen "$tmp/out" "$count"))"
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

# The tree of nodes (COHORT_BOOTSTRAP_FANOUT, nodes named by loopback
# addresses so that the leaders between can listen): with a fanout of 2, 16
# nodes make five levels of leaders.
SPAWN_IP_NODES=1 COHORT_BOOTSTRAP_FANOUT=2 "$spawn" 64 16 -- "$check" >"$tmp/out" 2>&1
[ "$(grep -c ': ok via tcp$' "$tmp/out")" = 64 ]
ok $? "64 ranks on 16 nodes, fanout 2 (five levels of leaders): bcast, allgather, barrier right on every rank ($(seen "$tmp/out" 64))"
# 100 descriptors, too few for a root holding 33 leaders (below), are enough
# for one holding 4 (each also keeps room for 64 strangers' connections).
(ulimit -n 100 && SPAWN_IP_NODES=1 COHORT_BOOTSTRAP_FANOUT=4 COHORT_TIMEOUT=60 exec "$spawn" 34 34 -- "$check") >"$tmp/out" 2>&1
[ "$(grep -c ': ok via tcp$' "$tmp/out")" = 34 ]
ok $? "34 nodes with ulimit -n 100 and fanout 4: every rank right, no leader holding more than 4 others ($(seen "$tmp/out" 34))"

# The stranger comes while rank 1, a child of the root, is held back (so
# the root is still accepting): dropped when it misbehaves, harmless when
# silent.
for mode in "garbage:dropped after its garbage" "wrong-mac:dropped after its made-up proof" \
    "silent:silent, closed when the root was done"; do
    all_ok 8 2 --stranger "${mode%%:*}"
    grep -q "^stranger: ${mode#*:}" "$tmp/out"
    ok $? "a stranger sending ${mode%%:*}: ${mode#*:} ($(grep -m1 '^stranger:' "$tmp/out"))"
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
    ok $? "$label: all $((count - 1)) survivors fail naming it ($failing of them failed, $named naming it; $(seen "$tmp/out" "$count"))"
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
# A leader between (node 2 of 16, fanout 2: 8 nodes in its subtree): the
# root names all 32 ranks lost with it, the subtree names the leader.
survivors 64 16 4 "ranks 4, 5, 6, 7 (127.0.0.2), 12, 13, 14, 15 (127.0.0.4) and 24 others closed\|(rank 4 on 127.0.0.2" \
    "a leader between the root and 7 other nodes killed after joining" COHORT_TEST_DIE_AT=joined \
    SPAWN_IP_NODES=1 COHORT_BOOTSTRAP_FANOUT=2
[ "$(grep -c 'ranks 4, 5, 6, 7 (127.0.0.2), 12, 13, 14, 15 (127.0.0.4) and 24 others closed' "$tmp/out")" = 32 ]
ok $? "... the 32 ranks outside its subtree name the 32 inside ($(grep -m1 'and 24 others' "$tmp/out"))"
# A rank that never starts, or cannot prove itself: the others wait for the
# deadline (10 s: every other rank has started long before).
survivors 8 2 5 "rank 5 (n2) did not join within 10 s" "rank 5 never starts" \
    COHORT_TEST_DIE_AT=init COHORT_TIMEOUT=10

COHORT_TIMEOUT=10 "$spawn" 8 2 --bad-secret 3 -- "$check" >"$tmp/out" 2>&1
[ "$(grep -c 'rank 3 (n1) did not join within 10 s' "$tmp/out")" = 7 ] &&
    grep -q '^rank 3: FAIL: .*COHORT_SECRET' "$tmp/out"
ok $? "a rank with another secret is refused; the others name it ($(grep -m1 '^rank 3: FAIL' "$tmp/out"); $(seen "$tmp/out" 8))"

bad() { # bad WANT VAR=VALUE...: a one-rank step fails at once with one line
    want=$1
    shift
    "$spawn" 1 1 -- env "$@" "$check" >"$tmp/out" 2>&1
    [ "$(grep -c . "$tmp/out")" = 2 ] && grep -q -- "^rank 0: FAIL: cohort: $want" "$tmp/out"
    ok $? "bad setting $*: $(seen "$tmp/out" 1)"
}
bad "COHORT_TIMEOUT='soon' is not a number of seconds" COHORT_TIMEOUT=soon
bad "COHORT_SECRET must be 64 hex digits" COHORT_SECRET=abc
bad "COHORT_SECRET is not set and munge cannot stand in" -u COHORT_SECRET \
    COHORT_MUNGE_SOCKET="$tmp/no-munged"
bad "COHORT_BOOTSTRAP_PORT='x'" COHORT_BOOTSTRAP_PORT=x
bad "COHORT_BOOTSTRAP_FANOUT='0' is not a number from 1 to 65536" COHORT_BOOTSTRAP_FANOUT=0
bad "COHORT_BOOTSTRAP_BIND='lo' is neither 'any' nor 'name'" COHORT_BOOTSTRAP_BIND=lo
bad "not inside a Slurm job step" -u SLURM_STEP_NODELIST

mkfifo "$tmp/fifo"
SPAWN_TIMEOUT=30 "$spawn" 1 1 -- env SLURM_DISTRIBUTION=arbitrary SLURM_HOSTFILE="$tmp/fifo" \
    "$check" >"$tmp/out" 2>&1
grep -q "^rank 0: FAIL: cohort: SLURM_HOSTFILE $tmp/fifo is not a regular file" "$tmp/out"
ok $? "SLURM_HOSTFILE naming a FIFO: one line at once, no wait for a writer ($(seen "$tmp/out" 1))"

# --- restarts, local mistakes, limits ---------------------------------------
COHORT_TEST_CASE=cycles COHORT_TEST_CYCLES=100 COHORT_TIMEOUT=30 "$spawn" 8 2 -- "$check" >"$tmp/out" 2>&1
[ "$(grep -c ': ok, 100 cycles$' "$tmp/out")" = 8 ]
ok $? "cohort_init, a barrier and cohort_finalize 100 times in a row on 8 ranks of 2 nodes ($(seen "$tmp/out" 8))"
COHORT_TEST_CASE=again "$spawn" 8 2 -- "$check" >"$tmp/out" 2>&1
[ "$(grep -c ': again: cohort: cohort_init was called again while this process is joined: call cohort_finalize first$' "$tmp/out")" = 8 ] &&
    [ "$(grep -c ': ok via tcp$' "$tmp/out")" = 8 ]
ok $? "a second cohort_init while joined fails at once with one line; the first goes on ($(seen "$tmp/out" 8))"
COHORT_TEST_CASE=bad-timeout COHORT_TEST_VICTIM=3 "$spawn" 8 2 -- "$check" >"$tmp/out" 2>&1
[ "$(grep -c ': ok via tcp$' "$tmp/out")" = 8 ]
ok $? "a local mistake on one rank (cohort_set_timeout(c, 0)) fails no other rank's cohort_finalize ($(seen "$tmp/out" 8))"
COHORT_TEST_CASE=big COHORT_TEST_BYTES=17825792 "$spawn" 4 2 -- "$check" >"$tmp/out" 2>&1
[ "$(grep -c "FAIL: cohort: cohort_allgather: the result would be at least [0-9]* bytes, above the bootstrap's limit of 67108864 bytes (64 MiB) for one call$" "$tmp/out")" = 4 ]
ok $? "an allgather of 17 MiB from each of 4 ranks: every rank fails naming the 64 MiB limit ($(seen "$tmp/out" 4))"
COHORT_TEST_CASE=big COHORT_TEST_BYTES=4194304 "$spawn" 4 2 -- "$check" >"$tmp/out" 2>&1
[ "$(grep -c ': ok, big$' "$tmp/out")" = 4 ]
ok $? "an allgather of 4 MiB from each of 4 ranks works ($(seen "$tmp/out" 4))"
# With 100 descriptors the root cannot serve 33 leaders, room for 64
# strangers and its 16 spare descriptors: it fails at once naming the limit, and tells every leader
# that reaches it (it can still hold them all: far more leaders than the
# limit could not all be told, the sanitizers' own descriptors counting).
# The deadline is long, so that leaders slow to start on a loaded machine
# still reach it; none waits for it.
(ulimit -n 100 && COHORT_TIMEOUT=60 exec "$spawn" 34 34 -- "$check") >"$tmp/out" 2>&1
want="rank 0 (n1) serves 33 tasks of the step, but its open-file limit is 100 (ulimit -n): raise it to at least 113"
named=$(grep -c "FAIL: cohort: .*$want" "$tmp/out")
other=$(grep "FAIL: cohort: " "$tmp/out" | grep -v -m1 "$want")
grep -q "^rank 0: FAIL: cohort: $want" "$tmp/out" && [ "$named" = 34 ]
ok $? "the root with too few descriptors (ulimit -n 100, 34 nodes): one line naming the limit, on every rank ($named named it${other:+; another line: $other}; $(seen "$tmp/out" 34))"

# --- a hostile neighbour ----------------------------------------------------
attack="$COHORT_BUILDDIR/tests/bootstrap/attack"
every() { # every COUNT WANT: COUNT ranks failed, each line holding WANT
    [ "$(grep -c ': FAIL: ' "$tmp/out")" = "$1" ] && [ "$(grep ': FAIL: ' "$tmp/out" | grep -c -- "$2")" = "$1" ]
}
COHORT_TIMEOUT=30 "$spawn" 8 2 --attack "$attack flood 2000" -- "$check" >"$tmp/out" 2>&1
[ "$(grep -c ': ok via tcp$' "$tmp/out")" = 8 ] && grep -q '^flood: 2000 of 2000' "$tmp/out"
ok $? "2000 silent strangers on the root's TCP port during the join: all 8 ranks join ($(grep -m1 '^flood' "$tmp/out"); $(seen "$tmp/out" 8))"
if [ "$(id -u)" = 0 ]; then
    COHORT_TIMEOUT=30 "$spawn" 8 2 --attack "$attack flood-unix 2000" -- "$check" >"$tmp/out" 2>&1
    [ "$(grep -c ': ok via tcp$' "$tmp/out")" = 8 ] && grep -q '^flood-unix: 2000 connections as uid 65534, 2000 closed at once' "$tmp/out"
    ok $? "2000 connections of another uid to the root's node socket: each closed at once, all 8 ranks join ($(grep -m1 '^flood' "$tmp/out"); $(seen "$tmp/out" 8))"
else
    skip "another uid's flood of a node socket" "needs root to become uid 65534"
fi
for m in flip replay inject; do
    COHORT_TIMEOUT=30 "$spawn" 8 2 --proxy-port --attack "$attack proxy $m" -- "$check" >"$tmp/out" 2>&1
    # the root finds a replayed copy at its next read of that leader, in
    # whichever call that falls
    every 8 "the bootstrap connection from rank 4 (n2) was tampered with during cohort_[a-z]*: a 'up' frame failed its MAC check"
    ok $? "a leader's frame ${m}ped on the way to the root: every rank fails, naming the tampering ($(seen "$tmp/out" 8))"
done
COHORT_TIMEOUT=60 "$spawn" 8 2 --attack-first "$attack squat" -- "$check" >"$tmp/out" 2>&1
port=$(sed -n 's/^squat: holding port //p' "$tmp/out")
[ -n "$port" ] && every 8 "port $port" && ! grep -q 'within 60 s' "$tmp/out" &&
    grep -q "^rank 0: FAIL: cohort: the bootstrap root cannot listen on port $port: Address already in use" "$tmp/out"
ok $? "the root's port taken first by another program: every rank fails naming the port, not at the deadline ($(seen "$tmp/out" 8))"
COHORT_TIMEOUT=30 "$spawn" 8 2 --env-rank 5 "SLURM_STEP_NUM_TASKS=9 SLURM_STEP_TASKS_PER_NODE=4,5" -- "$check" >"$tmp/out" 2>&1
every 8 "rank 5 (n2) sees the step as 9 tasks on 2 nodes (layout [0-9a-f]*), rank 4 as 8 tasks on 2 nodes"
ok $? "a rank told of 9 tasks where the step has 8: refused at the join with both views, every rank fails so ($(seen "$tmp/out" 8))"
COHORT_TIMEOUT=30 "$spawn" 8 2 --env-rank 5 "SLURM_STEP_NODELIST=n[1,3]" -- "$check" >"$tmp/out" 2>&1
every 8 "rank 5 (n2) sees the step as 8 tasks on 2 nodes (layout [0-9a-f]*), rank 4 as 8 tasks on 2 nodes"
ok $? "a rank with another node list: refused at the join with both views ($(seen "$tmp/out" 8))"
COHORT_TIMEOUT=30 "$spawn" 8 2 --env-rank 5 "COHORT_BOOTSTRAP_FANOUT=3" -- "$check" >"$tmp/out" 2>&1
every 8 "rank 5 (n2) sees the step as 8 tasks on 2 nodes (layout [0-9a-f]*), rank 4 as 8 tasks on 2 nodes"
ok $? "a rank with another COHORT_BOOTSTRAP_FANOUT: refused at the join, every rank fails so, not at the deadline ($(seen "$tmp/out" 8))"

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
        ok $? "no COHORT_SECRET, munged running: 64 ranks on 4 nodes authenticate with munge ($(seen "$tmp/out" 64))"
        COHORT_MUNGE_SOCKET="$tmp/munge/sock" "$spawn" 8 2 --stranger wrong-mac -- \
            sh -c 'unset COHORT_SECRET; exec "$0"' "$check" >"$tmp/out" 2>&1
        [ "$(grep -c ': ok via tcp$' "$tmp/out")" = 8 ] && grep -q '^stranger: dropped after its made-up proof' "$tmp/out"
        ok $? "with munge, a stranger with a made-up proof is dropped and the 8 ranks complete ($(seen "$tmp/out" 8))"
    else
        bail "could not start a private munged: $(tail -2 "$tmp/munge.err")"
    fi
fi

# --- error codes: every failure has one, the same on every rank it reaches --
# (tests/bootstrap/errc_check prints "rank R: code NAME: <sentence>")
errc="$COHORT_BUILDDIR/tests/bootstrap/errc_check"
tally() { # how many ranks gave each code, and spawn's line
    awk '/^spawn: / { sp = $0 }
    /^rank [0-9]+: code [a-z-]+: / { c = $4; sub(/:$/, "", c); n[c]++ }
    END { for (c in n) { out = out sep n[c] " " c; sep = ", " }
          print (out ? out : "no codes") "; " sp }' "$tmp/out"
}
codes() { # codes COUNT NAME: COUNT ranks failed, each with code NAME
    [ "$(grep -c '^rank [0-9]*: code ' "$tmp/out")" = "$1" ] &&
        [ "$(grep -c "^rank [0-9]*: code $2: " "$tmp/out")" = "$1" ]
}
"$spawn" 1 1 -- env COHORT_TIMEOUT=abc "$errc" >"$tmp/out" 2>&1
codes 1 config && grep -q "^rank 0: code config: cohort: COHORT_TIMEOUT='abc'" "$tmp/out"
ok $? "code: COHORT_TIMEOUT=abc is a configuration error ($(tally))"
COHORT_TEST_CASE=usage "$spawn" 8 2 -- "$errc" >"$tmp/out" 2>&1
[ "$(grep -c '^rank [0-9]*: usage: usage usage usage$' "$tmp/out")" = 8 ] &&
    [ "$(grep -c '^rank [0-9]*: ok$' "$tmp/out")" = 8 ]
ok $? "code: cohort_set_timeout(c, 0), a broadcast from root 8 of 8, a second cohort_init are usage errors; the step goes on ($(grep -m1 ': usage: ' "$tmp/out"); $(tally))"
COHORT_TIMEOUT=10 COHORT_TEST_VICTIM=5 COHORT_TEST_DIE_AT=init "$spawn" 8 2 -- "$errc" >"$tmp/out" 2>&1
codes 7 timeout
ok $? "code: rank 5 never starts, COHORT_TIMEOUT=10: timeout on all 7 others ($(tally))"
COHORT_TEST_CALL_TIMEOUT=2 COHORT_TEST_VICTIM=5 COHORT_TEST_DIE_AT=stall "$spawn" 8 2 -- "$errc" >"$tmp/out" 2>&1
codes 7 timeout
ok $? "code: rank 5 stalls after joining: timeout on all 7 others, relayed by the root ($(tally))"
for victim in 5 4 0; do
    COHORT_TEST_CALL_TIMEOUT=30 COHORT_TEST_VICTIM=$victim COHORT_TEST_DIE_AT=joined "$spawn" 8 2 -- "$errc" >"$tmp/out" 2>&1
    codes 7 peer-lost
    ok $? "code: rank $victim killed after joining: peer lost on all 7 others ($(tally))"
done
COHORT_TIMEOUT=30 "$spawn" 8 2 --proxy-port --attack "$attack proxy flip" -- "$errc" >"$tmp/out" 2>&1
codes 8 auth && grep -q '^rank 0: code auth: .*tampered with' "$tmp/out"
ok $? "code: a frame changed on the way: authentication on all 8 ranks, relayed from the root ($(tally))"
COHORT_TIMEOUT=5 "$spawn" 8 2 --bad-secret 4 -- "$errc" >"$tmp/out" 2>&1
grep -q '^rank 4: code auth: .*different secrets?' "$tmp/out"
ok $? "code: a leader with another secret: authentication ($(grep -m1 '^rank 4:' "$tmp/out"); $(tally))"
COHORT_TIMEOUT=30 "$spawn" 8 2 --env-rank 5 "SLURM_STEP_NUM_TASKS=9 SLURM_STEP_TASKS_PER_NODE=4,5" -- "$errc" >"$tmp/out" 2>&1
codes 8 config
ok $? "code: a rank that sees another step: configuration on all 8 ranks, the refused one too ($(tally))"
COHORT_TIMEOUT=60 "$spawn" 8 2 --attack-first "$attack squat" -- "$errc" >"$tmp/out" 2>&1
codes 8 network && grep -q '^rank 0: code network: cohort: the bootstrap root cannot listen' "$tmp/out"
ok $? "code: the root's port taken: network on all 8 ranks ($(tally))"
COHORT_TEST_BYTES=17825792 "$spawn" 4 2 -- "$errc" >"$tmp/out" 2>&1
codes 4 resource
ok $? "code: an allgather above the 64 MiB limit: resource on all 4 ranks ($(tally))"

tap_done
