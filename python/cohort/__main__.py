"""python3 -m cohort: the package's command line (``info``: this task's
plan and ranks)."""

import sys

from .info import main


def _run(argv: list) -> int:
    if len(argv) >= 1 and argv[0] == "info":
        return main(argv[1:])
    print("usage: python3 -m cohort info [--all] [--json] [--mode train|infer] "
          "[--topology XML] [--env FILE]", file=sys.stderr)
    return 2


sys.exit(_run(sys.argv[1:]))
