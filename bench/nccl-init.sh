#!/bin/bash
# nccl-init.sh - the time to make the world NCCL communicator, and the time
# of the first allreduce after it, on this machine's first GPU: N ranks as
# N distinct hosts on that one GPU (NCCL_HOSTID differs per rank, as NCCL
# refuses two ranks of one host on one GPU), four ways (bench/nccl_init.c):
# cohort_nccl_init (blocking, its default), cohort_nccl_init non-blocking,
# a bare blocking ncclCommInitRank with the id broadcast over cohort, and
# PyTorch's eager init (init_process_group("nccl", device_id=...) over a
# TCPStore rendezvous, the rendezvous outside the timed part). ROUNDS
# rounds, in each every N and every way once, the ways' order rotated from
# round to round so that a change of load falls on all. Per N and way: the
# median and range over the rounds of the slowest rank's time. Prints a
# Markdown table and a line of the machine and versions. Without a GPU it
# says so in one line and exits 0.
#   bench/nccl-init.sh BUILDDIR ["NS"] [ROUNDS]
# NS: "2 4 8" if unset; ROUNDS: 5. PYTHON: the interpreter with torch
# (python3); without torch the PyTorch column is left out, with a note.
set -u
if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "nccl-init.sh: no GPU on this machine (nvidia-smi -L finds none); nothing measured"
    exit 0
fi
build=$(cd "${1:?usage: nccl-init.sh BUILDDIR [NS] [ROUNDS]}" && pwd)
ns=${2:-2 4 8}
rounds=${3:-5}
python=${PYTHON:-python3}
make -s -C "$build" bench/nccl_init tests/bootstrap/spawn >/dev/null || exit 1
spawn="$build/tests/bootstrap/spawn"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
ways="cohort cohort-nb bare torch"
if ! "$python" -c 'import torch' 2>/dev/null; then
    ways="cohort cohort-nb bare"
    echo "nccl-init.sh: $python cannot import torch: PyTorch's eager init left out" >&2
fi
# One PyTorch rank: the store's rendezvous untimed, then init_process_group
# with device_id (eager NCCL init) and the first allreduce timed; the same
# line as nccl_init.c prints.
cat >"$out/torch_rank.py" <<'EOF'
import datetime, os, time
import torch, torch.distributed as dist
rank, size = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_STEP_NUM_TASKS"])
torch.cuda.set_device(0)
torch.zeros(1, device="cuda")
store = dist.TCPStore("127.0.0.1", int(os.environ["TORCH_PORT"]), size, rank == 0,
                      timeout=datetime.timedelta(seconds=120))
store.set(f"here{rank}", "1")
store.wait([f"here{r}" for r in range(size)])
t0 = time.monotonic()
dist.init_process_group("nccl", store=store, rank=rank, world_size=size,
                        device_id=torch.device("cuda", 0))
t1 = time.monotonic()
x = torch.tensor([float(rank + 1)], device="cuda")
dist.all_reduce(x)
torch.cuda.synchronize()
t2 = time.monotonic()
ok = "OK" if x.item() == size * (size + 1) / 2 else "BAD"
print(f"rank {rank}/{size} torch: init {1e3 * (t1 - t0):.1f} "
      f"first_allreduce {1e3 * (t2 - t1):.1f} allreduce {ok}", flush=True)
dist.destroy_process_group()
EOF

# run N WAY: one run; appends "WAY N INIT_MS ALLREDUCE_MS" (the slowest
# rank's) to $out/runs, or "WAY N failed" with the first failure on stderr.
run() {
    local prog=("$build/bench/nccl_init" "$2")
    [ "$2" = torch ] && prog=("$python" "$out/torch_rank.py")
    TORCH_PORT=$((20000 + RANDOM % 20000)) "$spawn" "$1" 1 -- \
        sh -c 'NCCL_HOSTID=bench-$SLURM_PROCID exec "$@"' sh "${prog[@]}" >"$out/one" 2>&1
    if [ "$(grep -c 'allreduce OK$' "$out/one")" != "$1" ]; then
        echo "$2 $1 failed" >>"$out/runs"
        echo "nccl-init.sh: $2 at N=$1 failed: $(grep -m1 'FAIL\|BAD\|Error\|error' "$out/one")" >&2
        return
    fi
    grep -q '^nccl ' "$out/one" && grep -m1 '^nccl ' "$out/one" >"$out/version"
    awk -v w="$2" -v n="$1" '/allreduce OK$/ { if ($5 > i) i = $5; if ($7 > a) a = $7 }
        END { print w, n, i, a }' "$out/one" >>"$out/runs"
}

: >"$out/runs"
for r in $(seq 1 "$rounds"); do
    set -- $ways
    for _ in $(seq 2 "$r"); do set -- "$@" "$1"; shift; done # rotate by r - 1
    for n in $ns; do
        for way in "$@"; do run "$n" "$way"; done
    done
done

# median and range of column COL of WAY at N: "MEDIAN (MIN-MAX)", or "failed".
stat() {
    awk -v w="$1" -v n="$2" -v c="$3" '$1 == w && $2 == n && $3 != "failed" { v[k++] = $c }
        END { if (!k) { print "failed"; exit }
              for (i = 0; i < k; i++) for (j = i + 1; j < k; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
              m = k % 2 ? v[(k - 1) / 2] : (v[k / 2 - 1] + v[k / 2]) / 2
              printf "%.0f (%.0f-%.0f)", m, v[0], v[k - 1] }' "$out/runs"
}
echo "| ranks | way | init ms, median (range) | first allreduce ms | runs failed |"
echo "|---|---|---|---|---|"
for n in $ns; do
    for way in $ways; do
        echo "| $n | $way | $(stat "$way" "$n" 3) | $(stat "$way" "$n" 4) |" \
            "$(grep -c "^$way $n failed$" "$out/runs") of $rounds |"
    done
done
torch=$("$python" -c 'import torch; print(torch.__version__, "NCCL", ".".join(map(str, torch.cuda.nccl.version())))' 2>/dev/null)
echo
echo "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)," \
    "$(nproc) CPUs; libcohort-nccl against NCCL $(sed 's/^nccl //' "$out/version" 2>/dev/null);" \
    "torch ${torch:-absent}; $rounds rounds"
