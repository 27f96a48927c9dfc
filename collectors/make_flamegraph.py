"""`make flamegraph`: the MXNet MLP on MNIST under perf -> out/mlp-oncpu.folded and out/mlp-oncpu.svg.

    python -m collectors.make_flamegraph [--out out] [--epochs 3] [--no-baseline] [--no-jit] [--no-mxnet]

Prepares MNIST (once), trains without perf before and after for the baseline throughput, trains under
`perf record` (JIT kernels named and unwound: DNNL_JIT_DUMP, jitdump, `perf inject --jit`, call graph
dwarf,65528 at 499 Hz; --no-jit for the recorder's plain defaults), folds the training window only
and renders it with the oneDNN highlight preset. With MXNet's profiler and oneDNN's verbose log on
(`--mxnet`, the default; --no-mxnet leaves them off) the graph has [op] and [dnnl] frames and the
header the per-operator and per-primitive tables. Prints where the files are, the top frames and the
profiling overhead on training throughput (samples/s without and with perf, same invocation).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from flamegraph.diagnostics import FlamegraphError
from flamegraph.jit.recording import JIT_CALL_GRAPH, JitHook
from flamegraph.mxnet.summary import JoinSummary
from flamegraph.perf import script_command
from flamegraph.record import RecordHook, RecordSpec, script_args

from .mnist import prepare_mnist
from .recipe import (
    MlpRun,
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
    p = argparse.ArgumentParser(prog="python -m collectors.make_flamegraph", description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("out"), help="output directory (default out)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--cache", type=Path, default=None, help="MNIST cache (default ~/.cache/flamegraph)")
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
    return p.parse_args(argv)


def run(args: argparse.Namespace, hooks: Sequence[RecordHook] = ()) -> dict[str, object]:
    """Baseline, recording (with `hooks`: pre-/post-steps such as JIT naming), fold, render."""
    data = prepare_mnist(args.cache)
    mlp = MlpRun(data, epochs=args.epochs)
    baseline = None
    if not args.no_baseline:
        print(f"== training {args.epochs} epochs without perf (baseline throughput, 1 of 2)", flush=True)
        baseline = train_without_perf(mlp)
    spec = RecordSpec(command=("placeholder",))
    if not args.no_jit and not hooks:  # named kernels, unwound through: gemm under its real callers
        hooks = [JitHook(args.out.absolute() / "mlp-oncpu.jit", note=print)]
        spec = spec.replace(call_graph=JIT_CALL_GRAPH)
    if args.freq:
        spec = spec.replace(freq=args.freq)
    if args.call_graph:
        spec = spec.replace(call_graph=args.call_graph)
    mxnet = None if args.no_mxnet else mxnet_hook(args.out / "mlp-oncpu.mxnet")
    print(f"== training {args.epochs} epochs under perf record" + (" (MXNet profiler on)" if mxnet else ""), flush=True)
    recorded = record_mlp(mlp, args.out / "mlp-oncpu.perf.data", spec, [*hooks, *([mxnet] if mxnet else [])])
    if baseline is not None:  # before and after the recording: a drift in other load hits both sides alike
        print(f"== training {args.epochs} epochs without perf (baseline throughput, 2 of 2)", flush=True)
        baseline = baseline.merged(train_without_perf(mlp))
    started = time.monotonic()
    profile = fold_training(recorded, mxnet=mxnet)
    fold_seconds = time.monotonic() - started
    loss = overhead(baseline, recorded.log) if baseline else None
    best = overhead(baseline, recorded.log, best=True) if baseline else None
    rate = recorded.log.mean_rate() or 0.0
    profile.metadata["workload"] = f"MXNet MLP 784-128-64-10 on MNIST, batch 64, {args.epochs} epochs, oneDNN" + (
        ", MXNet profiler + oneDNN verbose log on, bulk execution off" if mxnet else ""
    )
    if recorded.log.val_acc is not None:
        profile.metadata["validation accuracy"] = f"{recorded.log.val_acc:.4f}"
    profile.metadata["throughput"] = f"{rate:,.0f} samples/s under perf" + (
        f", {baseline.mean_rate():,.0f} without ({loss:+.1f} % overhead)" if baseline and loss is not None else ""
    )
    folded, svg = args.out / "mlp-oncpu.folded", args.out / "mlp-oncpu.svg"
    spec_used = recorded.recording.spec
    subtitle = f"training window only; {spec_used.event} {spec_used.freq} Hz, call graph {spec_used.call_graph}"
    write_outputs(profile, folded, svg, "MXNet MLP on MNIST: on-CPU (oneDNN)", subtitle)
    return {
        "folded": str(folded),
        "svg": str(svg),
        "samples": profile.total,
        "stacks": len(profile.counts),
        "window_s": round(recorded.log.window[1] - recorded.log.window[0], 3) if recorded.log.window else None,
        "fold_s": round(fold_seconds, 2),
        "perf_data_mb": round(recorded.recording.perf_data.stat().st_size / 1e6, 1),
        # the text the fold read, for `make bench` (which saves it once and folds it with every peer)
        "perf_script": script_command(
            str(recorded.recording.perf_data), extra=script_args(recorded.recording, recorded.window)
        ),
        "samples_per_s_with_perf": round(rate),
        "samples_per_s_without_perf": round(baseline.mean_rate() or 0) if baseline else None,
        "overhead_percent": round(loss, 1) if loss is not None else None,
        "overhead_best_epoch_percent": round(best, 1) if best is not None else None,
        "val_acc": recorded.log.val_acc,
        "shares_percent": {k: round(v, 1) for k, v in shares(profile, ONEDNN_FRAMES).items()},
        "mxnet": mxnet_figures(mxnet.last) if mxnet is not None and mxnet.last is not None else None,
        "profile": profile,
    }


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
    try:
        result = run(args)
    except FlamegraphError as err:
        print(f"make flamegraph: {err}", file=sys.stderr)
        return err.exit_code
    profile = result.pop("profile")
    print_top(profile)  # type: ignore[arg-type]
    print(f"wrote {result['folded']} ({result['stacks']:,} stacks, {result['samples']:,.0f} samples)")
    print(f"wrote {result['svg']}")
    if result["overhead_percent"] is not None:
        without, with_perf = result["samples_per_s_without_perf"], result["samples_per_s_with_perf"]
        mean, best = result["overhead_percent"], result["overhead_best_epoch_percent"]
        print(f"overhead: {without:,} samples/s without perf, {with_perf:,} with perf (epoch means): "
              f"{mean:+.1f} %; best epochs: {best:+.1f} %")  # fmt: skip
    (args.out / "mlp-oncpu.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
