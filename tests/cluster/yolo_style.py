# yolo_style.py - the pattern of YOLOv5's train.py: LOCAL_RANK, RANK and
# WORLD_SIZE read once at import, with defaults for a single process.
import os

import torch
import torch.distributed as dist

LOCAL_RANK = int(os.getenv("LOCAL_RANK", -1))
RANK = int(os.getenv("RANK", -1))
WORLD_SIZE = int(os.getenv("WORLD_SIZE", 1))

if __name__ == "__main__":
    assert LOCAL_RANK != -1 and WORLD_SIZE > 1, "not started as a distributed job"
    dist.init_process_group(backend="gloo")
    t = torch.tensor([42.0 if RANK == 0 else 0.0])
    dist.broadcast(t, src=0)
    assert t.item() == 42.0
    print("yolo ok", RANK, LOCAL_RANK, WORLD_SIZE, flush=True)
    dist.destroy_process_group()
