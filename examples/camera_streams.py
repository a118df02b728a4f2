"""camera_streams.py - live camera streams placed on every task of a Slurm
step through cohort's stream sets (``c.streams``), and what happens to
them when a task dies.

Rank 0 adds --streams synthetic cameras ("cam000", ...) to the set "cams";
cohort puts each on one worker. Frames are made up in the process: stream
k's frame f exists at wall time t0 + f/fps (t0: rank 0's clock, broadcast),
its pixels drawn from a generator seeded by (k, f). Like a live pipeline,
each worker processes only the latest frame of each of its streams
(skipping any it fell behind on), all due frames of its streams in one
forward pass of a tiny random CNN, and a stream it is assigned starts at
the first frame produced after the assignment: earlier frames are gone.
So no frame of any stream is processed by two workers, even when a stream
moves (given hosts' clocks in step). Each processed frame is logged as "stream frame epoch" in
--out DIR/frames.RANK, flushed after every batch.

--kill-rank R --kill-after S: rank R SIGKILLs itself S seconds after t0;
the coordinator hands its streams to the survivors at once. Each worker
prints one line at the end (streams held, frames processed, streams taken
over after its first second), waits for the others to stop, and leaves
the set; after a kill, that closing barrier fails naming the lost rank,
and the survivors say so and exit 0.

    srun -N2 --ntasks-per-node=4 --cohort=infer python3 camera_streams.py \
        [--streams 200] [--fps 5] [--seconds 20] [--out DIR] \
        [--kill-rank 5 --kill-after 8]
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import time
from typing import Dict, Optional, TextIO

import torch

import cohort

SIDE = 32  # frames are 3 x SIDE x SIDE


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--streams", type=int, default=200, help="cameras")
    p.add_argument("--fps", type=float, default=5.0, help="frames per second of each camera")
    p.add_argument("--seconds", type=float, default=20.0, help="how long the step runs")
    p.add_argument("--out", default=None, help="directory for frames.RANK files")
    p.add_argument("--kill-rank", type=int, default=None, help="the rank that SIGKILLs itself")
    p.add_argument("--kill-after", type=float, default=None, help="... that many seconds in")
    args = p.parse_args()
    if args.streams < 1 or not args.fps > 0 or not args.seconds > 0:
        p.error("--streams, --fps and --seconds must be above 0")
    if (args.kill_rank is None) != (args.kill_after is None):
        p.error("give --kill-rank and --kill-after together")
    return args


def model() -> torch.nn.Module:
    torch.manual_seed(0)  # the same network on every worker
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(),
                               torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                               torch.nn.Linear(8, 4)).eval()


def frame(stream: int, number: int) -> torch.Tensor:
    """Stream's frame number's pixels, the same on any worker."""
    g = torch.Generator().manual_seed(stream * 1_000_003 + number)
    return torch.rand(3, SIDE, SIDE, generator=g)


class Camera:
    """The clock of every stream: frame f exists from t0 + f / fps on."""

    def __init__(self, t0: float, fps: float) -> None:
        self.t0, self.fps = t0, fps

    def latest(self, now: float) -> int:
        return math.floor((now - self.t0) * self.fps)

    def next_at(self, now: float) -> float:
        return self.t0 + (self.latest(now) + 1) / self.fps


def run(c: cohort.Cohort, s: cohort.Streams, args: argparse.Namespace,
        out: Optional[TextIO]) -> None:
    net = model()
    if c.rank == 0:
        for k in range(args.streams):
            s.add("cam%03d" % k)
    cam = Camera(c.bcast(time.time()), args.fps)  # rank 0's clock for all
    end = cam.t0 + args.seconds
    kill_at = cam.t0 + args.kill_after if args.kill_rank == c.rank else math.inf
    done: Dict[str, int] = {}  # stream -> last frame processed (or skipped)
    frames = taken = 0
    while time.time() < end:
        if time.time() >= kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        wait = min(cam.next_at(time.time()), end, kill_at) - time.time()
        for ev in s.events(timeout=max(0.0, min(wait, 0.5))):
            if isinstance(ev, cohort.Revoke):  # stop it, then let it go
                if ev.key not in s.mine():  # (not when re-assigned since)
                    done.pop(ev.key, None)
                s.release(ev)
            else:  # Assign: a live camera, frames before now are gone
                now = time.time()
                done[ev.key] = cam.latest(now)
                if now - cam.t0 > 1.0:
                    taken += 1
        latest = cam.latest(time.time())
        due = [(key, epoch) for key, epoch in sorted(s.mine().items()) if latest > done[key]]
        if not due:
            continue
        with torch.no_grad():  # (the results would go downstream)
            net(torch.stack([frame(int(key[3:]), latest) for key, _ in due]))
        for key, epoch in due:
            done[key] = latest
        frames += len(due)
        if out:
            out.writelines("%s %d %d\n" % (key, latest, epoch) for key, epoch in due)
            out.flush()
    print("rank %d: %d streams held at the end, %d frames processed, %d streams taken "
          "over after the start" % (c.rank, len(s.mine()), frames, taken), flush=True)
    c.barrier()  # every worker has stopped before any leaves (and hands its streams on)


def main() -> int:
    args = parse()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    rank = -1
    try:
        with cohort.init() as c:
            rank = c.rank
            out: Optional[TextIO] = None
            if args.out:
                os.makedirs(args.out, exist_ok=True)
                out = open(os.path.join(args.out, "frames.%d" % c.rank), "a")
            with c.streams("cams") as s:
                run(c, s, args, out)
            if out:
                out.close()
    except cohort.PeerLost as e:
        if args.kill_rank is None:
            raise
        print("rank %d: the step ended without rank %d (%s)" % (rank, args.kill_rank, e),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
