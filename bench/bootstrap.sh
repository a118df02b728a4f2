#!/bin/bash
# bootstrap.sh - time from the last rank's arrival until every rank holds a
# 128-byte blob broadcast from rank 0 and has passed a barrier: cohort's
# bootstrap (64 ranks per simulated node) and PyTorch's TCPStore (rank 0
# sets a key, everyone waits for it, then a barrier), N processes on this
# machine, both in the same run. Prints a Markdown table.
#   bench/bootstrap.sh BUILDDIR ["COHORT_NS"] ["TCPSTORE_NS"]
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: bootstrap.sh BUILDDIR [COHORT_NS] [TCPSTORE_NS]}" && pwd)
cohort_ns=${2:-64 256 1024 4096}
store_ns=${3:-64 256}
make -s -C "$build" bench/boot_bench tests/bootstrap/spawn >/dev/null || exit 1
spawn="$build/tests/bootstrap/spawn"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
ulimit -n 65536 2>/dev/null

# span FILE: (max T1 - max T0) in ms over the "T0 T1" lines.
span() { awk 'NF == 2 && $1 ~ /^[0-9]+$/ { if ($1 > a) a = $1; if ($2 > b) b = $2; n++ }
              END { if (n) printf "%.1f", (b - a) / 1e6; else printf "-" }' "$1"; }
ranks() { awk 'NF == 2 && $1 ~ /^[0-9]+$/' "$1" | wc -l; }

echo "| N | cohort (ms) | root's sockets | TCPStore (ms) | TCPStore / cohort |"
echo "|---|---|---|---|---|"
for n in $cohort_ns; do
    nodes=$(( n / 64 > 0 ? n / 64 : 1 ))
    # appending (O_APPEND): the ranks' lines never overwrite each other
    : >"$out/cohort.$n"
    SPAWN_TIMEOUT=900 COHORT_TIMEOUT=600 "$spawn" "$n" "$nodes" -- "$build/bench/boot_bench" \
        >>"$out/cohort.$n" 2>"$out/cohort.$n.err"
    c=$(span "$out/cohort.$n")
    [ "$(ranks "$out/cohort.$n")" = "$n" ] || c="failed ($(head -c 200 "$out/cohort.$n.err"))"
    sockets=$(awk '/^sockets/ {print $2}' "$out/cohort.$n")
    s="not run"
    ratio="-"
    if [[ " $store_ns " == *" $n "* ]]; then
        : >"$out/store.$n"
        SPAWN_TIMEOUT=1800 "$spawn" "$n" "$nodes" -- /usr/bin/python3 "$here/tcpstore_rank.py" \
            >>"$out/store.$n" 2>"$out/store.$n.err"
        s=$(span "$out/store.$n")
        [ "$(ranks "$out/store.$n")" = "$n" ] || s="failed ($(head -c 200 "$out/store.$n.err"))"
        ratio=$(awk -v s="$s" -v c="$c" 'BEGIN { if (c + 0 > 0 && s + 0 > 0) printf "%.1f", s / c; else print "-" }')
    fi
    echo "| $n | $c | $sockets | $s | $ratio |"
done
