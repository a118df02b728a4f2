# seed_style.py - the pattern of scripts that read Slurm's variables
# themselves and pass rank and world size explicitly (MASTER_ADDR and
# MASTER_PORT still come from the environment).
import os

import torch
import torch.distributed as dist

rank = int(os.environ["SLURM_PROCID"])
world = int(os.environ["SLURM_NTASKS"])
local = int(os.environ["SLURM_LOCALID"])
dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world)
t = torch.tensor([rank + 1.0])
dist.all_reduce(t)
assert t.item() == world * (world + 1) / 2, t
print("seed ok", rank, local, flush=True)
dist.destroy_process_group()
