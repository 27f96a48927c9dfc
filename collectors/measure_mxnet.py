"""Measure what `--mxnet` costs the MLP: throughput with the profiler and oneDNN's verbose log on.

    python -m collectors.measure_mxnet [--epochs 2] [--rounds 3]

No perf here: each round trains once plainly, once with bulk execution off only (what `--mxnet`
changes in MXNet's scheduling), and once through the in-process hook with `--mxnet-dir` (profiler +
verbose log + bulk off), interleaved so that drifts of a shared machine hit all three alike.
Reported per setting: median per-epoch samples/s and the median of the paired losses against the
plain runs, the CPU time of each whole run (robust where throughput swings with the machine's other
jobs), the bytes the profilers wrote (trace + verbose log) per second of training, and the time the
profiler's last dump took at exit (the extra time after the run, inside the process).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from flamegraph.frameworks.jit.hook import hook_command

from .mlp_log import parse_log
from .mnist import prepare_mnist
from .recipe import MlpRun

BULK_OFF = {"MXNET_EXEC_BULK_EXEC_TRAIN": "0", "MXNET_EXEC_BULK_EXEC_INFERENCE": "0"}


CPU_SECONDS: list[float] = []  # CPU time (user + system) of each run, whole process, in order


def train(command: tuple[str, ...], env: dict[str, str]) -> tuple[float, float]:
    """(mean samples/s, training seconds) of one run; its output is not shown. Its CPU time (a
    measure that other jobs on the machine disturb far less than throughput) goes to CPU_SECONDS."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU_SECONDS.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise SystemExit(f"measure_mxnet: training failed (exit {proc.returncode}): {tail}")
    log = parse_log(proc.stdout)
    window = log.window
    return log.mean_rate() or 0.0, (window[1] - window[0]) if window else 0.0


def with_profilers(mlp: MlpRun, directory: Path) -> dict[str, float]:
    command = hook_command(mlp.command(), ("--mxnet-dir", str(directory)))
    assert command is not None
    rate, seconds = train(command, mlp.environment())
    (sidecar,) = directory.glob("mxnet-*.json")
    facts = json.loads(sidecar.read_text())
    written = sum(os.path.getsize(facts[key]) for key in ("profile", "verbose"))
    for path in directory.iterdir():
        path.unlink()
    return {"rate": rate, "mb_per_s": written / 1e6 / max(seconds, 1e-9), "dump_s": facts["dump_seconds"] or 0.0}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m collectors.measure_mxnet", description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    mlp = MlpRun(prepare_mnist(), args.epochs)
    rates: dict[str, list[float]] = {"plain": [], "bulk off": [], "--mxnet": []}
    cpu: dict[str, list[float]] = {name: [] for name in rates}
    profiled: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="flamegraph-mxnet-") as tmp:

        def run(name: str) -> None:
            if name == "plain":
                rates[name].append(train(mlp.command(), mlp.environment())[0])
            elif name == "bulk off":
                rates[name].append(train(mlp.command(), {**mlp.environment(), **BULK_OFF})[0])
            else:
                profiled.append(with_profilers(mlp, Path(tmp)))
                rates[name].append(profiled[-1]["rate"])
            cpu[name].append(CPU_SECONDS[-1])

        names = list(rates)
        for n in range(args.rounds):
            for name in names[n % 3 :] + names[: n % 3]:  # rotated: no setting always runs first
                run(name)
            print(
                f"round {n + 1}: " + ", ".join(f"{k} {v[-1]:,.0f}" for k, v in rates.items()) + " samples/s", flush=True
            )

    def cost(name: str) -> str:
        paired = [100 * (b - r) / b for b, r in zip(rates["plain"], rates[name], strict=True) if b]
        return f"median of paired costs {statistics.median(paired):+.1f} %"

    for name, values in rates.items():
        line = (
            f"{name:<9} median {statistics.median(values):>8,.0f} samples/s ({', '.join(f'{v:,.0f}' for v in values)})"
        )
        print(line + ("" if name == "plain" else f"; {cost(name)}"))
    base_cpu = statistics.median(cpu["plain"])
    for name, values in cpu.items():
        extra = statistics.median(values) - base_cpu
        runs = ", ".join(f"{v:.2f}" for v in values)
        tail = "" if name == "plain" else f"; {extra:+.2f} s"
        print(f"{name:<9} CPU time per run: median {statistics.median(values):.2f} s ({runs}){tail}")
    print(f"--mxnet wrote {statistics.mean(r['mb_per_s'] for r in profiled):.1f} MB/s (trace + verbose log); "
          f"final dump at exit {statistics.mean(r['dump_s'] for r in profiled):.2f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
