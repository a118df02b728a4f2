"""conftest.py - what the Python package's tests share: the build tree's
paths, and step(): a simulated step of ranks.py scenarios
(tests/bootstrap/spawn), its RESULT lines parsed by rank."""

import json
import os
import subprocess
import sys
import tempfile

import pytest

SRC = os.environ.get("COHORT_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("COHORT_BUILDDIR", SRC)
SPAWN = os.path.join(BUILD, "tests", "bootstrap", "spawn")
RANKS = os.path.join(SRC, "tests", "python", "ranks.py")
HEADERS = os.environ.get("COHORT_INCLUDEDIR", os.path.join(SRC, "runtime", "libcohort"))


class Step:
    """A finished simulated step: its exit status, output, and each rank's
    results (ranks.py's JSON lines in DIR/result.RANK)."""

    def __init__(self, rc, out, directory):
        self.rc, self.out = rc, out
        self.by_rank = {}
        for name in os.listdir(directory):
            if name.startswith("result."):
                with open(os.path.join(directory, name)) as f:
                    self.by_rank[int(name[7:])] = [json.loads(line) for line in f]

    def one(self, rank):
        """The rank's single RESULT (fails the test, showing the output, when not one)."""
        got = self.by_rank.get(rank, [])
        assert len(got) == 1, "rank %d gave %d results:\n%s" % (rank, len(got), self.out[-3000:])
        return got[0]

    def every(self, size):
        return [self.one(r) for r in range(size)]


@pytest.fixture
def scratch():
    with tempfile.TemporaryDirectory(prefix="cohort-py-") as d:
        yield d


def step(n, nodes, scenario, *spawn_args, out_dir=None, **env):
    """Runs ranks.py SCENARIO on n ranks over nodes simulated nodes, with
    out_dir (else a directory of its own) as $PY_OUT; keyword arguments are
    environment variables for every rank."""
    with tempfile.TemporaryDirectory(prefix="cohort-py-") as own:
        d = out_dir or own
        for name in os.listdir(d):
            if name.startswith("result."):
                os.unlink(os.path.join(d, name))
        e = dict(os.environ)
        e.update({k: str(v) for k, v in env.items()})
        e["PY_OUT"] = d
        got = subprocess.run([SPAWN, str(n), str(nodes), *spawn_args, "--", sys.executable,
                              RANKS, scenario], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             env=e, check=False)
        return Step(got.returncode, got.stdout.decode("utf-8", "replace"), d)
