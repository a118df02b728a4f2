#!/bin/sh
# streams.sh - stream sets (cohort_streams.h) with many workers on this
# machine as simulated nodes (tests/bootstrap/spawn,
# tests/streams/streams_check): 200 streams on 16 workers, each owned by
# exactly one, none above the load bound; capacities 1:2; a worker
# SIGKILLed: its streams, and only those, go to the others (the time it
# took is printed, not judged: speed is in the benchmarks); a worker
# stopped past its lease, fenced and back; load reports that make a
# worker shed; never two owners at once (from every worker's log of
# events); a node's relay SIGKILLed (its workers fail naming it, the
# others take its streams); bad input, one line each; too few open files
# for the coordinator, one line on every worker. TAP.
. "$COHORT_SRCDIR/tests/tap.sh"
spawn="$COHORT_BUILDDIR/tests/bootstrap/spawn"
check="$COHORT_BUILDDIR/tests/streams/streams_check"
COHORT_WORK_COORD="$COHORT_BUILDDIR/runtime/coord/cohort-work-coord"
export COHORT_WORK_COORD

run() { # run N NODES [VAR=VALUE...]: a step of streams_check, output in $tmp/out
    count=$1 nodes=$2
    shift 2
    rm -rf "$tmp/o" && mkdir "$tmp/o"
    env STREAMS_TEST_OUT="$tmp/o" "$@" "$spawn" "$count" "$nodes" -- "$check" >"$tmp/out" 2>&1
}
summary() {
    awk '/^spawn: / { sp = $0 } / FAIL: / && !f { f = $0 } / ok / { n++ }
         END { print sp "; " n + 0 " ok" (f ? "; " f : "") }' "$tmp/out"
}
# judge N [VICTIM [STOPPED]]: from the logs, one line of findings; exit 0
# when right. A stream given on while the STOPPED rank still believed it
# owned it is right only at a larger epoch, and only if that rank was then
# told REVOKE at its own epoch (fenced).
judge() {
    python3 - "$tmp/o" "$1" "${2:--1}" "${3:--1}" <<'EOF'
import glob, os, sys
d, n, victim, stopped = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
fenced = []
bad = []
owned = {}
for f in glob.glob(os.path.join(d, "owned.*")):
    r = int(f.rsplit(".", 1)[1])
    for line in open(f):
        key, epoch = line.split()
        if key in owned:
            bad.append("%s owned by ranks %d and %d" % (key, owned[key][0], r))
        owned[key] = (r, int(epoch))
if len(owned) != n:
    bad.append("%d of %d streams owned" % (len(owned), n))
per = {}
for r, _ in owned.values():
    per[r] = per.get(r, 0) + 1
events = []
for f in glob.glob(os.path.join(d, "events.*")):
    r = int(f.rsplit(".", 1)[1])
    for line in open(f):
        t, what, key, epoch = line.split()
        events.append((int(t), r, what, key, int(epoch)))
events.sort()
holder, last_epoch = {}, {}
killed = None
if victim >= 0:
    try:
        killed = int(open(os.path.join(d, "killed")).read().split()[0])
    except (OSError, ValueError, IndexError):
        print("the victim did not note its kill"); sys.exit(1)
for t, r, what, key, epoch in events:
    if what == "assign":
        h = holder.get(key)
        if h is not None and h == stopped and last_epoch[key] < epoch:
            fenced.append((key, last_epoch[key]))
        elif h is not None and h != victim:
            bad.append("%s assigned to rank %d at epoch %d while rank %d held it" % (key, r, epoch, h))
        if epoch <= last_epoch.get(key, 0):
            bad.append("%s: epoch %d after %d" % (key, epoch, last_epoch[key]))
        holder[key], last_epoch[key] = r, epoch
    elif holder.get(key) == r:
        del holder[key]
extra = ""
if victim >= 0:
    mine = set()
    for t, r, what, key, epoch in events:
        if r == victim and t <= killed:
            (mine.add if what == "assign" else mine.discard)(key)
    after = [(t, key) for t, r, what, key, epoch in events if what == "assign" and t > killed]
    moved_mine = {key for t, key in after if key in mine}
    others = {key for t, key in after if key not in mine}
    if moved_mine != mine:
        bad.append("%d of the victim's %d streams reached another worker" % (len(moved_mine), len(mine)))
    if len(others) > n * 5 // 100:
        bad.append("%d other streams moved (at most 5 %%: %d)" % (len(others), n * 5 // 100))
    last = max([t for t, key in after if key in mine] or [killed])
    extra = "; the victim's %d streams reached others %.1f ms after its kill, %d others moved" % (
        len(mine), (last - killed) / 1e6, len(others))
told = {(key, epoch) for t, r, what, key, epoch in events if r == stopped and what == "revoke"}
if any(f not in told for f in fenced):
    bad.append("a stream was taken from the stopped rank without a REVOKE at its epoch")
if stopped >= 0:
    extra += "; %d streams given on while rank %d was stopped, each at a larger epoch, each REVOKEd to it at its own" % (len(fenced), stopped)
    if not fenced:
        bad.append("nothing was taken from the stopped rank")
print("%d streams owned, at most %d and at least %d per worker%s%s" % (
    len(owned), max(per.values() or [0]), min(per.values() or [0]), extra,
    ("; " + "; ".join(bad[:3])) if bad else ""))
sys.exit(1 if bad else 0)
EOF
}

run 16 2
why=$(judge 200)
[ $? = 0 ] && [ "$(grep -c ': ok ' "$tmp/out")" = 16 ] &&
    [ "$(awk '{ n[$1]++ } END { m = 0; for (k in n) if (n[k] > m) m = n[k]; print m }' "$tmp/o"/owned.* | head -1)" -le 15 ] &&
    awk 'FNR == 1 { f++ } END { exit f != 16 }' "$tmp/o"/owned.*
ok $? "200 streams on 16 workers on 2 nodes: each owned by exactly one, at most 15 a worker (1.25 x 12.5), never two owners, epochs growing ($why; $(summary))"

run 16 2 STREAMS_TEST_CAPS=1,2
why=$(judge 200)
rc=$?
# each worker within 1.25 x its share: capacity 1 of 24 -> 10.4 streams, 2 -> 20.8
over=$(for f in "$tmp/o"/owned.*; do r=${f##*.}; echo "$r $(wc -l <"$f")"; done |
    awk '{ cap = $1 % 2 ? 2 : 1; if ($2 > 1.25 * cap / 24 * 200) printf " rank %d holds %d", $1, $2 }')
share=$(for f in "$tmp/o"/owned.*; do r=${f##*.}; echo "$((r % 2)) $(wc -l <"$f")"; done |
    awk '{ s[$1] += $2 } END { if (s[0] > 0) printf "%.2f", s[1] / s[0] }')
[ $rc = 0 ] && [ -z "$over" ] && [ -n "$share" ]
ok $? "capacities 1:2 (odd ranks 2): every worker within 1.25 x its capacity's share (at most 10 and 20 streams${over:+;$over}); the capacity-2 workers hold $share x what the others do ($why)"

run 16 2 STREAMS_TEST_VICTIM=5 COHORT_TIMEOUT=60
why=$(judge 200 5)
[ $? = 0 ] && [ "$(grep -c ': ok ' "$tmp/out")" = 15 ]
ok $? "16 workers, rank 5 SIGKILLed: its streams reach the 15 others, at most 5 % of the others move, no stream has two owners ($why; $(summary))"

# The relay of node 1 (ranks 4-7) SIGKILLed once all is settled: the
# coordinator loses the node's 4 workers at once and places their streams
# on the 4 others; each of ranks 4-7 fails at its next call naming the
# relay; every stream is owned by exactly one of ranks 0-3.
run 8 2 STREAMS_TEST_N=100 STREAMS_TEST_KILL_RELAY=1 STREAMS_TEST_LEFT=4 COHORT_TIMEOUT=60
named=$(grep -c "^rank [4-7]: FAIL: cohort: cohort_streams_.*: this node's relay to the stream coordinator of set 'cams' (.*, relay pid [1-9][0-9]*) is gone (killed?)" "$tmp/out")
owners=$(ls "$tmp/o" | sed -n 's/^owned\.//p' | sort -n | tr '\n' ' ')
keys=$(cat "$tmp/o"/owned.* 2>/dev/null | awk '{ print $1 }' | sort | uniq -c | awk '$1 == 1 { n++ } END { print n + 0 }')
grep -q '^rank 4: killing the relay (pid [1-9]' "$tmp/out" && [ "$named" = 4 ] &&
    [ "$(grep -c ': ok ' "$tmp/out")" = 4 ] && [ "$owners" = "0 1 2 3 " ] && [ "$keys" = 100 ] &&
    [ "$(cat "$tmp/o"/owned.* | wc -l)" = 100 ]
ok $? "a node's relay SIGKILLed: its 4 workers fail naming it, the 4 others own every stream, each once ($named named; owners: $owners; $keys streams owned once; $(summary))"

# Relays in a tree (COHORT_RELAY_FANOUT): at fanout 2 the relays of 8
# nodes form three levels; at fanout 1 a chain of 4 (node 0's relay dials
# the coordinator, 1's dials 0's, ...), whose second relay is SIGKILLed:
# node 1's workers name it as their own, those of nodes 2 and 3 name it on
# the way, and ranks 0 and 1 own every stream.
run 16 8 COHORT_RELAY_FANOUT=2
why=$(judge 200)
[ $? = 0 ] && [ "$(grep -c ': ok ' "$tmp/out")" = 16 ]
ok $? "200 streams on 16 workers on 8 nodes, relays in a tree of fanout 2: each owned by exactly one, never two owners ($why; $(summary))"

run 8 4 STREAMS_TEST_N=100 STREAMS_TEST_KILL_RELAY=1 STREAMS_TEST_LEFT=2 COHORT_TIMEOUT=60 COHORT_RELAY_FANOUT=1
own=$(grep -c "^rank [23]: FAIL: cohort: cohort_streams_.*: this node's relay to the stream coordinator of set 'cams' (.*, relay pid [1-9][0-9]*) is gone (killed?)" "$tmp/out")
below=$(grep -c "^rank [4-7]: FAIL: cohort: cohort_streams_.*: the relay of node 1, on the way to the stream coordinator of set 'cams' (.*), is gone" "$tmp/out")
owners=$(ls "$tmp/o" | sed -n 's/^owned\.//p' | sort -n | tr '\n' ' ')
keys=$(cat "$tmp/o"/owned.* 2>/dev/null | awk '{ print $1 }' | sort | uniq -c | awk '$1 == 1 { n++ } END { print n + 0 }')
[ "$own" = 2 ] && [ "$below" = 4 ] && [ "$(grep -c ': ok ' "$tmp/out")" = 2 ] &&
    [ "$owners" = "0 1 " ] && [ "$keys" = 100 ] && [ "$(cat "$tmp/o"/owned.* | wc -l)" = 100 ]
ok $? "a relay in a chain of 4 SIGKILLed: its node's 2 workers name it, the 4 below name it on the way, ranks 0 and 1 own every stream, each once ($own, $below named; owners: $owners; $(summary))"

run 8 2 STREAMS_TEST_N=100 STREAMS_TEST_STOP=3 STREAMS_TEST_LEASE=1
why=$(judge 100 -1 3)
[ $? = 0 ] && [ "$(grep -c ': ok ' "$tmp/out")" = 8 ]
ok $? "rank 3 SIGSTOPped past its lease (1 s): its streams go to others, it is told REVOKE for each when it resumes, then joins again; no stream has two owners but fenced ones ($why; $(summary))"

run 8 2 STREAMS_TEST_N=100 STREAMS_TEST_SHED=1
why=$(judge 100)
[ $? = 0 ] && grep -q "^rank 1: revoked [1-9]" "$tmp/out" && [ "$(grep -c ': ok ' "$tmp/out")" = 8 ]
ok $? "load reports: rank 1 at 100x the others' load per stream sheds streams after shed_after_s (1 s) ($(grep -m1 '^rank 1: revoked' "$tmp/out"); $why; $(summary))"

run 4 2 STREAMS_TEST_N=20 STREAMS_TEST_BAD=1
grep -q "^rank 1: bad: empty key: -1 cohort: cohort_streams_add: a stream key that is empty: give 1 to 255 bytes" "$tmp/out" &&
    grep -q "^rank 1: bad: long key: -1 .*over 255 bytes" "$tmp/out" &&
    grep -q "^rank 1: bad: NaN cost: -1 .*cost nan: give a number above 0" "$tmp/out" &&
    grep -q "^rank 1: bad: negative cost: -1 .*cost -1: give a number above 0" "$tmp/out" &&
    grep -q "^rank 1: bad: foreign release: -1 .*set 'cams': stream 'cam-0' at epoch 999999 is not owned by worker 1" "$tmp/out" &&
    grep -q "^rank 1: bad: negative load: -1 .*load -2: give a number of 0 or more" "$tmp/out" &&
    grep -q "^rank 1: remove unknown: 0" "$tmp/out" && [ "$(grep -c ': ok ' "$tmp/out")" = 4 ]
ok $? "bad input: one line each (empty or long key, NaN or negative cost, a release of what this worker does not own, a negative load); removing an unknown stream is a no-op; the set goes on ($(grep -m1 'foreign' "$tmp/out" | cut -c1-160); $(summary))"

# The coordinator holds one connection per node (its relay's) and room for
# 64 strangers': with a hard limit of 92 open files, 16 nodes of a worker
# each (a bootstrap tree of fanout 2, which fits in 92) do not fit, and every worker fails at once
# with one line naming the limit and the number needed, not after its
# deadline (60 s here).
want="the work coordinator serves 16 node relays, one connection each, but its open-file limit is 92 (ulimit -n): raise it to at least 96"
run 16 16 COHORT_TIMEOUT=60 COHORT_BOOTSTRAP_FANOUT=2 SPAWN_IP_NODES=1 prlimit --nofile=92:92
[ "$(grep -c "FAIL: cohort: cohort_streams_open: set 'cams': $want$" "$tmp/out")" = 16 ]
ok $? "16 workers, a hard limit of 92 open files: every worker fails at once with one line naming the limit and the number needed ($(summary))"

tap_done
