#!/bin/bash
# store-limits.sh - the store's holder and agent (this build's, as the
# plugin starts them, without Slurm) at their limits and with the queries
# torch 1.x and 2.x add, in TCPStore's wire protocol
# (tests/store/store_limits.py): a WAIT naming one key 2^20 times, a
# client that reads none of 16 answers of 32 MiB (closed alone, with a
# line; the agent's and holder's memory bounded), WATCH_KEY's messages,
# watchers of a key set to the longest values that read nothing (each
# closed with the holder's line, the others served, memory bounded), the
# queues. Each case gets its own agents and holder, and 300 s: a quadratic
# wait never ends within them. TAP.
. "$COHORT_SRCDIR/tests/tap.sh"
py=${COHORT_PYTHON:-/usr/bin/python3}
for c in wait reader watch watchers queue; do
    out=$(cd "$COHORT_SRCDIR/tests/store" && timeout 300 "$py" store_limits.py "$c" 2>&1)
    line=$(printf '%s\n' "$out" | grep -m1 -E "^(not )?ok $c: ")
    [ "${line#ok }" != "$line" ]
    ok $? "${line:-$c: no verdict within 300 s ($(printf '%s' "$out" | tail -c 300 | tr '\n' ' '))}"
done
tap_done
