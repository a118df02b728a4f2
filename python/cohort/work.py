"""cohort.work - a work queue over every task of the step (libcohort's
cohort_work.h) as a Python iterator of batches of item ids."""

from __future__ import annotations

import ctypes
import os
import pickle
import signal
import sys
import weakref
from typing import (TYPE_CHECKING, Any, Generator, Iterator, List, NamedTuple, Optional,
                    Tuple)

from . import _lib, errors
from ._progress import Progress

if TYPE_CHECKING:
    from ._session import Session

DEFAULT_CAP = 256
MAX_CAP = 1 << 20


class WorkStatus(NamedTuple):
    """A queue's totals as its coordinator sees them."""
    total: int
    committed: int
    leased: int
    queued: int
    set_aside: int


def _path(value: Any, what: str = "journal") -> Optional[bytes]:
    if value is None:
        return None
    try:
        path = os.fsencode(os.fspath(value))
    except TypeError:
        path = None
    if not path or b"\0" in path:
        raise errors.UsageError("cohort: %s is %r: give a path or None" % (what, value),
                                errors.ERR_USAGE)
    return path


_NOTHING = object()
DRAIN = ("TERM", "USR1")


def _signals(drain: Any) -> List[signal.Signals]:
    """The signals of drain (names with or without SIG, or numbers)."""
    if drain is None:
        return []
    if isinstance(drain, (str, int)):
        drain = (drain,)
    out = []
    for d in drain:
        try:
            out.append(signal.Signals(d) if isinstance(d, int) else
                       signal.Signals["SIG" + d.upper().replace("SIG", "", 1)])
        except (KeyError, ValueError, AttributeError):
            raise errors.UsageError("cohort: drain names %r: give signal names such as "
                                    "\"TERM\", \"USR1\", or None" % (d,), errors.ERR_USAGE)
    return out


class Work(_lib.Scoped):
    """A work queue of items 0..n-1 shared by every rank (from
    ``Cohort.work``). Iterate over it for batches (lists of item ids)::

        with c.work("images", n, journal="q.journal", output="results") as work:
            for batch in work:
                work.save(model(load(batch)))   # published with the batch, once

    Each batch holds about half a second of work at this worker's speed (at
    most ``cap`` ids). A batch is committed when the loop asks for the next
    one; leaving the loop by an exception or ``break`` gives the batch back
    (another worker will do it; that counts an attempt).

    Results, exactly once: with ``output`` (a directory every node sees;
    needs a ``journal``), what ``work.save(obj)`` was given for a batch is
    committed together with it, all or nothing, and published exactly once
    (read it back with ``cohort.read_output``): a worker or the coordinator
    dying at any moment loses or doubles nothing. Keep no results of your
    own from inside the loop: anything kept outside ``save`` is kept once
    per *attempt*, and a batch may be attempted twice (a copy near the end,
    or after a lease ran out).

    The stale rule: when another worker committed some ids of the batch
    first (or this worker's lease on them ran out), they are in
    ``work.stale`` after the commit. With ``save``, nothing of the batch was
    committed then: the loop gets the rest of it again as its next batch, to
    process and save anew. Without ``save`` the other ids were committed;
    drop the results of ``work.stale``'s, or commit inside the loop with
    ``stale = work.commit()``. The queue is served by a coordinator process
    of its own: a worker that dies loses nothing but its current batch,
    which goes to the others.
    """

    def __init__(self, cohort: "Session", name: str, n: int, journal: Optional[str],
                 lease_timeout: Optional[float], max_attempts: Optional[int],
                 cap: Optional[int], output: Optional[str] = None, drain: Any = DRAIN,
                 progress: bool = False) -> None:
        problem: Optional[errors.UsageError] = None
        sigs: List[signal.Signals] = []
        try:
            sigs = _signals(drain)
            if n is None:
                raise errors.UsageError("cohort: n (the number of items) is None: give a "
                                        "whole number", errors.ERR_USAGE)
            raw_name = _lib.name_bytes(name, "the queue's name")
            self.n = _lib.whole(n, "n (the number of items)", 0, (1 << 64) - 1)
            self.cap = DEFAULT_CAP if cap is None else _lib.whole(cap, "cap", 1, MAX_CAP)
            opts = _lib.WorkOpts(ctypes.sizeof(_lib.WorkOpts), _path(journal),
                                 _lib.seconds(lease_timeout, "lease_timeout", 604800),
                                 0 if max_attempts is None else
                                 _lib.whole(max_attempts, "max_attempts", 1, 1000),
                                 _path(output, "output"))
        except errors.UsageError as e:
            problem = e
        self.name = name
        self._c = cohort
        self._h: Optional[ctypes.c_void_p] = None
        self.drained: Optional[str] = None
        """The signal this worker drained on (its loop ended early), or None."""
        self._old: dict = {}
        self._watch(sigs)  # before any rank can lease: every rank drains alike
        h = ctypes.c_void_p()
        try:
            cohort._agree("c.work", problem)  # every rank fails alike, or none
            cohort._check(_lib.lib().cohort_work_open(cohort._handle(), raw_name, self.n,
                                                      ctypes.byref(opts), ctypes.byref(h)))
        except BaseException:
            self._unwatch()
            raise
        self._h = h
        if self.drained:  # a signal came during the open
            _lib.lib().cohort_work_drain(h)
        self._ids = (ctypes.c_uint64 * self.cap)()
        self._batch: Optional[List[int]] = None
        self._saved: Optional[Tuple[bytes, int]] = None
        self._rest = False  # _batch is the rest of a batch whose commit with results lost ids
        self.output = output
        self._progress = Progress(name, self.n, lambda: self.status().committed) \
            if progress and cohort.rank == 0 else None
        self._loop: Optional["weakref.ref[Generator[List[int], None, None]]"] = None
        self.stale: List[int] = []
        """Ids of the last committed (or given back) batch this worker no
        longer held: drop their results."""
        self.committed = 0
        """Items this worker committed (stale ones not counted)."""
        self.error: Optional[errors.Error] = None
        """A failure while giving a batch back on leaving the loop (not raised)."""

    def __repr__(self) -> str:
        return "<cohort.Work %r of %s items%s>" % (getattr(self, "name", "?"),
                                                    getattr(self, "n", "?"),
                                                    "" if getattr(self, "_h", None) else
                                                    ", closed")

    @property
    def batch(self) -> Optional[List[int]]:
        """The batch this worker holds and has not committed or given back."""
        return self._batch

    def _handle(self) -> ctypes.c_void_p:
        if self._h is None:
            raise errors.UsageError("cohort: the work queue '%s' is closed" % self.name,
                                    errors.ERR_USAGE)
        return self._h

    def _settle(self, fail: bool) -> List[int]:
        batch, self._batch = self._batch, None
        saved, self._saved = self._saved, None
        self._rest = False
        if batch is None:
            return []
        lc = _lib.lib()
        for i, x in enumerate(batch):
            self._ids[i] = x
        if saved is not None and not fail:
            rc = self._c._check(lc.cohort_work_commit_output_kind(
                self._handle(), self._ids, len(batch), saved[0], len(saved[0]), saved[1]))
        else:
            call = lc.cohort_work_fail if fail else lc.cohort_work_commit
            rc = self._c._check(call(self._handle(), self._ids, len(batch)))
        self.stale = []
        if rc == _lib.CONSTANTS["COHORT_WORK_STALE"]:
            n = ctypes.c_size_t()
            ids = lc.cohort_work_stale_ids(self._handle(), ctypes.byref(n))
            self.stale = [ids[i] for i in range(n.value)]
            if saved is not None and not fail:  # nothing committed: the rest is still ours
                gone = set(self.stale)
                self._batch = [i for i in batch if i not in gone] or None
                self._rest = self._batch is not None
                return self.stale
        if not fail:
            self.committed += len(batch) - len(self.stale)
        return self.stale

    def save(self, obj: Any) -> None:
        """The results of the current batch: bytes (bytearray, memoryview)
        as they are, anything else pickled. Committed with the batch (at the
        next iteration, or ``commit()``), all or nothing, and then published
        exactly once in the queue's output directory. A later ``save``
        before the commit replaces the earlier one."""
        if self.output is None:
            raise errors.UsageError("cohort: work.save: the work queue '%s' was opened "
                                    "without output=: give c.work(..., output=DIR)"
                                    % self.name, errors.ERR_USAGE)
        if self._batch is None:
            raise errors.UsageError("cohort: work.save: no batch is held (save inside the "
                                    "loop, before the next iteration)", errors.ERR_USAGE)
        if isinstance(obj, (bytes, bytearray, memoryview)):
            self._saved = (bytes(obj), _lib.CONSTANTS["COHORT_WORK_OUTPUT_BYTES"])
        else:
            self._saved = (pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL),
                           _lib.CONSTANTS["COHORT_WORK_OUTPUT_PICKLE"])

    def commit(self, output: Any = _NOTHING) -> List[int]:
        """Commits the current batch now (instead of at the next iteration),
        with ``output`` as its results when given (as ``save``), and returns
        the ids of it this worker no longer held (also in ``stale``). With
        results, nothing was committed then: ``batch`` holds the rest of the
        batch, still this worker's, and the loop's next iteration gives it
        again (process it and save its results anew)."""
        if output is not _NOTHING:
            self.save(output)
        return self._settle(False)

    def give_back(self) -> List[int]:
        """Gives the current batch back unprocessed (an attempt is counted:
        an item given back max_attempts times is set aside). Returns the ids
        this worker no longer held."""
        return self._settle(True)

    def extend(self) -> None:
        """Keeps this worker's leases alive for another lease_timeout (for
        items that take long)."""
        self._c._check(_lib.lib().cohort_work_extend(self._handle()))

    def status(self) -> WorkStatus:
        """The queue's totals as the coordinator sees them."""
        st = _lib.WorkStatus()
        self._c._check(_lib.lib().cohort_work_status(self._handle(), ctypes.byref(st)))
        return WorkStatus(st.total, st.committed, st.leased, st.queued, st.set_aside)

    def _watch(self, sigs: List[signal.Signals]) -> None:
        """Drains on sigs where the script has no handler of its own."""
        for sig in sigs:
            try:
                if signal.getsignal(sig) == signal.SIG_DFL:
                    self._old[sig] = signal.signal(sig, self._on_signal)
            except ValueError:  # not the main thread: no handlers
                pass

    def _unwatch(self) -> None:
        for sig, old in self._old.items():
            if signal.getsignal(sig) == self._on_signal:
                signal.signal(sig, old)
        self._old = {}

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.drained = signal.Signals(signum).name
        if self._h is not None:
            _lib.lib().cohort_work_drain(self._h)

    def _lease(self) -> List[int]:
        k = self._c._check(_lib.lib().cohort_work_lease(self._handle(), self._ids, self.cap))
        return self._ids[:k]

    def __iter__(self) -> Iterator[List[int]]:
        """A new loop over the queue; one at a time (an earlier iterator that
        is still held and not finished is refused: its batch is not settled)."""
        old = self._loop() if self._loop else None
        if old is not None and old.gi_frame is not None:
            raise errors.UsageError("cohort: the work queue '%s' is already being iterated "
                                    "over" % self.name, errors.ERR_USAGE)
        self._handle()
        loop = self._batches()
        self._loop = weakref.ref(loop)
        return loop

    def _batches(self) -> Generator[List[int], None, None]:
        try:
            while True:
                if not self._rest:  # the rest of a batch is the loop's next, not committed
                    self._settle(False)
                if self._progress:
                    self._progress.update()
                if self._batch and not self.drained:  # a commit with results lost ids
                    self._rest = False
                    yield self._batch
                    continue
                batch = self._lease()  # none once drained
                if not batch:
                    return
                self._batch = batch
                yield batch
        except GeneratorExit:
            self._give_back_quietly()
            raise

    def _give_back_quietly(self) -> None:
        if self._batch is not None and self._h is not None:
            try:
                self._settle(True)
            except errors.Error as e:
                self.error = e

    def close(self) -> None:
        """Gives back a batch still held, then returns when every item of
        the queue is committed or set aside (collective), and frees the
        queue. Raises when that failed (e.g. the coordinator died: rerun the
        step with the same journal to resume). After a drain (``drained``
        names the signal), returns at once: the items left stay in the
        journal for the next step, and rank 0 says so in one line."""
        if self._h is None:
            return
        self._give_back_quietly()
        h, self._h = self._h, None
        self._c._forget(self)
        self._unwatch()
        rc = self._c._check(_lib.lib().cohort_work_close(h))
        if self._progress and rc == 0:  # every item committed or set aside
            self._progress.update(final=True, done=self.n)
        if rc == _lib.CONSTANTS["COHORT_WORK_DRAINED"] and self._c.rank == 0:
            print("cohort: work '%s' drained on %s: the items left stay in the journal for "
                  "the next step over it" % (self.name, self.drained), file=sys.stderr,
                  flush=True)
        if self.error is not None:
            raise self.error

    def abandon(self) -> None:
        """Leaves the queue after an exception: gives back a batch still
        held, without the collective close."""
        self._give_back_quietly()
        self._h = None
        self._unwatch()
        self._c._forget(self)
