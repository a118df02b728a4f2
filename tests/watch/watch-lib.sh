# watch-lib.sh - sourced by tests/watch.sh and tests/watch-tree.sh after
# test-cluster.sh (with $work, $tmp, $cluster, $dir, $env, $loop and the
# array $shape, srun's node and task options, set by the test): how both
# start a watched step, what both read of it and how both cut a node's
# link. bench/watch-bench.sh takes its start, running and left.
#   start NAME SRUN_ARGS... [-- CMD...]  srun "${shape[@]}" --cohort=train
#                     SRUN_ARGS CMD (the torch loop over $work/NAME by
#                     default) in the background, bounded; its output in
#                     $tmp/NAME(.err), its files (pids, the verdict) in
#                     $work/NAME, srun's pid in $srun
#   why NAME          srun's first lines that are not the watch's, for messages
#   now, since T0 T1  the time, and the seconds between two of them
#   lines NAME        how many of the watch's lines srun's stderr holds
#   verdict NAME EXPR whether the JSON verdict satisfies the Python EXPR over v
#   running NAME      waits (60 s at most) until the 4 ranks are in their loop
#   left NAME [RANKS...]  those of the ranks (0-3) whose process is still there
#   named NAME PREFIX REGEX EXPR  whether NAME's first line beginning with
#                     PREFIX matches REGEX and is the watch's only line, srun
#                     failed (not by its timeout) within 60 s, no rank is
#                     left and the JSON verdict satisfies EXPR; sets line
#   stranger NAME MIN SRUN_ARGS...  runs tests/store/store_stranger.py (the
#                     user nobody on every port of the step's processes) as
#                     srun SRUN_ARGS with $env; whether it ended well with 4
#                     "step ok", MIN ports tried at least, no watch line and no
#                     verdict; sets rc and tried
#   cut_link NAME HOST KEEP  takes HOST's link down until every rank but those in
#                     KEEP (digits) has ended (60 s at most), brings it up
#                     and waits for srun; sets took, rc ("running": the
#                     loop never ran)
py=${py:-/usr/bin/python3}
start() {
    local name=$1 args=()
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
    if [ $# -gt 0 ]; then shift; else set -- "$py" "$loop" "$work/$name"; fi
    mkdir -p "$work/$name"
    SLURM_TIMELIMIT=5 "$cluster" exec "$dir" head timeout 200 \
        srun "${shape[@]}" --cohort=train \
        --export="$env,COHORT_WATCH_FILE=$work/$name/verdict.json" "${args[@]}" "$@" \
        >"$tmp/$name" 2>"$tmp/$name.err" &
    srun=$!
}
why() { grep -v '^srun: ' "$1.err" | grep -v '^cohort: rank\|^cohort: node' | head -3 | cut -c1-200 | tr '\n' ';'; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
lines() { grep -c '^cohort: \(rank\|node\|allreduce\)' "$tmp/$1.err"; }
verdict() {
    "$py" -c "import json,sys; v=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" \
        "$work/$1/verdict.json" 2>/dev/null
}
running() {
    local i
    for i in $(seq 600); do
        [ "$(ls "$work/$1"/running.* 2>/dev/null | wc -l)" = 4 ] && return 0
        kill -0 "$srun" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
left() {
    local name=$1 r out=""
    shift
    [ $# -gt 0 ] || set -- 0 1 2 3
    for r in "$@"; do
        [ -e "$work/$name/pid.$r" ] && kill -0 "$(cat "$work/$name/pid.$r")" 2>/dev/null &&
            out="$out $r"
    done
    echo "$out"
}
named() {
    line=$(grep "^$2" "$tmp/$1.err" | head -1)
    echo "$line" | grep -Eq "$3" && [ "$(lines "$1")" = 1 ] && [ "$rc" != 0 ] &&
        [ "$rc" != 124 ] && awk -v t="$took" 'BEGIN { exit !(t < 60) }' &&
        [ -z "$(left "$1")" ] && verdict "$1" "$4"
}
stranger() {
    local name=$1 min=$2
    shift 2
    mkdir -p "$work/$name" && chmod 777 "$work/$name"
    SLURM_TIMELIMIT=3 "$cluster" exec "$dir" head timeout 150 srun "$@" \
        --export="$env,COHORT_WATCH_FILE=$work/$name/verdict.json" \
        "$py" "$COHORT_SRCDIR/tests/store/store_stranger.py" "$work/$name" \
        >"$tmp/$name" 2>"$tmp/$name.err"
    rc=$?
    tried=$(cat "$work/$name"/stranger-* 2>/dev/null | wc -l)
    [ "$rc" = 0 ] && [ "$(grep -c '^step ok' "$tmp/$name")" = 4 ] && [ "$tried" -ge "$min" ] &&
        [ "$(lines "$name")" = 0 ] && [ ! -e "$work/$name/verdict.json" ]
}
cut_link() {
    local t0 i
    if running "$1"; then
        t0=$(now)
        "$cluster" exec "$dir" "$2" ip link set eth0 down
        for i in $(seq 600); do
            [ -z "$(left "$1" | tr -d " $3")" ] && break
            sleep 0.1
        done
        took=$(since "$t0" "$(now)")
        "$cluster" exec "$dir" "$2" ip link set eth0 up
        wait "$srun"
        rc=$?
    else
        wait "$srun"
        rc=running took=-
    fi
}
