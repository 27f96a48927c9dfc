"""What `offcpu --wakers` and `record --wall` cost on the MXNet MLP, against plain `offcpu` and no recording.

    python bench/offcpu_cost.py [--rounds 3] [--epochs 1] [--max-batches 300] [--call-graph dwarf,8192]

Trains the MLP (collectors.train_mlp, real MNIST) once per mode and round, the modes of a round back to
back and their order rotated from round to round (A B C D, B C D A, ...), so each round's runs share the
machine's load of the moment:
    none     no recording
    offcpu   what `flamegraph offcpu` records: sched_switch with DWARF stacks, --switch-events
    wakers   what `offcpu --wakers` records: that, sched_waking with stacks, on all CPUs (-a)
    wall     what `record --wall` records: cpu-clock at 499 Hz and sched_switch, both with stacks
MXNet's profiler stays off (no --mxnet hook): the figures are the recordings' own. Only perf records; nothing
is folded. Per run: the training throughput (samples/s, the trainer's own clock), the CPU time of perf and
the trainer together (user + sys of our waited-for children), perf.data's size over the recording's seconds,
the share perf lost. Each recorded run is compared with the `none` run and the `offcpu` run of its own
round (a pair); the table gives the median of the pairs, their spread (min..max) and their number.
Say the load (printed first and last) when you quote a figure.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.tables import load, spread, table_head  # noqa: E402
from collectors.mnist import prepare_mnist  # noqa: E402
from collectors.recipe import MlpRun, record_mlp, train_without_perf  # noqa: E402
from flamegraph.folding.wall_time import wall_options  # noqa: E402
from flamegraph.record import RecordOptions  # noqa: E402
from flamegraph.record.offcpu import offcpu_options  # noqa: E402

MODES = ("none", "offcpu", "wakers", "wall")


@dataclass(frozen=True)
class Run:
    mode: str
    rate: float  # training samples/s
    cpu_s: float  # user + sys of perf and the trainer
    mb: float = 0.0  # perf.data
    seconds: float = 0.0  # the recording's
    lost: float = 0.0  # share of the records perf lost

    @property
    def mb_s(self) -> float:
        return self.mb / self.seconds if self.seconds else 0.0


def options_for(mode: str, call_graph: str) -> RecordOptions:
    if mode == "wall":
        return wall_options(499, call_graph=call_graph)
    return offcpu_options(call_graph=call_graph, wakers=mode == "wakers")


def children_cpu() -> float:
    times = os.times()
    return times.children_user + times.children_system


def run_once(mode: str, mlp: MlpRun, scratch: Path, call_graph: str) -> Run:
    before = children_cpu()
    if mode == "none":
        rate = train_without_perf(mlp).mean_rate() or 0.0
        return Run(mode, rate, children_cpu() - before)
    data = scratch / f"{mode}.perf.data"
    recorded = record_mlp(mlp, data, options_for(mode, call_graph))
    cpu = children_cpu() - before
    recording = recorded.recording
    size = recording.perf_data.stat().st_size / 1e6
    recording.perf_data.unlink()  # a --wakers epoch can be GBs
    lost = recording.lost.share if recording.lost else 0.0
    return Run(mode, recorded.log.mean_rate() or 0.0, cpu, size, recording.seconds, lost)



def table(rounds: list[dict[str, Run]]) -> list[str]:
    """One row per recording mode: against no recording and against plain offcpu, pair by pair."""
    pct = "{:+.1f} %".format
    ratio = "x{:.2f}".format
    head = ("mode", "throughput vs none", "CPU time vs none", "CPU time vs offcpu", "perf.data", "MB/s",
            "MB/s vs offcpu", "lost")  # fmt: skip
    rows = table_head(head)
    for mode in MODES[1:]:
        runs = [r for r in rounds if mode in r]
        if not runs:
            continue
        loss = [100 * (r[mode].rate / r["none"].rate - 1) for r in runs if "none" in r and r["none"].rate]
        cpu = [r[mode].cpu_s / r["none"].cpu_s for r in runs if "none" in r and r["none"].cpu_s]
        cpu_off = [r[mode].cpu_s / r["offcpu"].cpu_s for r in runs if "offcpu" in r and mode != "offcpu"]
        rate_off = [r[mode].mb_s / r["offcpu"].mb_s for r in runs if "offcpu" in r and mode != "offcpu"]
        mb = [r[mode].mb for r in runs]
        mb_s = [r[mode].mb_s for r in runs]
        lost = [100 * r[mode].lost for r in runs]
        rows.append(
            f"| {mode} | {spread(loss, pct)} | {spread(cpu, ratio)} | {spread(cpu_off, ratio)} "
            f"| {spread(mb, '{:,.0f} MB'.format)} | {spread(mb_s, '{:.1f}'.format)} | {spread(rate_off, ratio)} "
            f"| {spread(lost, '{:.1f} %'.format)} |"
        )
    return rows



def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/offcpu_cost.py", description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3, help="rounds of the four modes (pairs per figure)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max-batches", type=int, default=300, help="batches per epoch (938 is all of MNIST)")
    p.add_argument("--call-graph", default="dwarf,8192")
    p.add_argument("--modes", default=",".join(MODES), help="a subset of " + ",".join(MODES))
    p.add_argument("--cache", type=Path, default=None, help="MNIST cache (default ~/.cache/flamegraph)")
    args = p.parse_args(argv)
    modes = [m for m in MODES if m in args.modes.split(",")]
    mlp = MlpRun(prepare_mnist(args.cache), epochs=args.epochs, max_batches=args.max_batches)
    print(f"load average at start: {load()}; {os.cpu_count()} CPUs", flush=True)
    rounds: list[dict[str, Run]] = []
    with tempfile.TemporaryDirectory(prefix="offcpu-cost-") as scratch:
        for i in range(args.rounds):
            order = modes[i % len(modes) :] + modes[: i % len(modes)]
            found: dict[str, Run] = {}
            for mode in order:
                found[mode] = run = run_once(mode, mlp, Path(scratch), args.call_graph)
                print(f"round {i + 1} {mode:7} {run.rate:8,.0f} samples/s  cpu {run.cpu_s:6.2f} s  "
                      f"{run.mb:8,.1f} MB in {run.seconds:5.1f} s  lost {100 * run.lost:.1f} %  load {load()}",
                      flush=True)  # fmt: skip
            rounds.append(found)
    print(f"load average at end: {load()}")
    print(f"MLP: {args.epochs} epoch(s) x {args.max_batches or 'all'} batches of 64; call graph {args.call_graph}")
    print("\n".join(table(rounds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
