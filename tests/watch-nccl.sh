#!/bin/bash
# watch-nccl.sh - the step watch without Slurm on one node, with PyTorch's
# own ranks (tests/watch/watch_nccl.py): a node agent and the holder it
# starts watch 4 ranks of an all_reduce loop, and one rank is SIGSTOPped.
# With Gloo (CPU, here): the rank is named as stopped, in the "end" line the
# plugin would write into a task's stderr, and in the JSON verdict. With
# NCCL, where a GPU is there: the 4 ranks share GPU 0 as distinct hosts
# (NCCL_HOSTID), NCCL loads cohort's profiler plugin (one record per rank
# in the agent's directory), and the rank is named with the collective it
# has not joined. The seconds from the stop to the line are printed; the
# bound checked is 60 s (SECONDS is 5). TAP.
. "$COHORT_SRCDIR/tests/tap.sh"
py=/usr/bin/python3
"$py" -c 'import torch.distributed' 2>/dev/null || skip_all "$py lacks torch (apt-get install python3-torch)"
harness="$COHORT_SRCDIR/tests/watch/watch_nccl.py"
verdict() {
    "$py" -c "import json,sys; v=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" \
        "$tmp/$1/verdict.json" 2>/dev/null
}
took() { sed -n 's/^took //p' "$tmp/$1.out"; }

"$py" "$harness" gloo "$tmp/gloo" 5 >"$tmp/gloo.out" 2>"$tmp/gloo.err"
line=$(grep '^end ' "$tmp/gloo.out")
echo "$line" | grep -Eq '^end 1 cohort: rank 2 \(n1, GPU 0\) has been stopped for [0-9]+ s; ending the step$' &&
    awk -v t="$(took gloo)" 'BEGIN { exit !(t != "" && t < 60) }' &&
    verdict gloo 'v["kind"] == "stopped" and v["ranks"] == [2] and v["gpu"] == "0"'
ok $? "Gloo, 4 ranks, rank 2 SIGSTOPped: the agent alone (no Slurm) names it as stopped in $(took gloo) s ('$line'; $(grep -v '^Traceback\|^  \|^RuntimeError' "$tmp/gloo.err" | head -2 | tr '\n' ' ' | cut -c1-200))"

if ! "$py" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    skip "NCCL with the profiler plugin" "no GPU here (torch.cuda.is_available() is false)"
else
    "$py" "$harness" nccl "$tmp/nccl" 5 >"$tmp/nccl.out" 2>"$tmp/nccl.err"
    line=$(grep '^end ' "$tmp/nccl.out")
    [ "$(sed -n 's/^records //p' "$tmp/nccl.out")" = 4 ] &&
        echo "$line" | grep -Eq '^end 1 cohort: rank 2 \(n1, GPU 0\) has (been stopped for [0-9]+ s and has )?not joined allreduce #[0-9]+ of communicator [0-9a-f]+' &&
        awk -v t="$(took nccl)" 'BEGIN { exit !(t != "" && t < 60) }' &&
        verdict nccl 'v["kind"] in ("stopped", "not_joined") and v["ranks"] == [2] and v["collective"]["op"] == "allreduce"'
    ok $? "NCCL on one GPU, 4 ranks as hosts, the profiler loaded by NCCL ($(grep '^records' "$tmp/nccl.out") records), rank 2 SIGSTOPped between allreduces: named with its collective in $(took nccl) s ('$line'; $(tail -2 "$tmp/nccl.err" | tr '\n' ' ' | cut -c1-300))"
fi
tap_done
