# store_agent_dies.py - a node agent killed while the step runs: after
# init_process_group and a barrier, the first task of the step's last node
# SIGKILLs its node's agent (the process that listens on its MASTER_PORT),
# then every rank waits on the store for a key nobody sets (timeout
# COHORT_TEST_TIMEOUT seconds, default 15), which must fail: at once on the
# agent's node (its store connections are closed), at the timeout on the
# others. Each rank prints "failed RANK: ERROR" (PyTorch's own error). A
# rank of the agent's node then ends once the plugin's line is in its
# stderr (a file, srun --error, read back) or the timeout has passed, so
# that the line is never lost to the rank's own end.
import datetime
import os
import re
import signal
import subprocess
import time

import torch.distributed as dist

timeout = int(os.environ.get("COHORT_TEST_TIMEOUT", "15"))
told = "cohort: store: the node agent of node"
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=timeout))
rank, size = dist.get_rank(), dist.get_world_size()
last_node = int(os.environ["SLURM_NODEID"]) == int(os.environ["SLURM_NNODES"]) - 1
dist.barrier()
if last_node and int(os.environ["LOCAL_RANK"]) == 0:
    port = os.environ["MASTER_PORT"]
    ss = subprocess.run(["ss", "-Htlnp", f"sport = :{port}"], capture_output=True,
                        text=True).stdout
    for pid in sorted(set(re.findall(r"pid=(\d+)", ss))):
        os.kill(int(pid), signal.SIGKILL)
try:
    dist.distributed_c10d._get_default_store().get("never")
    print(f"got {rank}", flush=True)
except Exception as e:  # PyTorch's error, whatever it is
    print(f"failed {rank}: {str(e).splitlines()[0][:200]}", flush=True)
if last_node:
    err = os.readlink("/proc/self/fd/2")
    end = time.monotonic() + timeout
    while time.monotonic() < end and told not in open(err).read():
        time.sleep(0.05)
os._exit(1)
