"""The MLP recipe shared by the `make` drivers: train with and without perf, fold the training window.

run = record_mlp(MlpRun(data, epochs=3), out_dir / "perf.data")  # perf record the trainer
baseline = train_without_perf(MlpRun(data, epochs=3))           # the same run, no perf
profile = fold_training(run)                                    # samples in TRAIN_START..END only
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from flamegraph.frameworks.mxnet.hook import MxnetHook
from flamegraph.io.diagnostics import FlamegraphError
from flamegraph.model import FoldedProfile
from flamegraph.pipeline import outputs as pipeline_outputs
from flamegraph.pipeline.oncpu import OnCpuRequest, RecordHooks, fold_oncpu
from flamegraph.record import RecordHook, Recording, RecordOptions, RecordSpec, Status, record
from flamegraph.record.command import python_target
from flamegraph.render import RenderOptions
from flamegraph.render.summary import top_self
from flamegraph.window import Window

from .mlp_log import TrainLog, parse_log

ROOT = Path(__file__).resolve().parent.parent  # the checkout: `collectors` is importable from here


class TrainingFailed(FlamegraphError):
    """The trainer exited with an error or printed no training window."""


@dataclass(frozen=True)
class MlpRun:
    """One training run of `collectors.train_mlp`; `env` goes to the trainer only."""

    data: Path
    epochs: int = 3
    max_batches: int = 0
    env: dict[str, str] = field(default_factory=dict)
    python: str = sys.executable

    def command(self) -> tuple[str, ...]:
        argv = [
            self.python,
            "-m",
            "collectors.train_mlp",
            "--data",
            str(self.data),
            "--epochs",
            str(self.epochs),
        ]
        if self.max_batches:
            argv += ["--max-batches", str(self.max_batches)]
        return tuple(argv)

    def environment(self) -> dict[str, str]:
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        return {"PYTHONPATH": path, **self.env}


ENGINE_VARIABLE = "MXNET_ENGINE_TYPE"
NAIVE = "NaiveEngine"
ENGINES = ("auto", "naive", "threaded")
NAIVE_HEADER = (
    "NaiveEngine (MXNET_ENGINE_TYPE): each operator runs inside its push, on the Python thread that pushed it, one "
    "at a time, so a stack joins the Python caller to its operator as perf unwound it; same accuracies as the "
    "threaded engine, not its overlap of operators (docs/python.md)"
)


@dataclass(frozen=True)
class EngineChoice:
    """MXNet's engine for the runs: the trainer's environment, one line for the terminal, the header's text."""

    env: dict[str, str]
    line: str
    header: str


def choose_engine(wanted: str, python: str, frames: bool) -> EngineChoice:
    """`auto`: the naive engine when the trainer's Python functions become frames (Python 3.12+, `frames`:
    recorded with the JIT hook), MXNet's default threaded engine otherwise. A MXNET_ENGINE_TYPE the user
    set is kept, whatever `wanted` says."""
    own = os.environ.get(ENGINE_VARIABLE)
    if own:
        return EngineChoice({}, f"{ENGINE_VARIABLE}={own} (yours) kept", f"{own} (your {ENGINE_VARIABLE})")
    if wanted == "auto":
        target = python_target((python,), os.environ) if frames else None
        wanted = "naive" if target is not None and target.version >= (3, 12) else "threaded"
    if wanted == "threaded":
        return EngineChoice({}, "", "")
    return EngineChoice(
        {ENGINE_VARIABLE: NAIVE},
        f"{ENGINE_VARIABLE}={NAIVE}: operators run on the Python thread that pushed them, so the graph joins "
        "train_epoch to its operators and kernels (--engine threaded: MXNet's default engine)",
        NAIVE_HEADER,
    )


@dataclass
class RecordedRun:
    recording: Recording
    log: TrainLog
    lines: list[str]
    hooks: RecordHooks = field(default_factory=RecordHooks)  # the JIT and MXNet hooks it was recorded with

    @property
    def jit_unwound(self) -> bool:
        """Recorded with JIT kernels given unwind info (a JitHook)."""
        return self.hooks.unwound

    @property
    def window(self) -> Window | None:
        """TRAIN_START..TRAIN_END; after Ctrl-C, from TRAIN_START to wherever the recording stopped."""
        if self.log.window is not None:
            return self.log.window
        return Window(self.log.start, None) if self.log.start is not None else None


def train_without_perf(run: MlpRun) -> TrainLog:
    """The same training without perf, for the overhead figure; its output is echoed."""
    proc = subprocess.run(run.command(), env={**os.environ, **run.environment()}, capture_output=True, text=True)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise TrainingFailed(f"training without perf failed (exit {proc.returncode}): {tail}")
    return parse_log(proc.stdout)


def record_mlp(
    run: MlpRun, perf_data: Path, options: RecordOptions | None = None, hooks: Sequence[RecordHook] = ()
) -> RecordedRun:
    """`perf record` the trainer: how is `options` (event, frequency, call graph...), what is the run.

    `hooks` plug pre- and post-steps into the recording (e.g. JIT naming and `perf inject --jit`).
    """
    spec = RecordSpec(command=run.command(), options=options or RecordOptions(), env=run.environment())
    log = TrainLog()
    lines: list[str] = []

    def tap(line: str) -> None:
        lines.append(line)
        log.feed(line)

    recording = record(spec, perf_data, hooks=hooks, on_output=tap)
    shown = {k: v for k, v in recording.spec.env.items() if k != "PYTHONPATH"}  # ours, not the user's
    recording.metadata.pop("environment", None)
    if shown:
        recording.metadata["environment"] = " ".join(f"{k}={v}" for k, v in sorted(shown.items()))
    if not recording.interrupted and (recording.exit_status or log.window is None):
        tail = next((line for line in reversed(lines) if line.strip()), "no output")
        status = recording.exit_status
        raise TrainingFailed(f"training under perf failed (exit {status}; {perf_data} kept): {tail}")
    return RecordedRun(recording, log, lines, RecordHooks.among(hooks))


def fold_training(run: RecordedRun, group_unknown: bool = True, mxnet: MxnetHook | None = None) -> FoldedProfile:
    """Fold only the training window (TRAIN_START..TRAIN_END), leaving out start-up and exit.

    With `mxnet` (the hook the run was recorded with), MXNet operator and oneDNN primitive frames
    are joined in, and the coverage, clock and per-operator tables are printed and put in the header.
    """
    request = OnCpuRequest(run.recording.spec, run.window, group_unknown=group_unknown)  # the pipeline's own fold
    return fold_oncpu(run.recording, request, Status(), RecordHooks(run.hooks.jit, mxnet))


def mxnet_hook(directory: Path) -> MxnetHook:
    """The `--mxnet` hook for a run whose profiler files go to `directory`."""
    return MxnetHook(directory.absolute(), note=print)


def write_outputs(profile: FoldedProfile, folded: Path, svg: Path | None, title: str, subtitle: str) -> None:
    """The folded text with its capture facts beside it (FOLDED.json: `flamegraph render FOLDED` draws the
    same graph) and, when asked, the SVG with the oneDNN highlight preset (the CLI's safe writer)."""
    options = RenderOptions(title=title, subtitle=subtitle, preset="onednn")
    pipeline_outputs.write_outputs(profile, pipeline_outputs.Outputs(svg, options, folded), lambda line: None)


def print_top(profile: FoldedProfile, n: int = 10, width: int = 100) -> None:
    total = profile.total or 1
    print(f"top {n} frames by self samples ({profile.total:,.0f} samples in the training window):")
    for name, weight in top_self(profile.counts.items(), n):
        short = name if len(name) <= width else name[: width - 3] + "..."
        print(f"  {100 * weight / total:5.1f} %  {short}")


def overhead(baseline: TrainLog, profiled: TrainLog, best: bool = False) -> float | None:
    """Relative throughput loss under perf, in %, from the mean (or the best) per-epoch samples/s."""
    base, prof = (baseline.best_rate(), profiled.best_rate()) if best else (baseline.mean_rate(), profiled.mean_rate())
    if not base or not prof:
        return None
    return 100.0 * (base - prof) / base


def shares(profile: FoldedProfile, needles: Sequence[str]) -> dict[str, float]:
    """% of samples whose stack contains each needle (a substring of any frame)."""
    total = profile.total or 1
    return {needle: 100.0 * sum(w for s, w in profile.counts.items() if needle in s) / total for needle in needles}
