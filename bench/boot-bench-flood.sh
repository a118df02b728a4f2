#!/bin/bash
# boot-bench-flood.sh - cohort's join time with and without a flood of
# strangers: from the last rank's arrival until every rank holds a 128-byte
# blob broadcast from rank 0 and has passed a barrier (bench/boot_bench, as
# bench/boot-bench.sh measures it), N ranks on NODES simulated nodes of this
# machine (tests/bootstrap/spawn), REPS runs of each case, the cases taken
# in turn within each rep. Cases:
#   none        undisturbed, all ranks arriving at one instant
#   tcp         STRANGERS connections (tests/bootstrap/attack flood) to the
#               root's TCP port, the flood starting when the root listens,
#               that is at the instant all ranks arrive
#   tcp-first   the same flood connected in full (attack's own line) after
#               rank 0 listens and before the other ranks start, as
#               tests/bootstrap.sh does it: rank 0 arrives 100 ms after the
#               launch, the others as spawn starts them once the flood is in
#               place (so not all at one instant)
#   unix        STRANGERS connections to node 0's Unix socket as uid 65534
#               (attack flood-unix), from the ranks' instant; root only
# Prints a Markdown table: per case, the median and range of the join
# times, the ratio of medians to the undisturbed case, the runs in which
# every rank joined, how many strangers had connected by the end of the run
# (tcp, unix: the attack's descriptors, counted every millisecond by a
# sampler beside it; tcp-first: the attack's own line), and the root's
# sockets at the end (strangers still held in its pool included).
#   bench/boot-bench-flood.sh BUILDDIR [REPS] ["N:NODES ..."] ["CASES"]
# REPS: 5; sizes: "8:2 64:4"; CASES: "none tcp tcp-first unix" ("unix" is
# skipped unless run as root). STRANGERS: 2000 if unset. COHORT_TIMEOUT:
# each rank's deadline, 20 s if unset. TOOLS: the build whose spawn and
# attack are used (default BUILDDIR): BUILDDIR's bench/boot_bench is what is
# timed, so TOOLS=AFTER_BUILD bench/boot-bench-flood.sh OLD_BUILD runs an
# older libcohort, whose tree has no attack program, under the same flood.
set -u
usage="usage: boot-bench-flood.sh BUILDDIR [REPS] [N:NODES...] [CASES]"
build=$(cd "${1:?$usage}" && pwd)
reps=${2:-5}
sizes=${3:-8:2 64:4}
cases=${4:-none tcp tcp-first unix}
tools=$(cd "${TOOLS:-$build}" && pwd)
strangers=${STRANGERS:-2000}
timeout=${COHORT_TIMEOUT:-20}
if [ -f "$build/Makefile" ]; then
    make -s -C "$build" bench/boot_bench >/dev/null || exit 1
fi
if [ -f "$tools/Makefile" ]; then
    make -s -C "$tools" tests/bootstrap/spawn tests/bootstrap/attack >/dev/null || exit 1
fi
spawn="$tools/tests/bootstrap/spawn"
attack="$tools/tests/bootstrap/attack"
rank_prog="$build/bench/boot_bench"
if [ "$(id -u)" != 0 ] && [[ " $cases " == *" unix "* ]]; then
    echo "not root: the unix case (strangers of another uid) is skipped" >&2
    cases=${cases/unix/}
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
ulimit -n 65536 2>/dev/null # the attack holds STRANGERS descriptors
cores=$(nproc)

# The sampler spawn starts with --attack-first: it answers spawn at once
# (the ranks start), runs the attack beside it, and writes how many
# descriptors the attack has opened since it started (its strangers: it
# holds each connection, and a new descriptor takes the lowest free number)
# to FILE.count, looking every millisecond without a fork, until spawn kills
# both at the end of the step.
cat >"$out/sampler" <<'EOF'
#!/bin/bash
f=$1
shift
echo "sampler: attack starting"
"$@" >"$f.attack" &
p=$!
exec 9<>"$f.fifo" # never written: read -t on it sleeps without a fork
until [ "/proc/$p/exe" -ef "$1" ]; do # the attack runs (the ranks' instant is far ahead)
    read -t 0.001 -u 9
done
inherited=() # the descriptors it started with
for d in /proc/$p/fd/*; do
    inherited[${d##*/}]=1
done
top=-1 below=0 # its new descriptors, lowest first, are 0..top less the $below inherited
printf '%8d\n' 0 1<>"$f.count"
while :; do
    seen=$top
    while [ -e "/proc/$p/fd/$((top + 1))" ]; do
        top=$((top + 1))
        below=$((below + ${inherited[top]:-0}))
    done
    # overwritten in place, in one write: never seen half-written
    [ "$top" = "$seen" ] || printf '%8d\n' $((top + 1 - below)) 1<>"$f.count"
    read -t 0.001 -u 9
done
EOF
chmod +x "$out/sampler"

# span FILE: (max T1 - max T0) in ms over the "T0 T1" lines.
span() { awk 'NF == 2 && $1 ~ /^[0-9]+$/ { if ($1 > a) a = $1; if ($2 > b) b = $2; n++ }
              END { if (n) printf "%.1f", (b - a) / 1e6; else printf "-" }' "$1"; }
ranks() { awk 'NF == 2 && $1 ~ /^[0-9]+$/' "$1" | wc -l; }

# strangers_seen CASE FILE: how many strangers had connected by the end.
strangers_seen() {
    case $1 in
    tcp-first) sed -n 's/^flood: \([0-9]*\) of .*/\1/p' "$2" ;;
    tcp | unix) tr -d ' ' <"$2.count" 2>/dev/null ;;
    esac
}

# run CASE N NODES REP: one run into $out/CASE.N.REP, and a line on stderr.
run() {
    local f="$out/$1.$2.$4" delay=$((1000 + $2 * 5 / cores)) opt=()
    case $1 in
    tcp) opt=(--attack-first "$out/sampler $f $attack flood $strangers") ;;
    unix) opt=(--attack-first "$out/sampler $f $attack flood-unix $strangers") ;;
    tcp-first) opt=(--attack "$attack flood $strangers") delay=100 ;;
    esac
    mkfifo "$f.fifo"
    SPAWN_START_DELAY_MS=$delay SPAWN_TIMEOUT=$((timeout + 30)) COHORT_TIMEOUT=$timeout \
        "$spawn" "$2" "$3" "${opt[@]}" -- "$rank_prog" >"$f" 2>"$f.err"
    local said # the attack's own line, if it got so far
    said=$(cat "$f.attack" "$f" 2>/dev/null | grep -m1 '^flood')
    echo "$1 N=$2 run $4: $(span "$f") ms, $(ranks "$f") of $2 ranks," \
        "strangers connected ${opt:+$(strangers_seen "$1" "$f")}${said:+ ($said)}" >&2
    [ "$(ranks "$f")" = "$2" ] || echo "  $(grep -m1 '^spawn:' "$f") $(head -c 300 "$f.err")" >&2
}

# summary CASE N: "median (min-max)|ok runs|strangers|sockets|median" over the reps.
summary() {
    local f r ok=0 spans=() seen=() socks=()
    for r in $(seq "$reps"); do
        f="$out/$1.$2.$r"
        [ "$(ranks "$f")" = "$2" ] && ok=$((ok + 1)) && spans+=("$(span "$f")")
        seen+=("$(strangers_seen "$1" "$f")")
        socks+=("$(awk '/^sockets/ { print $2 }' "$f")")
    done
    printf '%s|%d of %d|%s|%s|%s\n' "$(median "${spans[@]}")" "$ok" "$reps" \
        "$(median "${seen[@]}")" "$(median "${socks[@]}")" "$(median "${spans[@]}" | cut -d' ' -f1)"
}

# median V...: "median (min-max)" of the numbers given, "-" if none.
median() {
    printf '%s\n' "$@" | awk '$1 ~ /^[0-9.]+$/' | sort -n | awk '{ v[NR] = $1 }
        END { if (!NR) { printf "-"; exit }
              m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
              if (NR > 1 && v[1] != v[NR]) printf "%g (%s-%s)", m, v[1], v[NR]; else printf "%g", m }'
}

label() {
    case $1 in
    none) echo "none" ;;
    tcp) echo "$strangers on the root's TCP port, from the ranks' arrival" ;;
    tcp-first) echo "$strangers on the root's TCP port, all connected before the other ranks start" ;;
    unix) echo "$strangers on node 0's Unix socket (uid 65534), from the ranks' arrival" ;;
    esac
}

for r in $(seq "$reps"); do
    for size in $sizes; do
        for c in $cases; do
            run "$c" "${size%:*}" "${size#*:}" "$r"
        done
    done
done
echo "| N (nodes) | strangers | join (ms) | / undisturbed | runs with every rank joined | strangers connected by the end | root's sockets at the end |"
echo "|---|---|---|---|---|---|---|"
for size in $sizes; do
    n=${size%:*}
    base=-
    for c in $cases; do
        IFS='|' read -r join ok seen socks med <<<"$(summary "$c" "$n")"
        [ "$c" = none ] && base=$med
        ratio=$(awk -v a="$base" -v b="$med" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", b / a; else print "-" }')
        echo "| $n (${size#*:}) | $(label "$c") | $join | $ratio | $ok | ${seen:--} | ${socks:--} |"
    done
done
echo
echo "$reps runs of each case, COHORT_TIMEOUT=$timeout; $cores CPUs; load average now $(cut -d' ' -f1-3 /proc/loadavg)."
