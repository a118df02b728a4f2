"""watch_loop.py - an unchanged training loop for tests/watch.sh: Gloo on
CPU, a small model's forward and backward, and an all_reduce of each
gradient per step, as a data-parallel script does. It writes its pid to
OUT/pid.RANK, then OUT/running.RANK once a few steps are done, so that the
test knows whom to kill and when. COHORT_TEST_STEPS (0: until killed) bounds
the loop; COHORT_TEST_SLOW_RANK sleeps COHORT_TEST_SLOW_S seconds in one step
(a long computation, never a stop). COHORT_TEST_BACKEND=nccl runs it on
GPU 0 with NCCL (every rank on the one GPU, each a host of its own through
NCCL_HOSTID, as the caller sets). Prints "done RANK STEPS" at the end."""
import os
import sys
import time

import torch
import torch.distributed as dist

out = sys.argv[1]
backend = os.environ.get("COHORT_TEST_BACKEND", "gloo")
device = torch.device("cuda:0" if backend == "nccl" else "cpu")
if backend == "nccl":
    torch.cuda.set_device(device)
dist.init_process_group(backend)
rank = dist.get_rank()
with open(os.path.join(out, "pid.%d" % rank), "w") as f:
    f.write("%d\n" % os.getpid())
steps = int(os.environ.get("COHORT_TEST_STEPS", "0"))
slow_rank = int(os.environ.get("COHORT_TEST_SLOW_RANK", "-1"))
slow_s = float(os.environ.get("COHORT_TEST_SLOW_S", "0"))
torch.manual_seed(0)
model = torch.nn.Linear(64, 64).to(device)
i = 0
while steps == 0 or i < steps:
    model.zero_grad()
    model(torch.randn(32, 64, device=device)).sum().backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    if rank == slow_rank and i == 3:
        time.sleep(slow_s)
    if i == 2:
        open(os.path.join(out, "running.%d" % rank), "w").close()
    i += 1
print("done %d %d" % (rank, i), flush=True)
dist.destroy_process_group()
