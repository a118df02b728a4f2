# ddp_allreduce.py - an unchanged-style PyTorch job: every task prints what
# cohort gave it, then all of them do one allreduce over Gloo.
#   srun -N2 --ntasks-per-node=4 --cohort=train python3 ddp_allreduce.py
import os
import socket

import torch
import torch.distributed as dist

env = {k: os.environ.get(k, "-") for k in (
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "MASTER_ADDR",
    "MASTER_PORT", "CUDA_VISIBLE_DEVICES", "COHORT_CPUS", "GLOO_SOCKET_IFNAME")}
dist.init_process_group("gloo")  # everything from the environment
rank, world = dist.get_rank(), dist.get_world_size()
total = torch.tensor([float(rank)])
dist.all_reduce(total)
line = " ".join(f"{k}={v}" for k, v in env.items())
print(f"{socket.gethostname()}: {line} cpus_now={sorted(os.sched_getaffinity(0))} "
      f"allreduce(sum of ranks)={int(total.item())} expected={world * (world - 1) // 2}",
      flush=True)
dist.destroy_process_group()
