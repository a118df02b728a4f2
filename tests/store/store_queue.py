# store_queue.py - PyTorch's store and a cohort work queue in one step
# (srun --cohort-store): init_process_group through the node agents, then
# a queue of 800 items; while it is open, each node's first task prints
# "node N: relay children C, agent relay threads T": its own children
# named cohort-relay (the node's relay process it would start: 0, since
# the node agent runs the queue's relay) and the threads named
# cohort-relay of its node's agent (the cohort-agent whose parent is this
# task's slurmstepd). Every task prints "rank R: I items", the items its
# commits kept (a batch leased again, after a lease ran out or as a copy at
# the tail, is counted by the worker whose commit kept it), then a store
# barrier still works.
import os

import torch.distributed as dist

import cohort


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def ppid(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def relay_threads(agent):
    try:
        tasks = os.listdir(f"/proc/{agent}/task")
    except OSError:
        return 0
    return sum(comm(f"{agent}/task/{t}") == "cohort-relay" for t in tasks)


dist.init_process_group("gloo")
with cohort.init() as c:
    with c.work("q", 800) as w:
        c.barrier()  # every task at its node's relay
        if c.local_rank == 0:
            me, step = os.getpid(), os.getppid()
            children = sum(comm(p) == "cohort-relay" and ppid(p) == me for p in pids())
            agents = [p for p in pids() if comm(p) == "cohort-agent" and ppid(p) == step]
            threads = sum(relay_threads(a) for a in agents)
            print(f"node {c.node_rank}: relay children {children}, agent relay threads {threads}",
                  flush=True)
        c.barrier()
        done = 0
        for batch in w:  # the stale rule: ids another worker committed are not this one's
            done += len(batch) - len(w.commit())
    print(f"rank {c.rank}: {done} items", flush=True)
dist.barrier()
dist.destroy_process_group()
