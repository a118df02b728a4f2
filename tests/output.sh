#!/bin/sh
# output.sh - a work queue's results published exactly once
# (cohort_work_commit_output) with many workers on this machine as
# simulated nodes (tests/bootstrap/spawn, tests/work/work_check): every
# id's results in exactly one part, byte for byte what its worker made
# (tests/work/output_verify.py, a reader of its own) and as the journal
# records (cohort-work output --journal); through workers SIGKILLed before
# a commit, at a random moment inside it and as it returns (rank 0 too),
# over many rounds; a SIGSTOPped worker whose late commit loses; the
# coordinator SIGKILLed, and the whole step SIGKILLed at once, and the step
# rerun over the journal; offers left by
# the dead removed by the next step; cohort-work status --watch; with the
# coordinator stopped while an offer waits: a stranger (user nobody, with
# fs.protected_hardlinks=0, as root) who cannot hard-link the offer, a
# commit refused (the offer given a second link) whose only worker's close
# fails at once, and the coordinator stopping on a part's name taken, its
# reason in every worker's error; offers an older cohort left in the
# directory itself, finished by the next start; bad input (no journal, a
# directory others can write, a symbolic link, an offers' folder that is a
# symbolic link or open to others, one another coordinator holds, a part no
# journal published, a rerun without output), one line on every rank.
# OUTPUT_KILL_ROUNDS (default 30) and OUTPUT_COORD_ROUNDS (default 15) set
# the rounds; under the sanitizers (looking for memory errors: the -Werror
# build runs every round) 10 and 5. TAP.
. "$COHORT_SRCDIR/tests/tap.sh"
spawn="$COHORT_BUILDDIR/tests/bootstrap/spawn"
check="$COHORT_BUILDDIR/tests/work/work_check"
work="$COHORT_BUILDDIR/runtime/tools/cohort-work"
verify="$COHORT_SRCDIR/tests/work/output_verify.py"
COHORT_WORK_COORD="$COHORT_BUILDDIR/runtime/coord/cohort-work-coord"
export COHORT_WORK_COORD
kill_rounds=${OUTPUT_KILL_ROUNDS:-${COHORT_SANITIZED:+10}}
kill_rounds=${kill_rounds:-30}
coord_rounds=${OUTPUT_COORD_ROUNDS:-${COHORT_SANITIZED:+5}}
coord_rounds=${coord_rounds:-15}
command -v python3 >/dev/null || skip_all "no python3 for tests/work/output_verify.py"

summary() {
    awk '/^spawn: / { sp = $0 } / FAIL: / && !f { f = $0 } / ok / { n++ }
         END { print sp "; " n + 0 " ok" (f ? "; " f : "") }' "$tmp/out"
}

run() { # run N NODES [VAR=VALUE...]: a step of work_check with results
    count=$1 nodes=$2
    shift 2
    rm -rf "$tmp/o" && mkdir "$tmp/o"
    env COHORT_TEST_OUT="$tmp/o" COHORT_TEST_JOURNAL="$tmp/journal" \
        COHORT_TEST_OUTPUT="$tmp/results" "$@" "$spawn" "$count" "$nodes" -- "$check" \
        >"$tmp/out" 2>&1
}

fresh() { rm -rf "$tmp/journal" "$tmp/results"; }

# published N [BYTES]: what is wrong with $tmp/results for a queue of N
# items of BYTES of results each (nothing: all published once, as made and
# as journaled)
published() {
    python3 "$verify" "$tmp/results" "$1" "${2:-16}"
    "$work" output "$tmp/results" --journal "$tmp/journal" --format json >"$tmp/list" 2>&1 ||
        echo "cohort-work output: $(grep -m1 '"' "$tmp/list" | head -c 300)"
}

offers() { find "$tmp/results" -name '.tmp-*' | wc -l; }

fresh
run 8 2 COHORT_TEST_ITEMS=3000
why=$(published 3000)
[ -z "$why" ] && [ "$(grep -c ': ok ' "$tmp/out")" = 8 ] && [ "$(offers)" = 0 ]
ok $? "8 workers on 2 nodes, 3000 items with results: each id's results in exactly one part, as made and as journaled ($(summary)${why:+; $why})"

"$work" output "$tmp/results" --journal "$tmp/journal" >"$tmp/text" 2>&1
grep -q '^check:     ok$' "$tmp/text" && grep -q ' 3000 ids, 48000 bytes; 0 offers' "$tmp/text" &&
    grep -q '^journal:   3000 of 3000 items committed, 0 of them without results$' "$tmp/text"
ok $? "cohort-work output lists the parts and says the check holds ($(tail -3 "$tmp/text" | tr '\n' ' '))"

# --- progress: cohort-work status --watch while the step runs -------------
fresh
rm -rf "$tmp/o" && mkdir "$tmp/o"
env COHORT_TEST_OUT="$tmp/o" COHORT_TEST_JOURNAL="$tmp/journal" COHORT_TEST_OUTPUT="$tmp/results" \
    COHORT_TEST_ITEMS=20000 COHORT_TEST_US=200 "$spawn" 4 1 -- "$check" >"$tmp/out" 2>&1 &
step=$!
i=0
while [ ! -s "$tmp/journal" ] && [ $i -lt 600 ] && kill -0 $step 2>/dev/null; do
    i=$((i + 1)); sleep 0.1 # the journal appears when the coordinator starts
done
"$work" status "$tmp/journal" --watch=0.2 >"$tmp/watch" 2>&1
rc=$?
wait $step
"$work" status "$tmp/journal" --format json >"$tmp/json" 2>&1
why=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
if s["leased"] != 0 or s["workers"] != 0 or not s["items_per_s"] or s["remaining"] != 0:
    print("status: %s" % s)' "$tmp/json" 2>&1)
[ $rc = 0 ] && [ -z "$why" ] &&
    tail -1 "$tmp/watch" | grep -q '^20000 of 20000 committed (100.0%), [0-9]* items/s, ETA 0 s, 0 leased, 0 set aside$'
ok $? "cohort-work status --watch follows a running queue to its end; the JSON status has the rate, leased and workers ($(tail -1 "$tmp/watch")${why:+; $why})"

# --- workers killed before, inside and after a commit with results ------
bad=0 first=""
i=0
while [ $i -lt "$kill_rounds" ]; do
    i=$((i + 1))
    fresh
    victim=$(awk -v s="$i" 'BEGIN { srand(s); print (s % 5 == 0) ? 0 : int(rand() * 16) }')
    at=$(awk -v s="$i" 'BEGIN { srand(s * 7); print 1 + int(rand() * 3) }')
    do=$(echo kill kill-in kill-after | cut -d' ' -f$((i % 3 + 1)))
    run 16 2 COHORT_TEST_ITEMS=2000 COHORT_TEST_CAP=8 COHORT_TEST_BYTES=4096 \
        COHORT_TEST_VICTIM="$victim" COHORT_TEST_AT="$at" COHORT_TEST_DO="$do" \
        COHORT_TEST_SEED="$i" COHORT_TIMEOUT=60
    why=$(published 2000 4096)
    left=$(offers)
    # the next step over the journal has nothing to do and clears what the
    # victim may have left offered
    first_out=$(summary)
    run 4 1 COHORT_TEST_ITEMS=2000 COHORT_TEST_BYTES=4096
    why2=$(published 2000 4096)
    if [ -n "$why$why2" ] || [ "$(offers)" != 0 ] || ! grep -q "^spawn: 4 exited 0" "$tmp/out"; then
        bad=$((bad + 1))
        [ -n "$first" ] || first="round $i (rank $victim, $do at lease $at): $first_out; ${why:-published once}; rerun $(summary), ${why2:-published once}, $(offers) offers left"
    fi
done
[ $bad = 0 ]
ok $? "$kill_rounds rounds of 16 workers, one SIGKILLed before, inside (random moment) or right after a commit with results (rank 0 in every fifth): every id's results published exactly once, as made; the next step clears the offers left (${first:-all rounds right})"

# --- a stopped worker: its late commit with results loses ---------------
fresh
run 8 2 COHORT_TEST_ITEMS=8000 COHORT_TEST_US=500 COHORT_TEST_CAP=64 \
    COHORT_TEST_LEASE_TIMEOUT=1 COHORT_TEST_VICTIM=3 COHORT_TEST_DO=stop
why=$(published 8000)
[ -z "$why" ] && grep -q '^rank 3: stale after stop' "$tmp/out" && [ "$(offers)" = 0 ]
ok $? "a worker SIGSTOPped past its lease: its late commit with results is STALE and nothing of it is published; every id's results once ($(summary)${why:+; $why})"

# --- the coordinator killed, the step rerun over the journal ------------
bad=0 first=""
i=0
while [ $i -lt "$coord_rounds" ]; do
    i=$((i + 1))
    fresh
    victim=$(awk -v s="$i" 'BEGIN { srand(s * 3); print int(rand() * 8) }')
    at=$(awk -v s="$i" 'BEGIN { srand(s * 5); print 1 + int(rand() * 10) }')
    run 8 2 COHORT_TEST_ITEMS=3000 COHORT_TEST_CAP=8 COHORT_TEST_BYTES=1024 \
        COHORT_TEST_VICTIM="$victim" COHORT_TEST_AT="$at" COHORT_TEST_DO=kill-coord
    first_out=$(summary)
    run 8 2 COHORT_TEST_ITEMS=3000 COHORT_TEST_CAP=8 COHORT_TEST_BYTES=1024
    why=$(published 3000 1024)
    if [ -n "$why" ] || [ "$(grep -c ': ok ' "$tmp/out")" != 8 ] || [ "$(offers)" != 0 ]; then
        bad=$((bad + 1))
        [ -n "$first" ] || first="round $i (rank $victim killed it at lease $at): $first_out; rerun $(summary); ${why:-published once}"
    fi
done
[ $bad = 0 ]
ok $? "$coord_rounds rounds: the coordinator SIGKILLed at a random lease, the step rerun over the journal: every id's results published exactly once, no offer left (${first:-all rounds right})"

# --- the whole step SIGKILLed at once, then rerun -------------------------
# Every rank and the coordinator (rank 0's child, in a session of its own)
# killed together once commits are flowing: whatever each was doing (an
# offer half written, sent, recorded, linked), the rerun publishes every
# id's results once.
bad=0 first=""
i=0
while [ $i -lt 5 ]; do
    i=$((i + 1))
    fresh
    rm -rf "$tmp/o" && mkdir "$tmp/o"
    env COHORT_TEST_OUT="$tmp/o" COHORT_TEST_JOURNAL="$tmp/journal" \
        COHORT_TEST_OUTPUT="$tmp/results" COHORT_TEST_ITEMS=4000 COHORT_TEST_CAP=8 \
        COHORT_TEST_BYTES=2048 COHORT_TEST_US=$((200 * i)) "$spawn" 8 2 -- "$check" \
        >"$tmp/out" 2>&1 &
    step=$!
    polls=0
    until [ "$(find "$tmp/results" -name 'part-*' 2>/dev/null | wc -l)" -ge $((i * 20)) ] ||
        ! kill -0 $step 2>/dev/null || [ $polls -ge 600 ]; do
        polls=$((polls + 1)); sleep 0.05 # until parts are being published
    done
    ranks=$(pgrep -P $step)
    coord=$(for r in $ranks; do pgrep -P "$r"; done)
    kill -9 $coord $ranks 2>/dev/null
    wait $step
    before=$(find "$tmp/results" -name 'part-*' | wc -l)
    run 8 2 COHORT_TEST_ITEMS=4000 COHORT_TEST_CAP=8 COHORT_TEST_BYTES=2048
    why=$(published 4000 2048)
    if [ -n "$why" ] || [ "$(grep -c ': ok ' "$tmp/out")" != 8 ] || [ "$(offers)" != 0 ] ||
        [ -z "$coord" ]; then
        bad=$((bad + 1))
        [ -n "$first" ] || first="round $i (coordinator ${coord:-not found}, $before parts before the kill): rerun $(summary); ${why:-published once}; $(offers) offers left"
    fi
done
[ $bad = 0 ]
ok $? "5 rounds: every rank and the coordinator SIGKILLed together while parts are being published, then the step rerun: every id's results published exactly once, no offer left (${first:-all rounds right})"

# --- a stopped coordinator and the offer of its one commit ----------------
# stopped N NODES [VAR=VALUE...]: a step in the background (pid $step)
# whose rank 0 SIGSTOPs the coordinator at its first lease (pid $coord),
# then commits with results; returns once the coordinator is stopped and,
# with one worker, that commit's offer is written ($offer: its path, found
# as this user, wherever the layout puts it). The caller sends SIGCONT.
stopped() {
    count=$1 nodes=$2
    shift 2
    rm -rf "$tmp/o" && mkdir "$tmp/o"
    env COHORT_TEST_OUT="$tmp/o" COHORT_TEST_JOURNAL="$tmp/journal" \
        COHORT_TEST_OUTPUT="$tmp/results" COHORT_TEST_VICTIM=0 COHORT_TEST_AT=1 \
        COHORT_TEST_DO=stop-coord "$@" "$spawn" "$count" "$nodes" -- "$check" \
        >"$tmp/out" 2>&1 &
    step=$!
    polls=0 coord="" offer=""
    until { [ -n "$coord" ] && [ "$(awk '{ print $3 }' "/proc/$coord/stat" 2>/dev/null)" = T ] &&
            { [ "$count" != 1 ] || [ -n "$offer" ]; }; } ||
        ! kill -0 $step 2>/dev/null || [ $polls -ge 1200 ]; do
        polls=$((polls + 1)); sleep 0.05 # until the coordinator is stopped and the offer made
        coord=$(sed -n 's/^rank 0: stopping the coordinator (pid \([0-9]*\))$/\1/p' "$tmp/out")
        offer=$(find "$tmp/results" -name '.tmp-*' 2>/dev/null | head -1)
    done
}

# A stranger's hard link to an offer: with fs.protected_hardlinks=0 any
# user may link a file it cannot read, in a directory it can reach. Set for
# the link alone (as root) and restored at once; the stranger is user
# nobody; the output directory is 0755 (readers of results keep access).
why=""
[ "$(id -u)" = 0 ] || why="not root: cannot set fs.protected_hardlinks nor act as another user"
[ -n "$why" ] || id nobody >/dev/null 2>&1 || why="no user nobody to act as the stranger"
[ -n "$why" ] || command -v runuser >/dev/null || why="no runuser to act as user nobody"
hardlinks=$(cat /proc/sys/fs/protected_hardlinks 2>/dev/null)
[ -n "$why" ] || [ -w /proc/sys/fs/protected_hardlinks ] ||
    why="fs.protected_hardlinks cannot be set here (/proc/sys read-only)"
if [ -n "$why" ]; then
    skip "a stranger cannot hard-link an offer in an output directory of mode 0755" "$why"
else
    fresh
    chmod 0711 "$tmp" # the stranger may pass through to the output directory
    mkdir -m 0755 "$tmp/results" && mkdir "$tmp/stranger" && chown nobody "$tmp/stranger"
    stopped 1 1 COHORT_TEST_ITEMS=64 COHORT_TEST_CAP=8
    trap 'echo "$hardlinks" >/proc/sys/fs/protected_hardlinks; rm -rf "$tmp"' EXIT
    echo 0 >/proc/sys/fs/protected_hardlinks &&
        runuser -u nobody -- ln "${offer:-$tmp/results/none}" "$tmp/stranger/offer" \
            >"$tmp/ln" 2>&1
    linked=$?
    echo "$hardlinks" >/proc/sys/fs/protected_hardlinks
    trap 'rm -rf "$tmp"' EXIT
    [ -n "$coord" ] && kill -CONT "$coord"
    wait $step
    chmod 0700 "$tmp"
    why=$(published 64)
    [ -n "$offer" ] && [ $linked != 0 ] && [ -z "$why" ] && grep -q '^rank 0: ok 64 committed' "$tmp/out" &&
        [ -z "$(ls -A "$tmp/stranger")" ] &&
        [ "$(cat /proc/sys/fs/protected_hardlinks)" = "$hardlinks" ]
    ok $? "a stranger (user nobody, fs.protected_hardlinks=0) cannot hard-link a worker's offer in an output directory of mode 0755; the commit publishes (ln: $(head -c 200 "$tmp/ln"); $(summary)${why:+; $why})"
fi

# A commit with results refused (its offer has a second link, the user's
# own here): its ids go back to the queue, so that the close of the only
# worker fails at once, naming the refusal; the lease timeout (a day) is
# far beyond the step's deadline (SPAWN_TIMEOUT), so waiting for it fails.
fresh
stopped 1 1 COHORT_TEST_ITEMS=64 COHORT_TEST_CAP=8 COHORT_TEST_LEASE_TIMEOUT=86400 \
    SPAWN_TIMEOUT=60
ln "${offer:-$tmp/results/none}" "$tmp/second-link" 2>/dev/null
[ -n "$coord" ] && kill -CONT "$coord"
wait $step
grep -q "^rank 0: FAIL: .*is not a file of this user's with one link" "$tmp/out" &&
    grep -q "^rank 0: close: .*closed it with 64 of 64 items not done and none leased: nobody will do them.*; a commit with results was refused: .*with one link" "$tmp/out"
ok $? "a commit with results refused (its offer has a second link): its ids go back to the queue and the only worker's close fails at once, naming the refusal ($(summary); $(grep -m1 'close:' "$tmp/out" | head -c 300))"

# The coordinator stops on an output error (the name of the next part taken
# while it was stopped): every worker's error says why, not only that the
# coordinator is gone.
fresh
stopped 2 2 COHORT_TEST_ITEMS=2000 COHORT_TEST_CAP=8 COHORT_TEST_US=1000
next=$(find "$tmp/results" -name 'part-*' | wc -l)
: >"$tmp/results/$(printf 'part-%012d' "$next")"
[ -n "$coord" ] && kill -CONT "$coord"
wait $step
[ "$(grep -c "FAIL: .*the work coordinator of queue 'q' .* stopped: output directory $tmp/results: cannot publish $(printf 'part-%012d' "$next") from .offers/.tmp-[0-9a-f]* .*File exists" "$tmp/out")" = 2 ]
ok $? "the coordinator stops on an output error (a part's name taken): both workers' errors give its reason ($(summary); $(grep -m1 'FAIL' "$tmp/out" | head -c 300))"

# Offers an older cohort left in the directory itself (before the offers'
# folder): a part's file put back under its offer's name (as a crash after
# the journal's sync and before the link left it) and an offer never
# committed. The next start moves both into .offers, publishes the first
# under its part's name and removes the second.
fresh
run 4 1 COHORT_TEST_ITEMS=400
tok=$(python3 -c 'import sys; print(open(sys.argv[1], "rb").read()[24:40].hex())' \
    "$tmp/results/part-000000000000")
mv "$tmp/results/part-000000000000" "$tmp/results/.tmp-$tok"
: >"$tmp/results/.tmp-0123456789abcdef0123456789abcdef"
run 4 1 COHORT_TEST_ITEMS=400
why=$(published 400)
[ -z "$why" ] && [ "$(grep -c ': ok ' "$tmp/out")" = 4 ] && [ "$(offers)" = 0 ] &&
    [ -d "$tmp/results/.offers" ]
ok $? "offers an older cohort left in the output directory itself (one recorded, one never committed): the next start moves them into .offers, publishes the recorded one, removes the other ($(summary)${why:+; $why}; $(offers) offers left)"

# --- bad input ----------------------------------------------------------
rm -rf "$tmp/o" && mkdir "$tmp/o"
env COHORT_TEST_OUT="$tmp/o" COHORT_TEST_OUTPUT="$tmp/results" "$spawn" 4 1 -- "$check" \
    >"$tmp/out" 2>&1
[ "$(grep -c 'FAIL: .*output is set and journal is not' "$tmp/out")" = 4 ]
ok $? "output without a journal: refused on all 4 ranks with one line ($(summary))"

fresh
mkdir -m 0777 "$tmp/results" && chmod 0777 "$tmp/results"
run 4 1 COHORT_TEST_ITEMS=100
[ "$(grep -c "FAIL: .*output directory $tmp/results: .*writable by its group or others" "$tmp/out")" = 4 ]
ok $? "an output directory others can write: refused on all 4 ranks naming it ($(summary))"

fresh
mkdir "$tmp/results" && : >"$tmp/results/part-000000000007"
run 4 1 COHORT_TEST_ITEMS=100
[ "$(grep -c "FAIL: .*holds part-000000000007, which the journal of queue 'q' never published" "$tmp/out")" = 4 ]
ok $? "an output directory holding a part its journal never published: refused on all 4 ranks ($(summary))"

fresh
mkdir "$tmp/real" && ln -s "$tmp/real" "$tmp/results"
run 4 1 COHORT_TEST_ITEMS=100
[ "$(grep -c "FAIL: .*output directory $tmp/results: cannot be opened (a directory, not a symbolic link)" "$tmp/out")" = 4 ]
ok $? "an output directory given as a symbolic link: refused on all 4 ranks ($(summary))"
rm -f "$tmp/results"

fresh
mkdir "$tmp/results" "$tmp/elsewhere" && ln -s "$tmp/elsewhere" "$tmp/results/.offers"
run 4 1 COHORT_TEST_ITEMS=100
[ "$(grep -c "FAIL: .*output directory $tmp/results: its offers' folder .offers cannot be opened (a folder, not a symbolic link)" "$tmp/out")" = 4 ]
ok $? "an offers' folder that is a symbolic link: refused on all 4 ranks ($(summary))"

fresh
mkdir "$tmp/results" && mkdir -m 0755 "$tmp/results/.offers"
run 4 1 COHORT_TEST_ITEMS=100
[ "$(grep -c "FAIL: .*output directory $tmp/results: its offers' folder .offers must be this user's alone (uid [0-9]*, mode 0700), not uid [0-9]*, mode 0755: chmod 700 $tmp/results/.offers" "$tmp/out")" = 4 ]
ok $? "an offers' folder open to others (0755): refused on all 4 ranks, saying what to do ($(summary))"

# the directory's lock held by another process (as another queue's
# coordinator would): refused, naming its pid
fresh
mkdir "$tmp/results" && mkfifo "$tmp/hold"
python3 -c '
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.read()' "$tmp/results/.lock" <"$tmp/hold" >"$tmp/locked" &
holder=$!
exec 3>"$tmp/hold"
until grep -q locked "$tmp/locked" 2>/dev/null || ! kill -0 $holder 2>/dev/null; do sleep 0.1; done
run 4 1 COHORT_TEST_ITEMS=100
exec 3>&-
wait $holder
[ "$(grep -c "FAIL: .*output directory $tmp/results: in use by another queue's coordinator (pid $holder)" "$tmp/out")" = 4 ]
ok $? "an output directory another coordinator holds: refused on all 4 ranks naming its pid ($(summary))"

# a rerun without output over a journal that published results
fresh
run 4 1 COHORT_TEST_ITEMS=100
rm -rf "$tmp/o" && mkdir "$tmp/o"
env COHORT_TEST_OUT="$tmp/o" COHORT_TEST_JOURNAL="$tmp/journal" COHORT_TEST_ITEMS=100 \
    "$spawn" 4 1 -- "$check" >"$tmp/out" 2>&1
[ "$(grep -c "FAIL: .*records results published in an output directory: open queue 'q' with that directory" "$tmp/out")" = 4 ]
ok $? "a rerun without output over a journal that published results: refused on all 4 ranks ($(summary))"

tap_done
