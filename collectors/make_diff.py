"""`make diff`: the MLP's FullyConnected on oneDNN (MKLDNN) against OpenBLAS -> out/mlp-diff.svg.

    python -m collectors.make_diff [--out out] [--epochs 2] [--no-mxnet]   # OPENBLAS_CORETYPE=Haswell to override

Records the training window twice, with oneDNN and with MXNET_MKLDNN_ENABLED=0 (MXNet's bundled
OpenBLAS), and renders the differential graph (before = oneDNN, after = OpenBLAS: red frames
grew under OpenBLAS). That OpenBLAS misdetects newer CPUs (Prescott kernels, ~30 % slower) is a
confounder, so the core it reports (OPENBLAS_VERBOSE=2) and OPENBLAS_CORETYPE go in the metadata.
With MXNet's profiler on (the default; --no-mxnet leaves it off) both graphs have [op] frames, and
the two backends are also compared operator by operator: a table of each operator's share of the
samples under an [op] frame, and out/mlp-diff-ops.svg, the differential graph re-rooted at them.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from flamegraph.frameworks.mxnet.views import compare_operators, comparison_lines, group_by_op
from flamegraph.io.diagnostics import NoSamples
from flamegraph.io.writer import atomic_output
from flamegraph.model import FoldedProfile
from flamegraph.render import RenderOptions, render_diff
from flamegraph.render.summary import self_weights

from .driver import driver_parser, run_driver
from .mnist import prepare_mnist
from .recipe import MlpRun, fold_training, mxnet_hook, print_top, record_mlp, write_outputs

CORE = re.compile(r"^Core: (\S+)")  # OPENBLAS_VERBOSE=2 prints one line per OpenBLAS loaded


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = driver_parser("collectors.make_diff", __doc__, epochs=2)
    p.add_argument("--no-mxnet", action="store_true", help="no [op]/[dnnl] frames, no operator comparison")
    return p.parse_args(argv)


def record_variant(
    mlp: MlpRun, out: Path, name: str, env: dict[str, str], mxnet: bool = True
) -> tuple[FoldedProfile, float]:
    """Record one backend; returns its training-window profile and mean samples/s."""
    print(f"== {name}: training {mlp.epochs} epochs under perf record", flush=True)
    run = MlpRun(mlp.data, mlp.epochs, env=env)
    hook = mxnet_hook(out / f"mlp-{name}.mxnet") if mxnet else None
    recorded = record_mlp(run, out / f"mlp-{name}.perf.data", hooks=[hook] if hook else [])
    profile = fold_training(recorded, mxnet=hook)
    rate = recorded.log.mean_rate() or 0.0
    profile.metadata["backend"] = name
    profile.metadata["throughput"] = f"{rate:,.0f} samples/s under perf"
    cores = [m.group(1) for line in recorded.lines if (m := CORE.match(line))]
    if "MXNET_MKLDNN_ENABLED" in env:
        profile.metadata["OPENBLAS_CORETYPE"] = os.environ.get("OPENBLAS_CORETYPE", "unset")
        # numpy's OpenBLAS loads first, libmxnet's bundled one last: the last line is the one in use.
        profile.metadata["OpenBLAS core"] = cores[-1] if cores else "not reported"
    write_outputs(profile, out / f"mlp-{name}.folded", None, "", "")
    return profile, rate


def self_shares(profile: FoldedProfile) -> dict[str, float]:
    """% of samples per leaf function."""
    total = profile.total or 1
    return {name: 100.0 * weight / total for name, weight in self_weights(profile.counts.items()).items()}


def print_changes(before: FoldedProfile, after: FoldedProfile, n: int = 8) -> None:
    """The leaf frames whose share of samples changed most (percentage points)."""
    a, b = self_shares(before), self_shares(after)
    changes = sorted(((b.get(k, 0) - a.get(k, 0), k) for k in set(a) | set(b)), key=lambda c: -abs(c[0]))
    print("largest changes in self share, oneDNN -> OpenBLAS (percentage points):")
    for delta, name in changes[:n]:
        print(f"  {delta:+6.1f}  {name if len(name) <= 100 else name[:97] + '...'}")


def render_diff_svg(before: FoldedProfile, after: FoldedProfile, svg: Path, subtitle: str) -> None:
    title = "MXNet MLP: oneDNN (before) vs OpenBLAS (after), normalized"
    options = RenderOptions(title=title, subtitle=subtitle, preset="onednn", normalize=True)
    with atomic_output(svg) as out:
        out.write(render_diff(before, after, options))


def render_operator_diff(before: FoldedProfile, after: FoldedProfile, svg: Path, subtitle: str) -> bool:
    """The differential graph re-rooted at [op] frames; False when a side has none."""
    try:
        grouped = group_by_op(before), group_by_op(after)
    except NoSamples:
        return False
    title = "MXNet MLP by operator: oneDNN (before) vs OpenBLAS (after), normalized"
    options = RenderOptions(title=title, subtitle=subtitle, preset="mxnet-ops", normalize=True)
    with atomic_output(svg) as out:
        out.write(render_diff(*grouped, options))
    return True


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return run_driver("make diff", lambda: compare_backends(args))


def compare_backends(args: argparse.Namespace) -> int:
    mxnet = not args.no_mxnet
    mlp = MlpRun(prepare_mnist(args.cache), args.epochs)
    mkl, mkl_rate = record_variant(mlp, args.out, "mkldnn", {}, mxnet)
    blas_env = {"MXNET_MKLDNN_ENABLED": "0", "OPENBLAS_VERBOSE": "2"}
    blas, blas_rate = record_variant(mlp, args.out, "openblas", blas_env, mxnet)
    core = blas.metadata["OpenBLAS core"]
    subtitle = f"training window; oneDNN {mkl_rate:,.0f} vs OpenBLAS ({core}) {blas_rate:,.0f} samples/s"
    svg = args.out / "mlp-diff.svg"
    render_diff_svg(mkl, blas, svg, subtitle)
    ops_svg = args.out / "mlp-diff-ops.svg"
    by_operator = mxnet and render_operator_diff(mkl, blas, ops_svg, subtitle)
    for name, profile in (("oneDNN", mkl), ("OpenBLAS", blas)):
        print(f"-- {name}:")
        print_top(profile, 6)
    print_changes(mkl, blas)
    if by_operator:
        print("operator by operator, oneDNN -> OpenBLAS (samples, share of samples under an [op] frame):")
        for line in comparison_lines(compare_operators(mkl, blas), "oneDNN", "OpenBLAS"):
            print(line)
        print(f"wrote {ops_svg} (re-rooted at [op] frames)")
    print(f"oneDNN {mkl_rate:,.0f} samples/s, OpenBLAS ({core}, OPENBLAS_CORETYPE="
          f"{blas.metadata['OPENBLAS_CORETYPE']}) {blas_rate:,.0f} samples/s")  # fmt: skip
    print(f"wrote {args.out / 'mlp-mkldnn.folded'}, {args.out / 'mlp-openblas.folded'} and {svg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
