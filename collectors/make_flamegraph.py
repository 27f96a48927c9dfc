"""`make flamegraph`: the MXNet MLP on MNIST under perf -> out/mlp-oncpu.folded and out/mlp-oncpu.svg.

    python -m collectors.make_flamegraph [--out out] [--epochs 3] [--no-baseline] [--no-jit] [--no-mxnet]
                                         [--python PY] [--engine auto|naive|threaded]
                                         [--data DIR] [--max-batches N]

Prepares MNIST (once), trains without perf before and after for the baseline throughput, trains under
`perf record` (JIT kernels named and unwound: DNNL_JIT_DUMP, jitdump, `perf inject --jit`, call graph
dwarf,65528 at 499 Hz; --no-jit for the recorder's plain defaults), folds the training window only
and renders it with the oneDNN highlight preset. With MXNet's profiler and oneDNN's verbose log on
(`--mxnet`, the default; --no-mxnet leaves them off) the graph has [op] and [dnnl] frames and the
header the per-operator and per-primitive tables. Prints where the files are, the top frames and the
profiling overhead on training throughput (samples/s without and with perf, same invocation).
A Python 3.12+ trainer (--python, $WORKLOAD_PYTHON) trains with MXNET_ENGINE_TYPE=NaiveEngine (--engine
auto): MXNet then runs each operator inside the push, on the Python thread, so one stack holds
`train_epoch -> forward -> [op] FullyConnected -> [dnnl] inner_product -> jit kernel` as perf unwound it
(the threaded engine runs them on its own threads, where no Python frame is). Said in the header.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from flamegraph.frameworks.jit.hook import JIT_CALL_GRAPH, JitHook
from flamegraph.frameworks.mxnet.hook import MxnetHook
from flamegraph.frameworks.mxnet.summary import JoinSummary
from flamegraph.io.perf import script_command
from flamegraph.io.writer import atomic_output
from flamegraph.model import FoldedProfile
from flamegraph.record import RecordHook, RecordOptions, script_args
from flamegraph.render.trend import render_trend
from flamegraph.window import Window

from .driver import driver_parser, run_driver, write_facts
from .mlp_log import TrainLog
from .mnist import prepare_mnist
from .recipe import (
    ENGINE_VARIABLE,
    ENGINES,
    MlpRun,
    PairedOverhead,
    RecordedRun,
    choose_engine,
    fold_training,
    mxnet_hook,
    overhead,
    print_top,
    record_mlp,
    shares,
    train_without_perf,
    write_outputs,
)

ONEDNN_FRAMES = ("MKLDNN", "_[j]", "MultiSGDKernel", "ExecuteOprBlock")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = driver_parser("collectors.make_flamegraph", __doc__, epochs=3)
    p.add_argument("--freq", type=int, default=None, help="perf sampling frequency (default: the recorder's)")
    p.add_argument("--call-graph", default=None, help="fp, dwarf or dwarf,SIZE (default: the recorder's)")
    p.add_argument("--no-baseline", action="store_true", help="skip the runs without perf (no overhead figure)")
    p.add_argument(
        "--pairs", type=int, default=3, help="interleaved pairs (without, with perf) for the overhead: median, spread"
    )
    p.add_argument(
        "--no-jit",
        action="store_true",
        help="leave oneDNN's JIT kernels unnamed and their stacks cut (no DNNL_JIT_DUMP, jitdump, perf inject --jit)",
    )
    p.add_argument(
        "--no-mxnet",
        action="store_true",
        help="no [op]/[dnnl] frames (MXNet's profiler and oneDNN's verbose log stay off, bulk execution on)",
    )
    p.add_argument("--data", type=Path, default=None, help="the four IDX files (default: MNIST, prepared once)")
    p.add_argument("--max-batches", type=int, default=0, help="stop each epoch after N batches (0: all)")
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="auto",
        help="MXNet's engine: naive (operators on the Python thread that pushed them), threaded (MXNet's "
        "default), auto (naive when the trainer's Python functions are frames: Python 3.12+ with JIT unwinding)",
    )
    return p.parse_args(argv)


@dataclass
class OnCpuRun:
    """What `make flamegraph` made and measured; `facts()` is its JSON file."""

    profile: FoldedProfile
    folded: Path
    svg: Path
    window_s: float | None  # the training window
    fold_s: float
    perf_data_mb: float
    perf_script: list[str]  # the text the fold read, for `make bench` (which saves it once, folds it with every peer)
    rate: float  # samples/s under perf (epoch mean)
    baseline_rate: float | None  # without perf
    overhead: PairedOverhead | None  # % per interleaved pair (epoch means)
    cpu_overhead: PairedOverhead | None  # CPU seconds per epoch added, % per pair
    epochs: int  # per-epoch graphs drawn
    val_acc: float | None
    shares: dict[str, float]  # % of samples under each of ONEDNN_FRAMES
    mxnet: JoinSummary | None
    engine: str  # MXNET_ENGINE_TYPE of the runs ("" for MXNet's default)
    loads: tuple[float, float] = (0.0, 0.0)  # 1-minute load average before and after the pairs

    def facts(self) -> dict[str, object]:
        return {
            "folded": str(self.folded),
            "svg": str(self.svg),
            "samples": self.profile.total,
            "stacks": len(self.profile.counts),
            "window_s": round(self.window_s, 3) if self.window_s is not None else None,
            "fold_s": round(self.fold_s, 2),
            "perf_data_mb": round(self.perf_data_mb, 1),
            "perf_script": self.perf_script,
            "samples_per_s_with_perf": round(self.rate),
            "samples_per_s_without_perf": round(self.baseline_rate) if self.baseline_rate is not None else None,
            "overhead_percent": round(self.overhead.median, 1) if self.overhead is not None else None,
            "overhead_pairs_percent": [round(x, 1) for x in self.overhead.losses] if self.overhead else None,
            "cpu_added_pairs_percent": [round(x, 1) for x in self.cpu_overhead.losses] if self.cpu_overhead else None,
            "epoch_graphs": self.epochs,
            "val_acc": self.val_acc,
            "shares_percent": {k: round(v, 1) for k, v in self.shares.items()},
            "mxnet": mxnet_figures(self.mxnet) if self.mxnet is not None else None,
            "engine": self.engine or None,
            "load_average": list(self.loads),
        }


def run(args: argparse.Namespace, hooks: Sequence[RecordHook] = ()) -> OnCpuRun:
    """Interleaved pairs (training without perf, training under perf; with `hooks`: pre-/post-steps such as
    JIT naming) for the overhead, the first recording folded and rendered, a graph per epoch and the trend."""
    data = args.data.absolute() if args.data is not None else prepare_mnist(args.cache)
    engine = choose_engine(args.engine, args.python, frames=not args.no_jit and not hooks)
    if engine.line:
        print(f"== {engine.line}", flush=True)
    mlp = MlpRun(data, epochs=args.epochs, max_batches=args.max_batches, python=args.python, env=engine.env)
    how = RecordOptions()
    jit = not args.no_jit and not hooks  # named kernels, unwound through: gemm under its real callers
    if jit:
        how = how.replace(call_graph=JIT_CALL_GRAPH)
    if args.freq:
        how = how.replace(freq=args.freq)
    if args.call_graph:
        how = how.replace(call_graph=args.call_graph)
    pairs = 0 if args.no_baseline else max(args.pairs, 1)
    measured: list[tuple[TrainLog, TrainLog]] = []
    recorded, mxnet, kept_hooks = None, None, list(hooks)
    load_before = os.getloadavg()[0]
    for number in range(1, max(pairs, 1) + 1):  # A B, B A, A B...: a drift of the machine's load hits both alike
        first = number == 1
        # Python frames too when the trainer is Python 3.12+ (--python); the first pair's files are kept
        tag = "" if first else f"-pair{number}"
        run_hooks: list[RecordHook] = list(hooks) if first else []
        if jit and (first or not hooks):
            run_hooks = [JitHook(args.out.absolute() / f"mlp-oncpu{tag}.jit", note=print if first else _quiet,
                                 python=None)]  # fmt: skip
        mx = None if args.no_mxnet else mxnet_hook(args.out / f"mlp-oncpu{tag}.mxnet", print if first else _quiet)
        base_first = number % 2 == 1
        base = None
        if pairs and base_first:
            print(f"== training {args.epochs} epochs without perf (pair {number} of {pairs})", flush=True)
            base = train_without_perf(mlp)
        print(f"== training {args.epochs} epochs under perf record" + (" (MXNet profiler on)" if mx else "")
              + (f" (pair {number} of {pairs})" if pairs else ""), flush=True)  # fmt: skip
        perf_data = args.out / f"mlp-oncpu{tag}.perf.data"
        run_ = record_mlp(mlp, perf_data, how, [*run_hooks, *([mx] if mx else [])])
        if pairs and not base_first:
            print(f"== training {args.epochs} epochs without perf (pair {number} of {pairs})", flush=True)
            base = train_without_perf(mlp)
        if base is not None:
            measured.append((base, run_.log))
            print(f"   pair {number}: {overhead(base, run_.log) or 0:+.1f} % overhead", flush=True)
        if first:
            recorded, mxnet, kept_hooks = run_, mx, run_hooks
        else:  # measured only: its files go
            for hook in run_hooks:
                if isinstance(hook, JitHook):
                    hook.cleanup()
            discard(perf_data, args.out / f"mlp-oncpu{tag}.jit", args.out / f"mlp-oncpu{tag}.mxnet")
    assert recorded is not None
    loads = (load_before, os.getloadavg()[0])
    started = time.monotonic()
    try:
        profile = fold_training(recorded, mxnet=mxnet)
        epochs = fold_epochs(recorded, mxnet, args.out)
    finally:
        for hook in kept_hooks:
            if isinstance(hook, JitHook):
                hook.cleanup()  # the /tmp/perf-PID.map we wrote (its copy stays in mlp-oncpu.jit/)
    fold_seconds = time.monotonic() - started
    paired, cpu = PairedOverhead.of(measured), PairedOverhead.of(measured, cpu=True)
    baseline = measured[0][0] if measured else None
    for base, _ in measured[1:]:
        assert baseline is not None
        baseline = baseline.merged(base)
    rate = recorded.log.mean_rate() or 0.0
    profile.metadata["workload"] = f"MXNet MLP 784-128-64-10 on MNIST, batch 64, {args.epochs} epochs, oneDNN" + (
        ", MXNet profiler + oneDNN verbose log on, bulk execution off" if mxnet else ""
    )
    if engine.header:
        profile.metadata["MXNet engine"] = engine.header
    if recorded.log.val_acc is not None:
        profile.metadata["validation accuracy"] = f"{recorded.log.val_acc:.4f}"
    profile.metadata["throughput"] = f"{rate:,.0f} samples/s under perf" + (
        f", {baseline.mean_rate():,.0f} without; overhead {paired.line()}" if baseline and paired else ""
    )
    folded, svg = args.out / "mlp-oncpu.folded", args.out / "mlp-oncpu.svg"
    used = recorded.recording.spec.options
    recorded_with = f"{used.event} {used.freq} Hz, call graph {used.call_graph}"
    subtitle = f"training window only; {recorded_with}"
    write_outputs(profile, folded, svg, "MXNet MLP on MNIST: on-CPU (oneDNN)", subtitle)
    for number, (window, epoch_profile) in enumerate(epochs, 1):
        epoch_profile.metadata.update(profile.metadata)
        epoch_profile.metadata["window"] = f"epoch {number} of {len(epochs)}: {window.format()} (CLOCK_MONOTONIC s)"
        title = f"MXNet MLP on MNIST: on-CPU, epoch {number}"
        paths = epoch_path(args.out, number, ".folded"), epoch_path(args.out, number, ".svg")
        write_outputs(epoch_profile, *paths, title, f"epoch {number} only; {recorded_with}")
    if epochs:
        write_trend([p for _, p in epochs], args.out)
    window = recorded.log.window
    return OnCpuRun(
        profile,
        folded,
        svg,
        window[1] - window[0] if window else None,
        fold_seconds,
        recorded.recording.perf_data.stat().st_size / 1e6,
        script_command(str(recorded.recording.perf_data), extra=script_args(recorded.recording, recorded.window)),
        rate,
        (baseline.mean_rate() or 0) if baseline else None,
        paired,
        cpu,
        len(epochs),
        recorded.log.val_acc,
        shares(profile, ONEDNN_FRAMES),
        mxnet.last if mxnet is not None else None,
        engine.env.get(ENGINE_VARIABLE, ""),
        loads,
    )


def _quiet(line: str) -> None:
    """The measured-only recordings' hook lines: the first recording's say it all."""


def discard(*paths: Path) -> None:
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def epoch_path(out: Path, number: int, suffix: str) -> Path:
    return out / f"mlp-oncpu-epoch-{number}{suffix}"


def fold_epochs(recorded: RecordedRun, mxnet: MxnetHook | None, out: Path) -> list[tuple[Window, FoldedProfile]]:
    """Each epoch's window of the recording (the trainer's EPOCH_END lines) folded on its own."""
    windows = recorded.log.epoch_windows()
    for stale in out.glob("mlp-oncpu-epoch-*"):  # an earlier run's extra epochs would read as this run's
        stale.unlink(missing_ok=True)
    folded = []
    for number, window in enumerate(windows, 1):
        print(f"== folding epoch {number} of {len(windows)} ({window.format()})", flush=True)
        folded.append((window, fold_training(recorded, mxnet=mxnet, window=window, quiet=True)))
    return folded


def write_trend(profiles: list[FoldedProfile], out: Path) -> Path:
    """out/mlp-oncpu-trend.svg: each function's share per epoch (flamegraph.render.trend)."""
    first, last = epoch_path(out, 1, ".folded").name, epoch_path(out, len(profiles), ".folded").name
    hint = f"flamegraph diff {first} {last} --normalize -o mlp-oncpu-diff.svg"
    image = render_trend(list(enumerate(profiles, 1)), "MXNet MLP on MNIST: share per epoch", hint)
    path = out / "mlp-oncpu-trend.svg"
    with atomic_output(path) as sink:
        sink.write(image)
    return path


def mxnet_figures(summary: JoinSummary) -> dict[str, object]:
    """The join's measured figures for the JSON: coverage, agreement, clock, thread map."""
    worst = summary.worst_gap
    return {
        "engine_samples": summary.engine_samples,
        "op_coverage_percent": round(summary.op_coverage, 1),
        "jit_samples": summary.jit_samples,
        "jit_coverage_percent": round(summary.jit_coverage, 1),
        "worst_agreement_gap_points": round(abs(worst.gap), 1) if worst else None,
        "worst_agreement_operator": worst.frame if worst else None,
        "clock_residual_us": round(summary.alignment.residual * 1e6, 2) if summary.alignment else None,
        "threads": summary.threads,
        "operators": [
            {
                "frame": r.frame,
                "samples": r.samples,
                "sample_share": round(r.sample_share, 2),
                "profiler_ms": round(r.timed_us / 1000, 3),
                "profiler_share": round(r.timed_share, 2),
                "calls": r.calls,
            }
            for r in summary.operators
        ],  # fmt: skip
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return run_driver("make flamegraph", lambda: report(run(args), args.out))


def report(result: OnCpuRun, out: Path) -> int:
    print_top(result.profile)
    print(f"wrote {result.folded} ({len(result.profile.counts):,} stacks, {result.profile.total:,.0f} samples)")
    print(f"wrote {result.svg}")
    facts = result.facts()
    if result.epochs:
        trend = out / "mlp-oncpu-trend.svg"
        print(f"wrote {result.epochs} per-epoch graphs ({epoch_path(out, 1, '.svg')}, ...) and {trend}")
    if result.overhead is not None:
        without, with_perf = facts["samples_per_s_without_perf"], facts["samples_per_s_with_perf"]
        before, after = result.loads
        print(f"overhead: {result.overhead.line()}; {without:,} samples/s without perf, {with_perf:,} with "
              f"(epoch means; load average {before:.1f} -> {after:.1f} on {os.cpu_count()} CPUs; the budget is 5 %, "
              "to be judged on a quiet machine)")  # fmt: skip
    if result.cpu_overhead is not None:
        print(f"CPU added: {result.cpu_overhead.line()} (CPU seconds per epoch, all the trainer's threads)")
    write_facts(out / "mlp-oncpu.json", facts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
