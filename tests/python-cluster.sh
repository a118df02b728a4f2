#!/bin/bash
# python-cluster.sh - the Python package's examples under real Slurm: boots
# tests/cluster's cluster (2 nodes, its own directory, the freshly built
# spank_cohort.so) and runs examples/infer_images.py (the work queue) and
# examples/camera_streams.py (stream sets, one worker SIGKILLed) through
# srun -N2 --ntasks-per-node=4 --cohort=infer, checking what the tasks wrote:
# every image's class published once (also with a task SIGKILLed between
# its save and its commit: cohort.read_output, cohort-work output
# --journal; and after scancel --signal=TERM drained every task mid-run and
# a rerun finished the queue), every stream served, no frame twice, the dead
# worker's streams served on by the others. No timing is judged. TAP.
# Skipped with the reason where the cluster cannot run, under the
# sanitizers, or without torch and torchvision in $COHORT_PYTHON.
. "$COHORT_SRCDIR/tests/tap.sh"
. "$COHORT_SRCDIR/tests/cluster/test-cluster.sh"
py=${COHORT_PYTHON:-/usr/bin/python3}
examples="$COHORT_SRCDIR/examples"

cluster_skip
"$py" -c 'import torch, torchvision' 2>/dev/null || skip_all "$py lacks torch or torchvision"
cluster_fresh python-cluster-run
echo "required $plugin default=env" >"$dir/etc/plugstack.conf"
cluster_up 2

# run OUT ARGS...: srun -N2 --ntasks-per-node=4 --cohort=infer of the
# python with the package from the trees, on the head node, bounded; stdout
# to OUT, stderr to OUT.err. Returns srun's status.
env="ALL,COHORT_LIBRARY=$COHORT_BUILDDIR/runtime/libcohort/.libs/libcohort.so.0"
env="$env,PYTHONPATH=$COHORT_SRCDIR/python,OMP_NUM_THREADS=1"
env="$env,COHORT_WORK_COORD=$COHORT_BUILDDIR/runtime/coord/cohort-work-coord"
run() {
    local out=$1
    shift
    SLURM_TIMELIMIT=3 "$cluster" exec "$dir" head timeout 170 \
        srun -N2 --ntasks-per-node=4 --cohort=infer --export="$env" "$py" "$@" >"$out" 2>"$out.err"
}
# why FILE: the first lines of FILE.err, for an ok line.
why() { head -3 "$1.err" | cut -c1-200 | tr '\n' ';'; }

# --- infer_images.py: the work queue, one task 4x slower -------------------
images=160
mkdir -p "$work/infer"
run "$tmp/infer" "$examples/infer_images.py" --images $images --size 64 --batch 16 --out "$work/infer"
ok $? "infer_images.py --images $images --size 64 on 2x4 tasks exits 0 ($(why "$tmp/infer"))"
# read_output's view of DIR/results: "id class" lines, sorted by id
classes() {
    PYTHONPATH="$COHORT_SRCDIR/python" "$py" -c '
import sys, cohort
for ids, pairs in cohort.read_output(sys.argv[1]):
    assert [i for i, _ in pairs] == ids, "a part whose classes are not of its ids"
    for i, k in pairs:
        print(i, k)' "$1/results" 2>&1 | sort -n
}
classes "$work/infer" >"$tmp/infer.classes"
awk '{print $1}' "$tmp/infer.classes" >"$tmp/infer.ids"
seq 0 $((images - 1)) | cmp -s - "$tmp/infer.ids"
ok $? "every image 0..$((images - 1)) classified and published exactly once, read back with cohort.read_output ($(wc -l <"$tmp/infer.ids") lines, $(sort -u "$tmp/infer.ids" | wc -l) distinct; $(grep -v '^[0-9]* [0-9]*$' "$tmp/infer.classes" | head -1))"
shares=$(awk '/^rank [0-9]+: [0-9]+ items/ {n++; s += $3} END {print n + 0, s + 0}' "$tmp/infer")
test "$shares" = "8 $images"
ok $? "the 8 tasks' printed shares sum to $images (tasks, items: $shares; $(awk '/^rank/ {printf "%s%s", sep, $3; sep = "+"}' "$tmp/infer"))"
grep -q '^makespan [0-9.]* s; a static split .* would take [0-9.]* s' "$tmp/infer"
ok $? "makespan and static split printed ($(grep -m1 '^makespan' "$tmp/infer"))"

# --- infer_images.py again, rank 5 SIGKILLed after saving its 2nd batch -----
mkdir -p "$work/infer-kill"
run "$tmp/ikill" "$examples/infer_images.py" --images $images --size 64 --batch 4 \
    --out "$work/infer-kill" --kill-rank 5 --kill-after 2
ended=$(grep -c "^rank [0-9]*: the step ended without rank 5 " "$tmp/ikill")
"$COHORT_BUILDDIR/runtime/tools/cohort-work" output "$work/infer-kill/results" \
    --journal "$work/infer-kill/journal" >"$tmp/ikill.check" 2>&1
rc=$?
classes "$work/infer-kill" | awk '{print $1}' >"$tmp/ikill.ids"
seq 0 $((images - 1)) | cmp -s - "$tmp/ikill.ids" && [ $rc = 0 ] && [ "$ended" = 7 ] &&
    grep -q "task 5: Killed" "$tmp/ikill.err"
ok $? "infer_images.py with rank 5 SIGKILLed between its save and its commit: the 7 others finish, every image's class published exactly once (cohort-work output --journal: $(grep -m1 '^check:' "$tmp/ikill.check"); $(sort -u "$tmp/ikill.ids" | wc -l) distinct of $(wc -l <"$tmp/ikill.ids"); $ended 'ended without' lines; $(why "$tmp/ikill"))"

# --- draining: scancel --signal=TERM mid-run, then the rerun finishes ------
# Every task drains (commits the batch in hand, closes at once), the
# coordinator serves them; the rerun over the same directory does the rest.
drain_images=600
mkdir -p "$work/infer-drain"
run "$tmp/idrain" "$examples/infer_images.py" --images $drain_images --size 64 --batch 4 \
    --slow-rank -1 --out "$work/infer-drain" &
step=$!
committed() {
    "$COHORT_BUILDDIR/runtime/tools/cohort-work" status "$work/infer-drain/journal" \
        --format json 2>/dev/null | "$py" -c 'import json, sys; print(json.load(sys.stdin)["committed"])' 2>/dev/null
}
i=0
while [ "$(committed)" = "" ] || [ "$(committed)" = 0 ]; do # the run is under way
    i=$((i + 1))
    [ $i -lt 600 ] && kill -0 $step 2>/dev/null || break
    sleep 0.2
done
job=$("$cluster" exec "$dir" head squeue -h -o %i | head -1)
"$cluster" exec "$dir" head scancel --signal=TERM "$job"
wait $step
rc=$?
first=$(committed)
drained=$(grep -c "drained on SIGTERM" "$tmp/idrain.err")
run "$tmp/idrain2" "$examples/infer_images.py" --images $drain_images --size 64 --batch 4 \
    --slow-rank -1 --out "$work/infer-drain"
rc2=$?
classes "$work/infer-drain" | awk '{print $1}' >"$tmp/idrain.ids"
seq 0 $((drain_images - 1)) | cmp -s - "$tmp/idrain.ids" && [ $rc = 0 ] && [ $rc2 = 0 ] &&
    [ "$drained" = 1 ] && [ "${first:-0}" -gt 0 ] && [ "$first" -lt $drain_images ]
ok $? "scancel --signal=TERM mid-run: every task drains and srun exits 0 ($rc; $first of $drain_images committed, rank 0 said drained: $drained), the rerun over the journal finishes ($rc2): every image's class published exactly once ($(sort -u "$tmp/idrain.ids" | wc -l) distinct of $(wc -l <"$tmp/idrain.ids"); $(why "$tmp/idrain")$(why "$tmp/idrain2"))"

# --- camera_streams.py: 200 streams, rank 5 SIGKILLed 5 s in ---------------
streams=200 victim=5
mkdir -p "$work/cams"
run "$tmp/cams" "$examples/camera_streams.py" --streams $streams --fps 4 --seconds 12 \
    --kill-rank $victim --kill-after 5 --out "$work/cams"
rc=$?
# srun fails (a task was killed); each survivor says so, and srun names no
# task but the victim as ending badly.
ended=$(grep -c "^rank [0-9]*: the step ended without rank $victim " "$tmp/cams")
counts=$(grep -c '^rank [0-9]*: [0-9]* streams held at the end' "$tmp/cams")
others=$(grep 'srun: error: .*task [0-9]*:' "$tmp/cams.err" | grep -v "task $victim: Killed" | head -2 | tr '\n' ';')
[ $rc != 124 ] && [ "$ended" = 7 ] && [ "$counts" = 7 ] && [ -z "$others" ] &&
    grep -q "task $victim: Killed" "$tmp/cams.err" && ! grep -q "^rank $victim: " "$tmp/cams"
ok $? "camera_streams.py: rank $victim killed, the 7 others print their line and end well (srun $rc, $counts count lines, $ended 'ended without' lines${others:+; $others} $(grep -v 'srun: error' "$tmp/cams.err" | head -2 | cut -c1-200 | tr '\n' ';'))"
for f in "$work/cams"/frames.*; do
    awk -v r="${f##*.}" '{print $1, $2, $3, r}' "$f"
done 2>/dev/null | sort -k1,1 -k2,2n >"$tmp/frames"
served=$(awk '{print $1}' "$tmp/frames" | sort -u | wc -l)
test "$served" = $streams
ok $? "every one of the $streams streams had frames processed ($served did, $(wc -l <"$tmp/frames") frames in all)"
twice=$(awk '{print $1, $2}' "$tmp/frames" | uniq -d | wc -l)
[ -s "$tmp/frames" ] && [ "$twice" = 0 ]
ok $? "no frame of any stream processed by two workers (or twice: $twice)"
older=$(awk '$1 == s && $3 < e {n++} {s = $1; e = $3} END {print n + 0}' "$tmp/frames")
[ -s "$tmp/frames" ] && [ "$older" = 0 ]
ok $? "along each stream the owners' epochs only grow ($older frames with an older epoch than the one before)"
# The victim's streams: each served on by another worker past its last frame.
orphans=$(awk -v v=$victim '$4 == v {last[$1] = $2} $4 != v {after[$1] = $2}
    END {for (s in last) if (!(s in after) || after[s] <= last[s]) n++; print n + 0, length(last)}' "$tmp/frames")
[ "${orphans% *}" = 0 ] && [ "${orphans#* }" -gt 0 ]
ok $? "every stream rank $victim held was processed by another worker after the kill (left behind, held: $orphans; taken over: $(awk '/streams held at the end/ {printf "%s%s", sep, $(NF - 6); sep = "+"}' "$tmp/cams"))"

tap_done
