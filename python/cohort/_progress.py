"""cohort._progress - a work queue's progress on rank 0 (``c.work(...,
progress=True)``): items, not batches, as the coordinator counts them;
tqdm's bar when tqdm is installed, else one plain line to stderr every 10
seconds (committed of total, items/s over the last minute, ETA)."""

from __future__ import annotations

import sys
import time
from collections import deque
from typing import Any, Callable, Deque, Optional, Tuple

LINE_EVERY = 10.0   # seconds between plain lines
ASK_EVERY = 1.0     # seconds between the coordinator's totals
WINDOW = 60.0       # the rate's window


class Progress:
    """Shows the progress of a queue of total items named name; update()
    asks committed() (the coordinator's count) at most every ASK_EVERY s."""

    def __init__(self, name: str, total: int, committed: Callable[[], int],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.name, self.total, self._committed, self._clock = name, total, committed, clock
        self._samples: Deque[Tuple[float, int]] = deque()
        self._asked = self._said = clock()
        self._shown = 0
        self._bar: Optional[Any] = None
        try:
            import tqdm  # type: ignore
            self._bar = tqdm.tqdm(total=total, unit="item", desc=name)
        except ImportError:
            pass

    def line(self, now: float, done: int) -> str:
        """The plain line: committed of total, items/s over the window, ETA."""
        while self._samples and self._samples[0][0] < now - WINDOW:
            self._samples.popleft()
        t0, d0 = self._samples[0] if self._samples else (now, done)
        rate = (done - d0) / (now - t0) if now > t0 else 0.0
        eta = "%.0f s" % ((self.total - done) / rate) if rate > 0 else "unknown"
        return "cohort: work '%s': %d of %d items (%.0f%%), %.0f items/s, ETA %s" % (
            self.name, done, self.total, 100.0 * done / self.total if self.total else 100.0,
            rate, eta)

    def update(self, final: bool = False, done: Optional[int] = None) -> None:
        """Asks the count (unless done is given) and shows it when due;
        final: the last time, shown whatever the time."""
        now = self._clock()
        if not final and now - self._asked < ASK_EVERY:
            return
        self._asked = now
        done = self._committed() if done is None else done
        self._samples.append((now, done))
        if self._bar is not None:
            self._bar.update(done - self._shown)
            self._shown = done
            if final:
                self._bar.close()
        elif final or now - self._said >= LINE_EVERY:
            self._said = now
            print(self.line(now, done), file=sys.stderr, flush=True)
