#!/bin/sh
# work.sh - the work queue (cohort_work.h) with many workers on this
# machine as simulated nodes (tests/bootstrap/spawn, tests/work/work_check):
# every item committed exactly once; 512 ranks on 8 nodes under a hard
# limit of 256 open files (a million items; the coordinator's and the
# relays' sockets counted in /proc); two queues open at once, one relay
# process per node; a node's relay SIGKILLed (its ranks
# fail naming it, the others finish); workers SIGKILLed at random leases
# (rank 0 too) over many rounds; a SIGSTOPped worker's items finished
# elsewhere and its late commit refused; the coordinator SIGKILLed and the
# step rerun over the journal, over many rounds; a SIGSTOPped coordinator
# given up at the deadline; a coordinator stopped before it reports its
# port, ended by rank 0 (the rerun finds its journal free); a coordinator
# holding another secret, named as the work coordinator by the ranks that
# meet it; too few open files for the coordinator, one line on every rank,
# and a low soft limit raised; the coordinator's environment (no secret,
# none of the user's variables); bad input, one line on every rank.
# WORK_KILL_ROUNDS (default 100) and WORK_COORD_ROUNDS (default 50) set the
# rounds; under the sanitizers (looking for memory errors, not rare
# interleavings: the -Werror build runs every round) 20 and 10. TAP.
. "$COHORT_SRCDIR/tests/tap.sh"
spawn="$COHORT_BUILDDIR/tests/bootstrap/spawn"
check="$COHORT_BUILDDIR/tests/work/work_check"
status="$COHORT_BUILDDIR/runtime/tools/cohort-work"
COHORT_WORK_COORD="$COHORT_BUILDDIR/runtime/coord/cohort-work-coord"
export COHORT_WORK_COORD
kill_rounds=${WORK_KILL_ROUNDS:-${COHORT_SANITIZED:+20}}
kill_rounds=${kill_rounds:-100}
coord_rounds=${WORK_COORD_ROUNDS:-${COHORT_SANITIZED:+10}}
coord_rounds=${coord_rounds:-50}

# summary: spawn's line, the first failure and the ranks' ok count.
summary() {
    awk '/^spawn: / { sp = $0 } / FAIL: / && !f { f = $0 } / ok / { n++ }
         END { print sp "; " n + 0 " ok" (f ? "; " f : "") }' "$tmp/out"
}

# exactly N: the ids in DIR's committed.* files are 0..N-1, each once.
# Prints what differs.
exactly() {
    cat "$1"/committed.* 2>/dev/null | sort -n >"$tmp/ids"
    dup=$(uniq -d "$tmp/ids" | head -3 | tr '\n' ' ')
    got=$(uniq "$tmp/ids" | wc -l)
    if [ -n "$dup" ] || [ "$got" != "$2" ]; then
        echo "committed twice: ${dup:-none}; $got distinct of $2"
        return 1
    fi
}

# journal_done N: what differs from N items committed and none remaining
# in $tmp/journal, by cohort-work status.
journal_done() {
    "$status" status "$tmp/journal" --format json 2>&1 | python3 -c '
import json, sys
try:
    s = json.load(sys.stdin)
except ValueError:
    print("cohort-work status failed"); sys.exit()
if s["committed"] != int(sys.argv[1]) or s["remaining"] != 0:
    print("journal: %d committed, %d remaining" % (s["committed"], s["remaining"]))' "$1"
}

run() { # run N NODES [VAR=VALUE...]: a step of work_check, output in $tmp/out
    count=$1 nodes=$2
    shift 2
    rm -rf "$tmp/o" && mkdir "$tmp/o"
    env COHORT_TEST_OUT="$tmp/o" "$@" "$spawn" "$count" "$nodes" -- "$check" >"$tmp/out" 2>&1
}

run 8 2 COHORT_TEST_ITEMS=10000
why=$(exactly "$tmp/o" 10000)
[ $? = 0 ] && [ "$(grep -c ': ok ' "$tmp/out")" = 8 ]
ok $? "8 workers on 2 nodes, 10000 items: every item committed once ($(summary)${why:+; $why})"

run 64 4 COHORT_TEST_ITEMS=20000 COHORT_TEST_CAP=16
why=$(exactly "$tmp/o" 20000)
[ $? = 0 ] && [ "$(grep -c ': ok ' "$tmp/out")" = 64 ]
ok $? "64 workers on 4 nodes, 20000 items: every item committed once ($(summary)${why:+; $why})"

# --- fan-in: one connection per node ------------------------------------
# 512 ranks on 8 nodes, every process under a hard limit of 256 open files
# (the launcher too): the coordinator holds its listener and one connection
# per node's relay, each relay its node's 64 ranks, the coordinator and its
# listener (counted from /proc once every rank has opened the queue), and a
# million items are committed once each. Under the sanitizers (512 ASan
# processes need more memory than this machine has): 128 ranks under 128
# open files, 100,000 items; a coordinator with a connection per rank
# would need 208 (its ranks, 16 spare and the room of 64 for strangers'
# connections that net_fd_check asks of every loop). At nice 19: its hundreds of processes must not starve
# the tests that make check runs beside it (a bootstrap parent that does
# not challenge within 3 s is taken for a stranger).
ranks=512 files=256 items=1000000
[ -n "${COHORT_SANITIZED:-}" ] && ranks=128 files=128 items=100000
if [ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge "$files" ]; then
    run "$ranks" 8 COHORT_TEST_ITEMS="$items" COHORT_TEST_CAP=4096 COHORT_TEST_SOCKETS=1 \
        nice -n 19 prlimit --nofile="$files:$files"
    why=$(exactly "$tmp/o" "$items")
    coord=$(sed -n 's/^rank 0: coordinator sockets: //p' "$tmp/out")
    relays=$(sed -n 's/^rank [0-9]*: relay sockets: //p' "$tmp/out" | sort -u | tr '\n' ' ')
    # a relay holds its ranks, the one above and its socket, and the node's
    # socket for later queues where its process can be shared: its count
    # there (ranks, 4, room for 64 strangers) with the process's own 4 and
    # 16 spare fits under the limit (host.h)
    share=$((ranks / 8 + 4 + 64 + 4 + 16 <= files))
    [ -z "$why" ] && [ "$(grep -c ': ok ' "$tmp/out")" = "$ranks" ] && [ "$coord" = 9 ] &&
        [ "$relays" = "$((ranks / 8 + 2 + share)) " ] && [ "$(grep -c ': relay sockets: ' "$tmp/out")" = 8 ]
    ok $? "$ranks ranks on 8 nodes under a hard limit of $files open files: $items items committed once, the coordinator holds ${coord:-?} sockets (8 relays and its listener), each relay ${relays:-? }($(summary)${why:+; $why})"
else
    skip "$ranks ranks under a hard limit of $files open files" "the hard limit here is $(ulimit -Hn)"
fi

# --- the relays' tree ----------------------------------------------------
# At COHORT_RELAY_FANOUT=2 the relays of 16 nodes form four levels: the
# coordinator holds the top two (and its listener); the relays of nodes 0
# to 6 each hold their 4 ranks, the 2 relays below, the one above and 3
# listeners (Unix and TCP, and the node's socket for the step's later
# queues and sets, host.h); the 9 others 4 ranks, the one above and 2.
run 64 16 COHORT_TEST_ITEMS=20000 COHORT_TEST_CAP=16 COHORT_TEST_SOCKETS=1 COHORT_RELAY_FANOUT=2
why=$(exactly "$tmp/o" 20000)
coord=$(sed -n 's/^rank 0: coordinator sockets: //p' "$tmp/out")
relays=$(sed -n 's/^rank [0-9]*: relay sockets: //p' "$tmp/out" | sort | uniq -c | awk '{ printf "%s x %s, ", $1, $2 }')
[ -z "$why" ] && [ "$(grep -c ': ok ' "$tmp/out")" = 64 ] && [ "$coord" = 3 ] &&
    [ "$relays" = "7 x 10, 9 x 7, " ]
ok $? "64 ranks on 16 nodes, relays in a tree of fanout 2 (four levels): 20000 items committed once; the coordinator holds ${coord:-?} sockets, the relays ${relays:-? }($(summary)${why:+; $why})"

# A second queue opened at once: the node's relay process (host.h) runs
# both queues' relays, one process per node, not one per queue.
run 32 8 COHORT_TEST_ITEMS=4000 COHORT_TEST_SOCKETS=1 COHORT_TEST_SECOND=1
why=$(exactly "$tmp/o" 4000)
procs=$(sed -n 's/^rank [0-9]*: relay processes: //p' "$tmp/out" | sort | uniq -c | awk '{ printf "%s x %s, ", $1, $2 }')
[ -z "$why" ] && [ "$(grep -c ': ok ' "$tmp/out")" = 32 ] && [ "$procs" = "8 x 1, " ] &&
    grep -q '^spawn: 32 exited 0, 0 did not' "$tmp/out"
ok $? "two queues open at once on 32 ranks of 8 nodes: one relay process on each node (${procs:-none counted }), 4000 items committed once ($(summary)${why:+; $why})"

# The relay of node 0, between the coordinator and the relays of nodes 2
# and 3 (and, below 2, of 6 and 7), SIGKILLed: node 0's ranks name their
# relay, those of nodes 2, 3, 6 and 7 name node 0's relay on the way, the
# 12 ranks of nodes 1, 4 and 5 finish every item, none committed twice.
rm -f "$tmp/journal"
run 32 8 COHORT_TEST_ITEMS=32000 COHORT_TEST_CAP=8 COHORT_TEST_US=200 COHORT_TEST_VICTIM=1 \
    COHORT_TEST_AT=3 COHORT_TEST_DO=kill-relay COHORT_TEST_JOURNAL="$tmp/journal" COHORT_RELAY_FANOUT=2
twice=$(cat "$tmp/o"/committed.* | sort -n | uniq -d | head -3 | tr '\n' ' ')
why=$(journal_done 32000)
own=$(grep -c "^rank [0-3]: FAIL: cohort: cohort_work_.*: this node's relay to the work coordinator of queue 'q' (.*, relay pid [1-9][0-9]*) is gone (killed?)" "$tmp/out")
below=$(grep -Ec "^rank (8|9|1[0-5]|2[4-9]|3[01]): FAIL: cohort: cohort_work_.*: the relay of node 0, on the way to the work coordinator of queue 'q' \(.*\), is gone" "$tmp/out")
odd=$(grep ': FAIL: ' "$tmp/out" | grep -v "this node's relay to the work coordinator of queue 'q' (.*, relay pid [1-9][0-9]*) is gone\|the relay of node 0, on the way" | head -1)
[ -z "$twice" ] && [ -z "$why" ] && grep -q '^rank 1: killing the relay (pid [1-9]' "$tmp/out" &&
    [ "$own" = 4 ] && [ "$below" = 16 ] && [ "$(grep -c ': ok ' "$tmp/out")" = 12 ]
ok $? "a relay between others SIGKILLed (fanout 2, 8 nodes): its node's 4 ranks name it, the 16 below name it on the way, the 12 others finish every item, none committed twice ($own, $below named; $(summary)${odd:+; also: $odd}${twice:+; committed twice: $twice}${why:+; $why})"

# A relay below the top that cannot start: a stand-in lets the coordinator
# and the first two relays (the top, at fanout 2 on 4 nodes) run the real
# program and refuses the relays of nodes 2 and 3; every rank fails with
# that line, and the coordinator and the top relays are ended by the
# ranks that started them (none of the pids the stand-in saw is alive).
mkdir -p "$tmp/tokens"
cat >"$tmp/deep-refused" <<EOF2
#!/bin/sh
echo \$\$ >>"$tmp/started"
cat >"$tmp/rec.\$\$"
exec <"$tmp/rec.\$\$"
rm -f "$tmp/rec.\$\$"
if [ "\$(od -An -tu1 -j7 -N1 /dev/stdin | tr -d ' ')" = 3 ]; then
    i=0
    while ! mkdir "$tmp/tokens/\$i" 2>/dev/null; do i=\$((i + 1)); done
    [ "\$i" -ge 2 ] && { echo "error refused by the test's stand-in"; exit 2; }
fi
exec "$COHORT_WORK_COORD"
EOF2
chmod +x "$tmp/deep-refused"
rm -f "$tmp/started"
run 8 4 COHORT_TEST_ITEMS=100 COHORT_WORK_COORD="$tmp/deep-refused" COHORT_RELAY_FANOUT=2
alive=$(for p in $(cat "$tmp/started" 2>/dev/null); do kill -0 "$p" 2>/dev/null && echo "$p"; done | tr '\n' ' ')
[ "$(grep -c "FAIL: cohort: cohort_work_open: queue 'q': refused by the test's stand-in" "$tmp/out")" = 8 ] &&
    [ "$(wc -l <"$tmp/started")" = 5 ] && [ -z "$alive" ]
ok $? "a relay below the top that cannot start: every rank fails with its line; the coordinator and the top relays it started are gone ($(wc -l <"$tmp/started") started${alive:+, alive: $alive}; $(summary))"

run 4 2 COHORT_TEST_ITEMS=100 COHORT_RELAY_FANOUT=0x10
[ "$(grep -c "FAIL: cohort: cohort_work_open: .*COHORT_RELAY_FANOUT='0x10' is not a number from 1 to 65536: give one, or unset it for the default (128)" "$tmp/out")" = 4 ]
ok $? "COHORT_RELAY_FANOUT=0x10: every rank fails at open with rank 0's line naming it ($(summary))"

# --- workers killed at random leases -----------------------------------
bad=0 first=""
i=0
while [ $i -lt "$kill_rounds" ]; do
    i=$((i + 1))
    victim=$(awk -v s="$i" 'BEGIN { srand(s); print (s % 5 == 0) ? 0 : int(rand() * 64) }')
    at=$(awk -v s="$i" 'BEGIN { srand(s * 7); print 1 + int(rand() * 3) }')
    run 64 4 COHORT_TEST_ITEMS=6000 COHORT_TEST_CAP=8 COHORT_TEST_VICTIM="$victim" \
        COHORT_TEST_AT="$at" COHORT_TEST_DO=kill COHORT_TIMEOUT=60
    why=$(exactly "$tmp/o" 6000)
    if [ $? != 0 ] || [ "$(grep -c ': ok ' "$tmp/out")" != 63 ] ||
        grep -q "^rank $victim: ok" "$tmp/out"; then
        bad=$((bad + 1))
        [ -n "$first" ] || first="round $i (rank $victim killed at lease $at): $(summary)${why:+; $why}"
    fi
done
[ $bad = 0 ]
ok $? "$kill_rounds rounds of 64 workers, one SIGKILLed at a random lease (rank 0 in every fifth): every item committed once, the 63 others finish (${first:-all rounds right})"

# --- a stopped worker ----------------------------------------------------
# (8000 items of 0.5 ms: half a second of work for each worker, so that the
# stopped one gets its lease before the others are done, even under load)
run 8 2 COHORT_TEST_ITEMS=8000 COHORT_TEST_CAP=8 COHORT_TEST_US=500 COHORT_TEST_VICTIM=3 \
    COHORT_TEST_AT=1 COHORT_TEST_DO=stop COHORT_TEST_LEASE_TIMEOUT=1
why=$(exactly "$tmp/o" 8000)
[ $? = 0 ] && [ "$(grep -c ': ok ' "$tmp/out")" = 8 ] && grep -q '^rank 3: stale after stop$' "$tmp/out"
ok $? "a worker SIGSTOPped holding a lease (lease_timeout_s 1): its items finish elsewhere, its late commit is stale, every item committed once ($(grep -m1 'after stop' "$tmp/out"); $(summary)${why:+; $why})"

# --- the coordinator killed, the step rerun over its journal -------------
# (what the first run's workers were told was committed is never leased
# again; the journal ends with every item committed once)
bad=0 first=""
i=0
while [ $i -lt "$coord_rounds" ]; do
    i=$((i + 1))
    rm -f "$tmp/journal"
    victim=$(awk -v s="$i" 'BEGIN { srand(s * 3); print int(rand() * 8) }')
    at=$(awk -v s="$i" 'BEGIN { srand(s * 5); print 1 + int(rand() * 10) }')
    run 8 2 COHORT_TEST_ITEMS=3000 COHORT_TEST_CAP=8 COHORT_TEST_JOURNAL="$tmp/journal" \
        COHORT_TEST_VICTIM="$victim" COHORT_TEST_AT="$at" COHORT_TEST_DO=kill-coord
    # ranks whose queue was done before the kill say ok; every other one
    # fails at its next call naming the coordinator (cohort_work_open
    # included, for a rank that had not reached it yet)
    named=$(grep -c -e 'FAIL: .*work coordinator .* is gone .*rerun the step with the same journal' \
        -e "FAIL: .*cohort_work_open: cannot reach this node's relay (gone?): .* refused the connection" \
        -e "FAIL: .*cohort_work_open: queue 'q': the node relay of node [0-9]*: the coordinator at .* refused the connection" \
        "$tmp/out")
    gone=$((named + $(grep -c ': ok ' "$tmp/out")))
    grep -q "^rank $victim: killing the coordinator (pid [1-9]" "$tmp/out" && [ "$named" -gt 0 ] ||
        gone="no kill by rank $victim or nobody named it, $gone"
    first_out=$(summary)
    mv "$tmp/o" "$tmp/o1"
    run 8 2 COHORT_TEST_ITEMS=3000 COHORT_TEST_CAP=8 COHORT_TEST_JOURNAL="$tmp/journal"
    cat "$tmp/o1"/committed.* 2>/dev/null | sort >"$tmp/c1"
    cat "$tmp/o"/leased.* 2>/dev/null | sort | comm -12 "$tmp/c1" - >"$tmp/again"
    # the journal is the record: every item in it once (a duplicate is
    # damage it refuses), none remaining
    why=$(journal_done 3000)
    rm -rf "$tmp/o1"
    if [ "$gone" != 8 ] || [ -s "$tmp/again" ] || [ -n "$why" ] ||
        [ "$(grep -c ': ok ' "$tmp/out")" != 8 ]; then
        bad=$((bad + 1))
        [ -n "$first" ] || first="round $i (rank $victim killed it at lease $at): first run $gone of 8 named it or had finished ($first_out); rerun $(summary); leased again though committed: $(wc -l <"$tmp/again")${why:+; $why}"
    fi
done
[ $bad = 0 ]
ok $? "$coord_rounds rounds: the coordinator SIGKILLed at a random lease, every rank not yet done fails naming it, the rerun over the journal leases nothing committed before and finishes, every item committed once across both (${first:-all rounds right})"

# --- a node's relay killed ------------------------------------------------------
# Rank 5 (node 1 of 4, ranks 4-7) kills its node's relay at its third lease:
# ranks 4-7 fail at their next call naming the relay, not the coordinator;
# the coordinator counts them lost at once and the 12 others commit every
# item, each once (those the lost ranks held go back).
# (A commit of theirs in flight may be taken without their knowing: the
# journal, not their files, says every item was committed; no id was
# committed twice by anyone.)
rm -f "$tmp/journal"
run 16 4 COHORT_TEST_ITEMS=16000 COHORT_TEST_CAP=8 COHORT_TEST_US=200 COHORT_TEST_VICTIM=5 \
    COHORT_TEST_AT=3 COHORT_TEST_DO=kill-relay COHORT_TEST_JOURNAL="$tmp/journal"
twice=$(cat "$tmp/o"/committed.* | sort -n | uniq -d | head -3 | tr '\n' ' ')
why=$(journal_done 16000)
named=$(grep -c "^rank [4-7]: FAIL: cohort: cohort_work_.*: this node's relay to the work coordinator of queue 'q' (.*, relay pid [1-9][0-9]*) is gone (killed?)" "$tmp/out")
[ -z "$twice" ] && [ -z "$why" ] && grep -q '^rank 5: killing the relay (pid [1-9]' "$tmp/out" &&
    [ "$named" = 4 ] && [ "$(grep -c ': ok ' "$tmp/out")" = 12 ]
ok $? "a node's relay SIGKILLed: its 4 ranks fail naming it, the 12 others finish every item, none committed twice ($named named; $(summary)${twice:+; committed twice: $twice}${why:+; $why})"

# --- a coordinator that stops answering -------------------------------------
run 4 2 COHORT_TEST_ITEMS=4000 COHORT_TEST_CAP=8 COHORT_TIMEOUT=3 COHORT_TEST_VICTIM=1 \
    COHORT_TEST_DO=stop-coord
pid=$(sed -n 's/^rank 1: stopping the coordinator (pid \([1-9][0-9]*\))$/\1/p' "$tmp/out")
[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
# ranks whose queue was done before the stop say ok; every other one, the
# stopper first, fails at its next call naming the coordinator
named=$(grep -c "FAIL: cohort: cohort_work_.*: the work coordinator of queue 'q' (.*) did not answer within 3 s" "$tmp/out")
[ -n "$pid" ] && [ $((named + $(grep -c ': ok ' "$tmp/out"))) = 4 ] &&
    grep -q "^rank 1: FAIL: .*did not answer within 3 s" "$tmp/out"
ok $? "the coordinator SIGSTOPped: every rank not yet done fails at its deadline with one line naming it ($named named; $(summary))"

# --- a coordinator gone before the relays dial it -------------------------------
# A stand-in that reads the start record and gives a port nobody listens on
# (the coordinator died after it said where it listens); a relay's record
# (its kind, the record's 8th byte, is 3) goes to the real program. Each
# node's relay is refused and fails at once, and every rank with the
# line of node 0's first rank, not at its deadline (60 s here).
cat >"$tmp/gone-coord" <<EOF2
#!/bin/sh
cat >"$tmp/rec.\$\$"
if [ "\$(od -An -tu1 -j7 -N1 "$tmp/rec.\$\$" | tr -d ' ')" = 3 ]; then
    exec <"$tmp/rec.\$\$"
    rm -f "$tmp/rec.\$\$"
    exec "$COHORT_WORK_COORD"
fi
rm -f "$tmp/rec.\$\$"
exec python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'
EOF2
chmod +x "$tmp/gone-coord"
run 4 2 COHORT_TEST_ITEMS=100 COHORT_WORK_COORD="$tmp/gone-coord" COHORT_TIMEOUT=60
[ "$(grep -c "FAIL: cohort: cohort_work_open: queue 'q': the node relay of node 0: the coordinator at .* refused the connection: it was listening, so it is gone" "$tmp/out")" = 4 ]
ok $? "the coordinator gone before the relays dial it: every rank fails at once naming it, not at the deadline ($(summary))"

# --- a coordinator of another secret on the port ---------------------------------
# A stand-in that runs the real coordinator with the step's start record but
# another secret (its 32 bytes follow the record's magic, kind and key kind):
# every rank is a stranger to that coordinator, and fails at once naming the
# work coordinator it expected there, not the bootstrap root.
cat >"$tmp/other-coord" <<EOF2
#!/bin/sh
python3 -c 'import sys; r = bytearray(sys.stdin.buffer.read()); r[12] ^= r[7] != 3; sys.stdout.buffer.write(r)' >"$tmp/record.\$\$"
[ "\$(od -An -tu1 -j7 -N1 "$tmp/record.\$\$" | tr -d ' ')" = 3 ] || echo \$\$ >"$tmp/other.pid"
exec <"$tmp/record.\$\$"
rm -f "$tmp/record.\$\$"
exec "$COHORT_WORK_COORD"
EOF2
chmod +x "$tmp/other-coord"
rm -f "$tmp/other.pid"
run 4 2 COHORT_TEST_ITEMS=100 COHORT_WORK_COORD="$tmp/other-coord" COHORT_TIMEOUT=60
[ -s "$tmp/other.pid" ] && kill -KILL "$(cat "$tmp/other.pid")" 2>/dev/null
[ "$(grep -c "FAIL: cohort: cohort_work_open: .*: port [0-9]* answered, but not as this step's work coordinator (its challenge was not made with this task's COHORT_SECRET: different secrets?)" "$tmp/out")" = 4 ]
ok $? "a coordinator holding another secret: every rank is a stranger to it and fails at once naming the work coordinator it expected ($(summary))"

# --- the coordinator's open files --------------------------------------------------
# It holds one connection per node (its relay's) and room for 64
# strangers': with a hard limit of 92 open files, 16 nodes of a rank each (a
# bootstrap tree of fanout 2, which fits in 92) do not fit, and every rank fails at once with one line naming
# the limit and the number needed (not after its deadline, 60 s here); with
# only the soft limit that low, the coordinator raises it to the hard one
# and serves them all.
want="the work coordinator serves 16 node relays, one connection each, but its open-file limit is 92 (ulimit -n): raise it to at least 96"
run 16 16 COHORT_TEST_ITEMS=1000 COHORT_TIMEOUT=60 COHORT_BOOTSTRAP_FANOUT=2 SPAWN_IP_NODES=1 prlimit --nofile=92:92
[ "$(grep -c "FAIL: cohort: cohort_work_open: queue 'q': $want$" "$tmp/out")" = 16 ]
ok $? "16 ranks, a hard limit of 92 open files: every rank fails at once with one line naming the limit and the number needed ($(summary))"
if [ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge 128 ]; then
    run 16 16 COHORT_TEST_ITEMS=1000 COHORT_BOOTSTRAP_FANOUT=2 SPAWN_IP_NODES=1 prlimit --nofile=24:128
    why=$(exactly "$tmp/o" 1000)
    [ $? = 0 ] && [ "$(grep -c ': ok ' "$tmp/out")" = 16 ]
    ok $? "16 ranks, a soft limit of 24 open files below a hard one of 128: the coordinator raises its own and serves every rank ($(summary)${why:+; $why})"
else
    skip "a soft limit below a sufficient hard one" "the hard limit here is $(ulimit -Hn), below 128"
fi

# --- a coordinator stuck before it reports its port ------------------------------
# A stand-in that runs the real coordinator with its port going to this test
# instead of rank 0 (rank 0's pipe kept open on descriptor 3, so rank 0 waits
# for the line); once the coordinator has taken the journal and listens, the
# test stops it (SIGSTOP). Rank 0 gives up at its deadline and must end it:
# the process is gone when the step is, and the rerun over the same journal
# finds the journal free.
mkfifo "$tmp/port"
cat >"$tmp/stuck-coord" <<EOF2
#!/bin/sh
echo \$\$ >"$tmp/stuck.pid"
exec 3>&1
exec "$COHORT_WORK_COORD" >"$tmp/port"
EOF2
chmod +x "$tmp/stuck-coord"
rm -f "$tmp/journal" "$tmp/stuck.pid"
timeout 60 sh -c 'read port <"$1" && kill -STOP "$(cat "$2")" && echo "$port"' - "$tmp/port" \
    "$tmp/stuck.pid" >"$tmp/stopped" &
stopper=$!
run 4 2 COHORT_TEST_ITEMS=100 COHORT_TEST_JOURNAL="$tmp/journal" COHORT_WORK_COORD="$tmp/stuck-coord" \
    COHORT_TIMEOUT=5
wait $stopper
pid=$(cat "$tmp/stuck.pid" 2>/dev/null)
left=""
[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && left="the stopped coordinator (pid $pid) still runs; "
named=$(grep -c "FAIL: cohort: cohort_work_open: queue 'q': the work coordinator $tmp/stuck-coord did not start within 5 s" "$tmp/out")
first_out=$(summary)
run 4 2 COHORT_TEST_ITEMS=100 COHORT_TEST_JOURNAL="$tmp/journal"
[ -n "$left" ] && kill -KILL "$pid"
[ -s "$tmp/stopped" ] && [ -z "$left" ] && [ "$named" = 4 ] && [ "$(grep -c ': ok ' "$tmp/out")" = 4 ]
ok $? "a coordinator stopped (SIGSTOP) before it reports its port: every rank fails at the deadline naming it, rank 0 ends it, and the rerun finds the journal free (${left}stopped at port $(cat "$tmp/stopped"); $named of 4 named it ($first_out); rerun $(summary))"

# --- the coordinator's environment ------------------------------------------------
# Rank 0's environment holds the step's secret and whatever the user set; the
# coordinator gets only what it needs to run.
run 4 2 COHORT_TEST_ITEMS=1000 COHORT_TEST_VICTIM=1 COHORT_TEST_DO=environ COHORT_TEST_MINE=user
seen_env=$(sed -n 's/^rank 1: coordinator environment://p' "$tmp/out")
extra=$(for v in $seen_env; do
    case $v in PATH | LD_LIBRARY_PATH | ASAN_OPTIONS | LSAN_OPTIONS | UBSAN_OPTIONS) ;; *) printf ' %s' "$v" ;; esac
done)
grep -q '^rank 1: coordinator environment:' "$tmp/out" && ! grep -q '^rank 1: coordinator environment: (unreadable)' "$tmp/out" &&
    [ -z "$extra" ] && [ "$(grep -c ': ok ' "$tmp/out")" = 4 ]
ok $? "the coordinator's environment holds PATH, LD_LIBRARY_PATH and the sanitizers' options at most: no COHORT_SECRET, none of the user's variables (${extra:+more:$(echo "$extra" | cut -c1-200); }$(summary))"

# --- the example -----------------------------------------------------------
"$spawn" 8 2 -- "$COHORT_BUILDDIR/examples/work_queue" 400 1 >"$tmp/out" 2>&1
[ "$(awk '/^rank [0-9]+: [0-9]+ items/ { n += $3; r++ } END { print r "/" n }' "$tmp/out")" = 8/400 ] &&
    grep -q '^makespan .* static split would take' "$tmp/out"
ok $? "examples/work_queue on 8 tasks, one 4x slower: the shares add up to the 400 items ($(grep -m1 '^makespan' "$tmp/out"))"

# --- what the coordinator says -------------------------------------------------
run 4 2 COHORT_TEST_ITEMS=1000 COHORT_VERBOSE=1
grep -q "^cohort: work 'q': 1000 items, 1000 committed, 0 set aside, 0 left; .* per rank (items@rate): [0-9][0-9]*:[0-9][0-9]*@" "$tmp/out"
ok $? "COHORT_VERBOSE=1: the coordinator's last line names the items, what became of them and each rank's count and rate ($(grep -m1 "^cohort: work" "$tmp/out" | cut -c1-160))"
run 4 2 COHORT_TEST_ITEMS=1000
! grep -q "^cohort: work" "$tmp/out"
ok $? "without it, a queue that ended well says nothing ($(grep -m1 "^cohort: work" "$tmp/out"))"

# --- bad input -----------------------------------------------------------
run 8 2 COHORT_TEST_OPTS=zero-items
[ "$(grep -c "FAIL: cohort: cohort_work_open failed on rank 0: n_items is 0" "$tmp/out")" = 8 ]
ok $? "n_items 0: the same line on all 8 ranks ($(summary))"
run 8 2 COHORT_TEST_OPTS=bad-items
[ "$(grep -c "FAIL: cohort: cohort_work_open: rank 7 opens queue 'q' of 10001 items, rank 0 queue 'q' of 10000" "$tmp/out")" = 8 ]
ok $? "one rank opens another n_items: the same line naming both on all 8 ranks ($(summary))"
run 8 2 COHORT_TEST_OPTS=bad-name
[ "$(grep -c "FAIL: cohort: cohort_work_open: rank 7 opens queue 'other' of 10000 items, rank 0 queue 'q' of 10000" "$tmp/out")" = 8 ]
ok $? "one rank opens another queue name: the same line naming both on all 8 ranks ($(summary))"
run 4 2 COHORT_TEST_ITEMS=500 COHORT_TEST_VICTIM=2 COHORT_TEST_DO=foreign
why=$(exactly "$tmp/o" 500)
[ $? = 0 ] && grep -q '^rank 2: foreign: -1 .*not held by this worker' "$tmp/out" &&
    [ "$(grep -c ': ok ' "$tmp/out")" = 4 ]
ok $? "a commit of an id this worker does not hold: -1 naming it, the queue goes on ($(grep -m1 'foreign' "$tmp/out"); $(summary)${why:+; $why})"
rm -f "$tmp/journal"
run 4 2 COHORT_TEST_ITEMS=500 COHORT_TEST_JOURNAL="$tmp/journal"
run 4 2 COHORT_TEST_ITEMS=600 COHORT_TEST_JOURNAL="$tmp/journal"
[ "$(grep -c "FAIL: .*journal.*500" "$tmp/out")" = 4 ]
ok $? "a journal of another n_items: refused on all 4 ranks with one line ($(summary))"
rm -f "$tmp/journal"
run 4 2 COHORT_TEST_ITEMS=500 COHORT_TEST_CAP=8 COHORT_TEST_JOURNAL="$tmp/journal"
# a byte in the first record changed: damage, not a torn tail (records follow)
printf 'X' | dd of="$tmp/journal" bs=1 seek=170 conv=notrunc 2>/dev/null
run 4 2 COHORT_TEST_ITEMS=500 COHORT_TEST_JOURNAL="$tmp/journal"
[ "$(grep -c "FAIL: cohort: cohort_work_open: queue 'q': journal .* is damaged at byte [0-9]" "$tmp/out")" = 4 ]
ok $? "a damaged journal: refused on all 4 ranks with one line naming the offset ($(grep -m1 FAIL "$tmp/out" | cut -c1-200))"
run 4 2 COHORT_TEST_ITEMS=500 COHORT_TEST_JOURNAL=/proc/cohort-no/journal
[ "$(grep -c "FAIL: .*/proc/cohort-no/journal" "$tmp/out")" = 4 ]
ok $? "an unwritable journal: refused on all 4 ranks naming it ($(summary))"

tap_done
