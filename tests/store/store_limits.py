# store_limits.py - the store's holder and agent at their limits, and the
# queries torch 1.x and 2.x add, in TCPStore's wire protocol against a real
# agent and holder (tests/store-limits.sh runs each case and turns its
# lines into TAP). Each case prints "ok CASE: what held" or
# "not ok CASE: what did not". The cases:
#   wait    a WAIT naming one key 2^20 times is registered (a query after
#           it on the same connection is answered), another client is
#           served meanwhile, and the set of the key answers it once;
#   reader  a client that sends 16 GETs of the longest value and reads
#           nothing is closed alone, with a line in its own stderr, while
#           another is served; the agent and the holder hold under 256 MB
#           each (not measured under AddressSanitizer);
#   watch   torch 1.x's WATCH_KEY: registered, then told of a key's
#           creation, update and deletion as TCPStore tells it;
#   watchers  on a step of two nodes, 8 clients of node 1 each ask 2000
#           times to watch key wk and read nothing more; node 1's agent is
#           stopped (SIGSTOP: it takes nothing from the holder) while a
#           client of node 0 sets wk 4 times to the longest value: node 0
#           is served meanwhile, each watcher is closed with the holder's
#           line (what is unsent to node 1 stays bounded), node 1's other
#           clients are served once its agent goes on, a watcher that
#           reads is told of a change, and the agents and the holder hold
#           under 512 MB each (an address-space cap of 4 GiB on each keeps
#           a store whose memory runs away from taking the machine's);
#   queue   torch 2.x's QUEUE_PUSH, QUEUE_LEN, QUEUE_POP (the length, then
#           the oldest value; 0 alone when empty), and a client waiting for
#           the queue's key woken by a push.
# The "noreader" and "watchernode" arguments are the reader and watchers
# cases' non-reading clients themselves.
import os
import signal
import subprocess
import sys

from cohort_agent import V1, Agent, Client, peak_rss_mb, pid_listening, query, sanitized, string

BIG = (32 << 20) - (64 << 10)  # the longest value served
GETS = 16
WATCHERS = 8
REPEAT = 2000
SETS = 4
NODES = {"watchers": 2}
CAP = 4 << 30


def verdict(case, cond, what):
    print(f"{'ok' if cond else 'not ok'} {case}: {what}", flush=True)


def case_wait(agent):
    waiter, other = Client(agent.port), Client(agent.port)
    n = 1 << 20
    key = string("rk")
    waiter.s.sendall(bytes([5]) + n.to_bytes(8, "little") + key * n)
    waiter.send("GETNUMKEYS")  # answered once the WAIT is held
    held = waiter.i64()
    other.send("SET", "x", "1")
    other.send("GET", "x")
    served = other.vec()
    other.send("SET", "rk", "v")
    stop = waiter.byte()
    other.send("GETNUMKEYS")
    keys = other.i64()
    verdict("wait", held == 0 and served == b"1" and stop == 0 and keys == 2,
            f"a WAIT of key rk 2^20 times held (GETNUMKEYS after it: {held}), another client "
            f"served meanwhile ({served!r}), answered {stop!r} (0: STOP_WAITING) when rk was "
            f"set; {keys} keys")


def case_reader(agent):
    setter = Client(agent.port)
    setter.send("SET", "big", b"x" * BIG)
    setter.send("SET", "small", "s")
    setter.send("GET", "small")
    setter.vec()
    child = subprocess.Popen([sys.executable, __file__, "noreader", str(agent.port)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    note = b""
    while b"cohort: store:" not in note:  # the agent's line, in the client's own stderr
        line = child.stderr.readline()
        if not line:
            break
        note = line
    setter.send("GET", "small")
    served = setter.vec()
    holder = pid_listening(agent.holder_port)
    measured = not sanitized(agent.proc.pid) and holder is not None
    rss = (peak_rss_mb(agent.proc.pid), peak_rss_mb(holder) if holder else None)
    child.stdin.write(b"read\n")
    child.stdin.flush()
    got = child.stdout.read().decode().strip()
    child.wait()
    small = not measured or (rss[0] < 256 and rss[1] < 256)
    read = int(got.split()[1]) if got.startswith("read ") else -1
    verdict("reader", b"unread" in note and served == b"s" and 0 <= read < GETS * (8 + BIG)
            and small,
            f"a client leaving {GETS} GETs of {BIG} bytes unread was told "
            f"'{note.decode(errors='replace').strip()[:160]}', then read {got!r} before its "
            f"connection closed; another client served ({served!r}); peak memory "
            f"agent {rss[0]} MB, holder {rss[1]} MB"
            f"{'' if measured else ' (not measured: sanitizers)'}")


def noreader(port):
    c = Client(int(port))
    for _ in range(GETS):
        c.send("GET", "big")
    sys.stdin.readline()  # the test has looked: now read what is left, to the close
    total = 0
    try:
        while True:
            part = c.s.recv(1 << 20)
            if not part:
                break
            total += len(part)
    except OSError as e:
        print(f"error {e}")
    print(f"read {total}")


def change(c):
    kind = c.byte()
    return kind, c.vec(), c.vec(), c.vec()


def case_watch(agent):
    watcher, other = Client(agent.port), Client(agent.port)
    watcher.send("WATCH_KEY", "wk")
    registered = watcher.byte()
    other.send("SET", "wk", "1")
    created = change(watcher)
    other.send("ADD", "wk", 2)
    other.i64()
    updated = change(watcher)
    other.send("DELETE_KEY", "wk")
    other.i64()
    deleted = change(watcher)
    want = [3, (1, b"wk", b"", b"1"), (0, b"wk", b"1", b"3"), (2, b"wk", b"3", b"")]
    verdict("watch", [registered, created, updated, deleted] == want,
            f"WATCH_KEY answered {registered} (3: KEY_CALLBACK_REGISTERED); then told "
            f"{created}, {updated}, {deleted} (created, updated, deleted)")


def watchernode(port):
    conns = [Client(int(port)) for _ in range(WATCHERS)]
    for c in conns:
        c.s.sendall(query(V1["WATCH_KEY"], "wk") * REPEAT)
    registered = sum(c.read(REPEAT) == bytes([3]) * REPEAT for c in conns)
    print(f"registered {registered}", flush=True)
    sys.stdin.readline()  # the test has set wk: now read what is left, to each close
    closed = 0
    for c in conns:
        try:
            while c.s.recv(1 << 20):
                pass
            closed += 1
        except OSError as e:
            print(f"error {e}", flush=True)
    print(f"closed {closed}", flush=True)


def case_watchers(a, b):
    setter, near, reader = Client(a.port), Client(b.port), Client(b.port)
    reader.send("WATCH_KEY", "sw")
    registered = reader.byte()
    near.send("GETNUMKEYS")
    near.i64()
    child = subprocess.Popen([sys.executable, __file__, "watchernode", str(b.port)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    ready = child.stdout.readline().decode().strip()
    os.kill(b.proc.pid, signal.SIGSTOP)  # node 1's agent takes nothing from the holder
    try:
        for i in range(SETS):
            setter.send("SET", "wk", bytes([ord("A") + i]) * BIG)
        setter.send("SET", "small", "s")
        setter.send("GET", "small")
        served = setter.vec()  # answered once the holder has served the SETs
    finally:
        os.kill(b.proc.pid, signal.SIGCONT)
    near.send("GET", "small")
    near_served = near.vec()
    setter.send("SET", "sw", "v")
    told = change(reader)
    child.stdin.write(b"read\n")
    child.stdin.flush()
    out, err = child.communicate(timeout=120)
    closed = out.decode().strip().splitlines()[-1:]
    lines = [x for x in err.decode().splitlines() if x.startswith("cohort: store:")]
    by_holder = sum("store holder has" in x for x in lines)
    holder = pid_listening(a.holder_port)
    measured = not sanitized(a.proc.pid) and holder is not None
    rss = [peak_rss_mb(p) for p in (a.proc.pid, b.proc.pid, holder) if p]
    small = not measured or max(rss) < 512
    verdict("watchers", ready == f"registered {WATCHERS}" and closed == [f"closed {WATCHERS}"]
            and by_holder == WATCHERS and served == b"s" and near_served == b"s"
            and (registered, told) == (3, (1, b"sw", b"", b"v")) and small,
            f"{WATCHERS} clients of node 1 watching wk {REPEAT} times each ({ready}), not "
            f"reading, node 1's agent stopped while node 0 set wk {SETS} times to {BIG} "
            f"bytes: {closed}, {by_holder} of {len(lines)} lines the holder's "
            f"('{lines[0][:200] if lines else ''}'); node 0 served meanwhile ({served!r}), "
            f"node 1 after ({near_served!r}), a watcher that reads told {told}; peak memory "
            f"agents and holder {rss} MB{'' if measured else ' (not measured: sanitizers)'}")


def case_queue(agent):
    c, waiter = Client(agent.port, v2=True), Client(agent.port, v2=True)
    c.send("QUEUE_PUSH", "q", "a")
    c.send("QUEUE_PUSH", "q", "bc")
    c.send("QUEUE_LEN", "q")
    length = c.i64()
    c.send("QUEUE_POP", "q")
    first = (c.i64(), c.vec())
    c.send("QUEUE_POP", "q")
    second = (c.i64(), c.vec())
    c.send("QUEUE_POP", "q")
    empty = c.i64()
    waiter.send("WAIT", 1, "q2")
    waiter.send("CHECK", 1, "q2")  # answered once the WAIT is held
    ready = waiter.byte()
    c.send("QUEUE_PUSH", "q2", "z")
    woken = waiter.byte()
    waiter.send("QUEUE_POP", "q2")
    popped = (waiter.i64(), waiter.vec())
    verdict("queue", (length, first, second, empty, ready, woken, popped)
            == (2, (2, b"a"), (1, b"bc"), 0, 1, 0, (1, b"z")),
            f"QUEUE_LEN {length}; QUEUE_POPs {first}, {second}, then {empty} (empty); a "
            f"WAIT for q2 (CHECK: {ready}, not ready) answered {woken} by a push, its pop "
            f"{popped}")


if __name__ == "__main__":
    if sys.argv[1] in ("noreader", "watchernode"):
        globals()[sys.argv[1]](sys.argv[2])
        sys.exit(0)
    case, agents = sys.argv[1], []
    nodes = NODES.get(case, 1)
    try:
        for node in range(nodes):
            first = agents[0] if agents else None
            agents.append(Agent(node=node, nodes=nodes, per=4, memory_cap=CAP,
                                holder_port=first and first.holder_port,
                                secret=first and first.secret))
        globals()["case_" + case](*agents)
    except Exception as e:  # a case that cannot go on: its failure, in one line
        verdict(case, False, f"{type(e).__name__}: {e}")
    finally:
        for agent in reversed(agents):
            agent.close()
