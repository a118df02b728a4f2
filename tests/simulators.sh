#!/bin/bash
# simulators.sh - the scale simulators (docs/performance.md, "Scale") still
# drive the real code to a whole result, at small sizes: bench/scale_sim
# commits every item once (it checks the scheduler's count), with a node
# killed and with the coordinator's host killed and the step rerun from
# the commits answered; bench/boot_sim keeps every process within the
# tree's bound of connections below it (tree.h: fanout + the node's
# tasks); bench/streams_sim places every stream, keeps the set's
# invariants (place_check) through a node's death and its return, moves
# only that node's streams at the death, and gives the node back a share.
# Nothing here checks a time. TAP.
. "$COHORT_SRCDIR/tests/tap.sh"
b=$COHORT_BUILDDIR
for p in scale_sim boot_sim streams_sim; do [ -x "$b/bench/$p" ] || bail "no $b/bench/$p: make check builds it"; done

# scale_sim: 512 ranks (64 nodes), 10^6 items, an ideal of 20 s; the
# deaths at 10 s (the rerun 5 s after the coordinator's).
for c in "" "14 10 2 10 node" "14 10 2 10 coord 5"; do
    row=$("$b/bench/scale_sim" 512 1000000 23893 $c 2>"$tmp/err")
    rc=$?
    # columns: / ideal (7), items re-queued (14), sockets (17, 18)
    read -r ratio requeued fds < <(awk -F'|' '{gsub(/ /, ""); print $7, $14, $17 "," $18}' <<<"$row")
    case $c in
    "") what="every item committed once"
        awk -v r="$ratio" -v q="$requeued" 'BEGIN { exit !(r >= 1 && q == 0) }' ;;
    *node) what="node 1 killed at 10 s: its leases go back, every item committed once"
        awk -v q="$requeued" 'BEGIN { exit !(q > 0) }' ;;
    *) what="the coordinator's host killed at 10 s, the rerun 5 s later resumes: every item committed once"
        awk -v r="$ratio" 'BEGIN { exit !(r >= 1.25) }' ;;
    esac
    good=$?
    [ $rc = 0 ] && [ $good = 0 ] && [ "$fds" = "65,11" ]
    ok $? "scale_sim, 512 ranks: $what; the coordinator holds 65 sockets, a relay 11 (its process's socket for other queues among them; $ratio of the ideal, $requeued re-queued, sockets $fds; $(head -c 200 "$tmp/err"))"
done

# boot_sim: 1,024 ranks at fanout 4 (four levels of nodes).
row=$("$b/bench/boot_sim" 1024 8 4 barrier,allgather64 2>"$tmp/err")
rc=$?
read -r below bound < <(awk -F'|' '{split($9, a, "<="); gsub(/ /, "", a[1]); gsub(/ /, "", a[2]); print a[1], a[2]}' <<<"$row")
[ $rc = 0 ] && [ -n "$below" ] && [ "$below" -le "$bound" ] && [ "$bound" = 12 ]
ok $? "boot_sim, 1,024 ranks at fanout 4: a barrier and an allgather end; no process holds more than fanout + its node's tasks below it ($below <= $bound; $(head -c 200 "$tmp/err"))"

# streams_sim: 1,024 workers, 20,000 streams, node 1 dies.
row=$("$b/bench/streams_sim" 1024 20000 2>"$tmp/err")
rc=$?
read -r assigned moved pulled checks < <(awk -F'|' '{split($10, a, "/"); gsub(/ /, "", a[1]); m = $13; gsub(/ /, "", m);
    d = $14; sub(/ of .*/, "", d); gsub(/ /, "", d); r = $18; gsub(/ /, "", r); c = $19; gsub(/ /, "", c);
    print a[1], m "=" d, r, c}' <<<"$row")
[ $rc = 0 ] && [ "$assigned" = 20000 ] && [ "${moved%=*}" = "${moved#*=}" ] && [ "$pulled" -gt 0 ] &&
    [ "$checks" = "yes,yes,yes,yes" ]
ok $? "streams_sim, 1,024 workers, 20,000 streams: each assigned once, the set's invariants hold after the start, a node's death, its return and the steady state's reports and pings, only the dead node's streams move, and the node back pulls its share ($pulled) (assigned $assigned, moved $moved, checks $checks; $(head -c 200 "$tmp/err"))"
tap_done
