# torch_store_tests.py - PyTorch's own store tests, run from an unpacked
# PyTorch source (Debian's pytorch source package: `apt-get source
# pytorch`), never copied here, against cohort's store: each test gets a
# fresh node agent and holder (tests/store/cohort_agent.py), and the
# tests' server fixture is pointed at the agent (a client of it, in the
# server's place); their assertions are unchanged.
#   py SRC       test/distributed/test_store.py's TCPStoreTest and
#                PrefixTCPStoreTest, with torch.testing's create_tcp_store
#                answering a client of a fresh agent;
#   cpp BINARY   a build of test/cpp/c10d/TCPStoreTest.cpp whose
#                _createServer dials the port in COHORT_STORE_TEST_PORT
#                (tests/store-torch.sh builds it), one test per agent.
# Prints "ok NAME" or "not ok NAME: why" per test, then "done P of N".
import os
import subprocess
import sys
import types
import unittest
from datetime import timedelta

from cohort_agent import Agent

# Tests of torch's own server's socket (two servers on one port, an RPC
# sharing the server's socket) and its shutdown: nothing of a store's
# answers, and not the agent's to mimic (it outlives every client).
NOT_OURS = {
    "test_address_already_in_use": "two of torch's servers on one port",
    "test_multitenancy": "two of torch's servers on one port",
    "test_init_pg_and_rpc_with_same_socket": "torch's server's socket shared with RPC",
    "testCleanShutdown": "torch's server destroyed under a client",
    "testMultiTenantStores": "two of torch's servers on one port",
}
CPP_TESTS = ["testHelper", "testHelperPrefix", "testWatchKeyCallback",
             "testWatchKeyCallbackWithPrefix", "testKeyEmptyUpdate", "testKeyUpdate",
             "testKeyCreate", "testKeyAdd", "testKeyDelete", "testCleanShutdown",
             "testMultiTenantStores"]


def report(results):
    passed = sum(1 for ok in results.values() if ok is True)
    for name, ok in results.items():
        print(f"ok {name}" if ok is True else f"skip {name}: {ok[1]}" if ok[0] == "skip"
              else f"not ok {name}: {ok[1]}", flush=True)
    ran = sum(1 for ok in results.values() if ok is True or ok[0] != "skip")
    print(f"done {passed} of {ran}")
    return passed == ran


def run_py(src):
    sys.path.insert(0, os.path.join(src, "test", "distributed"))
    sys.argv = sys.argv[:1]
    try:
        import expecttest  # noqa: F401 (torch.testing's base class; not in Debian 12)
    except ImportError:  # its TestCase adds assertExpectedInline, which no store test uses
        sys.modules["expecttest"] = types.SimpleNamespace(TestCase=unittest.TestCase, ACCEPT=False)
    import torch.distributed as dist
    import test_store
    agents = []

    def create_tcp_store(addr="localhost", world_size=1, is_master=True,
                         timeout=timedelta(minutes=5), wait_for_workers=True, jit_class=False):
        agent = Agent(per=4)
        agents.append(agent)
        return dist.TCPStore("127.0.0.1", agent.port, world_size, False, timeout=timeout)

    test_store.create_tcp_store = create_tcp_store
    results = {}
    for cls in (test_store.TCPStoreTest, test_store.PrefixTCPStoreTest):
        for name in unittest.TestLoader().getTestCaseNames(cls):
            full = f"{cls.__name__}.{name}"
            if name in NOT_OURS:
                results[full] = ("skip", NOT_OURS[name])
                continue
            r = unittest.TestResult()
            cls(name).run(r)
            while agents:
                agents.pop().close()
            bad = r.errors + r.failures
            results[full] = True if r.wasSuccessful() else (
                "fail", bad[0][1].strip().splitlines()[-1][:300] if bad else "skipped")
    return report(results)


def run_cpp(binary):
    results = {}
    for name in CPP_TESTS:
        full = f"TCPStoreTest.{name}"
        if name in NOT_OURS:
            results[full] = ("skip", NOT_OURS[name])
            continue
        agent = Agent(per=4)
        try:
            p = subprocess.run([binary, f"--gtest_filter={full}"], capture_output=True,
                               timeout=120, env=dict(os.environ,
                                                     COHORT_STORE_TEST_PORT=str(agent.port)))
            out = p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")
            results[full] = True if p.returncode == 0 and "[  PASSED  ] 1 test" in out else (
                "fail", f"exit {p.returncode}: " + " ".join(out.split()[-40:])[:400])
        except subprocess.TimeoutExpired:
            results[full] = ("fail", "still running after 120 s (hung)")
        finally:
            agent.close()
    return report(results)


if __name__ == "__main__":
    ok = run_py(sys.argv[2]) if sys.argv[1] == "py" else run_cpp(sys.argv[2])
    sys.exit(0 if ok else 1)
