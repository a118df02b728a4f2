"""cohort.streams - long-lived inputs (camera streams) placed on the
workers of a step (libcohort's cohort_streams.h): events of this worker's
assignments, releases, load reports."""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterator, NamedTuple, Optional, Union

from . import _lib, errors

if TYPE_CHECKING:
    from ._session import Session

KEY_MAX = 255


@dataclass(frozen=True)
class Assign:
    """This worker now owns stream ``key``; tag its results with ``epoch``
    (a later owner's epoch is larger)."""
    key: str
    epoch: int


@dataclass(frozen=True)
class Revoke:
    """Stop working on stream ``key`` (owned at ``epoch``), then
    ``release`` this event: only then may another worker get it."""
    key: str
    epoch: int


Event = Union[Assign, Revoke]


class StreamsStatus(NamedTuple):
    """The set as its coordinator sees it."""
    streams: int   # in the set
    moving: int    # revoked, waiting for their owner's release
    unplaced: int  # no worker to hold them
    moves: int     # streams that went from one worker to another, so far
    workers: int   # in the set now


def _key(key: Any) -> bytes:
    if not isinstance(key, str):
        raise errors.UsageError("cohort: a stream key is %r: give a str" % (key,),
                                errors.ERR_USAGE)
    try:
        raw = key.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise errors.UsageError("cohort: the stream key %r is not UTF-8 text" % (key[:40],),
                                errors.ERR_USAGE) from None
    if not 1 <= len(raw) <= KEY_MAX or b"\0" in raw:
        raise errors.UsageError("cohort: the stream key %r has %d bytes%s: give 1 to %d "
                                "bytes without NUL" % (key[:40], len(raw),
                                                       " and a NUL" if b"\0" in raw else "",
                                                       KEY_MAX), errors.ERR_USAGE)
    return raw


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value):
        raise errors.UsageError("cohort: %s is %r: give a number" % (what, value),
                                errors.ERR_USAGE)
    return float(value)


class Streams(_lib.Scoped):
    """This worker's membership of a stream set (from ``Cohort.streams``)::

        s = c.streams("cams", capacity=1.0)
        if c.rank == 0:
            for url in urls:
                s.add(url)
        while running:
            for ev in s.events(timeout=0.1):
                if isinstance(ev, cohort.Revoke):
                    stop(ev.key)
                    s.release(ev)
            for key, epoch in s.mine().items():
                ... the next frame of key, results tagged with epoch ...

    Each stream is on one worker at a time, kept there while it lives, no
    worker above (1 + epsilon) x its capacity-weighted share. A worker that
    makes no call for lease_timeout seconds (events() is enough) loses its
    streams and is told Revoke when it calls again.
    """

    def __init__(self, cohort: "Session", name: str, capacity: float, epsilon: Optional[float],
                 lease_timeout: Optional[float], shed_after: Optional[float]) -> None:
        problem: Optional[errors.UsageError] = None
        try:
            raw_name = _lib.name_bytes(name, "the stream set's name")
            cap = _number(capacity, "capacity")
            eps = 0.25 if epsilon is None else _number(epsilon, "epsilon")
            if not 0 < cap <= 1e6 or not 0 < eps <= 100:
                raise errors.UsageError("cohort: capacity %r, epsilon %r: give capacity above 0 "
                                        "(at most 1e6) and epsilon above 0 (at most 100)"
                                        % (capacity, epsilon), errors.ERR_USAGE)
            opts = _lib.StreamsOpts(ctypes.sizeof(_lib.StreamsOpts), eps,
                                    _lib.seconds(lease_timeout, "lease_timeout"),
                                    _lib.seconds(shed_after, "shed_after"))
        except errors.UsageError as e:
            problem = e
        self.name = name
        self._c = cohort
        cohort._agree("c.streams", problem)  # every rank fails alike, or none
        h = ctypes.c_void_p()
        cohort._check(_lib.lib().cohort_streams_open_opts(
            cohort._handle(), raw_name, cap, ctypes.byref(opts), ctypes.byref(h)))
        self._h: Optional[ctypes.c_void_p] = h
        self._mine: Dict[str, int] = {}

    def __repr__(self) -> str:
        return "<cohort.Streams %r, %d mine%s>" % (self.name, len(self._mine),
                                                   "" if self._h else ", closed")

    def _handle(self) -> ctypes.c_void_p:
        if self._h is None:
            raise errors.UsageError("cohort: the stream set '%s' is closed" % self.name,
                                    errors.ERR_USAGE)
        return self._h

    def add(self, key: str, cost: float = 1.0) -> None:
        """Adds a stream (any rank, any time; cost > 0, relative). Adding one
        the set has is a no-op."""
        self._c._check(_lib.lib().cohort_streams_add(self._handle(), _key(key),
                                                    _number(cost, "cost")))

    def remove(self, key: str) -> None:
        """Removes a stream (any rank); its owner is told Revoke. Removing
        one the set does not have is a no-op."""
        self._c._check(_lib.lib().cohort_streams_remove(self._handle(), _key(key)))

    def _event(self, ev: _lib.StreamEvent) -> Event:
        key = ev.key.decode("utf-8", "surrogateescape")
        if ev.type == _lib.CONSTANTS["COHORT_STREAM_ASSIGN"]:
            self._mine[key] = ev.epoch
            return Assign(key, ev.epoch)
        if self._mine.get(key) == ev.epoch:
            del self._mine[key]
        return Revoke(key, ev.epoch)

    def poll(self, timeout: float = 0.0) -> Optional[Event]:
        """The next change of this worker's streams, waiting at most timeout
        seconds (0: only what has arrived); None when none came."""
        ms = math.ceil(_number(timeout, "timeout") * 1000)
        if not 0 <= ms <= 86400 * 1000:
            raise errors.UsageError("cohort: timeout is %r: give 0 to 86400 seconds"
                                    % (timeout,), errors.ERR_USAGE)
        ev = _lib.StreamEvent()
        if self._c._check(_lib.lib().cohort_streams_poll(self._handle(), ctypes.byref(ev),
                                                        ms)) == 0:
            return None
        return self._event(ev)

    def events(self, timeout: float = 0.0) -> Iterator[Event]:
        """Yields Assign and Revoke events for this worker: waits up to
        timeout seconds for the first, then yields every one that has
        arrived, and ends."""
        ev = self.poll(timeout)
        while ev is not None:
            yield ev
            ev = self.poll(0)

    def release(self, event: Event) -> None:
        """This worker has stopped working on event's stream (after a Revoke,
        or giving up an Assign): only now may another worker get it. A
        release of an ownership that already ended is a no-op."""
        if not isinstance(event, (Assign, Revoke)):
            raise errors.UsageError("cohort: release takes an Assign or Revoke event, not %r"
                                    % (event,), errors.ERR_USAGE)
        kind = "COHORT_STREAM_ASSIGN" if isinstance(event, Assign) else "COHORT_STREAM_REVOKE"
        ev = _lib.StreamEvent(_lib.CONSTANTS[kind], _key(event.key),
                              _lib.whole(event.epoch, "the event's epoch", 0, (1 << 64) - 1))
        self._c._check(_lib.lib().cohort_streams_release(self._handle(), ctypes.byref(ev)))
        if self._mine.get(event.key) == event.epoch:
            del self._mine[event.key]

    def report(self, key: str, load: float) -> None:
        """This worker's measured load on a stream it owns (>= 0, one unit for
        the whole set, e.g. ms of GPU time per second). A worker above its
        bound for shed_after seconds gives up its most loaded streams."""
        self._c._check(_lib.lib().cohort_streams_report(self._handle(), _key(key),
                                                       _number(load, "load")))

    def mine(self) -> Dict[str, int]:
        """The streams this worker owns now, key -> epoch (assigned and
        neither revoked nor released), as told by the events so far."""
        return dict(self._mine)

    def status(self) -> StreamsStatus:
        """The set as the coordinator sees it; every event for this worker
        it sent before is then waiting for events()."""
        st = _lib.StreamsStatus()
        self._c._check(_lib.lib().cohort_streams_status(self._handle(), ctypes.byref(st)))
        return StreamsStatus(st.streams, st.moving, st.unplaced, st.moves, st.workers)

    def close(self) -> None:
        """Leaves the set (its streams go at once to the workers still in
        it: stop working on them first) and waits for every rank to close.
        Collective."""
        if self._h is None:
            return
        h, self._h = self._h, None
        self._mine.clear()
        self._c._forget(self)
        self._c._check(_lib.lib().cohort_streams_close(h))

    def abandon(self) -> None:
        """Stops using the set after an exception, without the collective
        close (the worker's streams move when its process exits)."""
        self._h = None
        self._mine.clear()
        self._c._forget(self)
