# cohort_agent.py - what the store's Python tests share: a step's node
# agent (cohort-agent) started as the plugin starts it (its start record on
# standard input, held open; closing it ends the agent and the holder it
# started on the step's first node), and TCPStore's wire protocol written
# by hand (torch 1.x's and 2.x's query numbers, strings as a u64 length and
# bytes, numbers little-endian), read back whole.
import os
import resource
import socket
import struct
import subprocess

V1 = {"SET": 0, "COMPARE_SET": 1, "GET": 2, "ADD": 3, "CHECK": 4, "WAIT": 5,
      "GETNUMKEYS": 6, "WATCH_KEY": 7, "DELETE_KEY": 8}
V2 = {"VALIDATE": 0, "SET": 1, "GET": 3, "CHECK": 5, "WAIT": 6, "GETNUMKEYS": 7,
      "QUEUE_PUSH": 14, "QUEUE_POP": 15, "QUEUE_LEN": 16}
VALIDATE_MAGIC = 0x3C85F7CE


def free_port():
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


class Agent:
    """One node's agent of a step of nodes x per ranks (block layout), its
    holder on holder_port (a free port when None); .port is its loopback
    port, .proc its process."""

    def __init__(self, node=0, nodes=1, per=1, holder_port=None, secret=None, stderr=None,
                 memory_cap=None):
        """memory_cap: an address-space limit in bytes for the agent and the
        holder it starts (RLIMIT_AS), so that a store whose memory runs away
        fails alone instead of taking the machine's; none under sanitizers,
        whose shadow memory needs more."""
        build = os.environ["COHORT_BUILDDIR"]
        self.holder_port = holder_port or free_port()
        self.secret = secret or os.urandom(32).hex()
        first = node * per
        record = [
            "SLURM_JOB_ID=7", f"SLURM_STEP_ID={self.holder_port}", f"SLURM_NODEID={node}",
            f"SLURM_STEP_NUM_TASKS={nodes * per}", f"SLURM_STEP_NODELIST=n[1-{nodes}]",
            f"SLURM_STEP_TASKS_PER_NODE={per}(x{nodes})",
            "SLURM_GTIDS=" + ",".join(str(r) for r in range(first, first + per)),
            f"COHORT_SECRET={self.secret}", "COHORT_STORE_ADDR=127.0.0.1",
            f"COHORT_STORE_PORT={self.holder_port}", "COHORT_TIMEOUT=60",
            f"COHORT_WORK_COORD={build}/runtime/coord/cohort-work-coord", "", ""]
        cap = None if os.environ.get("COHORT_SANITIZED") else memory_cap
        self.proc = subprocess.Popen(
            [f"{build}/runtime/agent/cohort-agent"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=stderr,
            preexec_fn=(lambda: resource.setrlimit(resource.RLIMIT_AS, (cap, cap))) if cap
            else None)
        self.proc.stdin.write("\n".join(record).encode())
        self.proc.stdin.flush()
        line = self.proc.stdout.readline().decode().strip()
        if not line.startswith("port "):
            self.close()
            raise RuntimeError(f"cohort-agent did not start: {line!r}")
        self.port = int(line.split()[1])

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def string(b):
    if isinstance(b, str):
        b = b.encode()
    return struct.pack("<Q", len(b)) + b


def query(op, *fields):
    """A query: its type byte, then each field (bytes or str: a string;
    int: a u64)."""
    out = bytes([op])
    for f in fields:
        out += struct.pack("<Q", f) if isinstance(f, int) else string(f)
    return out


class Client:
    """A raw TCPStore connection to 127.0.0.1:port (torch 2.x's dialect when
    v2: VALIDATE sent first)."""

    def __init__(self, port, v2=False, timeout=60):
        self.ops = V2 if v2 else V1
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        if v2:
            self.s.sendall(bytes([0]) + struct.pack("<I", VALIDATE_MAGIC))

    def send(self, name, *fields):
        self.s.sendall(query(self.ops[name], *fields))

    def read(self, n):
        """Exactly n bytes; fewer when the store closed the connection."""
        got = b""
        while len(got) < n:
            part = self.s.recv(n - len(got))
            if not part:
                break
            got += part
        return got

    def i64(self):
        b = self.read(8)
        return struct.unpack("<q", b)[0] if len(b) == 8 else None

    def vec(self):
        n = self.i64()
        return None if n is None else self.read(n)

    def byte(self):
        b = self.read(1)
        return b[0] if b else None

    def close(self):
        self.s.close()


def pid_listening(port):
    """The process listening on TCP port port (IPv4 or 6), or None."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if int(cols[1].rsplit(":", 1)[1], 16) == port and cols[3] == "0A":
                inodes.add(f"socket:[{cols[9]}]")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                    return int(pid)
        except OSError:
            continue
    return None


def peak_rss_mb(pid):
    """The most memory (VmHWM) process pid has held, in MB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) // 1024
    return None


def sanitized(pid):
    """Whether process pid runs with AddressSanitizer (its memory is then
    no measure of the code's)."""
    with open(f"/proc/{pid}/maps") as f:
        return "asan" in f.read()
