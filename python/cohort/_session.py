"""cohort._session - a task's handle on its step, below the work queues
and stream sets that use it: the ranks, the collectives over the step's
authenticated bootstrap (libcohort's cohort.h), the checks every call
makes, and the queues and sets open on it (closed by finalize through
their own close). cohort._core's Cohort adds the calls that open them."""

from __future__ import annotations

import ctypes
import pickle
import struct
from typing import Any, List, Optional

from . import _lib, errors

_HEADER = struct.Struct("<BQ")  # kind, length
_BYTES, _PICKLE, _FAILED = 0, 1, 2  # _FAILED: the sender could not pickle; the text says why


def _encode(obj: Any) -> bytes:
    """Header and payload; an object that cannot be pickled travels as the
    reason, so that every rank fails alike."""
    if isinstance(obj, (bytes, bytearray, memoryview)):
        data = bytes(obj)
        return _HEADER.pack(_BYTES, len(data)) + data
    try:
        data = pickle.dumps(obj, protocol=pickle.DEFAULT_PROTOCOL)
    except Exception as e:  # any pickling failure, whatever the object raises
        why = ("%s: %s" % (type(e).__name__, e)).encode("utf-8", "replace")[:1000]
        return _HEADER.pack(_FAILED, len(why)) + why
    return _HEADER.pack(_PICKLE, len(data)) + data


def _decode(call: str, rank: int, kind: int, data: bytes) -> Any:
    if kind == _FAILED:
        raise errors.UsageError("cohort: %s: rank %d could not pickle its object (%s)"
                                % (call, rank, data.decode("utf-8", "replace")), errors.ERR_USAGE)
    return data if kind == _BYTES else pickle.loads(data)


class Session(_lib.Scoped):
    """This task's membership of its Slurm job step: the base of Cohort
    (cohort._core), which documents its use."""

    def __init__(self, handle: ctypes.c_void_p) -> None:
        self._h: Optional[ctypes.c_void_p] = handle
        lc = _lib.lib()
        self.rank: int = lc.cohort_rank(handle)
        """This task's rank, 0 .. size-1 (SLURM_PROCID)."""
        self.size: int = lc.cohort_size(handle)
        """Tasks in the step."""
        self.local_rank: int = lc.cohort_local_rank(handle)
        """This task's index among its node's tasks."""
        self.local_size: int = lc.cohort_local_size(handle)
        """Tasks on this node."""
        self.node_rank: int = lc.cohort_node_rank(handle)
        """This node's index in the step."""
        self.node_count: int = lc.cohort_node_count(handle)
        """Nodes in the step."""
        self.bootstrap: str = (lc.cohort_bootstrap(handle) or b"").decode()
        """The bootstrap in use: "tcp" (cohort's own tree) or "pmix"."""
        self._open: List[Any] = []  # work queues and stream sets, in opening order

    def __repr__(self) -> str:
        return "<cohort.Cohort rank %d/%d node %d/%d local %d/%d via %s%s>" % (
            self.rank, self.size, self.node_rank, self.node_count, self.local_rank,
            self.local_size, self.bootstrap, "" if self._h else ", finalized")

    def _handle(self) -> ctypes.c_void_p:
        """The struct cohort pointer (for the work queue and stream set)."""
        if self._h is None:
            raise errors.UsageError("cohort: this Cohort was finalized", errors.ERR_USAGE)
        return self._h

    def _check(self, rc: int) -> int:
        """rc, or the exception for this handle's last failure when rc < 0."""
        if rc < 0:
            raise _lib.fail(self._handle())
        return rc

    def _agree(self, call: str, problem: Optional[errors.UsageError]) -> None:
        """Before a collective open: this rank's argument problem (or None)
        goes to every rank, and all raise alike when any rank has one, as
        libcohort does with the arguments it checks itself."""
        mine = str(problem)[len("cohort: "):] if problem is not None else None
        problems = self.allgather(mine)
        for rank, why in enumerate(problems):
            if why is not None:
                raise errors.UsageError("cohort: %s failed on rank %d: %s" % (call, rank, why),
                                        errors.ERR_USAGE)

    def set_timeout(self, seconds_: float) -> None:
        """The deadline of every later call, in seconds (1 to 86400; rounded
        up to whole seconds). Local: every rank should set the same."""
        s = _lib.seconds(seconds_, "the timeout")
        self._check(_lib.lib().cohort_set_timeout(self._handle(), s))

    def barrier(self) -> None:
        """Returns when every rank has called it."""
        self._check(_lib.lib().cohort_barrier(self._handle()))

    def _bcast_bytes(self, data: bytes, length: int, root: int) -> bytes:
        buf = ctypes.create_string_buffer(data, length) if data else \
            ctypes.create_string_buffer(length)
        self._check(_lib.lib().cohort_bcast(self._handle(), buf, length, root))
        return buf.raw

    def bcast(self, obj: Any = None, root: int = 0) -> Any:
        """root's obj on every rank (the others' obj is ignored): bytes-like
        objects arrive as bytes, anything else is pickled by root and
        unpickled here (it travels only between the step's authenticated
        ranks)."""
        root = _lib.whole(root, "bcast's root", 0, self.size - 1)
        mine = _encode(obj) if root == self.rank else b""
        head = self._bcast_bytes(mine[:_HEADER.size], _HEADER.size, root)
        kind, length = _HEADER.unpack(head)
        data = self._bcast_bytes(mine[_HEADER.size:], length, root) if length else b""
        return _decode("bcast", root, kind, data)

    def allgather(self, obj: Any) -> List[Any]:
        """Every rank's obj, in rank order, on every rank (bytes-like objects
        as bytes, anything else pickled). The exchange pads every rank's
        part to the largest: size x largest must stay within the bootstrap's
        64 MiB for one call."""
        mine = _encode(obj)
        lc = _lib.lib()
        heads = ctypes.create_string_buffer(_HEADER.size * self.size)
        self._check(lc.cohort_allgather(self._handle(), mine[:_HEADER.size], _HEADER.size, heads))
        parts = [_HEADER.unpack_from(heads.raw, i * _HEADER.size) for i in range(self.size)]
        width = max(length for _, length in parts)
        raw = b""
        if width:
            body = mine[_HEADER.size:].ljust(width, b"\0")
            out = ctypes.create_string_buffer(width * self.size)
            self._check(lc.cohort_allgather(self._handle(), body, width, out))
            raw = out.raw
        return [_decode("allgather", i, kind, raw[i * width:i * width + length])
                for i, (kind, length) in enumerate(parts)]

    def _forget(self, obj: Any) -> None:
        """A work queue or stream set closed: no longer closed by finalize."""
        if obj in self._open:
            self._open.remove(obj)

    def finalize(self) -> None:
        """Closes the work queues and stream sets still open (in the order
        they were opened), leaves the step with a last barrier and frees the
        handle. Collective. A second call does nothing."""
        if self._h is None:
            return
        try:
            for obj in list(self._open):
                obj.close()
            # The last barrier here, where its failure keeps its sentence
            # (cohort_finalize frees the handle with it); after a failure
            # the handle is left to the process's exit, as after abandon().
            self.barrier()
        except BaseException:
            self.abandon()
            raise
        h, self._h = self._h, None
        if _lib.lib().cohort_finalize(h) != 0:
            raise errors.PeerLost("cohort: a rank left the step between the last two barriers "
                                  "of finalize", errors.ERR_PEER_LOST)

    def close(self) -> None:
        """The same as finalize() (what leaving a ``with`` block does)."""
        self.finalize()

    def abandon(self) -> None:
        """Stops using the handle, its work queues and stream sets without
        the collective calls (after an exception): later calls raise
        UsageError; this rank's connections close when the process exits."""
        for obj in list(self._open):
            obj.abandon()
        self._h = None
        self._open = []
