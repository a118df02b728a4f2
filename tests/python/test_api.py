"""The package outside a step: loading libcohort and its version check,
the exception classes, init outside a step, python3 -m cohort info."""

import json
import os
import subprocess
import sys

import pytest

import cohort
from cohort import _lib, errors
from conftest import HEADERS, SRC, step

FIXTURES = os.path.join(SRC, "tests", "fixtures")


def run_py(code, **env):
    e = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    e.update(env)
    got = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=e, check=False)
    return got.returncode, got.stdout.decode(), got.stderr.decode()


def header_api_version():
    text = open(os.path.join(HEADERS, "cohort.h")).read()
    major = int(text.split("#define COHORT_API_VERSION_MAJOR", 1)[1].split()[0])
    minor = int(text.split("#define COHORT_API_VERSION_MINOR", 1)[1].split()[0])
    return major * 1000 + minor


def test_api_version_is_the_headers():
    assert cohort.api_version() == header_api_version() == cohort.API_VERSION


def fake_library(tmp, version):
    src = os.path.join(tmp, "fake.c")
    with open(src, "w") as f:
        f.write("int cohort_api_version(void) { return %d; }\n" % version)
    lib = os.path.join(tmp, "libfake%d.so" % version)
    subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-o", lib, src], check=True)
    return lib


@pytest.mark.parametrize("version", [2000, 1002, 0])
def test_another_api_version_is_refused_in_one_line(scratch, version):
    lib = fake_library(scratch, version)
    rc, out, err = run_py("import cohort\ntry:\n    cohort.init()\nexcept cohort.ConfigError "
                          "as e:\n    print(e)\n", COHORT_LIBRARY=lib)
    assert rc == 0 and err == "", err
    want = ("cohort: the Python package needs libcohort API 1.3 (or a later 1.x), but %s is "
            "API %d.%d: install the package and the library of one cohort version\n"
            % (lib, version // 1000, version % 1000))
    assert out == want


def test_compatible_versions():
    assert _lib._compatible(1003) and _lib._compatible(1007)
    assert not _lib._compatible(1002) and not _lib._compatible(2003)
    assert not _lib._compatible(0)


def test_missing_library(scratch):
    rc, out, err = run_py("import cohort\ntry:\n    cohort.init()\nexcept cohort.ConfigError "
                          "as e:\n    print(e)\n", COHORT_LIBRARY=os.path.join(scratch, "no.so"))
    assert rc == 0 and out.startswith("cohort: cannot load libcohort (") and \
        "set COHORT_LIBRARY to the path of libcohort.so.0" in out and out.count("\n") == 1, out


def test_not_libcohort(scratch):
    src = os.path.join(scratch, "other.c")
    with open(src, "w") as f:
        f.write("int other(void) { return 1; }\n")
    lib = os.path.join(scratch, "libother.so")
    subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-o", lib, src], check=True)
    rc, out, err = run_py("import cohort\ntry:\n    cohort.api_version()\nexcept "
                          "cohort.ConfigError as e:\n    print(e)\n", COHORT_LIBRARY=lib)
    assert out == "cohort: %s has no cohort_api_version: not libcohort, or one older than " \
        "its API versions\n" % lib


def test_exception_classes():
    for cls, code in ((cohort.ConfigError, 1), (cohort.UsageError, 2), (cohort.Timeout, 3),
                      (cohort.PeerLost, 4), (cohort.AuthError, 5)):
        e = errors.from_code("cohort: what", code)
        assert type(e) is cls and issubclass(cls, cohort.Error) and e.code == code
        assert str(e) == "cohort: what"
    for code in (6, 7, 8, 9, 42):
        assert type(errors.from_code("x", code)) is cohort.Error
    assert issubclass(cohort.UsageError, ValueError)
    assert issubclass(cohort.Timeout, TimeoutError) and issubclass(cohort.PeerLost, ConnectionError)


def test_init_outside_a_step():
    rc, out, err = run_py("import cohort\ntry:\n    cohort.init()\nexcept cohort.ConfigError "
                          "as e:\n    print(e.code, e)\n")
    assert rc == 0 and out.startswith("1 cohort: ") and out.count("\n") == 1, (out, err)


def test_init_bad_timeout():
    with pytest.raises(cohort.UsageError, match="timeout is -5: give seconds, more than 0"):
        cohort.init(timeout=-5)
    with pytest.raises(cohort.UsageError, match="at most 86400"):
        cohort.init(timeout=2**32 + 7)


def test_info_offline():
    args = ["info", "--env", os.path.join(FIXTURES, "demo.env"), "--topology",
            os.path.join(FIXTURES, "dgx-a100.xml")]
    got = subprocess.run([sys.executable, "-m", "cohort"] + args, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, check=False)
    out = got.stdout.decode()
    assert got.returncode == 0, got.stderr
    assert "rank 9 of 16, local 1 of 8, node 1" in out
    assert "GPU      0000:0f:00.0 (CUDA device 1, CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7)" in out
    assert "CPUs     56-63,184-191 (NUMA 3), OMP_NUM_THREADS=8" in out
    j = subprocess.run([sys.executable, "-m", "cohort"] + args + ["--json", "--all", "--mode",
                                                                  "infer"],
                       stdout=subprocess.PIPE, check=True)
    plan = json.loads(j.stdout)
    assert plan["mode"] == "infer" and [t["rank"] for t in plan["tasks"]] == list(range(8, 16))


def test_info_outside_a_step():
    e = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    got = subprocess.run([sys.executable, "-m", "cohort", "info"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=e, check=False)
    assert got.returncode == 1 and got.stdout == b""
    assert got.stderr.decode() == "cohort-info: SLURM_JOB_ID is not set\n"
    bad = subprocess.run([sys.executable, "-m", "cohort", "plan"], stderr=subprocess.PIPE,
                         check=False)
    assert bad.returncode == 2 and bad.stderr.startswith(b"usage: python3 -m cohort info")


def test_plan_in_a_step():
    s = step(4, 2, "info")
    assert s.rc == 0, s.out
    for r, g in enumerate(s.every(4)):
        assert (g["rank"], g["plan_rank"], g["world"]) == (r, r, 4)
