"""cohort - the ranks of a Slurm job step, collectives between them, work
queues and stream sets, for Python scripts (over libcohort through ctypes).

    import cohort

    with cohort.init() as c:                   # every task of the step
        print(c.rank, c.size, c.local_rank, c.node_rank)
        config = c.bcast(config if c.rank == 0 else None)
        with c.work("images", len(files), journal="q.journal", output="out") as work:
            for batch in work:                 # ids, at this worker's speed
                work.save(classify([files[i] for i in batch]))  # published once

    for ids, labels in cohort.read_output("out"): ...

Failures raise cohort.Error (or Timeout, PeerLost, AuthError, ConfigError,
UsageError) with cohort's one-line sentence. See docs/python.md.
"""

from ._core import Cohort, init
from ._lib import API_VERSION
from .errors import AuthError, ConfigError, Error, PeerLost, Timeout, UsageError
from .info import plan
from .output import read_output
from .streams import Assign, Event, Revoke, Streams, StreamsStatus
from .work import Work, WorkStatus

__all__ = ["init", "Cohort", "Work", "WorkStatus", "Streams", "StreamsStatus", "Assign",
           "Revoke", "Event", "Error", "Timeout", "PeerLost", "AuthError", "ConfigError",
           "UsageError", "plan", "read_output", "api_version", "API_VERSION"]


def api_version() -> int:
    """The API version of the libcohort loaded (major * 1000 + minor).
    Raises ConfigError when it cannot be loaded or is not one this package
    can use (API_VERSION: the one it was written for)."""
    from . import _lib
    return int(_lib.lib().cohort_api_version())
