#!/bin/bash
# work-bench.sh - the work queue's (cohort_work.h) benchmarks, on simulated
# steps of this machine (tests/bootstrap/spawn running bench/work_bench),
# printed as Markdown tables with the load average before and after each:
#   throughput  WORKERS (16) workers on NODES (2) simulated nodes lease and
#               commit items of no work: items/s from the barrier after
#               cohort_work_open returned to cohort_work_close returning, on
#               rank 0, for each lease cap of CAPS ("1048576 65536 1": the
#               large ones adaptive, 1 one item a call); in the same reps, the
#               reliable-queue pattern on a Redis server this script starts
#               (REDIS_SERVER, default redis-server; on a private port and
#               Unix socket, a temporary directory, no persistence; stopped
#               at the end): WORKERS client processes of bench/redis_queue,
#               BLMOVE queue processing then LREM processing 1 ITEM, one item
#               at a time, over a queue filled beforehand (not timed), over
#               TCP and over the Unix socket (no Redis rows without
#               REDIS_SERVER; bench/redis_queue needs hiredis). Each rep runs
#               every kind once, in turn; the last column is each rep's
#               ratio to that rep's Redis TCP run, and the CPU time the
#               whole machine spent per item during the run (all CPUs'
#               busy ticks in /proc/stat, the Redis server's included;
#               cohort's step start and end included). Items per run:
#               ITEMS_CAP<cap> and ITEMS_REDIS, else calibrated by two
#               untimed runs each so that a run lasts about RUN_S (2.5) s.
#   makespan    workers of speeds 1:2:4 and 1:1:1:0.25 (SPEEDS, "1,2,4
#               1,1,1,0.25"), ITEM_US (2000) microseconds of sleep per item at
#               speed 1, items such that the ideal (total work / total speed)
#               is IDEAL_S (3) seconds: the static split (rank r takes items r,
#               r+N, ..., as DistributedSampler) and cohort (cap 65536),
#               each against the ideal, with the coordinator's count of tail
#               copies and the longest work one lease held.
#   recovery    RECOVERY_RUNS (100) steps of 4 workers on 2 nodes: the last
#               leases every one of 4 items and SIGKILLs itself once the three
#               others are blocked in cohort_work_lease; the time from the
#               kill to the first of them being granted one of its items
#               (REPS is not used). The victim reads the others' state from
#               /proc/PID/syscall: root, or kernel.yama.ptrace_scope 0.
# REPS runs of each (3), median and range. Before each series the script
# waits (polling every 30 s, at most LOAD_WAIT_S, 600) for the 1-minute
# load average to be at most LOAD_MAX (1.5).
#   bench/work-bench.sh BUILDDIR [REPS] ["SECTIONS"]
# SECTIONS: "throughput makespan recovery" if unset.
set -u
usage="usage: work-bench.sh BUILDDIR [REPS] [SECTIONS]"
build=$(cd "${1:?$usage}" && pwd)
reps=${2:-${REPS:-3}}
sections=${3:-throughput makespan recovery}
workers=${WORKERS:-16}
nodes=${NODES:-2}
caps=${CAPS:-1048576 65536 1}
run_s=${RUN_S:-2.5}
item_us=${ITEM_US:-2000}
ideal_s=${IDEAL_S:-3}
speed_sets=${SPEEDS:-1,2,4 1,1,1,0.25}
recovery_runs=${RECOVERY_RUNS:-100}
load_max=${LOAD_MAX:-1.5}
load_wait=${LOAD_WAIT_S:-600}
redis_server=${REDIS_SERVER:-redis-server}
targets="bench/work_bench tests/bootstrap/spawn runtime/coord/cohort-work-coord"
redis_kinds="tcp unix"
if ! command -v "$redis_server" >/dev/null; then
    echo "work-bench.sh: no $redis_server: the throughput table has no Redis rows" >&2
    redis_kinds=""
elif [[ " $sections " == *" throughput "* ]]; then
    targets="$targets bench/redis_queue" # needs hiredis
fi
if [ -f "$build/Makefile" ]; then
    make -s -C "$build" $targets >/dev/null || exit 1
fi
spawn="$build/tests/bootstrap/spawn"
bench="$build/bench/work_bench"
COHORT_WORK_COORD="$build/runtime/coord/cohort-work-coord"
export COHORT_WORK_COORD
out=$(mktemp -d)
redis_pid=""
cleanup() {
    if [ -n "$redis_pid" ]; then
        kill "$redis_pid" 2>/dev/null
        wait "$redis_pid" 2>/dev/null
    fi
    rm -rf "$out"
}
trap cleanup EXIT
ulimit -n 65536 2>/dev/null

load() { cut -d' ' -f1-3 /proc/loadavg | sed 's/ /, /g'; }
# quiet: waits for the 1-minute load average to be at most LOAD_MAX.
quiet() {
    local waited=0
    while awk -v m="$load_max" '{ exit !($1 > m) }' /proc/loadavg && [ "$waited" -lt "$load_wait" ]; do
        echo "load average $(load): waiting for the 1-minute one to be at most $load_max" >&2
        sleep 30 # waiting for other work on the machine to end, not for a process of ours
        waited=$((waited + 30))
    done
    load_before=$(load)
}
loads() { echo "Load average (1, 5, 15 min) before: $load_before; after: $(load)."; }

# median VALUE...: "median (min-max)", each printed with FMT (default
# %.0f), or to SIG significant digits when SIG is set; "-" for none.
median() {
    [ $# -gt 0 ] || { echo "-"; return; }
    printf '%s\n' "$@" | sort -g | awk -v f="${FMT:-%.0f}" -v sig="${SIG:-0}" '
        function p(x, e) { if (!sig || x <= 0) return sprintf(f, x)
                           e = 10 ^ (int(log(x) / log(10)) - sig + 1)
                           return sprintf("%.0f", int(x / e + 0.5) * e) }
        { v[NR] = $1 }
        END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
              s = p(m); if (NR > 1) s = s " (" p(v[1]) "-" p(v[NR]) ")"; print s }'
}
med() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# commas TEXT: every whole number of TEXT with thousands separators.
commas() { echo "$1" | sed -e ':a' -e 's/\B[0-9]\{3\}\>/,&/' -e 'ta'; }
# busy: clock ticks every CPU of the machine has spent busy so far
# (/proc/stat: user, nice, system, irq, softirq).
busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
# elapsed FILE: the run's seconds, from its "elapsed_ns T items N" line.
elapsed() { awk '/^elapsed_ns / { printf "%.6f", $2 / 1e9 }' "$1"; }
# rate FILE: items/s of the run, or nothing.
rate() { [ -f "$1" ] && awk '/^elapsed_ns / && $2 > 0 { printf "%.0f", $4 / ($2 / 1e9) }' "$1"; }

# A step of work_bench: run_step FILE N NODES MODE [VAR=VALUE...].
run_step() {
    local f=$1 n=$2 nd=$3 mode=$4
    shift 4
    env SPAWN_TIMEOUT=900 COHORT_TIMEOUT=600 "$@" "$spawn" "$n" "$nd" -- "$bench" "$mode" >"$f" 2>&1
}
# queue_ok FILE N ITEMS: every rank ok and ITEMS committed in all (none twice).
queue_ok() {
    awk -v n="$2" -v items="$3" '/^rank [0-9]+: ok / { ok++; c += $6 } /^elapsed_ns / { e = 1 }
        END { exit !(ok == n && c == items && e) }' "$1"
}

# --- throughput ---------------------------------------------------------------
redis_start() {
    local try line fifo="$out/redis.fifo"
    mkfifo "$fifo"
    for try in 1 2 3 4 5; do
        redis_port=$((20000 + RANDOM % 10000))
        "$redis_server" --port "$redis_port" --bind 127.0.0.1 --unixsocket "$out/redis.sock" \
            --dir "$out" --save "" --appendonly no --logfile "" >"$fifo" 2>&1 &
        redis_pid=$!
        exec 3<"$fifo"
        while read -r -u 3 line; do
            echo "$line" >>"$out/redis.log"
            if [[ $line == *"Ready to accept connections"* ]]; then
                cat <&3 >>"$out/redis.log" &
                exec 3<&-
                return 0
            fi
        done
        exec 3<&-
        wait "$redis_pid"
        redis_pid=""
    done
    echo "work-bench.sh: redis-server did not start: $(tail -3 "$out/redis.log")" >&2
    return 1
}
redis_stop() {
    [ -n "$redis_pid" ] || return
    kill "$redis_pid" && wait "$redis_pid"
    redis_pid=""
}
# one_run KIND FILE ITEMS: KIND is a cap, "tcp" or "unix".
one_run() {
    case $1 in
    tcp) "$build/bench/redis_queue" "127.0.0.1:$redis_port" "$workers" "$3" >"$2" 2>&1 ;;
    unix) "$build/bench/redis_queue" "$out/redis.sock" "$workers" "$3" >"$2" 2>&1 ;;
    *) run_step "$2" "$workers" "$nodes" queue WB_ITEMS="$3" WB_CAP="$1"
       queue_ok "$2" "$workers" "$3" || echo "failed" >>"$2" ;;
    esac
}
# calibrate KIND PILOT_ITEMS: items for a run of about RUN_S seconds.
calibrate() {
    local var="ITEMS_CAP$1"
    [ "$1" = tcp ] || [ "$1" = unix ] && var=ITEMS_REDIS
    if [ -n "${!var:-}" ]; then
        echo "${!var}"
        return
    fi
    local n=$2 pass
    for pass in 1 2; do # the second pass at about the size found: leases ramp up
        one_run "$1" "$out/pilot" "$n"
        n=$(awk -v r="$(rate "$out/pilot")" -v s="$run_s" -v p="$n" 'BEGIN {
            n = r > 0 ? r * s : p; e = 10 ^ int(log(n) / log(10) - 1); n = int(n / e + 1) * e
            printf "%.0f", n < p ? p : n }')
    done
    echo "$n"
}
label() {
    case $1 in
    tcp) echo "Redis reliable queue (BLMOVE + LREM), TCP 127.0.0.1" ;;
    unix) echo "Redis reliable queue (BLMOVE + LREM), Unix socket" ;;
    1) echo "cohort, cap 1 (lease + commit of one item)" ;;
    *) echo "cohort, adaptive leases, cap $1" ;;
    esac
}
throughput() {
    local kind r kinds="$caps $redis_kinds" n
    [ -z "$redis_kinds" ] || redis_start || exit 1
    declare -A items
    quiet # the calibration too: under load it would pick runs too short
    for kind in $kinds; do
        case $kind in tcp | unix) n=20000 ;; 1) n=20000 ;; *) n=50000000 ;; esac
        items[$kind]=$(calibrate "$kind" "$n")
        echo "$(label "$kind"): ${items[$kind]} items a run" >&2
    done
    quiet
    for r in $(seq "$reps"); do
        for kind in $kinds; do
            local c0 c1
            c0=$(busy)
            one_run "$kind" "$out/tp.$kind.$r" "${items[$kind]}"
            c1=$(busy)
            awk -v c="$((c1 - c0))" -v n="${items[$kind]}" -v hz="$(getconf CLK_TCK)" \
                'BEGIN { printf "%.4g\n", c / hz * 1e6 / n }' >"$out/cpu.$kind.$r"
            echo "throughput $kind run $r: $(rate "$out/tp.$kind.$r") items/s" >&2
        done
    done
    redis_stop
    echo "| queue | items a run | s a run | items/s, median (range) | runs right | / Redis (TCP) of the same rep, median (range) | machine CPU per item (us), median (range) |"
    echo "|---|---|---|---|---|---|---|"
    for kind in $kinds; do
        local vals=() secs=() ratios=() cpus=() ok=0 m v ratio
        for r in $(seq "$reps"); do
            v=$(rate "$out/tp.$kind.$r")
            grep -q '^failed' "$out/tp.$kind.$r" && v=""
            [ -n "$v" ] || continue
            vals+=("$v")
            secs+=("$(elapsed "$out/tp.$kind.$r")")
            cpus+=("$(cat "$out/cpu.$kind.$r")")
            ok=$((ok + 1))
            ratio=$(awk -v a="$v" -v b="$(rate "$out/tp.tcp.$r")" 'BEGIN { if (b > 0) printf "%.4f", a / b }')
            [ -z "$ratio" ] || ratios+=("$ratio")
        done
        m=$(commas "$(SIG=3 median "${vals[@]}")")
        if awk -v m="$(med "${ratios[@]:-0}")" 'BEGIN { exit !(m >= 10) }'; then
            ratio=$(commas "$(SIG=3 median "${ratios[@]}")")
        else
            ratio=$(FMT=%.2f median "${ratios[@]}")
        fi
        echo "| $(label "$kind") | $(commas "${items[$kind]}") | $(FMT=%.1f median "${secs[@]}") | $m | $ok of $reps | $ratio | $(FMT=%.3g median "${cpus[@]}") |"
    done
    echo
    echo "$workers workers on $nodes simulated nodes${redis_kinds:+, $workers Redis clients}; $(nproc) CPUs. $(loads)"
    for kind in $kinds; do
        for r in $(seq "$reps"); do
            grep -q '^elapsed_ns' "$out/tp.$kind.$r" && ! grep -q '^failed' "$out/tp.$kind.$r" ||
                echo "$(label "$kind") run $r failed: $(grep -v '^rank [0-9]*: ok' "$out/tp.$kind.$r" | head -3)"
        done
    done
}

# --- makespan -----------------------------------------------------------------
makespan() {
    quiet
    echo "| workers (speeds) | items | ideal (s) | static split (s) | static / ideal | cohort (s) | cohort / ideal | target: 1.03 x ideal + 1 item | cohort runs within it | tail copies (all runs) | leases per worker | longest lease (ms) |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
    local set
    for set in $speed_sets; do
        local n_w sum slow items ideal bound r
        n_w=$(echo "$set" | awk -F, '{ print NF }')
        sum=$(echo "$set" | awk -F, '{ for (i = 1; i <= NF; i++) s += $i; print s }')
        slow=$(echo "$set" | awk -F, '{ m = $1; for (i = 2; i <= NF; i++) if ($i < m) m = $i; print m }')
        items=$(awk -v s="$sum" -v t="$ideal_s" -v u="$item_us" 'BEGIN { printf "%.0f", t * 1e6 * s / u }')
        ideal=$(awk -v n="$items" -v s="$sum" -v u="$item_us" 'BEGIN { printf "%.4f", n * u / 1e6 / s }')
        bound=$(awk -v i="$ideal" -v u="$item_us" -v m="$slow" 'BEGIN { printf "%.4f", 1.03 * i + u / m / 1e6 }')
        for r in $(seq "$reps"); do
            run_step "$out/ms.$set.static.$r" "$n_w" 2 static WB_ITEMS="$items" WB_ITEM_US="$item_us" WB_SPEEDS="$set"
            run_step "$out/ms.$set.cohort.$r" "$n_w" 2 queue WB_ITEMS="$items" WB_ITEM_US="$item_us" \
                WB_SPEEDS="$set" WB_CAP=65536 COHORT_VERBOSE=1
            queue_ok "$out/ms.$set.cohort.$r" "$n_w" "$items" || echo "failed" >>"$out/ms.$set.cohort.$r"
            echo "makespan $set run $r: static $(elapsed "$out/ms.$set.static.$r") s, cohort $(elapsed "$out/ms.$set.cohort.$r") s" >&2
        done
        local st=() co=() within=0 copies=0 f c
        for r in $(seq "$reps"); do
            f="$out/ms.$set.cohort.$r"
            st+=($(elapsed "$out/ms.$set.static.$r"))
            grep -q '^failed' "$f" && continue
            co+=($(elapsed "$f"))
            awk -v e="$(elapsed "$f")" -v b="$bound" 'BEGIN { exit !(e <= b) }' && within=$((within + 1))
            c=$(awk '/copies at the tail/ { for (i = 1; i < NF; i++) if ($(i + 1) == "copies") print $i }' "$f" | head -1)
            copies=$((copies + ${c:-0}))
        done
        local leases
        leases=$(cat "$out"/ms."$set".cohort.* | awk '/^rank [0-9]+: ok / { n++; l += $10; if ($14 > m) m = $14 }
            END { printf "%.0f | %.0f", l / n, m }')
        echo "| $n_w ($(echo "$set" | sed 's/,/:/g')) | $(commas "$items") | $ideal | $(FMT=%.3f median "${st[@]}") | $(awk -v a="$(med "${st[@]}")" -v i="$ideal" 'BEGIN { printf "%.3f", a / i }') | $(FMT=%.3f median "${co[@]}") | $(awk -v a="$(med "${co[@]:-0}")" -v i="$ideal" 'BEGIN { printf "%.4f", a / i }') | $bound s ($(awk -v b="$bound" -v i="$ideal" 'BEGIN { printf "%.4f", b / i }') x) | $within of $reps | $copies | $leases |"
    done
    echo
    echo "$item_us us of sleep per item at speed 1; \"1 item\": one item of the slowest worker. The scheduler aims at 500 ms of work per lease. $(nproc) CPUs. $(loads)"
    for f in "$out"/ms.*.cohort.*; do
        grep -q '^failed' "$f" && echo "${f##*/ms.} failed: $(grep -v '^rank [0-9]*: ok' "$f" | head -3)"
    done
}

# --- recovery -----------------------------------------------------------------
recovery() {
    quiet
    local i d vals=() bad=0 first=""
    for i in $(seq "$recovery_runs"); do
        d="$out/rec.$i"
        mkdir "$d"
        run_step "$d/out" 4 2 recovery WB_OUT="$d" WB_ITEMS=4
        # the kill time; the first re-lease; every victim id leased again
        local v
        v=$(cat "$d"/relet.* 2>/dev/null | awk -v k="$(awk 'NR == 1 { print $1 }' "$d/kill" 2>/dev/null)" \
            -v ids="$(cut -d' ' -f2- "$d/victim" 2>/dev/null)" '
            { if (!n++ || $1 < t) t = $1; for (i = 2; i <= NF; i++) got[$i] = 1 }
            END { m = split(ids, v, " "); for (i = 1; i <= m; i++) if (!(v[i] in got)) miss++
                  if (k > 0 && n && m == 4 && !miss && t > k) printf "%.3f", (t - k) / 1e6 }')
        if [ -n "$v" ] && [ "$(grep -c ': ok$' "$d/out")" = 3 ]; then
            vals+=("$v")
        else
            bad=$((bad + 1))
            [ -n "$first" ] || first="run $i: $(head -c 300 "$d/out")"
        fi
        rm -rf "$d"
    done
    echo "| workers (nodes) | items the victim held | runs right | kill to re-lease, median (ms) | worst (ms) | best (ms) |"
    echo "|---|---|---|---|---|---|"
    local sorted
    sorted=$(printf '%s\n' "${vals[@]}" | sort -g)
    echo "| 4 (2) | 4 | ${#vals[@]} of $recovery_runs | $(printf '%.3f' "$(med "${vals[@]:-0}")") | $(echo "$sorted" | tail -1) | $(echo "$sorted" | head -1) |"
    echo
    [ "$bad" = 0 ] || echo "$bad runs failed; the first: $first"
    echo "$(nproc) CPUs. $(loads)"
}

for s in $sections; do
    echo "### $s"
    echo
    "$s"
    echo
done
