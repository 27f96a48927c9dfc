"""What every `make` driver shares: the workload's options, one line and an exit code for our errors,
and the JSON file of measured facts.

    p = driver_parser("collectors.make_offcpu", __doc__, epochs=3)   # --out, --epochs, --cache
    return run_driver("make offcpu", lambda: report(run(p.parse_args(argv))))
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from flamegraph.io.diagnostics import FlamegraphError
from flamegraph.io.writer import atomic_output


def driver_parser(module: str, doc: str, epochs: int = 3, out: str = "out") -> argparse.ArgumentParser:
    """The options every driver has: where its files go, how long it trains, where MNIST is kept."""
    p = argparse.ArgumentParser(prog=f"python -m {module}", description=doc.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path(out), help=f"output directory (default {out})")
    p.add_argument("--epochs", type=int, default=epochs)
    p.add_argument("--cache", type=Path, default=None, help="MNIST cache (default ~/.cache/flamegraph)")
    p.add_argument("--python", default=os.environ.get("WORKLOAD_PYTHON") or sys.executable,
                   help="the interpreter that trains (default $WORKLOAD_PYTHON, else this one); Python 3.12+ "
                   "with mxnet 1.9.1 gives Python frames (make workload-venv)")  # fmt: skip
    return p


def run_driver(name: str, body: Callable[[], int]) -> int:
    """`body`'s exit status; our errors (a failed training, no perf, no MNIST...) as one line and their code."""
    try:
        return body()
    except FlamegraphError as err:
        print(f"{name}: {err}", file=sys.stderr)
        return err.exit_code


def write_facts(path: Path, facts: dict[str, object]) -> None:
    """The driver's measured facts, for the README's figures and the tests."""
    with atomic_output(path) as out:
        out.write((json.dumps(facts, indent=2) + "\n").encode())
