#!/bin/sh
# cohort-info.sh - cohort-info from the outside: the JSON shape, the env and
# table formats, --all, --hostnames, --export-topology, and one clear line
# with a non-zero exit for each kind of bad input. Emits TAP.
info="$COHORT_BUILDDIR/runtime/tools/cohort-info"
fx="$COHORT_SRCDIR/tests/fixtures"
. "$COHORT_SRCDIR/tests/tap.sh"

cat >"$tmp/env" <<EOV
SLURM_JOB_ID=77
SLURM_STEP_ID=3
SLURM_STEP_NODELIST=gpu[07-08]
SLURM_STEP_NUM_TASKS=16
SLURM_STEP_TASKS_PER_NODE=8(x2)
SLURM_NODEID=1
SLURM_PROCID=9
SLURM_LOCALID=1
SLURM_STEP_GPUS=0,1,2,3,4,5,6,7
CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
SLURM_STEP_RESV_PORTS=30100-30108
EOV

out=$("$info" --env "$tmp/env" --topology "$fx/dgx-a100.xml" --format json)
ok $? "json plan for one task"
python3 - "$out" <<'EOP'
import json, sys
d = json.loads(sys.argv[1])
t = d["tasks"]
assert len(t) == 1, t
t = t[0]
want = {"rank": 9, "local_rank": 1, "node_rank": 1, "world_size": 16,
        "local_world_size": 8, "master_addr": "gpu07", "master_port": 30100,
        "gpus": ["0000:0f:00.0"], "cuda_visible_devices": "0,1,2,3,4,5,6,7",
        "cpus": "56-63,184-191", "numa": [3]}
for k, v in want.items():
    assert t[k] == v, (k, t[k], v)
assert t["env"]["RANK"] == "9" and t["env"]["MASTER_PORT"] == "30100", t["env"]
assert t["env"]["LOCAL_RANK"] == "1" and t["env"]["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
EOP
ok $? "json has the documented fields and values"

out=$("$info" --env "$tmp/env" --topology "$fx/dgx-a100.xml" --format json --all --mode infer)
python3 -c '
import json, sys
t = json.loads(sys.argv[1])["tasks"]
assert [x["rank"] for x in t] == list(range(8, 16)), t
assert [x["cuda_visible_devices"] for x in t] == [str(i) for i in range(8)]
assert [x["numa"] for x in t] == [[3], [3], [1], [1], [7], [7], [5], [5]]
' "$out"
ok $? "--all --mode infer: 8 tasks, one GPU each, on the GPU's NUMA node"

"$info" --env "$tmp/env" --topology "$fx/dgx-a100.xml" --format env | grep -qx 'RANK=9'
ok $? "--format env prints RANK=9"
"$info" --env "$tmp/env" --topology "$fx/dgx-a100.xml" | grep -q '0000:0f:00.0'
ok $? "table names the GPU's PCI id"
cp "$tmp/env" "$tmp/env-infer"
echo COHORT_MODE=infer >>"$tmp/env-infer"
"$info" --env "$tmp/env-infer" --topology "$fx/dgx-a100.xml" --format env | grep -qx 'CUDA_VISIBLE_DEVICES=1'
ok $? "COHORT_MODE in the task environment picks infer"
"$info" --env "$tmp/env-infer" --topology "$fx/dgx-a100.xml" --format env --mode train | grep -qx 'CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7'
ok $? "--mode overrides COHORT_MODE"
"$info" --env "$tmp/env-infer" --topology "$fx/dgx-a100.xml" --format json | grep -q '"COHORT_MODE": "infer"'
ok $? "a variable the user set is reported as kept"

test "$("$info" --hostnames 'n[1-2]x[3-4],login[1-2]-ib' | tr '\n' ' ')" = "n1x3 n1x4 n2x3 n2x4 login1-ib login2-ib "
ok $? "--hostnames expands like scontrol show hostnames"

# hwloc's pci component (libpciaccess, dlclosed at exit) leaks a little memory
# on this machine; under LeakSanitizer these two loads of this machine skip it.
if [ -n "${COHORT_SANITIZED:-}" ]; then HWLOC_COMPONENTS=-pci; export HWLOC_COMPONENTS; fi
"$info" --export-topology "$tmp/me.xml" && grep -q '<topology' "$tmp/me.xml"
ok $? "--export-topology writes XML"
sed -e 's/^SLURM_STEP_GPUS=.*//' -e 's/^CUDA_VISIBLE_DEVICES=.*//' "$tmp/env" >"$tmp/env-local"
"$info" --env "$tmp/env-local" --topology "$tmp/me.xml" --all --format json >/dev/null
ok $? "plans against the exported topology of this machine"
unset HWLOC_COMPONENTS

# Bad input: non-zero exit and exactly one line naming the culprit.
bad() {
    want="$1"; shift
    "$info" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    lines=$(wc -l <"$tmp/err")
    if [ $rc -ne 0 ] && [ "$lines" -eq 1 ] && grep -q -- "$want" "$tmp/err"; then ok 0 "bad input names '$want'"; else ok 1 "bad input names '$want' (rc=$rc: $(cat "$tmp/err"))"; fi
}
sed 's/^SLURM_STEP_TASKS_PER_NODE=.*/SLURM_STEP_TASKS_PER_NODE=8(x3/' "$tmp/env" >"$tmp/env-bad"
bad "SLURM_STEP_TASKS_PER_NODE" --env "$tmp/env-bad" --topology "$fx/dgx-a100.xml"
grep -v SLURM_STEP_NODELIST "$tmp/env" >"$tmp/env-missing"
bad "SLURM_STEP_NODELIST is not set" --env "$tmp/env-missing" --topology "$fx/dgx-a100.xml"
bad "topology file $tmp/nope.xml" --env "$tmp/env" --topology "$tmp/nope.xml"
echo garbage >"$tmp/garbage.xml"
bad "not an hwloc XML" --env "$tmp/env" --topology "$tmp/garbage.xml"
bad "environment file" --env "$tmp/none"
bad "mode 'fast'" --env "$tmp/env" --topology "$fx/dgx-a100.xml" --mode fast
bad "format 'yaml'" --format yaml
bad "n\[3-1\]" --hostnames 'n[3-1]'
bad "port range '5-1'" --env "$tmp/env" --topology "$fx/dgx-a100.xml" --port-range 5-1
bad "\-\-cpus 'x'" --env "$tmp/env" --topology "$fx/dgx-a100.xml" --cpus x
grep -v -e SLURM_PROCID -e SLURM_LOCALID "$tmp/env" >"$tmp/env-node"
bad "use --all" --env "$tmp/env-node" --topology "$fx/dgx-a100.xml"
"$info" --env "$tmp/env-node" --topology "$fx/dgx-a100.xml" --all --format env | grep -c '^RANK=' | grep -qx 8
ok $? "without a task, --all still plans the node"

# --mps: infer mode with two tasks per GPU would run under the step's MPS
# daemon; train mode, or the user's own pipe, would not (the reason said).
sed 's/^SLURM_STEP_NUM_TASKS=16/SLURM_STEP_NUM_TASKS=32/; s/^SLURM_STEP_TASKS_PER_NODE=8(x2)/SLURM_STEP_TASKS_PER_NODE=16(x2)/; s/^SLURM_PROCID=9/SLURM_PROCID=17/' \
    "$tmp/env" >"$tmp/env16"
got=$("$info" --env "$tmp/env16" --topology "$fx/dgx-a100.xml" --mode infer --mps | tail -1)
test "$got" = "MPS: yes, a daemon of the step serves this node's tasks (up to 2 on one GPU)"
ok $? "--mps, infer, 16 tasks on 8 GPUs: $got"
got=$("$info" --env "$tmp/env16" --topology "$fx/dgx-a100.xml" --mps | tail -1)
test "$got" = "MPS: no, MPS is for infer mode, where tasks share GPUs (this step is in train mode)"
ok $? "--mps, train: $got"
{ cat "$tmp/env16"; echo COHORT_MPS=1; echo CUDA_MPS_PIPE_DIRECTORY=/home/u/mps; } >"$tmp/env-own"
got=$("$info" --env "$tmp/env-own" --topology "$fx/dgx-a100.xml" --mode infer --format json |
    python3 -c 'import json, sys; m = json.load(sys.stdin)["mps"]; print(m["use"], m["sharing"], m["why"])')
test "$got" = "False 2 CUDA_MPS_PIPE_DIRECTORY is set (/home/u/mps): that MPS daemon is left to whoever started it"
ok $? "COHORT_MPS=1 in the environment shows it (JSON), the user's own pipe kept: $got"

tap_done
