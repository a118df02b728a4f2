# store_stranger.py OUTDIR - a step that lets a stranger (the user nobody,
# by setpriv) try PyTorch's TCPStore client, while the step runs, against
# MASTER_ADDR:MASTER_PORT and every TCP port that cohort's processes and the
# ranks listen on (ss; those on a loopback interface from their own node,
# the others from every node); then checks that the step's own store and a
# collective still work. The first rank of each node writes
# OUTDIR/stranger-RANK (a line per port tried; "did not run" where the
# stranger's client could not run at all); every rank prints "step ok
# RANK" at the end. The stranger runs a copy of stranger.py in a directory
# of the node's /tmp it can read: the checkout's own directories may be
# closed to it (a clone under a private directory).
import os
import shutil
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist

out = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
dist.init_process_group("gloo")
rank, size = dist.get_rank(), dist.get_world_size()
store = dist.distributed_c10d._get_default_store()
store.set("secret-of-the-step", b"42")
if int(os.environ["LOCAL_RANK"]) == 0:
    # what cohort's processes and this node's ranks listen on (ss names them)
    ss = subprocess.run(["ss", "-Htlnp"], capture_output=True, text=True).stdout
    targets = {f"{os.environ['MASTER_ADDR']} {os.environ['MASTER_PORT']}"}
    for line in ss.splitlines():
        if any(p in line for p in ('"cohort-agent"', '"cohort-work-coo', '"python3"')):
            addr, port = line.split()[3].rsplit(":", 1)
            local = addr.startswith("127.") or addr == "[::1]"
            targets.add(f"{'127.0.0.1' if local else os.uname().nodename} {port}")
    with open(f"{out}/targets-{rank}", "w") as f:
        f.write("\n".join(sorted(targets)) + "\n")
dist.barrier()
if int(os.environ["LOCAL_RANK"]) == 0:
    # from this node: its own node's targets, and the other nodes' that are
    # not on a loopback interface
    mine = open(f"{out}/targets-{rank}").read().split("\n")
    theirs = [t for n in os.listdir(out) if n.startswith("targets-") and n != f"targets-{rank}"
              for t in open(f"{out}/{n}").read().split("\n") if t and not t.startswith("127.")]
    with open(f"{out}/stranger-{rank}", "w") as f, tempfile.TemporaryDirectory() as public:
        os.chmod(public, 0o755)
        client = shutil.copy(f"{here}/stranger.py", public)
        for t in [t for t in mine if t] + theirs:
            h, p = t.split()
            began = time.monotonic()
            r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                                sys.executable, client, h, p], cwd=public,
                               capture_output=True, text=True, timeout=60)
            lines = [x for x in r.stdout.splitlines() if x.startswith(f"{h}:{p} ")]
            f.write((lines[0] if lines else f"{h}:{p} did not run: the client died "
                     f"({r.stderr.strip().splitlines()[-1][:100] if r.stderr.strip() else r.returncode})")
                    + f" ({time.monotonic() - began:.1f} s)\n")
dist.barrier()
t = torch.tensor([1])
dist.all_reduce(t)
ok = t.item() == size and store.get("secret-of-the-step") == b"42"
print(f"step {'ok' if ok else 'FAILED'} {rank}", flush=True)
dist.destroy_process_group()
