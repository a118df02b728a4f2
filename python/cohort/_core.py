"""cohort._core - the Cohort handle (cohort._session's Session) with the
calls that open work queues and stream sets on it, and init()."""

from __future__ import annotations

import ctypes
from typing import Any, Optional

from . import _lib, errors
from ._session import Session
from .streams import Streams
from .work import DRAIN, Work


class Cohort(Session):
    """This task's membership of its Slurm job step (from ``cohort.init()``).

    Every method but the accessors is collective: every rank of the step
    calls it, in the same order. Not thread-safe: use it from one thread.
    Use it as a context manager to finalize it (which also closes the work
    queues and stream sets still open on it); when the block raises, the
    rank leaves without the last barrier, and the others' calls fail at
    once naming it when its process exits.
    """

    def work(self, name: str, n: int, journal: Optional[str] = None,
             lease_timeout: Optional[float] = None, max_attempts: Optional[int] = None,
             cap: Optional[int] = None, output: Optional[str] = None,
             drain: Any = DRAIN, progress: bool = False) -> "Work":
        """Opens the work queue ``name`` of items 0..n-1 (collective: every
        rank gives the same arguments) and returns it; iterate over it for
        batches of item ids. ``output``: a directory where the results
        given to ``work.save`` are published exactly once (needs a
        ``journal``). ``drain``: on these signals (Slurm's warning before a
        time limit or preemption; where the script has no handler of its
        own) the loop commits the batch in hand and ends, and close()
        returns at once; None: none. ``progress``: rank 0 shows the items
        committed (tqdm's bar, else a line to stderr every 10 s). See
        cohort.Work."""
        w = Work(self, name, n, journal, lease_timeout, max_attempts, cap, output, drain,
                 progress)
        self._open.append(w)
        return w

    def streams(self, name: str, capacity: float = 1.0, epsilon: Optional[float] = None,
                lease_timeout: Optional[float] = None,
                shed_after: Optional[float] = None) -> "Streams":
        """Joins the stream set ``name`` as a worker of this capacity
        (collective; returns once every rank is in). See cohort.Streams."""
        s = Streams(self, name, capacity, epsilon, lease_timeout, shed_after)
        self._open.append(s)
        return s


def init(timeout: Optional[float] = None) -> Cohort:
    """Joins this task's Slurm job step (collective over every task of the
    step) and returns its Cohort.

    timeout: the deadline of every call, in seconds (rounded up); None:
    $COHORT_TIMEOUT, else 120. Raises ConfigError outside a step or with a
    bad environment, Timeout when ranks did not join in time, AuthError,
    or Error with cohort's sentence for other failures.
    """
    lc = _lib.lib()
    opts = _lib.Opts(ctypes.sizeof(_lib.Opts), _lib.seconds(timeout, "timeout"))
    h = ctypes.c_void_p()
    if lc.cohort_init(ctypes.byref(h), ctypes.byref(opts)) != 0:
        if not h:
            raise errors.Error("cohort: out of memory", errors.ERR_RESOURCE)
        e = _lib.fail(h)
        lc.cohort_finalize(h)
        raise e
    return Cohort(h)
