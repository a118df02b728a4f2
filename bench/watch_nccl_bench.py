"""watch_nccl_bench.py BUILDDIR [RANKS [ITERS [ROUNDS]]]: what cohort's NCCL
profiler plugin (runtime/profiler, set by --cohort-watch as
NCCL_PROFILER_PLUGIN) costs a loop of allreduces, against the same loop
without it, in the same run. RANKS ranks (4) share GPU 0, each a host of
its own (NCCL_HOSTID), as bench/nccl-init.sh runs them; each times ITERS
(2000) allreduces of 8 B, 1 MiB and 64 MiB (float32, after 50 untimed), the
time being rank 0's from its first call to a cuda synchronize after its
last. The two configurations alternate, ROUNDS (3) of each, every round a
new set of processes; with the plugin each rank has a 0700 directory of its
own as COHORT_WATCH_DIR, where the plugin writes its record as under the
watch. Needs a GPU and torch with NCCL. Prints a Markdown table: size,
microseconds an allreduce without and with the plugin (the median of the
rounds, and their range), the ratio; then the GPU, torch's and NCCL's
versions and the date."""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "store"))
from cohort_agent import free_port  # noqa: E402

SIZES = [2, 1 << 18, 1 << 24]  # float32 elements: 8 B, 1 MiB, 64 MiB
WARM = 50


def rank_main():
    import torch
    import torch.distributed as dist
    iters = int(os.environ["BENCH_ITERS"])
    torch.cuda.set_device(0)
    dist.init_process_group("nccl")
    out = {}
    for n in SIZES:
        x = torch.ones(n, device="cuda")
        for _ in range(WARM):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        out[n] = (time.perf_counter() - t0) / iters * 1e6
    if dist.get_rank() == 0:
        print(json.dumps(out), flush=True)
    dist.destroy_process_group()


def one_round(build, ranks, iters, profiler):
    """Rank 0's microseconds an allreduce, by size, for one set of ranks."""
    port = free_port()
    procs, dirs = [], []
    for r in range(ranks):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(ranks), LOCAL_RANK=str(r),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), BENCH_ITERS=str(iters),
                   NCCL_HOSTID=f"bench-h{r}", BENCH_RANK="1")
        env.pop("NCCL_PROFILER_PLUGIN", None)
        if profiler:
            d = tempfile.mkdtemp(prefix="cohort-watch-bench-")  # 0700, the user's
            dirs.append(d)
            env.update(COHORT_WATCH_DIR=d, NCCL_PROFILER_PLUGIN=(
                f"{build}/runtime/profiler/.libs/libcohort-nccl-profiler.so"))
        procs.append(subprocess.Popen([sys.executable, __file__], env=env,
                                      stdout=subprocess.PIPE if r == 0 else subprocess.DEVNULL))
    out = procs[0].communicate()[0].decode()
    bad = [p.wait() for p in procs]
    records = sum(len([n for n in os.listdir(d) if n.startswith("rank-")]) for d in dirs)
    for d in dirs:
        for n in os.listdir(d):
            os.unlink(os.path.join(d, n))
        os.rmdir(d)
    if any(bad) or not out.strip():
        sys.exit(f"a round failed (exit statuses {bad})")
    if profiler and records != ranks:
        sys.exit(f"the plugin wrote {records} records for {ranks} ranks: NCCL did not load it")
    return {int(k): v for k, v in json.loads(out.strip().splitlines()[-1]).items()}


def main():
    try:
        import torch
        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    if not gpu:
        sys.exit(f"watch_nccl_bench: needs a GPU and torch with CUDA ({sys.executable} has none)")
    build = os.path.abspath(sys.argv[1])
    ranks = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    iters = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    got = {False: [], True: []}
    for _ in range(rounds):
        for profiler in (False, True):
            got[profiler].append(one_round(build, ranks, iters, profiler))
    print(f"| allreduce | without the plugin (us) | with it (us) | with / without |")
    print("|---|---|---|---|")
    for n in SIZES:
        a = [r[n] for r in got[False]]
        b = [r[n] for r in got[True]]
        ma, mb = statistics.median(a), statistics.median(b)
        size = f"{n * 4} B" if n * 4 < 1 << 20 else f"{n * 4 >> 20} MiB"
        print(f"| {size} | {ma:.1f} ({min(a):.1f}-{max(a):.1f}) | {mb:.1f} ({min(b):.1f}-"
              f"{max(b):.1f}) | {mb / ma:.3f} |")
    print()
    print(f"{torch.cuda.get_device_name(0)}; torch {torch.__version__}, NCCL "
          f"{'.'.join(map(str, torch.cuda.nccl.version()))}; {ranks} ranks on one GPU, "
          f"{iters} allreduces a size, {rounds} rounds; {time.strftime('%Y-%m-%d')}")


if __name__ == "__main__":
    rank_main() if os.environ.get("BENCH_RANK") else main()
