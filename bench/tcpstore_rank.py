# tcpstore_rank.py - one rank of the same work with PyTorch's TCPStore: its
# arrival time just before joining the store, then rank 0 sets a 128-byte
# key, everyone waits for it, and a barrier (a counter and a "go" key).
# Prints "T0 T1" in ns (CLOCK_MONOTONIC, as boot_bench.c). With
# SPAWN_START_NS it first sleeps until that instant, as boot_bench.c.
import os
import time
from datetime import timedelta

from torch.distributed import TCPStore

rank = int(os.environ["SLURM_PROCID"])
size = int(os.environ["SLURM_STEP_NUM_TASKS"])
port = int(os.environ["COHORT_BOOTSTRAP_PORT"])
start = int(os.environ.get("SPAWN_START_NS", "0"))
while time.monotonic_ns() < start:
    time.sleep((start - time.monotonic_ns()) / 1e9)
t0 = time.monotonic_ns()
store = TCPStore("127.0.0.1", port, size, rank == 0, timedelta(seconds=600),
                 wait_for_workers=False)
if rank == 0:
    store.set("blob", b"\x5a" * 128)
assert store.get("blob") == b"\x5a" * 128
if store.add("arrived", 1) == size:
    store.set("go", b"1")
store.wait(["go"])
t1 = time.monotonic_ns()
os.write(1, f"{t0} {t1}\n".encode())  # one write: the ranks share the file
if rank == 0:  # the server lives in rank 0: stay until every rank is through
    if store.add("done", 1) < size:
        store.wait(["all-done"])
else:
    if store.add("done", 1) == size:
        store.set("all-done", b"1")
