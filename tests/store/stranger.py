# stranger.py HOST PORT [plant|planted] - what a stranger (run as another
# user) gets from HOST:PORT with PyTorch's TCPStore protocol (torch 1.x
# queries, as the Debian torch speaks them): a SET of a key, then a WAIT and
# a GET of it. Prints "HOST:PORT accepted: read back VALUE" when the value
# came back, else "HOST:PORT refused: WHY". Raw bytes on a socket, no
# torch: fast, and no client thread of PyTorch's to die or hang on a
# refusal. plant: SETs the key "planted" and closes at once, before any
# answer (its socket is gone by the time the server looks at who sent it);
# planted: CHECKs whether "planted" is set ("planted: yes|no").
import socket
import struct
import sys


def string(b):
    return struct.pack("<Q", len(b)) + b


def recv_exact(s, n):
    out = b""
    while len(out) < n:
        got = s.recv(n - len(out))
        if not got:
            raise ConnectionError("closed by the other end")
        out += got
    return out


host, port = sys.argv[1], int(sys.argv[2])
mode = sys.argv[3] if len(sys.argv) > 3 else ""
SET, GET, CHECK, WAIT = 0, 2, 4, 5
if mode == "plant":
    with socket.create_connection((host, port), timeout=3) as s:
        s.sendall(bytes([SET]) + string(b"planted") + string(b"by a stranger"))
    print("sent", flush=True)
    sys.exit(0)
if mode == "planted":
    with socket.create_connection((host, port), timeout=3) as s:
        s.sendall(bytes([CHECK]) + struct.pack("<Q", 1) + string(b"planted"))
        print("planted:", "yes" if recv_exact(s, 1) == b"\0" else "no", flush=True)
    sys.exit(0)
try:
    with socket.create_connection((host, port), timeout=3) as s:
        s.sendall(bytes([SET]) + string(b"stranger") + string(b"was here"))
        s.sendall(bytes([WAIT]) + struct.pack("<Q", 1) + string(b"stranger"))
        if recv_exact(s, 1) != b"\0":
            raise ConnectionError("answered with what is not TCPStore's")
        s.sendall(bytes([GET]) + string(b"stranger"))
        n = struct.unpack("<Q", recv_exact(s, 8))[0]
        if n > 1024:
            raise ConnectionError("answered with what is not TCPStore's")
        print(f"{host}:{port} accepted: read back {recv_exact(s, n)!r}", flush=True)
except (OSError, ConnectionError) as e:
    print(f"{host}:{port} refused: {e}", flush=True)
