"""How much DWARF stack copy `--jit --mxnet` needs on the MLP: the graph each size keeps and what it costs.

    python bench/stack_copy.py [--rounds 2] [--epochs 2] [--max-batches 0] [--size BYTES ...]
                               [--trainer LABEL=PYTHON ...] [--nest N]

perf copies SIZE bytes of the sampled thread's stack per sample (`--call-graph dwarf,SIZE`) and unwinds
them afterwards: a copy smaller than the stack cuts it before its thread root. Each trainer (default:
this interpreter, MXNet's threaded engine on Python 3.11; and `.venv-312` when `make workload-venv` made
it, or $WORKLOAD_PYTHON: the naive engine with Python frames, `make flamegraph`'s choice on 3.12) trains
once without perf and once per size under `perf record` with `--jit --mxnet`'s hooks at 499 Hz, the
sizes interleaved within a round (A B C ... then ... C B A: a drift of a shared machine hits every size
alike). Per size, medians over the rounds of:

    stacks rooted    % of the training window's samples whose stack reaches a thread root (the report's figure)
    JIT rooted/named % of the samples in JIT code whose stack reaches a root / whose kernel is named
    [op], [dnnl]     the `mxnet:` coverage: % of engine-thread samples under an [op] frame, % of JIT-kernel
                     samples under a [dnnl] frame
    MB/sample        perf record's own file (before `perf inject --jit`) over the samples it wrote; MB/s over
                     the recording's wall time
    perf record CPU  user+sys seconds of `perf record` (polled from /proc, bench/tree_cpu.py)
    trainer CPU      the trainer's CPU seconds per epoch (user+sys, all threads, from its EPOCH_END lines:
                     the kernel's stack copies are the sampled threads' system time), and against the
                     round's run without perf

--nest N calls the trainer from N extra Python functions: on 3.12 with perf support every Python call is a
native frame too, so this is how much headroom a size leaves for a program whose training loop sits deeper
than the MLP's.

Say the load average (printed) when quoting. `make stack-copy` runs it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.tables import load, table_head  # noqa: E402
from bench.tree_cpu import TreeCpu, role_of  # noqa: E402
from collectors.mlp_log import TrainLog  # noqa: E402
from collectors.mnist import prepare_mnist  # noqa: E402
from collectors.recipe import MlpRun, choose_engine, fold_training, mxnet_hook, record_mlp, train_without_perf  # noqa: E402
from flamegraph.frameworks.jit.hook import JitHook  # noqa: E402
from flamegraph.io.perf import find_perf  # noqa: E402
from flamegraph.record import RecordHook, Recording, RecordOptions, RecordSpec  # noqa: E402

SIZES = (16384, 24576, 32768, 40960, 49152, 65528)
FREQ = 499
PERCENT = re.compile(r"([0-9.]+) %")
SAMPLE_EVENTS = re.compile(r"^\s*SAMPLE events:\s+(\d+)", re.MULTILINE)


@dataclass
class RawSize:
    """A hook listed before --jit's: its `finish` sees perf record's own file, before `perf inject --jit`."""

    size: int = 0
    samples: int = 0  # SAMPLE events in it (perf record's "(N samples)" needs a pass --buildid-all skips)

    def prepare(self, spec: RecordSpec) -> RecordSpec:
        return spec

    def finish(self, recording: Recording) -> Recording:
        self.size = recording.perf_data.stat().st_size
        stats = subprocess.run(
            [find_perf(), "report", "--stats", "-i", str(recording.perf_data)], capture_output=True, text=True
        ).stdout
        self.samples = int(match.group(1)) if (match := SAMPLE_EVENTS.search(stats)) else 0
        return recording


@dataclass(frozen=True)
class NestedRun(MlpRun):
    """The trainer called from `nest` extra Python functions deep: a program whose training loop sits deeper in
    its Python stack than the MLP's (on 3.12 with perf support each Python call is a native frame too)."""

    nest: int = 0

    def command(self) -> tuple[str, ...]:
        if not self.nest:
            return super().command()
        code = (
            "import sys\nfrom collectors.train_mlp import main\n"
            "def nest(n):\n    return nest(n - 1) if n else main(sys.argv[1:])\n"
            f"sys.exit(nest({self.nest}))"
        )
        return (self.python, "-c", code, *super().command()[3:])


@dataclass(frozen=True)
class Figures:
    """One recording of one trainer at one copy size."""

    rooted: float  # % of samples
    jit_rooted: float  # % of JIT samples
    jit_named: float  # % of JIT samples
    op: float  # % of engine-thread samples under an [op] frame
    dnnl: float  # % of JIT-kernel samples under a [dnnl] frame
    mb_per_sample: float
    mb_per_s: float
    perf_cpu: float  # perf record's user+sys seconds
    epoch_cpu: float  # the trainer's CPU seconds per epoch
    lost: int  # samples perf lost

    def line(self) -> str:
        return (
            f"rooted {self.rooted:.1f} %, JIT rooted {self.jit_rooted:.1f} % named {self.jit_named:.1f} %, "
            f"[op] {self.op:.1f} %, [dnnl] {self.dnnl:.1f} %, {self.mb_per_sample:.3f} MB/sample, "
            f"{self.mb_per_s:.1f} MB/s, perf record {self.perf_cpu:.2f} s, trainer {self.epoch_cpu:.2f} s/epoch"
            + (f", {self.lost} lost" if self.lost else "")
        )


@dataclass
class Trainer:
    label: str
    mlp: MlpRun
    runs: dict[int, list[Figures]] = field(default_factory=dict)
    baseline_cpu: list[float] = field(default_factory=list)  # per round: CPU seconds per epoch without perf


def percents(text: str) -> list[float]:
    """The % figures of one header value, e.g. '14.1 % of samples, 100.0 % named, 98.9 % reach a root'."""
    return [float(x) for x in PERCENT.findall(text)]


def record_once(mlp: MlpRun, size: int, scratch: Path) -> Figures:
    """`--jit --mxnet` at dwarf,SIZE -F 499; the training window folded with the MXNet frames joined."""
    raw = RawSize()
    jit = JitHook(scratch / "run.jit", note=_quiet, python=None)  # Python frames on 3.12+, as make flamegraph
    mx = mxnet_hook(scratch / "run.mxnet", _quiet)
    hooks: list[RecordHook] = [raw, jit, mx]
    how = RecordOptions(call_graph=f"dwarf,{size}", freq=FREQ)
    try:
        with silenced():
            with TreeCpu(os.getpid(), classify=lambda pid, root: role_of(pid, pid), skip_root=True) as tree:
                run = record_mlp(mlp, scratch / "perf.data", how, hooks)
            profile = fold_training(run, mxnet=mx, quiet=True)
    finally:
        jit.cleanup()
        for leftover in scratch.iterdir():
            shutil.rmtree(leftover, ignore_errors=True) if leftover.is_dir() else leftover.unlink(missing_ok=True)
    recording, summary = run.recording, mx.last
    jit_figures = percents(profile.metadata.get("JIT code", "")) + [0.0, 0.0, 0.0]
    samples = raw.samples
    return Figures(
        rooted=percents(profile.metadata["stacks reaching a thread root"])[0],
        jit_rooted=jit_figures[2],
        jit_named=jit_figures[1],
        op=summary.op_coverage if summary else float("nan"),
        dnnl=summary.jit_coverage if summary else float("nan"),
        mb_per_sample=raw.size / 1e6 / samples if samples else float("nan"),
        mb_per_s=raw.size / 1e6 / recording.seconds if recording.seconds else float("nan"),
        perf_cpu=sum(tree.seconds().get("perf record", (0.0, 0.0))),
        epoch_cpu=run.log.mean_cpu() or float("nan"),
        lost=recording.lost.lost if recording.lost else 0,
    )


def _quiet(line: str) -> None:
    """The hooks' lines (kernels named, coverage...): the table says what matters here."""


def baseline_cpu(mlp: MlpRun) -> float:
    """The same training without perf: CPU seconds per epoch."""
    with silenced():
        log: TrainLog = train_without_perf(mlp)
    return log.mean_cpu() or float("nan")


@contextmanager
def silenced() -> Iterator[None]:
    """The trainer's and perf's lines (relayed to our stdout and stderr) go nowhere: the table says it all."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, null):
            os.close(fd)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def table(trainers: list[Trainer], sizes: list[int]) -> list[str]:
    rows = table_head((
        "trainer", "`--call-graph`", "stacks reaching a root", "JIT samples rooted", "JIT samples named",
        "[op] coverage", "[dnnl] coverage", "MB per sample", "perf MB/s", "perf record CPU",
        "trainer CPU per epoch", "vs no perf", "runs",
    ))  # fmt: skip
    for trainer in trainers:
        base = median(trainer.baseline_cpu)
        rows.append(f"| {trainer.label} | no perf | | | | | | | | | {base:.2f} s | | {len(trainer.baseline_cpu)} |")
        for size in sizes:
            runs = trainer.runs[size]
            if not runs:
                continue

            def m(attr: str, runs: list[Figures] = runs) -> float:
                return median([getattr(r, attr) for r in runs])

            def pct(attr: str, runs: list[Figures] = runs) -> str:
                values = [getattr(r, attr) for r in runs]
                low, high = min(values), max(values)
                return f"{median(values):.1f} %" + (f" ({low:.1f}..{high:.1f})" if high - low >= 0.05 else "")

            added = 100.0 * (m("epoch_cpu") - base) / base if base == base and base else float("nan")
            rows.append(
                f"| {trainer.label} | dwarf,{size} | {pct('rooted')} | {pct('jit_rooted')} | {pct('jit_named')} | "
                f"{pct('op')} | {pct('dnnl')} | {m('mb_per_sample'):.3f} | {m('mb_per_s'):.1f} | "
                f"{m('perf_cpu'):.2f} s | {m('epoch_cpu'):.2f} s | {added:+.1f} % | {len(runs)} |"
            )
    return rows


def default_trainers() -> list[str]:
    found = [f"3.11 threaded={sys.executable}"]
    py312 = os.environ.get("WORKLOAD_PYTHON") or str(REPO / ".venv-312" / "bin" / "python")
    if Path(py312).exists():
        found.append(f"3.12 naive={py312}")
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/stack_copy.py", description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--max-batches", type=int, default=0, help="stop each epoch after N batches (0: all)")
    p.add_argument("--size", type=int, action="append", help=f"a copy size in bytes (repeatable; default {SIZES})")
    p.add_argument("--nest", type=int, default=0, help="call the trainer from N extra Python functions")
    p.add_argument("--trainer", action="append", help="LABEL=PYTHON (repeatable; default: 3.11 here, .venv-312)")
    args = p.parse_args(argv)
    sizes = args.size or list(SIZES)
    data = prepare_mnist()
    trainers = []
    for given in args.trainer or default_trainers():
        label, _, python = given.partition("=")
        engine = choose_engine("auto", python, frames=True)  # naive on 3.12+, as make flamegraph
        mlp = NestedRun(data, args.epochs, args.max_batches, env=engine.env, python=python, nest=args.nest)
        trainers.append(Trainer(label, mlp, {size: [] for size in sizes}))
    loads = [os.getloadavg()[0]]
    started = time.monotonic()
    nested = f", the trainer {args.nest} Python calls deeper" if args.nest else ""
    print(f"load average {load()}; {args.rounds} rounds, sizes {sizes}, {args.epochs} epochs{nested}", flush=True)
    with tempfile.TemporaryDirectory(prefix="stack-copy-") as tmp:
        scratch = Path(tmp)
        for number in range(1, args.rounds + 1):
            order = sizes if number % 2 else sizes[::-1]
            for trainer in trainers:
                trainer.baseline_cpu.append(baseline_cpu(trainer.mlp))
                print(f"round {number}, {trainer.label}: no perf {trainer.baseline_cpu[-1]:.2f} s CPU/epoch")
                for size in order:
                    figures = record_once(trainer.mlp, size, scratch)
                    trainer.runs[size].append(figures)
                    print(f"  dwarf,{size}: {figures.line()}", flush=True)
            loads.append(os.getloadavg()[0])
    print(f"\n{args.rounds} rounds in {time.monotonic() - started:.0f} s; load average (1 min) {min(loads):.1f}-"
          f"{max(loads):.1f} on {os.cpu_count()} CPUs; -F {FREQ}, --jit --mxnet's hooks; medians (spread)")  # fmt: skip
    print("\n".join(table(trainers, sizes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
