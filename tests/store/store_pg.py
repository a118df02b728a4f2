# store_pg.py BACKEND - an unchanged init_process_group (env://) with
# BACKEND (gloo, or nccl with every rank on GPU 0, each its own NCCL host by
# NCCL_HOSTID), an all_reduce, a barrier and a new_group's all_reduce.
# Prints "pg ok RANK/SIZE BACKEND" or "pg FAILED RANK: ...".
import datetime
import sys

import torch
import torch.distributed as dist

backend = sys.argv[1]
dist.init_process_group(backend, timeout=datetime.timedelta(seconds=60))
rank, size = dist.get_rank(), dist.get_world_size()
dev = torch.device("cpu")
if backend == "nccl":
    torch.cuda.set_device(0)
    dev = torch.device("cuda", 0)
x = torch.ones(1 << 16, device=dev) * (rank + 1)
dist.all_reduce(x)
dist.barrier()
ok = abs(x[0].item() - size * (size + 1) / 2) < 1e-3
group = dist.new_group([0, 1])
if rank in (0, 1):
    y = torch.tensor([rank], device=dev)
    dist.all_reduce(y, group=group)
    ok = ok and y.item() == 1
print(f"pg {'ok' if ok else 'FAILED'} {rank}/{size} {backend}", flush=True)
dist.destroy_process_group()
