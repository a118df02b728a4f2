# store_ops.py - an unchanged PyTorch script's uses of the store: the
# env:// rendezvous (init_process_group with no arguments but the backend),
# the store-based barrier PyTorch (1.13) runs at the end of
# init_process_group and of new_group, a subgroup's collective, dist.barrier, and the default store
# itself through the c10d API (set, get, add, wait, compare_set,
# delete_key, num_keys). Each rank prints "store ok RANK ..." when every
# check held, else the failing check (and exits 1).
import datetime
import os
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank, size = dist.get_rank(), dist.get_world_size()
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)


evens = list(range(0, size, 2))
group = dist.new_group(evens)
t = torch.tensor([rank])
if rank in evens:
    dist.all_reduce(t, group=group)
    check(t.item() == sum(evens), f"all_reduce in new_group({evens}) gave {t.item()}")
dist.barrier()

store = dist.distributed_c10d._get_default_store()
store.set(f"key{rank}", str(rank * 10))
peer = (rank + 1) % size
store.wait([f"key{peer}"])
check(store.get(f"key{peer}") == str(peer * 10).encode(), f"get key{peer}")
store.add("count", 1)
store.wait(["count"])
dist.barrier()
check(int(store.get("count")) == size, f"count {store.get('count')} != {size}")
if rank == 0:
    check(store.compare_set("cas", "", "first") == b"first", "compare_set on an absent key")
    check(store.compare_set("cas", "first", "second") == b"second", "compare_set swap")
    check(store.delete_key("cas") and not store.delete_key("cas"), "delete_key")
    check(store.num_keys() >= size + 2, f"num_keys {store.num_keys()}")
dist.barrier()
env = f"MASTER_ADDR={os.environ.get('MASTER_ADDR')} TORCHELASTIC_USE_AGENT_STORE=" \
      f"{os.environ.get('TORCHELASTIC_USE_AGENT_STORE')}"
if fails:
    print(f"store FAILED {rank}: {'; '.join(fails)}", flush=True)
else:
    print(f"store ok {rank} {env}", flush=True)
dist.destroy_process_group()
sys.exit(1 if fails else 0)
