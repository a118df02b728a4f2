# store_client.py PORT - PyTorch's own TCPStore client (whichever torch this
# python has: 1.x or 2.x) against a store at 127.0.0.1:PORT: every query the
# client has, each answer checked as TCPStore's server gives it; a wait that
# times out (2.x then cancels it) and the client still working after; a
# query the store does not serve (2.x queues) dropping only that client.
# Prints "client ok TORCH_VERSION" or "client FAILED: ..." (exit 1).
import datetime
import sys

import torch
import torch.distributed as dist

port = int(sys.argv[1])
sec = datetime.timedelta(seconds=1)
s = dist.TCPStore("127.0.0.1", port, 1, False, datetime.timedelta(seconds=10))
fails = []


def expect(name, f, want):
    try:
        got = f()
    except Exception as e:
        got = f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"
    if got != want and not (want is Exception and isinstance(got, str) and ": " in got):
        fails.append(f"{name}: got {got!r}, want {want!r}")


expect("set/get", lambda: (s.set("a", b"hello"), s.get("a"))[1], b"hello")
expect("add", lambda: (s.add("n", 3), s.add("n", -1)), (3, 2))
expect("compare_set absent, empty expected", lambda: s.compare_set("c", "", "x"), b"x")
expect("compare_set absent, expected given", lambda: s.compare_set("c2", "e", "x"), b"e")
expect("compare_set swap", lambda: s.compare_set("c", "x", "y"), b"y")
expect("compare_set mismatch", lambda: s.compare_set("c", "zz", "w"), b"y")
expect("wait for set keys", lambda: s.wait(["a", "n"]), None)
expect("wait times out", lambda: s.wait(["never"], sec), Exception)
expect("set/get after a timed-out wait", lambda: (s.set("b", b"2"), s.get("b"))[1], b"2")
expect("num_keys", lambda: s.num_keys() >= 5, True)
expect("delete_key", lambda: (s.delete_key("b"), s.delete_key("b")), (True, False))
if hasattr(s, "check"):
    expect("check", lambda: (s.check(["a", "n"]), s.check(["nope"])), (True, False))
if hasattr(s, "append"):
    expect("append", lambda: (s.append("ap", b"x"), s.append("ap", b"yz"), s.get("ap"))[2],
           b"xyz")
if hasattr(s, "multi_set"):
    expect("multi_set/multi_get",
           lambda: (s.multi_set(["m1", "m2"], [b"1", b"22"]), s.multi_get(["m1", "m2"]))[1],
           [b"1", b"22"])
other = dist.TCPStore("127.0.0.1", port, 1, False, datetime.timedelta(seconds=10))
expect("a second client sees the first one's keys", lambda: other.get("a"), b"hello")
if hasattr(other, "queue_len"):
    expect("queue_len (not served) fails that client", lambda: other.queue_len("q"), Exception)
    expect("the first client is unharmed", lambda: s.get("a"), b"hello")
if fails:
    print("client FAILED: " + "; ".join(fails), flush=True)
    sys.exit(1)
print(f"client ok {torch.__version__}", flush=True)
