#!/bin/bash
# slurm-cluster.sh - the plugin under real Slurm: boots tests/cluster's
# cluster (slurmctld on "head", slurmd on n1-n3, each its own network
# namespace) with the freshly built spank_cohort.so, runs jobs through srun,
# salloc and sbatch, and checks what every task really got. TAP.
# Skipped with the reason when the machine cannot run the cluster (not
# root, no namespaces, Slurm not installed) or under the sanitizers (the
# plugin runs inside slurmstepd, which is not built with them).
. "$COHORT_SRCDIR/tests/tap.sh"
. "$COHORT_SRCDIR/tests/cluster/test-cluster.sh"
probe="$COHORT_BUILDDIR/tests/cluster/probe"
info="$COHORT_BUILDDIR/runtime/tools/cohort-info"
fx="$COHORT_SRCDIR/tests/fixtures"
scripts="$COHORT_SRCDIR/tests/cluster"

cluster_skip
cluster_fresh cluster-run
plugstack() { echo "required $plugin $*" >"$dir/etc/plugstack.conf"; }
plugstack default=env membind=bind
cluster_up 3

on_head() { "$cluster" exec "$dir" head "$@"; }
# run OUT CMD...: CMD on the head node, bounded; stdout to OUT, stderr to OUT.err.
run() {
    local out=$1
    shift
    SLURM_TIMELIMIT=2 on_head timeout 120 "$@" >"$out" 2>"$out.err"
}
vars="SLURM_PROCID SLURM_LOCALID SLURM_NODEID SLURM_NTASKS SLURM_STEP_RESV_PORTS RANK
      WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE NODE_RANK MASTER_ADDR MASTER_PORT
      CUDA_VISIBLE_DEVICES COHORT_MODE COHORT_CPUS COHORT_SECRET NCCL_SOCKET_IFNAME
      GLOO_SOCKET_IFNAME"
# get FILE RANK NAME: the value of NAME in rank RANK's probe line.
get() { awk -v r="$2" -v n="$3" '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = substr($i, length(kv[1]) + 2) } if (f["SLURM_PROCID"] == r) print f[n] }' "$1"; }
# tasks FILE: "rank:host" of every task, by rank.
tasks() { awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = substr($i, length(kv[1]) + 2) } print f["SLURM_PROCID"] ":" f["host"] }' "$1" | sort -n | tr '\n' ' '; }

# The torchrun variables against Slurm's own view of the same tasks: RANK,
# LOCAL_RANK, NODE_RANK, WORLD_SIZE are Slurm's; LOCAL_WORLD_SIZE counts the
# host's tasks; MASTER_ADDR is task 0's host; MASTER_PORT is one port, the
# first reserved one. Prints what is wrong, nothing when all is right.
layout_errors() {
    awk -v want_port="${2:-}" '
    { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[NR, kv[1]] = substr($i, length(kv[1]) + 2) }
      host[NR] = v[NR, "host"]; on[host[NR]]++
      if (v[NR, "SLURM_PROCID"] == "0") master = host[NR]
      split(v[NR, "SLURM_STEP_RESV_PORTS"], rp, /[-,]/); ports[v[NR, "MASTER_PORT"]]++; first = rp[1] }
    END {
      if (NR == 0) { print "no task ran"; exit }
      for (r = 1; r <= NR; r++) {
        t = "task " v[r, "SLURM_PROCID"] " on " host[r] ": "
        if (v[r, "RANK"] != v[r, "SLURM_PROCID"]) print t "RANK=" v[r, "RANK"]
        if (v[r, "LOCAL_RANK"] != v[r, "SLURM_LOCALID"]) print t "LOCAL_RANK=" v[r, "LOCAL_RANK"]
        if (v[r, "NODE_RANK"] != v[r, "SLURM_NODEID"]) print t "NODE_RANK=" v[r, "NODE_RANK"]
        if (v[r, "WORLD_SIZE"] != NR || v[r, "SLURM_NTASKS"] != NR) print t "WORLD_SIZE=" v[r, "WORLD_SIZE"]
        if (v[r, "LOCAL_WORLD_SIZE"] != on[host[r]]) print t "LOCAL_WORLD_SIZE=" v[r, "LOCAL_WORLD_SIZE"]
        if (v[r, "MASTER_ADDR"] != master) print t "MASTER_ADDR=" v[r, "MASTER_ADDR"] ", task 0 is on " master
      }
      n = 0; for (p in ports) { n++; port = p }
      if (n != 1) print "MASTER_PORT differs between tasks"
      else if (want_port != "" && port != want_port) print "MASTER_PORT=" port ", expected " want_port
      else if (want_port == "" && port != first) print "MASTER_PORT=" port ", Slurm reserved " first
    }' "$1"
}
# layout LABEL FILE [PORT]: one test of the above.
layout() {
    local e
    e=$(layout_errors "$2" "${3:-}")
    [ -z "$e" ]
    ok $? "$1: torchrun variables match Slurm's layout${e:+ ($(echo "$e" | head -3 | tr '\n' ';'))}"
}
no_drained() {
    local bad
    bad=$(on_head sinfo -h -t drain,down,fail -o '%N %T')
    [ -z "$bad" ]
    ok $? "$1: no node drained or down${bad:+ ($bad)}"
}

# --- layouts -----------------------------------------------------------
run "$tmp/block" srun -N2 --ntasks-per-node=4 --gres=gpu:8 --cohort=train "$probe" $vars
ok $? "srun -N2 --ntasks-per-node=4 --gres=gpu:8 runs ($(head -c 300 "$tmp/block.err"))"
layout "-N2 --ntasks-per-node=4" "$tmp/block"
test "$(tasks "$tmp/block")" = "0:n1 1:n1 2:n1 3:n1 4:n2 5:n2 6:n2 7:n2 "
ok $? "-N2 --ntasks-per-node=4: block placement ($(tasks "$tmp/block"))"
# train mode: all 8 GPUs visible to every task; at index LOCAL_RANK each
# task of a node finds a GPU of its own.
owners=$(for r in 0 1 2 3 4 5 6 7; do
    cvd=$(get "$tmp/block" $r CUDA_VISIBLE_DEVICES) lr=$(get "$tmp/block" $r LOCAL_RANK)
    [ "$(echo "$cvd" | tr ',' '\n' | sort -u | wc -l)" = 8 ] &&
        echo "$(get "$tmp/block" $r host):$(echo "$cvd" | cut -d, -f$((lr + 1)))"
done | sort -u | wc -l)
test "$owners" = 8
ok $? "train mode: 8 GPUs visible, device LOCAL_RANK is each task's own (rank 5: $(get "$tmp/block" 5 CUDA_VISIBLE_DEVICES))"
secret=$(get "$tmp/block" 0 COHORT_SECRET)
[ ${#secret} = 64 ] && [ "$(awk '{print}' "$tmp/block" | grep -c "COHORT_SECRET=$secret")" = 8 ] &&
    ! grep -q "$secret" "$tmp/block.err" "$dir"/log/*.log
ok $? "one 64-hex-digit COHORT_SECRET for every task of the step, in no log"
echo "$secret" >"$tmp/secrets" # for the check of every log at the end
test "$(get "$tmp/block" 0 NCCL_SOCKET_IFNAME) $(get "$tmp/block" 5 GLOO_SOCKET_IFNAME)" = "eth0 eth0"
ok $? "NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME: the interface to MASTER_ADDR, on the master's node too"

run "$tmp/uneven" srun -N2 -n7 "$probe" $vars
layout "-N2 -n7 (uneven)" "$tmp/uneven"
test "$(tasks "$tmp/uneven")" = "0:n1 1:n1 2:n1 3:n1 4:n1 5:n1 6:n2 "
ok $? "-N2 -n7: Slurm's 6,1 ($(tasks "$tmp/uneven"))"

run "$tmp/cyclic" srun -N3 -n9 -m cyclic "$probe" $vars
layout "-N3 -n9 -m cyclic" "$tmp/cyclic"
test "$(tasks "$tmp/cyclic" | cut -d' ' -f1-3)" = "0:n1 1:n2 2:n3"
ok $? "-N3 -n9 -m cyclic: ranks 0,1,2 on n1,n2,n3"

printf 'n3\nn3\nn2\nn1\n' >"$work/hostfile"
SLURM_HOSTFILE="$work/hostfile" run "$tmp/arb" srun -n4 -m arbitrary "$probe" $vars
layout "-m arbitrary, hostfile n3,n3,n2,n1" "$tmp/arb"
test "$(tasks "$tmp/arb")" = "0:n3 1:n3 2:n2 3:n1 " && test "$(get "$tmp/arb" 3 MASTER_ADDR)" = n3
ok $? "-m arbitrary: task 0 on n3, MASTER_ADDR=n3 everywhere ($(tasks "$tmp/arb"))"

# cohort-launch: the same plan without the plugin (here with it off).
SLURM_HOSTFILE="$work/hostfile" run "$tmp/launch" srun -n4 -m arbitrary --cohort=off \
    "$COHORT_BUILDDIR/runtime/tools/cohort-launch" -- "$probe" $vars
layout "cohort-launch under srun -m arbitrary, plugin off" "$tmp/launch"
test "$(get "$tmp/launch" 2 MASTER_ADDR) $(get "$tmp/launch" 2 GLOO_SOCKET_IFNAME) $(get "$tmp/launch" 2 COHORT_SECRET)" = "n3 eth0 -"
ok $? "cohort-launch: MASTER_ADDR n3, GLOO_SOCKET_IFNAME eth0, no secret without the plugin"

# --- the user's choices ------------------------------------------------
MASTER_PORT=29555 run "$tmp/userport" srun -N2 -n4 "$probe" $vars
layout "a user's MASTER_PORT" "$tmp/userport" 29555

run "$tmp/off" srun -N2 -n2 --cohort=off "$probe" $vars
test "$(awk '{print}' "$tmp/off" | grep -c 'RANK=- .*MASTER_ADDR=- MASTER_PORT=- .*COHORT_MODE=- COHORT_CPUS=- COHORT_SECRET=-')" = 2
ok $? "--cohort=off: the tasks' environment is untouched"
COHORT_MODE=off run "$tmp/off-env" srun -N1 -n1 "$probe" $vars
grep -q 'RANK=- .*COHORT_SECRET=-' "$tmp/off-env"
ok $? "COHORT_MODE=off in the environment: untouched"

all=$(on_head srun -N1 -n1 sh -c 'grep Cpus_allowed_list /proc/self/status' | awk '{print $2}')
run "$tmp/default" srun -N1 -n2 "$probe" $vars
test "$(get "$tmp/default" 1 COHORT_MODE) $(get "$tmp/default" 1 RANK) $(get "$tmp/default" 1 affinity)" = "env 1 $all"
ok $? "a job that did not ask gets the site default (env): variables, no binding"

# --- binding on this machine's own topology ---------------------------
run "$tmp/bind" srun -N1 -n2 --cohort=train "$probe" $vars
bind_ok=1
for r in 0 1; do
    [ "$(get "$tmp/bind" $r affinity)" = "$(get "$tmp/bind" $r COHORT_CPUS)" ] || bind_ok=0
done
test $bind_ok = 1
ok $? "train: each task's real affinity is its planned CPUs ($(get "$tmp/bind" 0 affinity) / $(get "$tmp/bind" 1 affinity))"
policy=$(get "$tmp/bind" 0 mempolicy)
if [ "$(hwloc-calc --number-of NUMAnode machine:0 2>/dev/null)" = 1 ]; then
    [ "${policy%%:*}" != bind ] && ! grep -q 'binding memory' "$tmp/bind.err"
    ok $? "one NUMA node here: the memory policy is left alone, no warning ($policy)"
else
    numa=$(hwloc-calc --physical --intersect NUMAnode $(get "$tmp/bind" 0 COHORT_CPUS | tr ',' '\n' | sed 's/^/pu:/') 2>/dev/null)
    test "$policy" = "bind:$numa"
    ok $? "train: the memory policy binds to the task's NUMA node ($policy, planned $numa)"
fi

# --- an admin's topology cache of a multi-GPU server ---------------------
plugstack default=env topology="$fx/dgx-a100.xml"
run "$tmp/a100" srun -N1 -n8 --gres=gpu:8 --cohort=train --cohort-verbose sh -c \
    'test "$SLURM_PROCID" = 0 && env | grep ^SLURM_ >slurm.env; exec "$0" "$@"' "$probe" $vars COHORT_GPUS COHORT_VERBOSE
"$info" --env "$work/slurm.env" --topology "$fx/dgx-a100.xml" --all --format env >"$tmp/a100.plan" 2>&1
same=1
for r in 0 1 2 3 4 5 6 7; do
    for v in COHORT_GPUS COHORT_CPUS CUDA_VISIBLE_DEVICES; do
        want=$(awk -v r="# rank $r" -v v="$v" '$0 == r {on = 1; next} /^# rank/ {on = 0} on && index($0, v "=") == 1 {print substr($0, length(v) + 2)}' "$tmp/a100.plan")
        [ -n "$want" ] && [ "$(get "$tmp/a100" $r $v)" = "$want" ] || same=0
    done
done
test $same = 1
ok $? "topology=dgx-a100.xml: every task's GPU, CPUs and CUDA_VISIBLE_DEVICES equal cohort-info's plan (rank 0: $(get "$tmp/a100" 0 COHORT_GPUS) $(get "$tmp/a100" 0 COHORT_CPUS))"
test "$(get "$tmp/a100" 0 affinity)" = "$all" && grep -q '^cohort: rank 0/8 .*; topology file .* has 256 CPUs, this machine [0-9]*; no binding' "$tmp/a100.err"
ok $? "a foreign topology: binding skipped with a note ($(grep -m1 '^cohort: rank 0/8' "$tmp/a100.err" | sed 's/.*; //'))"
test "$(get "$tmp/a100" 0 COHORT_VERBOSE)" = 1 && test "$(get "$tmp/a100" 7 COHORT_VERBOSE)" = 1
ok $? "--cohort-verbose sets COHORT_VERBOSE=1 in the tasks, for the work coordinator (rank 0: '$(get "$tmp/a100" 0 COHORT_VERBOSE)')"
plugstack default=env membind=bind

# --- allocations: salloc, sbatch, concurrent steps, PMIx -------------------
mkfifo "$work/meet"
run "$tmp/two" salloc -N2 --ntasks-per-node=2 bash -c "
    srun -N1 -n1 --cohort=train sh -c 'echo first \$MASTER_PORT; read x <meet; echo \$x' &
    srun -N1 -n1 --cohort=train sh -c 'echo second \$MASTER_PORT >meet'
    wait"
p1=$(awk '/^first/ {print $2}' "$tmp/two") p2=$(awk '/^second/ {print $2}' "$tmp/two")
[ -n "$p1" ] && [ -n "$p2" ] && [ "$p1" != "$p2" ]
ok $? "two steps running at once in one allocation get different ports ($p1, $p2)"

cat >"$work/batch.sh" <<EOF
#!/bin/sh
export COHORT_MODE=train
srun $probe $(echo $vars)
EOF
run "$tmp/sbatch" sbatch --wait -N2 --ntasks-per-node=2 -o "$work/batch.out" -e "$work/batch.err" "$work/batch.sh"
ok $? "sbatch --wait with an inner srun ends well ($(cat "$tmp/sbatch.err" "$work/batch.err" | grep -v 'binding memory' | head -3))"
layout "sbatch, inner srun" "$work/batch.out"
test "$(get "$work/batch.out" 3 COHORT_MODE)" = train
ok $? "COHORT_MODE=train in the batch script reaches the inner step"

run "$tmp/salloc" salloc -N2 --ntasks-per-node=3 --cohort=train srun "$probe" $vars
layout "salloc --cohort=train, srun" "$tmp/salloc"
test "$(get "$tmp/salloc" 4 COHORT_MODE)" = train
ok $? "salloc --cohort=train reaches the step"

run "$tmp/pmix" srun --mpi=pmix -N2 -n4 --cohort=train "$probe" $vars PMIX_RANK
layout "--mpi=pmix" "$tmp/pmix"
test "$(get "$tmp/pmix" 3 PMIX_RANK)" = 3
ok $? "--mpi=pmix: PMIx is there too (PMIX_RANK=$(get "$tmp/pmix" 3 PMIX_RANK))"

# --- libcohort's bootstrap across the cluster's hosts ----------------------
boot="$COHORT_BUILDDIR/tests/bootstrap/boot_check"
run "$tmp/boot" srun -N3 --ntasks-per-node=3 --cohort=env "$boot"
[ "$(grep -c ': ok via tcp$' "$tmp/boot")" = 9 ]
ok $? "libcohort over TCP between 3 hosts (9 ranks, secret from the plugin): bcast, allgather, barrier ($(grep -m1 FAIL "$tmp/boot"; head -c 200 "$tmp/boot.err"))"
# A fanout of 1: the leaders form a chain, n3's reaching n2's at the name
# "n2" (the hosts' /etc/hosts), n2's listening on every address.
run "$tmp/boot-chain" srun -N3 --ntasks-per-node=3 --cohort=env env COHORT_BOOTSTRAP_FANOUT=1 "$boot"
[ "$(grep -c ': ok via tcp$' "$tmp/boot-chain")" = 9 ]
ok $? "libcohort's tree of nodes as a chain of 3 hosts (fanout 1: n3 reaches n2 by name): bcast, allgather, barrier ($(grep -m1 FAIL "$tmp/boot-chain"; head -c 200 "$tmp/boot-chain.err"))"
run "$tmp/boot-pmix" srun --mpi=pmix -N2 --ntasks-per-node=2 --cohort=env "$boot"
[ "$(grep -c ': ok via pmix$' "$tmp/boot-pmix")" = 4 ]
ok $? "libcohort under srun --mpi=pmix uses PMIx: bcast, allgather, barrier ($(grep -m1 FAIL "$tmp/boot-pmix"; head -c 200 "$tmp/boot-pmix.err"))"
run "$tmp/boot-munge" srun -N3 --ntasks-per-node=2 --cohort=off \
    --export=ALL,COHORT_MUNGE_SOCKET="$("$cluster" munge-socket "$dir")" "$boot"
[ "$(grep -c ': ok via tcp$' "$tmp/boot-munge")" = 6 ]
ok $? "libcohort without the plugin (no COHORT_SECRET): munge authenticates across 3 hosts ($(grep -m1 FAIL "$tmp/boot-munge"; head -c 200 "$tmp/boot-munge.err"))"
run "$tmp/boot-off" srun -N2 -n2 --cohort=off --export=ALL,COHORT_MUNGE_SOCKET=/nonexistent "$boot"
[ "$(grep -c 'FAIL: cohort: COHORT_SECRET is not set and munge cannot stand in' "$tmp/boot-off")" = 2 ]
ok $? "libcohort with neither the secret nor munge: one clear line per rank"

# --- the work queue across the cluster's hosts: one host's workers die ----
# (max_attempts 5: a lease lost with each of the 4 dying workers in turn
# would otherwise be set aside, as it should, after its third loss)
worker="$COHORT_BUILDDIR/tests/work/work_check"
mkdir -p "$work/wq"
run "$tmp/wq" srun -N3 --ntasks-per-node=4 --cohort=infer \
    --export=ALL,COHORT_WORK_COORD="$COHORT_BUILDDIR/runtime/coord/cohort-work-coord",COHORT_TEST_OUT="$work/wq",COHORT_TEST_ITEMS=6000,COHORT_TEST_CAP=8,COHORT_TEST_US=300,COHORT_TEST_VICTIM_NODE=2,COHORT_TEST_AT=3,COHORT_TEST_DO=kill,COHORT_TEST_MAX_ATTEMPTS=5 \
    "$worker"
cat "$work/wq"/committed.* 2>/dev/null | sort -n >"$tmp/wq.ids"
[ "$(grep -c ': ok ' "$tmp/wq")" = 8 ] && [ -z "$(uniq -d "$tmp/wq.ids")" ] &&
    [ "$(uniq "$tmp/wq.ids" | wc -l)" = 6000 ] && ! grep -q '^rank \(8\|9\|10\|11\): ok' "$tmp/wq"
ok $? "work queue on 3 hosts x 4 workers, the third host's 4 workers SIGKILLed mid-run: the other 8 commit all 6000 items, each once ($(grep -c ': ok ' "$tmp/wq") ok, $(uniq "$tmp/wq.ids" | wc -l) distinct, $(uniq -d "$tmp/wq.ids" | wc -l) twice$(grep -m1 FAIL "$tmp/wq" | sed 's/^/; /')$(grep -m1 '^cohort: work' "$tmp/wq.err" | cut -c1-200 | sed 's/^/; /'))"

# --- srun --export: NONE and a list pass the tasks none of srun's
# environment, yet the step's secret (and COHORT_MODE) must reach them -----
# Each task prints what its COHORT_SECRET looks like, never the value: set or
# not, length, hex or not, a hash; rank 0 leaves the value in FILE for the
# check of the logs at the end. /bin/sh: --export=NONE passes no PATH.
cat >"$work/secret.sh" <<'END'
#!/bin/sh
umask 077
hex=no
case ${COHORT_SECRET:-} in *[!0-9a-f]* | '') ;; *) hex=yes ;; esac
[ -n "${1:-}" ] && [ "$SLURM_PROCID" = 0 ] && printf '%s\n' "${COHORT_SECRET:-}" >"$1"
echo "host=$SLURMD_NODENAME rank=$SLURM_PROCID set=${COHORT_SECRET+yes} len=${#COHORT_SECRET} hex=$hex" \
    "hash=$(printf %s "${COHORT_SECRET:-}" | sha256sum | cut -c1-16) mode=${COHORT_MODE:--}" \
    "srun_vars=$(env | grep -c '^SLURM_COHORT_SRUN_')"
END
# seen FILE: what the tasks' lines say, each field's values over all tasks
# (hashes shortened).
seen() {
    awk '{ for (i = 3; i <= NF; i++) { split($i, kv, "="); k = kv[1]; x = k == "hash" ? substr(kv[2], 1, 8) : kv[2]; if (x == "") x = "-"
             if ((k, x) in had) continue
             had[k, x]; if (!(k in at)) { at[k] = ++nk; key[nk] = k; vals[k] = x } else vals[k] = vals[k] "," x }
           if (!($1 in h)) { h[$1]; nh++ } }
    END { printf "%d tasks on %d hosts:", NR, nh; for (i = 1; i <= nk; i++) printf " %s=%s", key[i], vals[key[i]] }' "$1"
}
# one_secret LABEL FILE TASKS [HASH]: TASKS lines from two hosts, one 64-hex
# secret in all of them (HASH: the user's), no transport variable left.
one_secret() {
    local f=$2 hashes
    hashes=$(sed 's/.* hash=//; s/ .*//' "$f" | sort -u)
    [ "$(wc -l <"$f")" = "$3" ] && [ "$(awk '{print $1}' "$f" | sort -u | wc -l)" = 2 ] &&
        [ "$(grep -c ' set=yes len=64 hex=yes hash=' "$f")" = "$3" ] &&
        [ "$(echo "$hashes" | wc -l)" = 1 ] && { [ -z "${4:-}" ] || [ "$hashes" = "$4" ]; } &&
        [ "$(grep -c ' srun_vars=0$' "$f")" = "$3" ]
    ok $? "$1 ($(seen "$f")${4:+; hash of the user value ${4:0:6}} $(head -c 200 "$f.err"))"
}
keep_secret() {
    [ -s "$work/secret.value" ] && cat "$work/secret.value" >>"$tmp/secrets"
    rm -f "$work/secret.value"
}
for e in NONE:train PATH,HOME:env ALL,VAR=x:env; do
    run "$tmp/export" srun -N2 --ntasks-per-node=2 --cohort="${e##*:}" --export="${e%:*}" \
        /bin/sh "$work/secret.sh" "$work/secret.value"
    one_secret "srun --export=${e%:*} --cohort=${e##*:}: all tasks of a 2-node step have the same 64-hex COHORT_SECRET" "$tmp/export" 4
    keep_secret
done
COHORT_MODE=train run "$tmp/export-mode" srun -N2 -n2 --export=NONE /bin/sh "$work/secret.sh" "$work/secret.value"
keep_secret
[ "$(grep -c ' len=64 hex=yes .* mode=train ' "$tmp/export-mode")" = 2 ]
ok $? "COHORT_MODE=train srun --export=NONE: the tasks are in train mode, with the secret ($(seen "$tmp/export-mode"))"
COHORT_MODE=off run "$tmp/export-off" srun -N2 -n2 --export=NONE /bin/sh "$work/secret.sh"
[ "$(grep -c ' set= len=0 .* mode=- srun_vars=0$' "$tmp/export-off")" = 2 ]
ok $? "COHORT_MODE=off srun --export=NONE: no secret, nothing of cohort's in the tasks ($(seen "$tmp/export-off"))"
# The user's own secret is kept: given by --export=COHORT_SECRET=...,PATH,
# or exported before srun --export=NONE.
user=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
user_hash=$(printf %s "$user" | sha256sum | cut -c1-16)
echo "$user" >"$tmp/user-secret"
run "$tmp/export-user" srun -N2 -n2 --cohort=train --export=COHORT_SECRET="$user",PATH /bin/sh "$work/secret.sh"
one_secret "srun --export=COHORT_SECRET=<the user's>,PATH: the user's value in every task" "$tmp/export-user" 2 "$user_hash"
COHORT_SECRET=$user run "$tmp/export-user2" srun -N2 -n2 --cohort=env --export=NONE /bin/sh "$work/secret.sh"
one_secret "COHORT_SECRET exported, srun --export=NONE: the user's value in every task" "$tmp/export-user2" 2 "$user_hash"
run "$tmp/boot-none" srun -N2 --ntasks-per-node=2 --cohort=env --export=NONE "$boot"
[ "$(grep -c ': ok via tcp$' "$tmp/boot-none")" = 4 ]
ok $? "libcohort under srun --export=NONE, secret from the plugin: bcast, allgather, barrier across 2 hosts ($(grep -m1 FAIL "$tmp/boot-none"; head -c 200 "$tmp/boot-none.err"))"
# Without the plugin, --export=NONE passes no COHORT_MUNGE_SOCKET either:
# libcohort tries munged's default socket (not this cluster's) and says so;
# a list naming the socket works.
COHORT_MUNGE_SOCKET=$("$cluster" munge-socket "$dir") run "$tmp/boot-none-off" \
    srun -N2 -n2 --cohort=off --export=NONE "$boot"
[ "$(grep -c 'FAIL: cohort: COHORT_SECRET is not set and munge cannot stand in' "$tmp/boot-none-off")" = 2 ]
ok $? "no plugin, srun --export=NONE: no secret, munge's default socket, one clear line per rank ($(head -c 160 "$tmp/boot-none-off"))"
run "$tmp/boot-list-munge" srun -N2 -n2 --cohort=off \
    --export=COHORT_MUNGE_SOCKET="$("$cluster" munge-socket "$dir")" "$boot"
[ "$(grep -c ': ok via tcp$' "$tmp/boot-list-munge")" = 2 ]
ok $? "no plugin, srun --export=COHORT_MUNGE_SOCKET=...: munge authenticates ($(grep -m1 FAIL "$tmp/boot-list-munge"; head -c 200 "$tmp/boot-list-munge.err"))"

# --- unchanged PyTorch -----------------------------------------------------
if /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null; then
    run "$tmp/ddp" srun -N2 --ntasks-per-node=4 --cohort=train /usr/bin/python3 "$scripts/ddp_train.py"
    sums=$(awk '/^params/ {print $3}' "$tmp/ddp" | sort -u)
    [ "$(grep -c '^params' "$tmp/ddp")" = 8 ] && [ "$(echo "$sums" | wc -l)" = 1 ]
    ok $? "PyTorch DDP (gloo, init_process_group without arguments), 2x4: identical parameters on all 8 ranks ($(echo $sums | head -c 80); $(tail -2 "$tmp/ddp.err"))"
    run "$tmp/seed" srun -N2 -n4 --cohort=train /usr/bin/python3 "$scripts/seed_style.py"
    [ "$(grep -c '^seed ok' "$tmp/seed")" = 4 ]
    ok $? "a seed-style script that reads SLURM_* itself runs ($(tail -2 "$tmp/seed.err"))"
    run "$tmp/yolo" srun -N2 -n4 --cohort=train /usr/bin/python3 "$scripts/yolo_style.py"
    [ "$(grep -c '^yolo ok' "$tmp/yolo")" = 4 ]
    ok $? "a YOLOv5-style script reading LOCAL_RANK/RANK/WORLD_SIZE at import runs ($(tail -2 "$tmp/yolo.err"))"
else
    skip "PyTorch DDP on 2x4" "python3-torch is not installed (cluster.sh install)"
fi

# --- bad input: one line, the job's fate as documented, no drained node ---
run "$tmp/badopt" srun -N1 -n1 --cohort=fast true
rc=$?
[ $rc -ne 0 ] && grep -q "cohort: --cohort=fast: .*off, env, train, infer" "$tmp/badopt.err"
ok $? "a bad --cohort fails srun, naming the choices ($(head -1 "$tmp/badopt.err"))"
COHORT_MODE=quick run "$tmp/badenv" srun -N1 -n1 true
[ $? -ne 0 ] && grep -q "COHORT_MODE='quick' is not one of off, env, train, infer" "$tmp/badenv.err"
ok $? "a bad COHORT_MODE fails srun, naming the choices"
MASTER_PORT=http run "$tmp/badport" srun -N2 -n2 --cohort=train "$probe" RANK
rc=$?
[ $rc = 0 ] && [ "$(grep -c "MASTER_PORT='http'.*runs without" "$tmp/badport.err")" = 2 ] &&
    [ "$(wc -l <"$tmp/badport.err")" = 2 ]
ok $? "a malformed MASTER_PORT: one warning line per task, the job still runs ($(head -1 "$tmp/badport.err"))"
# Output variables of an outer step left in the environment, malformed.
SLURM_CPU_BIND_TYPE=mask_cpu: SLURM_CPU_BIND_LIST=0xZZ run "$tmp/badslurm" srun -N1 -n2 --cohort=train "$probe" RANK
rc=$?
[ $rc = 0 ] && [ "$(grep -c "SLURM_CPU_BIND_LIST='0xZZ' is malformed.*runs without" "$tmp/badslurm.err")" = 2 ] &&
    [ "$(wc -l <"$tmp/badslurm.err")" = 2 ] && [ "$(grep -c 'RANK=-' "$tmp/badslurm")" = 2 ]
ok $? "a malformed SLURM_CPU_BIND_LIST: one line per task naming it, the job runs untouched ($(head -1 "$tmp/badslurm.err"))"
# --- plugstack secret=munge: no secret in the launch message; the tasks'
# bootstrap and work coordinator authenticate through munge --------------
plugstack default=env membind=bind secret=munge
msock=$("$cluster" munge-socket "$dir")
run "$tmp/sec-munge" srun -N2 --ntasks-per-node=2 --cohort=train /bin/sh "$work/secret.sh"
[ "$(grep -c ' set= len=0 .* mode=train srun_vars=0$' "$tmp/sec-munge")" = 4 ]
ok $? "secret=munge: srun --cohort=train makes no secret, no task has one, nothing of it in the tasks ($(seen "$tmp/sec-munge"))"
run "$tmp/sec-munge-boot" srun -N3 --ntasks-per-node=2 --cohort=train \
    --export=ALL,COHORT_MUNGE_SOCKET="$msock" "$boot"
[ "$(grep -c ': ok via tcp$' "$tmp/sec-munge-boot")" = 6 ]
ok $? "secret=munge: libcohort authenticates through munge across 3 hosts in train mode ($(grep -m1 FAIL "$tmp/sec-munge-boot"; head -c 200 "$tmp/sec-munge-boot.err"))"
mkdir -p "$work/wq-munge"
run "$tmp/sec-munge-wq" srun -N2 --ntasks-per-node=2 --cohort=infer \
    --export=ALL,COHORT_MUNGE_SOCKET="$msock",COHORT_WORK_COORD="$COHORT_BUILDDIR/runtime/coord/cohort-work-coord",COHORT_TEST_OUT="$work/wq-munge",COHORT_TEST_ITEMS=400,COHORT_TEST_CAP=8 \
    "$worker"
cat "$work/wq-munge"/committed.* 2>/dev/null | sort -n >"$tmp/wq-munge.ids"
[ "$(grep -c ': ok ' "$tmp/sec-munge-wq")" = 4 ] && [ -z "$(uniq -d "$tmp/wq-munge.ids")" ] &&
    [ "$(uniq "$tmp/wq-munge.ids" | wc -l)" = 400 ]
ok $? "secret=munge: a work queue on 2 hosts x 2 workers, its coordinator under munge: 400 items, each once ($(uniq "$tmp/wq-munge.ids" | wc -l) distinct$(grep -m1 '^cohort' "$tmp/sec-munge-wq.err" | cut -c1-200 | sed 's/^/; /'))"
COHORT_SECRET=$user run "$tmp/sec-munge-user" srun -N2 -n2 --cohort=env --export=NONE /bin/sh "$work/secret.sh"
[ "$(grep -c ' set= len=0 ' "$tmp/sec-munge-user")" = 2 ]
ok $? "secret=munge: srun does not carry even the user's COHORT_SECRET (only --export could) ($(seen "$tmp/sec-munge-user"))"
plugstack default=env membind=bind secret=plain
run "$tmp/sec-bad" srun -N1 -n1 --cohort=train "$probe" RANK
rc=$?
[ $rc = 0 ] && grep -q "secret=plain.*not random or munge.*cohort is disabled" "$tmp/sec-bad.err"
ok $? "a bad secret= value: one line naming it, cohort disabled, the job runs ($(head -1 "$tmp/sec-bad.err"))"

plugstack default=env colour=blue
run "$tmp/badarg" srun -N2 -n2 --cohort=train "$probe" RANK
rc=$?
[ $rc = 0 ] && [ "$(wc -l <"$tmp/badarg.err")" = 1 ] && grep -q "plugstack.conf: .*colour.*cohort is disabled" "$tmp/badarg.err" &&
    [ "$(grep -c 'RANK=-' "$tmp/badarg")" = 2 ]
ok $? "an unknown plugstack argument: one line, cohort disabled, the job runs ($(cat "$tmp/badarg.err"))"
plugstack default=env membind=bind
no_drained "after every bad input"

# Every step secret the plugin made above (the default export, NONE, a
# list, ALL) in none of slurmctld's and slurmd's logs nor slurmctld's state;
# the user's in no log (given in --export's list it is on srun's command
# line, which slurmctld keeps as the job's command).
leaks=$(grep -rlF -f "$tmp/secrets" "$dir/log" "$dir/state" 2>/dev/null | sed "s|^$dir/||" | tr '\n' ' ')
leaks=$leaks$(grep -rlF -f "$tmp/user-secret" "$dir/log" 2>/dev/null | sed "s|^$dir/|user's: |" | tr '\n' ' ')
[ "$(grep -c '^[0-9a-f]\{64\}$' "$tmp/secrets")" -ge 5 ] && [ -s "$tmp/user-secret" ] && [ -z "$leaks" ]
ok $? "no step secret in slurmctld's or slurmd's logs or state (checked: $(grep -c '^[0-9a-f]\{64\}$' "$tmp/secrets") made by the plugin in both, the user's in the logs${leaks:+; found in $leaks})"

tap_done
