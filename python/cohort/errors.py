"""cohort.errors - the exceptions of the cohort package.

Every failure libcohort reports is raised as an exception carrying
libcohort's own sentence (what went wrong and what to do), of a class
chosen by its error code (enum cohort_errc in cohort.h). The classes are
re-exported by the package: catch ``cohort.Timeout``, ``cohort.PeerLost``
and so on.
"""

from __future__ import annotations

from typing import Dict, Type

# enum cohort_errc (cohort.h); tests/python/test_prototypes.py checks these
# against the installed header.
OK = 0
ERR_CONFIG = 1
ERR_USAGE = 2
ERR_TIMEOUT = 3
ERR_PEER_LOST = 4
ERR_AUTH = 5
ERR_NETWORK = 6
ERR_RESOURCE = 7
ERR_NCCL = 8
ERR_PMIX = 9


class Error(Exception):
    """A failure reported by cohort.

    ``str(e)`` is cohort's one-line sentence; ``e.code`` the error code of
    cohort.h (``cohort.errors.ERR_*``). Subclasses name the common kinds;
    the others (network, resource, PMIx) are raised as ``Error`` itself.
    """

    def __init__(self, sentence: str, code: int = ERR_CONFIG) -> None:
        super().__init__(sentence)
        self.code = code


class ConfigError(Error):
    """The task's environment or the step's set-up: not in a job step, a bad
    SLURM_* or COHORT_* variable, no secret and no munge, a library that is
    missing or of another API version."""


class UsageError(Error, ValueError):
    """A bad argument or call order on this rank (also a ``ValueError``)."""


class Timeout(Error, TimeoutError):
    """The deadline passed: ranks did not join or reach the call in time
    (also a ``TimeoutError``)."""


class PeerLost(Error, ConnectionError):
    """Another rank's connection closed during a call (it exited or died;
    also a ``ConnectionError``)."""


class AuthError(Error):
    """A peer did not prove it holds the step's secret, or a frame was
    changed, replayed or made up on the way."""


_BY_CODE: Dict[int, Type[Error]] = {
    ERR_CONFIG: ConfigError,
    ERR_USAGE: UsageError,
    ERR_TIMEOUT: Timeout,
    ERR_PEER_LOST: PeerLost,
    ERR_AUTH: AuthError,
}


def from_code(sentence: str, code: int) -> Error:
    """The exception for libcohort's sentence and code."""
    return _BY_CODE.get(code, Error)(sentence, code)
