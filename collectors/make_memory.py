"""`make memory`: where the MXNet MLP's bytes go -> out/mlp-memory.svg + .folded, operators named.

    python -m collectors.make_memory [--out out] [--epochs 1] [--max-batches 300] [--sample 512K] [--live]

Prepares MNIST (once) and runs what a user would: `flamegraph record --memory --mxnet --memory-sample SIZE
-- python -m collectors.train_mlp ...` with record's DWARF stacks. The C library's allocator is sampled
in the process (a sample every SIZE bytes on average) and MXNet's storage allocator probed at every
call, from the end of `import mxnet` on; each [op] frame holds the bytes allocated while that operator
ran, and the bytes-per-operator table (the storage probe's: exact) is printed, checked against MXNet's
storage counters, and goes into the graph's header. `--sample all` probes every C-library call too
(slow: docs/memory.md "Cost"). `--live` draws what is still allocated at the end instead.
Writes out/mlp-memory.json: the command, its seconds, and the check's line.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from flamegraph.io.diagnostics import FlamegraphError

from .driver import driver_parser, run_driver, write_facts
from .mnist import prepare_mnist
from .recipe import MlpRun

CHECK = "bytes check:"


class MemoryGraphFailed(FlamegraphError):
    """`flamegraph record --memory` failed: its own exit code is kept."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.exit_code = code


def parser() -> argparse.ArgumentParser:
    p = driver_parser("collectors.make_memory", __doc__, epochs=1)
    p.add_argument("--max-batches", type=int, default=300, help="batches per epoch (938 is all of MNIST)")
    p.add_argument("--sample", default="512K", help="--memory-sample: bytes between samples (all: every call)")
    p.add_argument("--call-graph", default=None, help="default: record's (dwarf,16384); fp: exact bytes per "
                   "operator at every call, but glibc's own mmaps drawn again (docs/memory.md)")
    p.add_argument("--live", action="store_true", help="what is still allocated at the end")
    return p


def main(argv: list[str] | None = None) -> int:
    return run_driver("make memory", lambda: run(parser().parse_args(argv)))


def record_command(args: argparse.Namespace, mlp: MlpRun) -> tuple[list[str], Path, Path]:
    """The `flamegraph record --memory --mxnet` command line, and the SVG and folded file it writes."""
    live = args.live
    mode = ["--memory", "live" if live else "alloc", "--memory-sample", str(args.sample)]
    name = "mlp-memory-live" if live else "mlp-memory"
    svg, folded = args.out / f"{name}.svg", args.out / f"{name}.folded"
    stacks = ["--call-graph", args.call_graph] if args.call_graph else []
    command = [sys.executable, "-m", "flamegraph", "record", *mode, "--mxnet", *stacks, "--preset", "onednn",
               "--title", "MXNet MLP on MNIST: " + ("bytes still allocated" if live else "bytes allocated"),
               "-o", str(svg), "--folded", str(folded), "--", *mlp.command()]  # fmt: skip
    return command, svg, folded


def run(args: argparse.Namespace) -> int:
    mlp = MlpRun(prepare_mnist(args.cache), epochs=args.epochs, max_batches=args.max_batches, python=args.python)
    args.out.mkdir(parents=True, exist_ok=True)
    command, svg, folded = record_command(args, mlp)
    started = time.monotonic()
    done = subprocess.run(command, env={**os.environ, **mlp.environment()}, stderr=subprocess.PIPE,
                          text=True, check=False)  # fmt: skip
    seconds = time.monotonic() - started
    sys.stderr.write(done.stderr)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise MemoryGraphFailed(f"flamegraph record --memory failed (exit {done.returncode}): {tail}", done.returncode)
    check = next((line.strip() for line in done.stderr.splitlines() if CHECK in line), "")
    write_facts(folded.with_suffix(".json"), {"command": command, "seconds": round(seconds, 1), "check": check})
    print(f"make memory: {svg} and {folded} in {seconds:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
