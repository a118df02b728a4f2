"""watch_nccl.py BACKEND OUT STALL: the step watch without Slurm, on one
node. A node agent (cohort-agent, started as the plugin starts it: its start
record on standard input, which is a socketpair, its "port N dir PATH" on
standard output) watches 4 ranks of tests/watch/watch_loop.py, each told to
the agent in the plugin's "task LOCAL RANK PID" line; the holder is started
by the agent on a port of its own (the store not served, as with
--cohort-watch alone), and the ranks meet through PyTorch's own TCPStore.
Once every rank runs its loop, rank 2 is SIGSTOPped, and the agent's first
"end TELL LINE" is awaited (STALL + 60 s at most).

BACKEND nccl: the ranks share GPU 0, each a host of its own
(NCCL_HOSTID), each with cohort's profiler plugin (NCCL_PROFILER_PLUGIN) and
the agent's directory (COHORT_WATCH_DIR); NCCL loads the plugin, which
writes one record per rank there. gloo: no profiler (Gloo has none): the
watch sees the stop in /proc.

Prints "records N" (the rank records in the directory before the stop),
"end TELL LINE" and "took S" (seconds from the stop to the end line), or
"no end". Every process it started is ended before it returns."""
import os
import signal
import socket
import subprocess
import sys
import time

backend, out, stall = sys.argv[1], sys.argv[2], int(sys.argv[3])
build = os.environ["COHORT_BUILDDIR"]
src = os.environ["COHORT_SRCDIR"]
sys.path.insert(0, f"{src}/tests/store")
from cohort_agent import free_port  # noqa: E402

RANKS = 4


def start_agent(sock):
    """The agent of a one-node step of RANKS ranks, its stdin sock's peer."""
    holder = free_port()
    record = [
        "SLURM_JOB_ID=7", f"SLURM_STEP_ID={holder}", "SLURM_NODEID=0",
        f"SLURM_STEP_NUM_TASKS={RANKS}", "SLURM_STEP_NODELIST=n1",
        f"SLURM_STEP_TASKS_PER_NODE={RANKS}", "SLURM_GTIDS=" + ",".join(map(str, range(RANKS))),
        f"COHORT_SECRET={os.urandom(32).hex()}", "COHORT_STORE_ADDR=127.0.0.1",
        f"COHORT_STORE_PORT={holder}", "COHORT_STORE_SERVE=0", "COHORT_TIMEOUT=60",
        f"COHORT_WATCH={stall}", f"COHORT_WATCH_FILE={out}/verdict.json",
        "COHORT_WATCH_GPUS=" + ",".join(["0"] * RANKS),
        f"COHORT_WORK_COORD={build}/runtime/coord/cohort-work-coord", "", ""]
    agent = subprocess.Popen([f"{build}/runtime/agent/cohort-agent"], stdin=sock.fileno(),
                             stdout=subprocess.PIPE)
    sock.close()
    return agent, "\n".join(record).encode()


def start_rank(r, port, wdir):
    env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(RANKS),
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1",
               COHORT_WATCH_DIR=wdir, COHORT_TEST_BACKEND=backend)
    if backend == "nccl":
        env.update(NCCL_HOSTID=f"watch-h{r}", NCCL_PROFILER_PLUGIN=(
            f"{build}/runtime/profiler/.libs/libcohort-nccl-profiler.so"))
    return subprocess.Popen([sys.executable, f"{src}/tests/watch/watch_loop.py", out], env=env,
                            stdout=subprocess.DEVNULL)


def wait_for(cond, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.1)
    return False


def end_line(ours, seconds):
    """The agent's first "end" line on ours, or None after seconds."""
    ours.settimeout(seconds)
    buf = b""
    try:
        while b"\n" not in buf:
            got = ours.recv(4096)
            if not got:
                return None
            buf += got
    except socket.timeout:
        return None
    line = buf.split(b"\n")[0].decode()
    return line if line.startswith("end ") else None


def main():
    os.makedirs(out, exist_ok=True)
    ours, theirs = socket.socketpair()
    agent, record = start_agent(theirs)
    ranks = []
    try:
        ours.sendall(record)
        answer = agent.stdout.readline().decode().split()
        if len(answer) != 4 or answer[0] != "port" or answer[2] != "dir":
            print("the agent did not start:", " ".join(answer))
            return 1
        wdir = answer[3]
        port = free_port()
        ranks = [start_rank(r, port, wdir) for r in range(RANKS)]
        for r, p in enumerate(ranks):
            ours.sendall(f"task {r} {r} {p.pid}\n".encode())
        running = lambda: all(os.path.exists(f"{out}/running.{r}") for r in range(RANKS))
        if not wait_for(running, 120):
            print("the loop did not run")
            return 1
        records = len([n for n in os.listdir(wdir) if n.startswith("rank-")])
        print("records", records)
        os.kill(ranks[2].pid, signal.SIGSTOP)
        t0 = time.monotonic()
        line = end_line(ours, stall + 60)
        print(line if line else "no end")
        if line:
            print("took %.1f" % (time.monotonic() - t0))
        return 0
    finally:
        for p in ranks:
            p.send_signal(signal.SIGCONT)
            p.kill()
            p.wait()
        ours.close()
        try:
            agent.wait(timeout=10)
        except subprocess.TimeoutExpired:
            agent.kill()
            agent.wait()


sys.exit(main())
