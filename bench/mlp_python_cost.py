"""What Python frames cost the MXNet MLP: interleaved pairs (A B A B ...) of the trainer, not recorded.

    python bench/mlp_python_cost.py --python .venv-312/bin/python [--compare perf-support|engine]
                                    [--pairs 5] [--epochs 1] [--max-batches 0]

--compare perf-support  A = CPython's perf support on (PYTHONPERFSUPPORT=1, what record turns on for a
                        Python 3.12+ command), B = off; the threaded engine both times
--compare engine        A = MXNET_ENGINE_TYPE=NaiveEngine (what `make flamegraph` trains with on 3.12+:
                        operators on the Python thread), B = MXNet's default threaded engine; perf
                        support on both times
Each run is the trainer (`python -m collectors.train_mlp`) on the cached MNIST; per run it reads the
training throughput the trainer prints (samples/s, epoch mean) and the process's CPU time (user+sys,
from wait4). Prints each pair, then per figure the median A/B ratio and the spread (min-max of the
pairs), with the load average before and after: on a shared machine only the ratios mean anything.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from collectors.mlp_log import parse_log  # noqa: E402
from collectors.mnist import prepare_mnist  # noqa: E402

THREADED = {"MXNET_ENGINE_TYPE": "ThreadedEnginePerDevice"}  # MXNet's default, said explicitly
COMPARISONS: dict[str, tuple[tuple[str, dict[str, str]], tuple[str, dict[str, str]]]] = {
    "perf-support": (
        ("PYTHONPERFSUPPORT=1", {"PYTHONPERFSUPPORT": "1", **THREADED}),
        ("off", {"PYTHONPERFSUPPORT": "0", **THREADED}),
    ),
    "engine": (
        ("NaiveEngine", {"PYTHONPERFSUPPORT": "1", "MXNET_ENGINE_TYPE": "NaiveEngine"}),
        ("threaded", {"PYTHONPERFSUPPORT": "1", **THREADED}),
    ),
}


@dataclass(frozen=True)
class Run:
    rate: float  # samples/s, epoch mean
    cpu: float  # user+sys seconds of the whole process (start-up included)
    val_acc: float | None


def train(python: str, data: Path, epochs: int, max_batches: int, env: dict[str, str]) -> Run:
    """One trainer run; its CPU time is what RUSAGE_CHILDREN grew by (the only child running)."""
    argv = [python, "-m", "collectors.train_mlp", "--data", str(data), "--epochs", str(epochs)]
    if max_batches:
        argv += ["--max-batches", str(max_batches)]
    before = children_cpu()
    proc = subprocess.run(argv, env={**os.environ, "PYTHONPATH": str(REPO), **env}, capture_output=True, text=True)
    cpu = children_cpu() - before
    if proc.returncode:
        tail = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        sys.exit(f"mlp_python_cost: the trainer failed (exit {proc.returncode}): {tail}")
    log = parse_log(proc.stdout)
    rate = log.mean_rate()
    if rate is None:
        sys.exit("mlp_python_cost: the trainer printed no epoch line")
    return Run(rate, cpu, log.val_acc)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.3f}, spread {min(values):.3f}-{max(values):.3f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/mlp_python_cost.py", description=__doc__.splitlines()[0])
    p.add_argument("--python", required=True, help="the trainer's interpreter: Python 3.12+ with mxnet 1.9.1")
    p.add_argument("--compare", choices=sorted(COMPARISONS), default="perf-support")
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max-batches", type=int, default=0, help="stop each epoch after N batches (0: all)")
    p.add_argument("--cache", type=Path, default=None, help="MNIST cache (default ~/.cache/flamegraph)")
    args = p.parse_args(argv)
    data = prepare_mnist(args.cache)
    (name_a, env_a), (name_b, env_b) = COMPARISONS[args.compare]
    load = os.getloadavg()
    print(f"{args.compare}: A = {name_a}, B = {name_b}; {args.pairs} pairs of {args.epochs} epoch(s); "
          f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}", flush=True)  # fmt: skip
    rates, cpus = [], []
    for pair in range(args.pairs):
        first = train(args.python, data, args.epochs, args.max_batches, env_a)
        second = train(args.python, data, args.epochs, args.max_batches, env_b)
        rates.append(first.rate / second.rate)
        cpus.append(first.cpu / second.cpu)
        print(f"  pair {pair + 1}: A {first.rate:,.0f} samples/s {first.cpu:.2f} s CPU (val-acc {first.val_acc}), "
              f"B {second.rate:,.0f} samples/s {second.cpu:.2f} s CPU (val-acc {second.val_acc})", flush=True)
    load = os.getloadavg()
    print(f"A/B throughput (samples/s, epoch mean): {spread(rates)}")
    print(f"A/B process CPU (user+sys):             {spread(cpus)}")
    print(f"load average after: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
