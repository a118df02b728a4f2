"""cohort.info - this task's plan as cohort makes it (cohort-info's JSON)
and what the process really has, for scripts that want to see it; the
``python3 -m cohort info`` command."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from typing import Any, Dict, List, Optional

from . import errors


def _tool() -> str:
    try:
        from . import _config  # written by make install
        path = os.path.join(_config.BINDIR, "cohort-info")
        if os.access(path, os.X_OK):
            return path
    except ImportError:
        pass
    found = shutil.which("cohort-info")
    if not found:
        raise errors.ConfigError("cohort: cohort-info is not installed here, nor on PATH: "
                                 "install cohort (make install)", errors.ERR_CONFIG)
    return found


def plan(all_tasks: bool = False, mode: Optional[str] = None, topology: Optional[str] = None,
         env_file: Optional[str] = None) -> Dict[str, Any]:
    """The plan cohort makes for this task (every task of this node with
    all_tasks) as cohort-info's JSON: {"mode", "tasks": [{"rank",
    "local_rank", "node_rank", "world_size", "gpus", "cuda_device", "cpus",
    "numa", "env", ...}], "notes"}. mode: "train" or "infer" (default
    $COHORT_MODE, else train); topology: an hwloc XML instead of this
    machine; env_file: NAME=VALUE lines instead of this process's
    environment. Needs no other rank. Raises ConfigError with cohort-info's
    line outside a step or on bad input."""
    cmd = [_tool(), "--format", "json"]
    if all_tasks:
        cmd.append("--all")
    for flag, value in (("--mode", mode), ("--topology", topology), ("--env", env_file)):
        if value is not None:
            cmd += [flag, value]
    got = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if got.returncode != 0:
        line = got.stderr.decode("utf-8", "replace").strip().splitlines()
        raise errors.ConfigError(line[-1] if line else "cohort: cohort-info failed (status %d)"
                                 % got.returncode, errors.ERR_CONFIG)
    result: Dict[str, Any] = json.loads(got.stdout)
    return result


def _task_lines(t: Dict[str, Any]) -> List[str]:
    gpus = ", ".join(g or "(not seen by hwloc)" for g in t.get("gpus") or []) or "none"
    numa = ",".join(str(n) for n in t.get("numa") or []) or "-"
    lines = ["rank %d of %d, local %d of %d, node %d" % (
        t["rank"], t["world_size"], t["local_rank"], t["local_world_size"], t["node_rank"])]
    lines.append("  GPU      %s (CUDA device %s, CUDA_VISIBLE_DEVICES=%s)" % (
        gpus, t.get("cuda_device"), t.get("cuda_visible_devices") or "-"))
    lines.append("  CPUs     %s (NUMA %s), OMP_NUM_THREADS=%s" % (
        t.get("cpus") or "-", numa, t.get("omp_num_threads")))
    lines.append("  master   %s:%s, bootstrap port %s" % (
        t.get("master_addr"), t.get("master_port"), t.get("bootstrap_port")))
    if t.get("kept"):
        lines.append("  kept     %s (set by the user)" % ", ".join(sorted(t["kept"])))
    return lines


def _process_line() -> str:
    cpus = sorted(os.sched_getaffinity(0))
    ranges, start = [], None
    for i, c in enumerate(cpus):
        if start is None:
            start = c
        if i + 1 == len(cpus) or cpus[i + 1] != c + 1:
            ranges.append(str(start) if start == c else "%d-%d" % (start, c))
            start = None
    return "this process: CPUs %s, CUDA_VISIBLE_DEVICES=%s, RANK=%s" % (
        ",".join(ranges), os.environ.get("CUDA_VISIBLE_DEVICES", "-"),
        os.environ.get("RANK", "-"))


def main(argv: Optional[List[str]] = None) -> int:
    """python3 -m cohort info [--all] [--json] [--mode M] [--topology XML] [--env FILE]"""
    p = argparse.ArgumentParser(prog="python3 -m cohort info",
                                description="this task's plan and ranks, as cohort makes them")
    p.add_argument("--all", action="store_true", help="every task of this node")
    p.add_argument("--json", action="store_true", help="cohort-info's JSON")
    p.add_argument("--mode", choices=("train", "infer"))
    p.add_argument("--topology", metavar="XML", help="an hwloc XML instead of this machine")
    p.add_argument("--env", metavar="FILE", help="a task environment (NAME=VALUE lines)")
    a = p.parse_args(argv)
    try:
        got = plan(a.all, a.mode, a.topology, a.env)
    except errors.Error as e:
        print(e, file=sys.stderr)
        return 1
    if a.json:
        print(json.dumps(got, indent=2))
        return 0
    print("mode %s" % got.get("mode"))
    for t in got.get("tasks", []):
        print("\n".join(_task_lines(t)))
    for note in got.get("notes", []):
        print("note: %s" % note)
    if a.env is None:
        print(_process_line())
    return 0
