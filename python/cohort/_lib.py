"""cohort._lib - libcohort loaded through ctypes: where the library is
found, the check of its API version, the C structs and the prototypes of
every function the package calls.

The prototypes and structs below are checked against the installed
headers (cohort.h, cohort_work.h, cohort_streams.h) by
tests/python/test_prototypes.py, so that they cannot drift from the C API.
"""

from __future__ import annotations

import ctypes
import math
import operator
import os
from ctypes import (POINTER, Structure, c_char, c_char_p, c_double, c_int, c_long, c_size_t,
                    c_uint32, c_uint64, c_void_p)
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from . import errors

# The libcohort API this package was written for (COHORT_API_VERSION):
# major * 1000 + minor. A library of the same major and at least this minor
# will do.
API_VERSION = 1003
SONAME = "libcohort.so.0"


class Opts(Structure):
    """struct cohort_opts"""
    _fields_ = [("size", c_size_t), ("timeout_s", c_int)]


class WorkOpts(Structure):
    """struct cohort_work_opts"""
    _fields_ = [("size", c_size_t), ("journal", c_char_p), ("lease_timeout_s", c_int),
                ("max_attempts", c_int), ("output", c_char_p)]


class WorkStatus(Structure):
    """struct cohort_work_status"""
    _fields_ = [("total", c_uint64), ("committed", c_uint64), ("leased", c_uint64),
                ("queued", c_uint64), ("set_aside", c_uint64)]


class StreamEvent(Structure):
    """struct cohort_stream_event"""
    _fields_ = [("type", c_int), ("key", c_char * 256), ("epoch", c_uint64)]


class StreamsOpts(Structure):
    """struct cohort_streams_opts"""
    _fields_ = [("size", c_size_t), ("epsilon", c_double), ("lease_timeout_s", c_int),
                ("shed_after_s", c_int)]


class StreamsStatus(Structure):
    """struct cohort_streams_status"""
    _fields_ = [("streams", c_uint64), ("moving", c_uint64), ("unplaced", c_uint64),
                ("moves", c_uint64), ("workers", c_uint64)]


STRUCTS: Dict[str, Any] = {
    "cohort_opts": Opts, "cohort_work_opts": WorkOpts, "cohort_work_status": WorkStatus,
    "cohort_stream_event": StreamEvent, "cohort_streams_opts": StreamsOpts,
    "cohort_streams_status": StreamsStatus,
}

# Constants of the headers (checked like the prototypes).
CONSTANTS: Dict[str, int] = {
    "COHORT_WORK_STALE": 1,
    "COHORT_WORK_OUTPUT_BYTES": 0,
    "COHORT_WORK_OUTPUT_PICKLE": 1,
    "COHORT_WORK_DRAINED": 2,
    "COHORT_STREAM_ASSIGN": 1,
    "COHORT_STREAM_REVOKE": 2,
}

_H = c_void_p  # struct cohort *, struct cohort_work *, struct cohort_streams *
_IDS = POINTER(c_uint64)

# name: (return type, argument types)
FUNCTIONS: Dict[str, Tuple[Any, Sequence[Any]]] = {
    "cohort_api_version": (c_int, ()),
    "cohort_init": (c_int, (POINTER(_H), POINTER(Opts))),
    "cohort_rank": (c_int, (_H,)),
    "cohort_size": (c_int, (_H,)),
    "cohort_local_rank": (c_int, (_H,)),
    "cohort_local_size": (c_int, (_H,)),
    "cohort_node_rank": (c_int, (_H,)),
    "cohort_node_count": (c_int, (_H,)),
    "cohort_set_timeout": (c_int, (_H, c_int)),
    "cohort_barrier": (c_int, (_H,)),
    "cohort_bcast": (c_int, (_H, c_void_p, c_size_t, c_int)),
    "cohort_allgather": (c_int, (_H, c_void_p, c_size_t, c_void_p)),
    "cohort_bootstrap": (c_char_p, (_H,)),
    "cohort_error": (c_char_p, (_H,)),
    "cohort_error_code": (c_int, (_H,)),
    "cohort_finalize": (c_int, (_H,)),
    "cohort_work_open": (c_int, (_H, c_char_p, c_uint64, POINTER(WorkOpts), POINTER(_H))),
    "cohort_work_lease": (c_long, (_H, _IDS, c_size_t)),
    "cohort_work_commit": (c_int, (_H, _IDS, c_size_t)),
    "cohort_work_commit_output": (c_int, (_H, _IDS, c_size_t, c_void_p, c_size_t)),
    "cohort_work_commit_output_kind": (c_int, (_H, _IDS, c_size_t, c_void_p, c_size_t,
                                               c_uint32)),
    "cohort_work_drain": (c_int, (_H,)),
    "cohort_work_fail": (c_int, (_H, _IDS, c_size_t)),
    "cohort_work_stale_ids": (_IDS, (_H, POINTER(c_size_t))),
    "cohort_work_extend": (c_int, (_H,)),
    "cohort_work_status": (c_int, (_H, POINTER(WorkStatus))),
    "cohort_work_close": (c_int, (_H,)),
    "cohort_streams_open": (c_int, (_H, c_char_p, c_double, POINTER(_H))),
    "cohort_streams_open_opts": (c_int, (_H, c_char_p, c_double, POINTER(StreamsOpts),
                                         POINTER(_H))),
    "cohort_streams_add": (c_int, (_H, c_char_p, c_double)),
    "cohort_streams_remove": (c_int, (_H, c_char_p)),
    "cohort_streams_poll": (c_int, (_H, POINTER(StreamEvent), c_int)),
    "cohort_streams_release": (c_int, (_H, POINTER(StreamEvent))),
    "cohort_streams_report": (c_int, (_H, c_char_p, c_double)),
    "cohort_streams_status": (c_int, (_H, POINTER(StreamsStatus))),
    "cohort_streams_close": (c_int, (_H,)),
}

_lib: Optional[ctypes.CDLL] = None


def _candidates() -> Sequence[str]:
    """Where libcohort is looked for: $COHORT_LIBRARY alone when set; else
    where make install put it, then the dynamic linker's own search."""
    env = os.environ.get("COHORT_LIBRARY")
    if env:
        return [env]
    found = []
    try:
        from . import _config  # written by make install
        found.append(os.path.join(_config.LIBDIR, SONAME))
    except ImportError:
        pass
    found.append(SONAME)
    return found


def _load() -> ctypes.CDLL:
    tried = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append(str(e))
    raise errors.ConfigError(
        "cohort: cannot load libcohort (%s): install cohort (make install), or set "
        "COHORT_LIBRARY to the path of %s" % ("; ".join(tried), SONAME), errors.ERR_CONFIG)


def _compatible(have: int, want: int = API_VERSION) -> bool:
    return have // 1000 == want // 1000 and have % 1000 >= want % 1000


def _bind(lib: ctypes.CDLL) -> None:
    for name, (res, args) in FUNCTIONS.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = list(args)


def lib() -> ctypes.CDLL:
    """libcohort, loaded and checked once; raises ConfigError when it cannot
    be loaded or its API version is not one this package can use."""
    global _lib
    if _lib is not None:
        return _lib
    candidate = _load()
    try:
        version = candidate.cohort_api_version
    except AttributeError:
        raise errors.ConfigError("cohort: %s has no cohort_api_version: not libcohort, or "
                                 "one older than its API versions" % candidate._name,
                                 errors.ERR_CONFIG) from None
    version.restype, version.argtypes = c_int, []
    have = version()
    if not _compatible(have):
        raise errors.ConfigError(
            "cohort: the Python package needs libcohort API %d.%d (or a later %d.x), but %s "
            "is API %d.%d: install the package and the library of one cohort version"
            % (API_VERSION // 1000, API_VERSION % 1000, API_VERSION // 1000, candidate._name,
               have // 1000, have % 1000), errors.ERR_CONFIG)
    _bind(candidate)
    _lib = candidate
    return _lib


def fail(handle: Any) -> errors.Error:
    """The exception for the last failure on a struct cohort handle."""
    lc = lib()
    sentence = lc.cohort_error(handle) or b""
    return errors.from_code(sentence.decode("utf-8", "replace") or "cohort: failed",
                            lc.cohort_error_code(handle))


def seconds(value: Optional[float], what: str, maximum: int = 86400) -> int:
    """A duration in whole seconds for the C API (rounded up), 1 to
    maximum; None: 0 (the C default). Raises UsageError otherwise."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value) or not 0 < value <= maximum:
        raise errors.UsageError("cohort: %s is %r: give seconds, more than 0 and at most %d"
                                % (what, value, maximum), errors.ERR_USAGE)
    return int(math.ceil(value))


def whole(value: Any, what: str, low: int, high: int) -> int:
    """An integer (anything with __index__, e.g. numpy's) from low to high,
    else UsageError."""
    try:
        if isinstance(value, bool):
            raise TypeError
        n = operator.index(value)
    except TypeError:
        n = None
    if n is None or not low <= n <= high:
        raise errors.UsageError("cohort: %s is %r: give a whole number from %d to %d"
                                % (what, value, low, high), errors.ERR_USAGE)
    return n


def name_bytes(value: Any, what: str) -> bytes:
    """A queue's or set's name for C (str without NUL), else UsageError."""
    try:
        if isinstance(value, str) and "\0" not in value:
            return value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        pass
    raise errors.UsageError("cohort: %s is %r: give a str without NUL" % (what, value),
                            errors.ERR_USAGE)


class Scoped:
    """A context manager for the package's handles: close() when the block
    ends normally, abandon() (no collective call) when it raises."""

    close: Callable[[], None]
    abandon: Callable[[], None]

    def __enter__(self) -> Any:
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        if kind is None:
            self.close()
        else:
            self.abandon()
