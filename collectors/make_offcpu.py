"""`make offcpu`: where the MXNet MLP's threads wait -> out/mlp-offcpu.folded and out/mlp-offcpu.svg.

    python -m collectors.make_offcpu [--out out] [--epochs 3] [--repeat 1] [--no-baseline] [--whole-run] [--no-mxnet]

Prepares MNIST (once), trains without perf for the baseline throughput, then trains under
`flamegraph offcpu`'s recording (`perf record -e sched:sched_switch --switch-events --call-graph
dwarf,8192`), pairs each thread's switch-out with its switch-in, keeps the training window only
(waits across its edges are cut, not dropped; --whole-run keeps start-up too) and draws the blocked
time in microseconds. Prints the thread roles found in the stacks (every MXNet thread is named
`python`), the waits the graph must show, the overhead on training throughput (the median loss of
--repeat back-to-back pairs of runs without and with the recording) and the recording's data rate.
With MXNet's profiler on (the default; --no-mxnet leaves it off) a wait inside an operator sits
under its `[op]` frame (the operator the thread was running when it switched out), and the waits of
the tool's own instruments (MXNet's dump thread, our thread-map watcher) under `[instrumentation] ...`
roots, their share in the capture facts.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from flamegraph.analysis import offcpu_threads
from flamegraph.folding.perf_sched import OffCpuOptions
from flamegraph.frameworks.mxnet.hook import MxnetHook
from flamegraph.io.diagnostics import NotPermitted, PerfFailed
from flamegraph.model import FoldedProfile
from flamegraph.pipeline.offcpu import OffCpuRequest, pair_recorded
from flamegraph.record import Status
from flamegraph.record.offcpu import offcpu_options, tracepoint_problem

from .driver import driver_parser, run_driver, write_facts
from .mnist import prepare_mnist
from .recipe import MlpRun, RecordedRun, mxnet_hook, record_mlp, train_without_perf, write_outputs

# The waits the issue asks the graph to show, as (label, frames that must all be in the stack, state).
EXPECTED = (
    ("main thread waits for the engine", ("WaitForVar",), "S"),
    ("prefetch threads wait on a condition variable", ("ThreadedIter", "condition_variable::wait"), "S"),
    ("engine worker is preempted", ("ExecuteOprBlock",), "R"),
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = driver_parser("collectors.make_offcpu", __doc__, epochs=3)
    p.add_argument("--call-graph", default="dwarf,8192", help="fp or dwarf[,SIZE] (default dwarf,8192)")
    p.add_argument("--no-baseline", action="store_true", help="skip the run without perf (no overhead figure)")
    p.add_argument("--repeat", type=int, default=1, help="interleaved pairs of runs for the overhead (median)")
    p.add_argument("--whole-run", action="store_true", help="keep start-up and exit, not only training")
    p.add_argument("--no-mxnet", action="store_true", help="no [op]/[dnnl] frames (MXNet's profiler stays off)")
    p.add_argument("--wakers", action="store_true", help="also record who woke each wait (sched_waking, all CPUs)")
    return p.parse_args(argv)


def main_thread_wakers(profile: FoldedProfile, limit: int = 8) -> list[tuple[str, float]]:
    """What woke the main thread in WaitForVar (--wakers): 'waker (role) [op] NAME' -> µs, largest first."""
    roles = offcpu_threads.thread_roles(profile.counts)
    found: dict[str, float] = {}
    for stack, weight in profile.counts.items():
        frames = stack.split(";")
        blocked = offcpu_threads.blocked_part(frames)
        if roles.get(frames[0]) != "main" or "WaitForVar" not in stack.partition(";--;")[0] or blocked == frames:
            continue
        waker, woke = offcpu_threads.waker_part(frames)
        who = f"{waker} ({roles.get(waker, 'other')})" if waker else frames[len(blocked) + 1]
        op = next((frame for frame in woke if frame.startswith("[op] ")), "")
        key = f"{who} {op}".strip()
        found[key] = found.get(key, 0.0) + weight
    return sorted(found.items(), key=lambda item: -item[1])[:limit]


def thread_roles(profile: FoldedProfile) -> dict[str, str]:
    """comm-tid -> role, from the frames of that thread's stacks (the graph's root frames say the same)."""
    roles = offcpu_threads.thread_roles(profile.counts)
    return {stack.partition(";")[0]: roles.get(stack.partition(";")[0], "other") for stack in profile.counts}


def expected_waits(profile: FoldedProfile) -> dict[str, float]:
    """Microseconds of each wait of EXPECTED (0 when the graph does not show it)."""
    found = {}
    for label, needles, state in EXPECTED:
        found[label] = sum(
            weight
            for stack, weight in profile.counts.items()
            # what blocked, before any `--` (--wakers folds what woke the wait above it)
            for blocked in [stack.partition(";--;")[0]]
            if blocked.endswith(f";[{state}]") and all(needle in blocked for needle in needles)
        )
    return found


def record_training(
    mlp: MlpRun, perf_data: Path, call_graph: str, mxnet: MxnetHook | None = None, wakers: bool = False
) -> RecordedRun:
    try:
        options = offcpu_options(call_graph=call_graph, wakers=wakers)
        return record_mlp(mlp, perf_data, options, hooks=[mxnet] if mxnet else [])
    except (PerfFailed, NotPermitted) as err:
        raise (tracepoint_problem() or err) from None


def measure(
    args: argparse.Namespace, mlp: MlpRun, mxnet: MxnetHook | None = None
) -> tuple[list[float], list[float], RecordedRun]:
    """Samples/s of `--repeat` runs without and with the recording, interleaved; the last recording."""
    without: list[float] = []
    with_perf: list[float] = []
    recorded = None
    for i in range(max(1, args.repeat)):
        round_ = f" (round {i + 1} of {args.repeat})" if args.repeat > 1 else ""
        if not args.no_baseline:
            print(f"== training {args.epochs} epochs without perf{round_}", flush=True)
            without.append(train_without_perf(mlp).mean_rate() or 0.0)
        print(f"== training {args.epochs} epochs under perf record -e sched:sched_switch{round_}", flush=True)
        recorded = record_training(mlp, args.out / "mlp-offcpu.perf.data", args.call_graph, mxnet, args.wakers)
        with_perf.append(recorded.log.mean_rate() or 0.0)
    assert recorded is not None
    return without, with_perf, recorded


@dataclass
class OffCpuRun:
    """What `make offcpu` made and measured; `facts()` is its JSON file."""

    profile: FoldedProfile
    folded: Path
    svg: Path
    window: tuple[float, float] | None  # the training window (s)
    perf_data_mb: float
    recording_s: float
    rate: float | None  # samples/s under perf (median of the runs)
    baseline_rate: float | None
    without: list[float]  # each run's samples/s
    with_perf: list[float]
    overhead: float | None  # % (median of the pairs)
    val_acc: float | None
    roles: dict[str, str]

    def facts(self) -> dict[str, object]:
        seconds, size_mb, window = self.recording_s, self.perf_data_mb, self.window
        return {
            "folded": str(self.folded),
            "svg": str(self.svg),
            "off_cpu_us": self.profile.total,
            "stacks": len(self.profile.counts),
            "window_s": round(window[1] - window[0], 3) if window else None,
            "perf_data_mb": round(size_mb, 1),
            "recording_s": round(seconds, 1),
            "data_rate_mb_s": round(size_mb / seconds, 1) if seconds else None,
            "samples_per_s_with_perf": round(self.rate or 0),
            "samples_per_s_without_perf": round(self.baseline_rate) if self.baseline_rate else None,
            "runs_samples_per_s": {"without": list(map(round, self.without)), "with": list(map(round, self.with_perf))},
            "overhead_percent": round(self.overhead, 1) if self.overhead is not None else None,
            "val_acc": self.val_acc,
            "thread_roles": self.roles,
            "expected_waits_us": expected_waits(self.profile),
            "main_thread_wakers_us": dict(main_thread_wakers(self.profile)),  # --wakers: who ended WaitForVar
            "metadata": dict(self.profile.metadata),
        }


def run(args: argparse.Namespace) -> OffCpuRun:
    data = prepare_mnist(args.cache)
    mlp = MlpRun(data, epochs=args.epochs)
    mxnet = None if args.no_mxnet else mxnet_hook(args.out / "mlp-offcpu.mxnet")
    without, with_perf, recorded = measure(args, mlp, mxnet)
    base, rate = (statistics.median(r) if r else None for r in (without, with_perf))
    # Each pair ran back to back, under the same load from elsewhere: the median of the pairs' losses.
    losses = [100.0 * (b - w) / b for b, w in zip(without, with_perf, strict=False) if b and w]
    loss = statistics.median(losses) if losses else None
    window = recorded.log.window
    span = None if args.whole_run else window
    request = OffCpuRequest(recorded.recording.spec, OffCpuOptions(window=span))  # [unknown] grouped as on-CPU
    profile = pair_recorded(recorded.recording, request, Status(), recorded.hooks).profile  # its MXNet hook joins
    roles = thread_roles(profile)
    size_mb = recorded.recording.perf_data.stat().st_size / 1e6
    meta = profile.metadata
    meta["workload"] = f"MXNet MLP 784-128-64-10 on MNIST, batch 64, {args.epochs} epochs, oneDNN"
    meta["throughput"] = f"{rate or 0:,.0f} samples/s under perf" + (
        f", {base:,.0f} without ({loss:+.1f} % overhead)" if base and loss is not None else ""
    )
    folded, svg = args.out / "mlp-offcpu.folded", args.out / "mlp-offcpu.svg"
    what = "whole run" if span is None else "training window only"
    write_outputs(profile, folded, svg, "MXNet MLP on MNIST: off-CPU", f"{what}; blocked time (µs), sched_switch")
    return OffCpuRun(
        profile, folded, svg, window, size_mb, recorded.recording.seconds, rate, base, without, with_perf, loss,
        recorded.log.val_acc, roles,
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return run_driver("make offcpu", lambda: report(run(args), args.out))


def report(result: OffCpuRun, out: Path) -> int:
    meta = result.profile.metadata
    for key in ("off-CPU", "by state", "window"):
        print(f"{key}: {meta.get(key, '-')}")
    print("thread roles: " + ", ".join(f"{root} {role}" for root, role in sorted(result.roles.items())))
    waits = expected_waits(result.profile)
    for label, us in waits.items():
        print(f"  {label}: {us / 1e3:,.1f} ms" + ("" if us else "  (NOT FOUND)"))
    if "woken by" in meta:
        print(f"woken by: {meta['woken by']}")
        print("main thread's WaitForVar woken by:")
        for who, us in main_thread_wakers(result.profile):
            print(f"  {us / 1e3:9,.1f} ms  {who}")
    facts = result.facts()
    print(f"wrote {result.folded} ({len(result.profile.counts):,} stacks) and {result.svg}")
    print(f"data: {facts['perf_data_mb']} MB in {facts['recording_s']} s ({facts['data_rate_mb_s']} MB/s)")
    if result.overhead is not None:
        without, with_perf = facts["samples_per_s_without_perf"], facts["samples_per_s_with_perf"]
        print(f"overhead: {without:,} samples/s without perf, {with_perf:,} with: {result.overhead:+.1f} %")
    write_facts(out / "mlp-offcpu.json", facts)
    return 0 if all(waits.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
