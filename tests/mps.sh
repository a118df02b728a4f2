#!/bin/bash
# mps.sh - the plugin's per-step MPS daemon under real Slurm, without a GPU:
# tests/cluster's cluster (2 nodes, fake GPUs) with a stand-in for
# nvidia-cuda-mps-control (tests/cluster/fake-mps-control) that records who
# ran it and how. Checks: --cohort-mps / COHORT_MPS / mps=yes start one
# daemon per node as the job's user with private directories (mode 0700)
# given to every task, and nothing is left after the step, after a daemon
# that ignores "quit", after scancel; the notes when MPS is left alone
# (train mode, no shared GPU, the user's own pipe); one warning per task
# when the daemon is missing or dies (strict=yes: the tasks fail); the
# per-task limits. The daemon is stopped when the node's last task exits,
# before the step is reported complete, so srun's return means it is gone.
# TAP. Skipped where the cluster cannot run and under the
# sanitizers (the plugin runs in slurmstepd).
. "$COHORT_SRCDIR/tests/tap.sh"
. "$COHORT_SRCDIR/tests/cluster/test-cluster.sh"
cluster_skip
cluster_fresh mps-run
fake="$work/fake-mps-control"
cp "$COHORT_SRCDIR/tests/cluster/fake-mps-control" "$fake"
ln -s fake-mps-control "$work/fake-mps-die"
ln -s fake-mps-control "$work/fake-mps-deaf"
ln -s "$(command -v sleep)" "$work/fake-mps-server"
plugstack() { echo "required $plugin default=env mps_control=$fake $*" >"$dir/etc/plugstack.conf"; }
plugstack
cluster_up 2

on() { local h=$1; shift; "$cluster" exec "$dir" "$h" "$@"; }
run() { # run OUT CMD...: on the head node, bounded; stdout OUT, stderr OUT.err
    local out=$1
    shift
    SLURM_TIMELIMIT=2 on head timeout 120 "$@" >"$out" 2>"$out.err"
}
# What each task saw: its MPS variables, its directory's owner and mode, and
# the daemon's own record (user, pid, whether it had CUDA_VISIBLE_DEVICES).
cat >"$work/task.sh" <<'END'
#!/bin/sh
p=${CUDA_MPS_PIPE_DIRECTORY:--} l=${CUDA_MPS_LOG_DIRECTORY:--}
d=${p%/pipe}
owner=- daemon=- cvd=-
if [ -d "$d" ]; then owner=$(stat -c '%U:%a' "$d" "$p" "$l" | tr '\n' ','); fi
if [ -r "$l/fake.env" ]; then
    daemon=$(head -1 "$l/fake.env" | tr ' ' ',')
    cvd=$(grep -c '^CUDA_VISIBLE_DEVICES=' "$l/fake.env")
fi
echo "rank=$SLURM_PROCID host=$SLURMD_NODENAME pipe=$p log=$l owner=$owner daemon=$daemon" \
    "daemon_cvd=$cvd threads=${CUDA_MPS_ACTIVE_THREAD_PERCENTAGE:--}" \
    "mem=${CUDA_MPS_PINNED_DEVICE_MEM_LIMIT:--} uid=$(id -u)"
END
chmod +x "$work/task.sh"
field() { awk -v r="$2" -v n="$3" '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = substr($i, length(kv[1]) + 2) } if (f["rank"] == r) print f[n] }' "$1"; }
# left: what the step left on both nodes: directories, fake daemons and
# servers still alive (a killed server whose daemon is gone waits, a zombie,
# for a reaper up the tree: it is dead).
left() {
    for h in n1 n2; do
        on "$h" sh -c 'ls -d /tmp/cohort-mps-* 2>/dev/null
            ps -eo pid=,stat=,args= | awk '"'"'$2 !~ /^Z/ && /[f]ake-mps/ {print $1}'"'"'' |
            sed "s/^/$h:/"
    done | tr '\n' ' '
}

# (srun -Q where a test wants nothing on stderr: "job queued" lines are
# srun's while the step before still ends)
# --- a daemon per node, as the user, private, gone at the end -------------
run "$tmp/on" srun -N2 --ntasks-per-node=4 --gres=gpu:2 --cohort=infer --cohort-mps \
    --cohort-verbose "$work/task.sh"
ok $? "srun --cohort=infer --cohort-mps, 4 tasks on 2 GPUs per node, runs ($(head -c 300 "$tmp/on.err"))"
pipes=$(awk '{print $2, $3}' "$tmp/on" | sort -u | wc -l)
uid=$(field "$tmp/on" 0 uid)
user=$(id -nu "$uid")
[ "$(wc -l <"$tmp/on")" = 8 ] && [ "$pipes" = 2 ] && ! grep -q 'pipe=- ' "$tmp/on" &&
    [ "$(awk '{print $2, $3}' "$tmp/on" | awk '{print $2}' | sort -u | wc -l)" = 2 ]
ok $? "every task has CUDA_MPS_PIPE_DIRECTORY, one per node ($(field "$tmp/on" 0 pipe), $(field "$tmp/on" 4 pipe))"
case $(field "$tmp/on" 0 pipe) in /tmp/cohort-mps-??????/pipe) short=0 ;; *) short=1 ;; esac
test $short = 0 && [ "$(grep -c "owner=$user:700,$user:700,$user:700, " "$tmp/on")" = 8 ]
ok $? "the directories: /tmp/cohort-mps-XXXXXX/{pipe,log}, the job's user's ($user), mode 0700 ($(field "$tmp/on" 0 owner))"
[ "$(grep -c "daemon=uid=$uid,gid=[0-9]*,pid=[0-9]* daemon_cvd=0 " "$tmp/on")" = 8 ]
ok $? "the daemon runs as the job's user, without CUDA_VISIBLE_DEVICES ($(field "$tmp/on" 0 daemon), cvd lines $(field "$tmp/on" 0 daemon_cvd))"
grep -q "; MPS /tmp/cohort-mps-[^ ]*/pipe (its GPU shared by 2 tasks)" "$tmp/on.err"
ok $? "--cohort-verbose says it ($(grep -o '; MPS [^;]*' "$tmp/on.err" | head -1))"
[ -z "$(left)" ]
ok $? "after the step: no directory, no daemon left ($(left))"

# --- a user who is not root: the daemon and its directories are theirs ---
# srun as nobody starts in / (env -C): the build tree, this test's working
# directory, may be closed to it (a clone under a private directory).
nobody=$(id -u nobody 2>/dev/null)
if [ -n "$nobody" ] && SLURM_TIMELIMIT=2 on head timeout 120 env -C / setpriv --reuid="$nobody" \
    --regid="$(id -g nobody)" --clear-groups srun -N1 -n2 --gres=gpu:1 --cohort=infer \
    --cohort-mps "$work/task.sh" >"$tmp/user" 2>"$tmp/user.err"; then
    [ "$(grep -c "uid=$nobody\$" "$tmp/user")" = 2 ] &&
        [ "$(grep -c "owner=nobody:700,nobody:700,nobody:700, daemon=uid=$nobody," "$tmp/user")" = 2 ] &&
        [ -z "$(left)" ]
    ok $? "a job of user nobody: its daemon and directories are nobody's, mode 0700, gone after ($(field "$tmp/user" 0 owner) $(field "$tmp/user" 0 daemon)$(left))"
else
    skip "a job of another user than root" "srun as nobody does not run here: $(head -c 200 "$tmp/user.err")"
fi

# --- asked through COHORT_MPS and plugstack's mps=yes; --cohort-mps=no wins --
COHORT_MPS=1 run "$tmp/env" srun -N1 -n2 --gres=gpu:1 --cohort=infer "$work/task.sh"
[ "$(grep -c 'pipe=/tmp/cohort-mps-' "$tmp/env")" = 2 ]
ok $? "COHORT_MPS=1 asks for it ($(field "$tmp/env" 0 pipe))"
plugstack mps=yes
run "$tmp/site" srun -N1 -n2 --gres=gpu:1 --cohort=infer "$work/task.sh"
run "$tmp/no" srun -Q -N1 -n2 --gres=gpu:1 --cohort=infer --cohort-mps=no "$work/task.sh"
[ "$(grep -c 'pipe=/tmp/cohort-mps-' "$tmp/site")" = 2 ] && [ "$(grep -c 'pipe=- ' "$tmp/no")" = 2 ] &&
    [ ! -s "$tmp/no.err" ]
ok $? "plugstack mps=yes is the default; --cohort-mps=no turns it off without a word ($(field "$tmp/site" 0 pipe); $(field "$tmp/no" 0 pipe))"
plugstack

# --- left alone, with one note per node -------------------------------------
run "$tmp/train" srun -N2 --ntasks-per-node=2 --gres=gpu:1 --cohort=train --cohort-mps "$work/task.sh"
[ "$(grep -c 'pipe=- ' "$tmp/train")" = 4 ] &&
    [ "$(grep -c '^cohort: note: MPS is not started .*infer mode.*train mode' "$tmp/train.err")" = 2 ]
ok $? "train mode: no daemon, one note per node ($(head -1 "$tmp/train.err"))"
run "$tmp/alone" srun -Q -N1 -n2 --gres=gpu:2 --cohort=infer --cohort-mps "$work/task.sh"
[ "$(grep -c 'pipe=- ' "$tmp/alone")" = 2 ] && grep -q 'no GPU of this node is shared' "$tmp/alone.err" &&
    [ "$(wc -l <"$tmp/alone.err")" = 1 ]
ok $? "a GPU per task: no daemon, one note ($(cat "$tmp/alone.err"))"
CUDA_MPS_PIPE_DIRECTORY=/tmp/users-own run "$tmp/own" srun -N1 -n2 --gres=gpu:1 --cohort=infer --cohort-mps "$work/task.sh"
[ "$(grep -c 'pipe=/tmp/users-own ' "$tmp/own")" = 2 ] && grep -q 'CUDA_MPS_PIPE_DIRECTORY is set (/tmp/users-own)' "$tmp/own.err"
ok $? "the user's own CUDA_MPS_PIPE_DIRECTORY: kept, no daemon, a note ($(head -1 "$tmp/own.err" | cut -c1-160))"

# A site daemon's pipe serves the step only where root made it.
on n1 sh -c 'mkdir -p /tmp/nvidia-mps && touch /tmp/nvidia-mps/control && chown -R nobody /tmp/nvidia-mps'
run "$tmp/squat" srun -N1 -w n1 -n2 --gres=gpu:1 --cohort=infer --cohort-mps "$work/task.sh"
on n1 chown -R root /tmp/nvidia-mps
on n1 chmod 755 /tmp/nvidia-mps
run "$tmp/site-daemon" srun -N1 -w n1 -n2 --gres=gpu:1 --cohort=infer --cohort-mps "$work/task.sh"
on n1 rm -rf /tmp/nvidia-mps
[ "$(grep -c 'pipe=/tmp/cohort-mps-' "$tmp/squat")" = 2 ] && [ "$(grep -c 'pipe=- ' "$tmp/site-daemon")" = 2 ] &&
    grep -q 'an MPS daemon of the site runs on this node' "$tmp/site-daemon.err"
ok $? "/tmp/nvidia-mps/control of another user is no site daemon (the step gets its own); root's is, and is left alone ($(head -1 "$tmp/site-daemon.err" | cut -c1-120))"

# --- the limits -------------------------------------------------------------
run "$tmp/limits" srun -N1 -n2 --gres=gpu:1 --cohort=infer --cohort-mps=threads=50,mem=4G "$work/task.sh"
[ "$(grep -c 'threads=50 mem=0=4G ' "$tmp/limits")" = 2 ]
ok $? "--cohort-mps=threads=50,mem=4G: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4G ($(field "$tmp/limits" 0 threads) $(field "$tmp/limits" 0 mem))"
run "$tmp/badopt" srun -N1 -n1 --cohort=infer --cohort-mps=threads=0 true
[ $? -ne 0 ] && grep -q "cohort: --cohort-mps=threads=0: threads '0' is not a percentage from 1 to 100" "$tmp/badopt.err"
ok $? "a bad --cohort-mps value fails srun in one line ($(head -1 "$tmp/badopt.err"))"
COHORT_MPS=often run "$tmp/badenv" srun -N1 -n1 --cohort=infer true
[ $? -ne 0 ] && grep -q "cohort: COHORT_MPS='often': 'often' is not yes, no" "$tmp/badenv.err"
ok $? "a bad COHORT_MPS fails srun in one line ($(head -1 "$tmp/badenv.err"))"
COHORT_MPS=often run "$tmp/badoff" srun -Q -N1 -n1 --cohort=off true
rc=$?
COHORT_MPS= run "$tmp/empty" srun -N1 -n2 --gres=gpu:1 --cohort=infer "$work/task.sh"
[ $rc = 0 ] && [ ! -s "$tmp/badoff.err" ] && [ "$(grep -c 'pipe=- ' "$tmp/empty")" = 2 ]
ok $? "a job that did not opt in is never failed by COHORT_MPS (--cohort=off: status $rc); an empty COHORT_MPS asks for nothing"

# --- a daemon that is missing, dies, or will not quit -------------------------
plugstack mps_control=/nonexistent/nvidia-cuda-mps-control
run "$tmp/missing" srun -N1 -n2 --gres=gpu:1 --cohort=infer --cohort-mps "$work/task.sh"
rc=$?
[ $rc = 0 ] && [ "$(grep -c 'pipe=- ' "$tmp/missing")" = 2 ] &&
    [ "$(grep -c '^cohort: warning: MPS: /nonexistent/nvidia-cuda-mps-control is not there for the job.s user to run.*; this task runs without MPS$' "$tmp/missing.err")" = 2 ]
ok $? "no nvidia-cuda-mps-control: one warning per task, the tasks run without MPS ($(head -1 "$tmp/missing.err"))"
plugstack mps_control=/nonexistent/nvidia-cuda-mps-control strict=yes
run "$tmp/strict" srun -N1 -n2 --gres=gpu:1 --cohort=infer --cohort-mps "$work/task.sh"
[ $? -ne 0 ] && [ ! -s "$tmp/strict" ] &&
    [ "$(grep -c 'error: cohort: MPS: /nonexistent/nvidia-cuda-mps-control is not there for' "$tmp/strict.err")" = 2 ]
ok $? "the same with strict=yes: the tasks fail ($(grep -m1 cohort "$tmp/strict.err" | cut -c1-160))"
plugstack mps_control="$work/fake-mps-die"
run "$tmp/die" srun -N1 -n2 --gres=gpu:1 --cohort=infer --cohort-mps "$work/task.sh"
[ $? = 0 ] && [ "$(grep -c 'pipe=- ' "$tmp/die")" = 2 ] &&
    [ "$(grep -c '^cohort: warning: MPS: .*fake-mps-die exited with status 3 before its control pipe appeared' "$tmp/die.err")" = 2 ] &&
    [ -z "$(left)" ]
ok $? "a daemon that dies at start: one warning per task, nothing left ($(head -1 "$tmp/die.err" | cut -c1-200); $(left))"
plugstack mps_control="$work/fake-mps-deaf"
run "$tmp/deaf" srun -N1 -n2 --gres=gpu:1 --cohort=infer --cohort-mps "$work/task.sh"
[ $? = 0 ] && [ "$(grep -c 'pipe=/tmp/cohort-mps-' "$tmp/deaf")" = 2 ] && [ -z "$(left)" ]
ok $? "a daemon that ignores quit: killed at the step's end, nothing left ($(left))"
plugstack

# --- every cohort option alike from srun, sbatch and salloc, with and
# without a value (sbatch and salloc hand theirs to the job's sruns in
# SLURM_SPANK_OPTION_* variables, "(null)" for none) ------------------------
cat >"$work/opt.sh" <<'END'
#!/bin/sh
echo "rank=$SLURM_PROCID mode=${COHORT_MODE:--} pipe=${CUDA_MPS_PIPE_DIRECTORY:--} threads=${CUDA_MPS_ACTIVE_THREAD_PERCENTAGE:--}"
END
printf '#!/bin/sh\nexec srun -n2 --gres=gpu:1 %s\n' "$work/opt.sh" >"$work/opt-job.sh"
chmod +x "$work/opt.sh" "$work/opt-job.sh"
# launch HOW OUT OPTIONS...: two tasks sharing one GPU, the options given to
# srun itself, or to sbatch or salloc around a plain srun; OUT.err: stderr.
launch() {
    local how=$1 out=$2
    shift 2
    case $how in
    srun) run "$out" srun -N1 -n2 --gres=gpu:1 "$@" "$work/opt.sh" ;;
    salloc) run "$out" salloc -N1 -n2 --gres=gpu:1 "$@" "$work/opt-job.sh" ;;
    sbatch) rm -f "$work/opt.out" "$work/opt.err" # written on the node: in $work
        run "$out.sbatch" sbatch --wait -N1 -n2 --gres=gpu:1 -o "$work/opt.out" -e "$work/opt.err" \
            "$@" "$work/opt-job.sh"
        cat "$work/opt.out" >"$out" 2>/dev/null
        cat "$work/opt.err" "$out.sbatch.err" >"$out.err" 2>/dev/null ;;
    esac
}
for how in srun sbatch salloc; do
    for opts in "--cohort=infer" "--cohort=infer --cohort-verbose" "--cohort=infer --cohort-mps" \
        "--cohort=infer --cohort-mps=threads=25" "--cohort=infer --cohort-mps=no"; do
        # shellcheck disable=SC2086
        launch "$how" "$tmp/opt" $opts
        want_pipe=0 want_threads=0 want_verbose=0
        case $opts in *--cohort-mps | *--cohort-mps=threads*) want_pipe=2 ;; esac
        case $opts in *threads=25) want_threads=2 ;; esac
        case $opts in *verbose) want_verbose=2 ;; esac
        errors=$(grep -v '^cohort: \(rank \|note: \)\|^salloc: \|^srun: job [0-9]* queued' "$tmp/opt.err" 2>/dev/null | head -2)
        [ "$(grep -c 'mode=infer ' "$tmp/opt")" = 2 ] &&
            [ "$(grep -c 'pipe=/tmp/cohort-mps-' "$tmp/opt")" = $want_pipe ] &&
            [ "$(grep -c 'threads=25$' "$tmp/opt")" = $want_threads ] &&
            [ "$(grep -c '^cohort: rank ' "$tmp/opt.err")" = $want_verbose ] && [ -z "$errors" ]
        ok $? "$how $opts: the tasks get what srun's would ($(tr '\n' ' ' <"$tmp/opt" | cut -c1-150)${errors:+; $errors})"
    done
done
[ -z "$(left)" ]
ok $? "after the sruns, sbatches and sallocs: no directory, no daemon left ($(left))"

# --- scancel ----------------------------------------------------------------
# The step's rank 0 says it is up through a FIFO; then scancel, srun's end,
# and the end of the step's slurmstepd (which may report the step ended
# before its last hook has run).
mkfifo "$work/meet"
SLURM_TIMELIMIT=2 on head timeout 120 srun -J mps-cancel -N1 -w n1 -n2 --gres=gpu:1 \
    --cohort=infer --cohort-mps \
    sh -c "$work/task.sh; [ \$SLURM_PROCID = 0 ] && echo up >$work/meet; exec sleep 300" \
    >"$tmp/cancel" 2>"$tmp/cancel.err" &
step=$!
timeout 60 cat "$work/meet" >/dev/null
job=$(on head squeue -h -n mps-cancel -o %i)
stepd=$(pgrep -f "slurmstepd: \[$job\.0\]")
on head scancel -n mps-cancel
wait $step
for p in $stepd; do timeout 60 tail --pid="$p" -f /dev/null; done
grep -q '^rank=0 .*pipe=/tmp/cohort-mps-' "$tmp/cancel" && [ -n "$stepd" ] && [ -z "$(left)" ]
ok $? "scancel of a running step: nothing left behind once its slurmstepd is gone (job $job; $(left)$(grep -m1 CANCELLED "$tmp/cancel.err"))"

tap_done
