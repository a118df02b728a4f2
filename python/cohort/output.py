"""cohort.output - reading what a work queue published in its output
directory (docs/work.md, "Results exactly once"): the parts, each the
results of some ids, in pure Python (no libcohort needed)."""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import stat
import struct
from typing import Any, Iterator, List, Tuple, Union

from . import errors

MAGIC = b"COHORTO1"
KIND_BYTES, KIND_PICKLE = 0, 1
_PART = re.compile(r"part-[0-9]{12}")


def _bad(path: str, why: str) -> errors.Error:
    return errors.Error("cohort: read_output: %s: %s" % (path, why), errors.ERR_CONFIG)


SPANS_MAX = 65536


def _open(path: str) -> int:
    """A part's descriptor: a regular file, not through a link, never
    blocking on a FIFO planted under a part's name."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _bad(path, "not a regular file")
    return fd


def _head(path: str) -> Tuple[List[Tuple[int, int]], int, int, int]:
    """A part's (spans, kind, data offset, data length), checked."""
    with os.fdopen(_open(path), "rb") as f:
        fixed = f.read(40)
        if len(fixed) < 40 or fixed[:8] != MAGIC:
            raise _bad(path, "not a cohort output part")
        kind, nspans, dlen = struct.unpack(">IIQ", fixed[8:24])
        if not 1 <= nspans <= SPANS_MAX:
            raise _bad(path, "a head with %d runs of ids" % nspans)
        body = f.read(16 * nspans + 8)
        size = os.fstat(f.fileno()).st_size
    head = fixed + body[:16 * nspans]
    if len(body) != 16 * nspans + 8 or hashlib.sha256(head).digest()[:8] != body[16 * nspans:]:
        raise _bad(path, "a head cut short or with a wrong checksum")
    spans = [struct.unpack(">QQ", body[16 * i:16 * i + 16]) for i in range(nspans)]
    if any(lo >= hi for lo, hi in spans) or \
            any(spans[i][0] <= spans[i - 1][1] for i in range(1, nspans)):
        raise _bad(path, "ids out of order")
    if size != len(head) + 8 + dlen:
        raise _bad(path, "%d bytes, its head says %d" % (size, len(head) + 8 + dlen))
    return spans, kind, len(head) + 8, dlen


def read_output(directory: Union[str, "os.PathLike[str]"],
                raw: bool = False) -> Iterator[Tuple[List[int], Any]]:
    """Yields ``(ids, obj)`` for each part a work queue published in
    ``directory``, in the order of the parts' first ids: ``obj`` is what
    ``work.save`` was given (bytes as they were; an object unpickled only
    when the writer pickled it, or its pickle's bytes with raw=True).
    Every id comes at most once: a directory where an id is in two parts
    (not one queue's) raises cohort.Error before anything is yielded. Only
    unpickle parts your own jobs wrote. ``cohort-work output DIR --journal
    JOURNAL`` checks a directory against its queue's journal."""
    d = os.fspath(directory)
    parts = []
    for name in os.listdir(d):
        if _PART.fullmatch(name):
            path = os.path.join(d, name)
            spans, kind, at, dlen = _head(path)
            parts.append((spans[0][0], path, spans, kind, at, dlen))
    parts.sort()
    ranges = sorted((lo, hi, p[1]) for p in parts for lo, hi in p[2])
    for a, b in zip(ranges, ranges[1:]):
        if b[0] < a[1]:
            raise _bad(d, "id %d is in %s and in %s" % (b[0], a[2], b[2]))
    for _, path, spans, kind, at, dlen in parts:
        with os.fdopen(_open(path), "rb") as f:
            f.seek(at)
            data = f.read(dlen)
        if len(data) != dlen:
            raise _bad(path, "cut short")
        ids = [i for lo, hi in spans for i in range(lo, hi)]
        yield ids, pickle.loads(data) if kind == KIND_PICKLE and not raw else data
