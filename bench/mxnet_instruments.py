"""What `--mxnet`'s instruments cost the MLP, counted sample by sample (a loaded machine bends it little).

    python bench/mxnet_instruments.py [--epochs 2] [--runs 2] [-F 999]

Each run is `flamegraph record --mxnet -F 999 --call-graph dwarf,16384` of the trainer; the join marks the
instruments' own work with `[instrumentation]` frames (flamegraph/frameworks/mxnet/instruments.py), and
this prints, per instrument, its samples, their share of the training's CPU (the whole run's samples over
the trainer's per-epoch CPU seconds, all threads, at the sampling rate: the instruments start once mxnet
is imported, the last dump at exit adds a little), the part in the kernel, and for the verbose log the print
path on the program's threads apart from the drainer (the process that empties its pipe). Say the load
(printed) when quoting. `make mxnet-instruments` runs it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from collectors.mlp_log import parse_log  # noqa: E402
from collectors.mnist import prepare_mnist  # noqa: E402
from flamegraph.frameworks.mxnet.instruments import VERBOSE  # noqa: E402
from flamegraph.model import INSTRUMENTATION  # noqa: E402

DRAINER = "oneDNN verbose log: the drainer (its own process)"


def tally(folded: Path) -> Counter[tuple[str, bool]]:
    """(instrument, in the kernel?) -> samples; the drainer's stacks (marked at their root) apart."""
    found: Counter[tuple[str, bool]] = Counter()
    with open(folded) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            for i, frame in enumerate(frames):
                if frame.startswith(INSTRUMENTATION):
                    name = DRAINER if frame == VERBOSE and i == 1 else frame[len(INSTRUMENTATION) :]
                    found[(name, any(f.endswith("_[k]") for f in frames[i + 1 :]))] += int(count)
                    break
    return found


def one_run(data: Path, epochs: int, freq: int, scratch: Path) -> tuple[Counter[tuple[str, bool]], float, str]:
    folded = scratch / "run.folded"
    command = [
        sys.executable, "-m", "flamegraph", "record", "--mxnet", "-F", str(freq), "--call-graph", "dwarf,16384",
        "--no-python", "--no-svg", "--folded", str(folded), "--",
        os.environ.get("WORKLOAD_PYTHON") or sys.executable, "-m", "collectors.train_mlp", "--data", str(data),
        "--epochs", str(epochs),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(REPO), os.environ.get("PYTHONPATH", "")))}
    proc = subprocess.run(command, env=env, capture_output=True, text=True, cwd=scratch)
    if proc.returncode != 0:
        raise SystemExit(f"flamegraph record failed: {proc.stderr.strip().splitlines()[-1:]}")
    coverage = next((line for line in proc.stderr.splitlines() if "engine-thread samples under" in line), "")
    cpu = sum(parse_log(proc.stdout).epoch_cpu)
    return tally(folded), cpu, coverage


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/mxnet_instruments.py", description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("-F", dest="freq", type=int, default=999)
    args = p.parse_args(argv)
    data = prepare_mnist()
    runs = []
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="mxnet-instruments-") as tmp:
        for number in range(1, args.runs + 1):
            found, cpu, coverage = one_run(data, args.epochs, args.freq, Path(tmp))
            runs.append((found, cpu))
            loads.append(os.getloadavg()[0])
            print(f"run {number}: training CPU {cpu:.2f} s; {coverage}", flush=True)
    names = sorted({name for found, _ in runs for name, _ in found})
    load = f"load average {min(loads):.1f}-{max(loads):.1f}"
    print(f"\n{args.runs} runs of {args.epochs} epochs at {args.freq} Hz; {load}")
    print("| instrument | samples (per run) | share of the training's CPU (median) | in the kernel |")
    print("| --- | ---: | ---: | ---: |")
    for name in names:
        samples = [found[(name, False)] + found[(name, True)] for found, _ in runs]
        kernel = sum(found[(name, True)] for found, _ in runs)
        shares = [100.0 * n / args.freq / cpu for n, (_, cpu) in zip(samples, runs, strict=True) if cpu]
        share = f"{statistics.median(shares):.1f} %" if shares else "–"
        print(f"| {name} | {'/'.join(map(str, samples))} | {share} | {100.0 * kernel / max(sum(samples), 1):.0f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
