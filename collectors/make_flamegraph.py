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
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from flamegraph.frameworks.jit.hook import JIT_CALL_GRAPH, JitHook
from flamegraph.frameworks.mxnet.summary import JoinSummary
from flamegraph.io.perf import script_command
from flamegraph.model import FoldedProfile
from flamegraph.record import RecordHook, RecordOptions, script_args

from .driver import driver_parser, run_driver, write_facts
from .mnist import prepare_mnist
from .recipe import (
    ENGINE_VARIABLE,
    ENGINES,
    MlpRun,
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
    overhead: float | None  # % (epoch means)
    overhead_best: float | None  # % (best epochs)
    val_acc: float | None
    shares: dict[str, float]  # % of samples under each of ONEDNN_FRAMES
    mxnet: JoinSummary | None
    engine: str  # MXNET_ENGINE_TYPE of the runs ("" for MXNet's default)

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
            "overhead_percent": round(self.overhead, 1) if self.overhead is not None else None,
            "overhead_best_epoch_percent": round(self.overhead_best, 1) if self.overhead_best is not None else None,
            "val_acc": self.val_acc,
            "shares_percent": {k: round(v, 1) for k, v in self.shares.items()},
            "mxnet": mxnet_figures(self.mxnet) if self.mxnet is not None else None,
            "engine": self.engine or None,
        }


def run(args: argparse.Namespace, hooks: Sequence[RecordHook] = ()) -> OnCpuRun:
    """Baseline, recording (with `hooks`: pre-/post-steps such as JIT naming), fold, render."""
    data = args.data.absolute() if args.data is not None else prepare_mnist(args.cache)
    engine = choose_engine(args.engine, args.python, frames=not args.no_jit and not hooks)
    if engine.line:
        print(f"== {engine.line}", flush=True)
    mlp = MlpRun(data, epochs=args.epochs, max_batches=args.max_batches, python=args.python, env=engine.env)
    baseline = None
    if not args.no_baseline:
        print(f"== training {args.epochs} epochs without perf (baseline throughput, 1 of 2)", flush=True)
        baseline = train_without_perf(mlp)
    how = RecordOptions()
    if not args.no_jit and not hooks:  # named kernels, unwound through: gemm under its real callers
        # named kernels, and Python frames when the trainer is Python 3.12+ (--python)
        hooks = [JitHook(args.out.absolute() / "mlp-oncpu.jit", note=print, python=None)]
        how = how.replace(call_graph=JIT_CALL_GRAPH)
    if args.freq:
        how = how.replace(freq=args.freq)
    if args.call_graph:
        how = how.replace(call_graph=args.call_graph)
    mxnet = None if args.no_mxnet else mxnet_hook(args.out / "mlp-oncpu.mxnet")
    print(f"== training {args.epochs} epochs under perf record" + (" (MXNet profiler on)" if mxnet else ""), flush=True)
    recorded = record_mlp(mlp, args.out / "mlp-oncpu.perf.data", how, [*hooks, *([mxnet] if mxnet else [])])
    if baseline is not None:  # before and after the recording: a drift in other load hits both sides alike
        print(f"== training {args.epochs} epochs without perf (baseline throughput, 2 of 2)", flush=True)
        baseline = baseline.merged(train_without_perf(mlp))
    started = time.monotonic()
    try:
        profile = fold_training(recorded, mxnet=mxnet)
    finally:
        for hook in hooks:
            if isinstance(hook, JitHook):
                hook.cleanup()  # the /tmp/perf-PID.map we wrote (its copy stays in mlp-oncpu.jit/)
    fold_seconds = time.monotonic() - started
    loss = overhead(baseline, recorded.log) if baseline else None
    best = overhead(baseline, recorded.log, best=True) if baseline else None
    rate = recorded.log.mean_rate() or 0.0
    profile.metadata["workload"] = f"MXNet MLP 784-128-64-10 on MNIST, batch 64, {args.epochs} epochs, oneDNN" + (
        ", MXNet profiler + oneDNN verbose log on, bulk execution off" if mxnet else ""
    )
    if engine.header:
        profile.metadata["MXNet engine"] = engine.header
    if recorded.log.val_acc is not None:
        profile.metadata["validation accuracy"] = f"{recorded.log.val_acc:.4f}"
    profile.metadata["throughput"] = f"{rate:,.0f} samples/s under perf" + (
        f", {baseline.mean_rate():,.0f} without ({loss:+.1f} % overhead)" if baseline and loss is not None else ""
    )
    folded, svg = args.out / "mlp-oncpu.folded", args.out / "mlp-oncpu.svg"
    used = recorded.recording.spec.options
    subtitle = f"training window only; {used.event} {used.freq} Hz, call graph {used.call_graph}"
    write_outputs(profile, folded, svg, "MXNet MLP on MNIST: on-CPU (oneDNN)", subtitle)
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
        loss,
        best,
        recorded.log.val_acc,
        shares(profile, ONEDNN_FRAMES),
        mxnet.last if mxnet is not None else None,
        engine.env.get(ENGINE_VARIABLE, ""),
    )


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
    if result.overhead is not None and result.overhead_best is not None:
        without, with_perf = facts["samples_per_s_without_perf"], facts["samples_per_s_with_perf"]
        print(f"overhead: {without:,} samples/s without perf, {with_perf:,} with perf (epoch means): "
              f"{result.overhead:+.1f} %; best epochs: {result.overhead_best:+.1f} %")  # fmt: skip
    write_facts(out / "mlp-oncpu.json", facts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
