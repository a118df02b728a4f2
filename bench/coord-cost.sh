#!/bin/bash
# coord-cost.sh - what the work coordinator's own CPU costs, per turn of
# its loop, per connection it reads and writes, per frame: the constants of
# bench/scale_sim's model of the coordinator (docs/performance.md, "Scale").
# RANKS (64) ranks on NODES (8) simulated nodes (tests/bootstrap/spawn
# running tests/work/work_check) lease and commit ITEMS (20000) items one
# at a time (cap 1), the ranks and relays on CPU 0, the coordinator alone on
# CPU 1 under `perf stat`: its CPU time (task-clock) and its epoll_wait,
# recvfrom and sendto calls. Three runs: the coordinator free (it wakes for
# almost every frame), then limited by a CPU cgroup to QUOTAS ("2000 1000"
# us of every 10 ms), so that frames wait for it and one read takes several.
# Each row: the measured CPU time and the model's (WAKE_US per wait, READ_US
# per read, FRAME_US per frame; defaults 14, 10, 2), frames counted as 2 a
# lease (its commit and itself) plus 4 a rank (open, barrier, last lease,
# close). Needs root (the cgroup) and perf; the cgroup rows are left out
# where neither cgroup v1's cpu controller nor v2's cpu.max is there.
#   bench/coord-cost.sh BUILDDIR
set -u
build=$(cd "${1:?usage: coord-cost.sh BUILDDIR}" && pwd)
ranks=${RANKS:-64}
nodes=${NODES:-8}
items=${ITEMS:-20000}
quotas=${QUOTAS:-2000 1000}
wake=${WAKE_US:-14} read=${READ_US:-10} frame=${FRAME_US:-2}
command -v perf >/dev/null || { echo "coord-cost.sh: no perf (Debian: linux-perf)" >&2; exit 1; }
make -s -C "$build" tests/bootstrap/spawn tests/work/work_check runtime/coord/cohort-work-coord \
    >/dev/null || exit 1
out=$(mktemp -d)
cg=""
if [ -d /sys/fs/cgroup/cpu ] && mkdir -p /sys/fs/cgroup/cpu/cohort-cost 2>/dev/null; then
    cg=/sys/fs/cgroup/cpu/cohort-cost
    echo 10000 > "$cg/cpu.cfs_period_us"
elif [ -f /sys/fs/cgroup/cgroup.controllers ] && mkdir -p /sys/fs/cgroup/cohort-cost 2>/dev/null; then
    cg=/sys/fs/cgroup/cohort-cost
fi
cleanup() {
    [ -n "$cg" ] && rmdir "$cg" 2>/dev/null
    rm -rf "$out"
}
trap cleanup EXIT
# The first process a step starts is its coordinator (the relays need its
# port): it goes to CPU 1 (and the cgroup where one is set); relays run as
# they are.
cat > "$out/coord" <<EOF
#!/bin/bash
if mkdir "$out/first" 2>/dev/null; then
    [ -s "$out/cgroup" ] && echo \$\$ > "\$(cat "$out/cgroup")"
    exec taskset -c 1 perf stat -x, -o "$out/stat" -e task-clock,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_recvfrom,syscalls:sys_enter_sendto -- "$build/runtime/coord/cohort-work-coord" "\$@"
fi
exec "$build/runtime/coord/cohort-work-coord" "\$@"
EOF
chmod +x "$out/coord"

# One run; $1 the quota in us of 10 ms ("" none). Prints a row.
run() {
    rm -rf "$out/first" "$out/stat" "$out/o" "$out/cgroup"
    mkdir -p "$out/o"
    if [ -n "$1" ]; then
        case $cg in
        */cpu/*) echo "$1" > "$cg/cpu.cfs_quota_us"; echo "$cg/tasks" > "$out/cgroup" ;;
        *) echo "$1 10000" > "$cg/cpu.max"; echo "$cg/cgroup.procs" > "$out/cgroup" ;;
        esac
    fi
    local ok
    ok=$(taskset -c 0 env COHORT_TEST_OUT="$out/o" COHORT_WORK_COORD="$out/coord" \
        COHORT_TEST_ITEMS="$items" COHORT_TEST_CAP=1 \
        "$build/tests/bootstrap/spawn" "$ranks" "$nodes" -- "$build/tests/work/work_check" |
        grep -c ': ok ')
    awk -F, -v ok="$ok" -v ranks="$ranks" -v items="$items" -v q="${1:-none}" \
        -v wake="$wake" -v rd="$read" -v fr="$frame" '
        $3 == "task-clock" { ms = $1 }
        $3 ~ /epoll_wait/ { waits = $1 }
        $3 ~ /recvfrom/ { reads = $1 }
        END {
            if (!reads) { # perf ends with the coordinator when its starter kills the group
                printf "| %s | %d of %d | no figures: perf was ended before it wrote them |\n", q, ok, ranks
                exit
            }
            frames = 2 * items + 4 * ranks
            model = (wake * waits + rd * reads + fr * frames) / 1000
            printf "| %s | %d of %d | %d | %d | %d | %.2f | %.0f | %.1f | %.0f | %+.0f %% |\n", q, ok, ranks,
                frames, waits, reads, frames / reads, ms, 1000 * ms / frames, model, 100 * (model - ms) / ms
        }' "$out/stat"
}

echo "| coordinator's quota (us of 10 ms) | ranks ok | frames | waits | reads | frames per read | CPU (ms) | CPU per frame (us) | model (ms) | model - measured |"
echo "|---|---|---|---|---|---|---|---|---|---|"
run ""
if [ -n "$cg" ]; then
    for q in $quotas; do run "$q"; done
else
    echo "coord-cost.sh: no CPU cgroup to limit the coordinator with: its rows are left out" >&2
fi
echo
echo "$ranks ranks on $nodes nodes, $items items at cap 1; model: $wake us a wait, $read us a read, $frame us a frame; $(nproc) CPUs; $(date -u +%Y-%m-%d)"
