# ddp_train.py - an unchanged PyTorch DDP training loop: no arguments to
# init_process_group, everything from the environment cohort sets. Each rank
# trains on its own data; at the end every rank prints a checksum of its
# parameters, which DDP must have kept identical.
import hashlib

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.Generator().manual_seed(1000 + rank)
for _ in range(20):
    x = torch.randn(32, 16, generator=data)
    y = x.sum(dim=1, keepdim=True)
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
flat = torch.cat([p.detach().flatten() for p in model.parameters()])
print("params", rank, hashlib.sha256(flat.numpy().tobytes()).hexdigest(), flush=True)
dist.destroy_process_group()
