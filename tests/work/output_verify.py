#!/usr/bin/env python3
"""output_verify.py - reads a work queue's output directory as docs/work.md
describes it (a reader of its own, apart from cohort's C and Python ones)
and checks what tests/output.sh's workers (tests/work/work_check) publish:
every id 0..N-1 in exactly one part, each part's data exactly the results
work_check makes for the part's ids (the id as 8 big-endian bytes, then
BYTES - 8 bytes of its low byte). Prints nothing when all hold, else one
line saying the first thing wrong.

Usage: output_verify.py DIR N [BYTES]"""
import hashlib
import os
import re
import struct
import sys


def parts(d):
    for name in sorted(os.listdir(d)):
        if re.fullmatch(r"part-[0-9]{12}", name):
            with open(os.path.join(d, name), "rb") as f:
                yield name, f.read()


def main():
    d, n = sys.argv[1], int(sys.argv[2])
    per = int(sys.argv[3]) if len(sys.argv) > 3 else 16
    seen = bytearray(n)
    for name, b in parts(d):
        if b[:8] != b"COHORTO1":
            return "%s: not a part" % name
        kind, nspans, dlen = struct.unpack(">IIQ", b[8:24])  # then the offer's token
        head = 40 + 16 * nspans
        if hashlib.sha256(b[:head]).digest()[:8] != b[head:head + 8]:
            return "%s: bad head check" % name
        data = b[head + 8:]
        if len(data) != dlen or kind != 0:
            return "%s: %d bytes of data, head says %d (kind %d)" % (name, len(data), dlen, kind)
        want = bytearray()
        for i in range(nspans):
            lo, hi = struct.unpack(">QQ", b[40 + 16 * i:56 + 16 * i])
            for x in range(lo, hi):
                if x >= n or seen[x]:
                    return "%s: id %d beyond the queue or published twice" % (name, x)
                seen[x] = 1
                want += struct.pack(">Q", x) + bytes([x & 0xff]) * (per - 8)
        if bytes(want) != data:
            return "%s: data not the results of its ids" % name
    missing = seen.find(0)
    return "id %d published in no part" % missing if missing >= 0 else ""


if __name__ == "__main__":
    why = main()
    if why:
        print(why)
