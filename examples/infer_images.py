"""infer_images.py - image classification spread over every task of a Slurm
step at each task's own speed, through cohort's work queue (``c.work``).

Every task builds the same randomly initialised torchvision ResNet-18
(seed 0; no weights are downloaded) and classifies synthetic images: image
i's pixels come from a generator seeded with i, so any task computes the
same image for the same id. One task (the last by default) is made 4x
slower on purpose: after each batch it sleeps three times what the batch
took. Rank 0 prints each task's share (items it committed, percent, busy
seconds), the makespan, and the makespan a static split (N/size items per
task, as DistributedSampler does) would have had at the tasks' speeds (each
task times one full batch, all at once, before the run; the slow one
counts 4x).

    srun -N2 --ntasks-per-node=4 --cohort=infer python3 infer_images.py \
        [--images 2000] [--size 224] [--batch 64] [--slow-rank R] [--out DIR] \
        [--kill-rank R --kill-after B]

--out DIR (a directory every node sees): each batch's classes are saved
with ``work.save`` and published exactly once in DIR/results, with the
queue's journal DIR/journal: a rerun over DIR resumes, and
``cohort.read_output(DIR + "/results")`` (or ``cohort-work output``) gives
every image's class once, whatever died. --kill-rank R --kill-after B:
rank R SIGKILLs itself right after saving its B-th batch (before its
commit); the others finish the queue and each prints that the step ended
without it. Threads per task: $OMP_NUM_THREADS, else 1.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from typing import List

import torch
import torchvision

import cohort


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--images", type=int, default=2000, help="images to classify")
    p.add_argument("--size", type=int, default=224, help="image side, pixels")
    p.add_argument("--batch", type=int, default=64, help="most images in one batch")
    p.add_argument("--slow-rank", type=int, default=None,
                   help="the task made 4x slower (default: the last; -1: none)")
    p.add_argument("--out", default=None, help="directory for the journal and the results")
    p.add_argument("--kill-rank", type=int, default=None, help="the rank that SIGKILLs itself")
    p.add_argument("--kill-after", type=int, default=None, help="... after saving this batch")
    args = p.parse_args()
    if args.images < 1 or args.size < 32 or args.batch < 1:
        p.error("--images and --batch must be at least 1, --size at least 32")
    if (args.kill_rank is None) != (args.kill_after is None):
        p.error("give --kill-rank and --kill-after together")
    return args


def image(item: int, size: int) -> torch.Tensor:
    """Item's synthetic image, 3 x size x size, the same on every task."""
    return torch.rand(3, size, size, generator=torch.Generator().manual_seed(item))


def classify(model: torch.nn.Module, batch: List[int], size: int) -> List[int]:
    with torch.no_grad():
        return model(torch.stack([image(i, size) for i in batch])).argmax(dim=1).tolist()


def main() -> int:
    args = parse()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(0)  # the same model everywhere
    model = torchvision.models.resnet18(weights=None).eval()
    classify(model, [0, 1], args.size)  # warm-up, outside the timings
    rank = -1
    try:
        with cohort.init() as c:
            rank = c.rank
            run(c, model, args)
    except cohort.PeerLost as e:
        if args.kill_rank is None:
            raise
        print("rank %d: the step ended without rank %d (%s)" % (rank, args.kill_rank, e),
              flush=True)
    return 0


def run(c: cohort.Cohort, model: torch.nn.Module, args: argparse.Namespace) -> None:
    slow = c.size - 1 if args.slow_rank is None else args.slow_rank
    c.barrier()  # every task timed at once, sharing the CPUs as in the run
    t = time.monotonic()  # this task's speed at full batches, for the static figure
    classify(model, list(range(args.batch)), args.size)
    per_item = (time.monotonic() - t) / args.batch * (4 if c.rank == slow else 1)
    where = {}
    if args.out:  # results published exactly once, resumable
        where = {"journal": os.path.join(args.out, "journal"),
                 "output": os.path.join(args.out, "results")}
    busy, batches = 0.0, 0
    with c.work("infer_images", args.images, cap=args.batch, **where) as work:
        c.barrier()  # a common start for the makespan
        start = time.monotonic()
        for batch in work:
            t = time.monotonic()
            classes = classify(model, batch, args.size)
            if c.rank == slow:
                time.sleep(3 * (time.monotonic() - t))
            busy += time.monotonic() - t
            if args.out:
                work.save(list(zip(batch, classes)))  # committed with the batch, once
            batches += 1
            if c.rank == args.kill_rank and batches == args.kill_after:
                os.kill(os.getpid(), signal.SIGKILL)  # saved, not committed
        finished = time.monotonic() - start
        committed = work.committed
    if args.kill_rank is not None:
        print("rank %d: %d items" % (c.rank, committed), flush=True)
    every = c.allgather((committed, busy, per_item, finished))
    if c.rank == 0:
        report(every, args.images, slow)


def report(every: List[tuple], n: int, slow: int) -> None:
    """Each task's share, the makespan, and a static split's: N/size items
    each (as DistributedSampler does) at each task's speed on a full batch,
    timed before the run."""
    size = len(every)
    static = 0.0
    for r, (committed, busy, per_item, _) in enumerate(every):
        print("rank %d: %d items (%.1f %%), busy %.2f s%s" % (
            r, committed, 100.0 * committed / n, busy, ", 4x slower" if r == slow else ""))
        share = n // size + (r < n % size)
        static = max(static, share * per_item)
    makespan = max(f for _, _, _, f in every)
    print("makespan %.2f s; a static split (%d items per task) would take %.2f s "
          "at the speeds measured" % (makespan, -(-n // size), static), flush=True)


if __name__ == "__main__":
    sys.exit(main())
