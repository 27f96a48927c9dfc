"""Measure recording settings on the MLP: throughput cost, data rate and how many stacks are complete.

    python -m collectors.measure_recording [--epochs 2] [--rounds 1] [--config "dwarf,16384 499" ...]

Each round trains once without perf, then once per setting under `perf record`, interleaved so that
drifts of a shared machine hit every setting alike. Reported per setting: mean per-epoch samples/s
(and the loss against the no-perf runs), perf.data MB/s, training-window samples, and the share
of them whose stack reaches a thread root (`_start`, `start_thread`, `clone`/`clone3`; the
attribution report's figure, flamegraph.analysis.report): the complete stacks. This is how the recorder's
defaults were chosen (README "Recording defaults").
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from flamegraph.analysis.report import attribute
from flamegraph.model import FoldedProfile
from flamegraph.record import RecordOptions

from .mnist import prepare_mnist
from .recipe import MlpRun, fold_training, record_mlp, train_without_perf

CONFIGS = ("fp 999", "dwarf,16384 499", "dwarf,16384 999", "dwarf,65528 499")


def complete_share(profile: FoldedProfile) -> float:
    """% of samples whose stack reaches a thread root."""
    figures = attribute(profile)
    return figures.share(figures.reach_root)


def measure(mlp: MlpRun, config: str, scratch: Path) -> dict[str, float]:
    call_graph, freq = config.split()
    run = record_mlp(mlp, scratch / "perf.data", RecordOptions(call_graph=call_graph, freq=int(freq)))
    profile = fold_training(run)
    size = run.recording.perf_data.stat().st_size / 1e6
    return {
        "rate": run.log.mean_rate() or 0.0,
        "mb_per_s": size / run.recording.seconds,
        "samples": profile.total,
        "complete": complete_share(profile),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m collectors.measure_recording", description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--config", action="append", help='"CALL_GRAPH FREQ", e.g. "dwarf,16384 499" (repeatable)')
    args = p.parse_args(argv)
    mlp = MlpRun(prepare_mnist(), args.epochs)
    configs = args.config or list(CONFIGS)
    base: list[float] = []
    results: dict[str, list[dict[str, float]]] = {c: [] for c in configs}
    with tempfile.TemporaryDirectory(prefix="flamegraph-measure-") as tmp:
        for _ in range(args.rounds):
            base.append(train_without_perf(mlp).mean_rate() or 0.0)
            for config in configs:
                results[config].append(measure(mlp, config, Path(tmp)))
    baseline = statistics.mean(base)
    print(f"\nno perf: {baseline:,.0f} samples/s (runs: {', '.join(f'{b:,.0f}' for b in base)})")
    print(f"{'setting':<18} {'samples/s':>10} {'cost':>7} {'MB/s':>6} {'samples':>8} {'complete':>9}")
    for config, rows in results.items():
        rate = statistics.mean(r["rate"] for r in rows)
        print(f"{config:<18} {rate:>10,.0f} {100 * (baseline - rate) / baseline:>6.1f}% "
              f"{statistics.mean(r['mb_per_s'] for r in rows):>6.1f} "
              f"{statistics.mean(r['samples'] for r in rows):>8,.0f} "
              f"{statistics.mean(r['complete'] for r in rows):>8.1f}%")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
