# store_kill.py - a rank killed while the others initialize: rank
# COHORT_TEST_VICTIM (default 3) SIGKILLs itself before init_process_group,
# so its keys never come; every other rank's init_process_group (timeout
# COHORT_TEST_TIMEOUT seconds, default 15) must fail, not hang. Each
# survivor prints "failed RANK: ERROR" (PyTorch's own error).
import datetime
import os
import signal

victim = int(os.environ.get("COHORT_TEST_VICTIM", "3"))
timeout = int(os.environ.get("COHORT_TEST_TIMEOUT", "15"))
rank = int(os.environ["RANK"])
if rank == victim:  # before torch is loaded: gone before the others wait, however slow they are
    os.kill(os.getpid(), signal.SIGKILL)

import torch.distributed as dist  # noqa: E402
try:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=timeout))
    dist.barrier()
    print(f"joined {rank}", flush=True)
except Exception as e:  # PyTorch's error, whatever it is
    print(f"failed {rank}: {str(e).splitlines()[0][:200]}", flush=True)
    os._exit(1)
