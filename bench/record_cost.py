"""What `make flamegraph`'s recording costs the MLP, part by part, in interleaved runs.

    python bench/record_cost.py [--epochs 2] [--rounds 3] [--setting NAME ...] [--list]

Each round trains the MLP once without perf, then once per setting (in a new order each round, so a
drift of a shared machine hits every setting alike). A setting's cost in a round is its throughput
loss (mean per-epoch samples/s) and the CPU it adds (mean per-epoch CPU seconds of the trainer, all
threads, from its EPOCH_END lines: perf's stack copies are the sampled threads' system time) against
that round's run without perf; the table shows the medians over the rounds, the spreads
(lowest..highest) and the number of pairs. On a shared machine the CPU column is the steadier one.
The settings take one part away (or change one) from `make flamegraph`'s default set,
`--jit --mxnet` at dwarf,65528 -F 499:

    default           --jit --mxnet, dwarf,65528, -F 499 (make flamegraph)
    dwarf,16384       the same with a 16 KB stack copy per sample (dwarf,32768, dwarf,8192: alike)
    -F 99             the same at 99 Hz
    no verbose log    the same with DNNL_VERBOSE=0 (the MXNet profiler still on)
    trace to a file   the same with MXNet writing its trace file itself (FLAMEGRAPH_MXNET_TRACE=file), as
                      before the trace went through a pipe
    no --mxnet        --jit only (no profiler, no verbose log, bulk execution on)
    no --jit          --mxnet only (no DNNL_JIT_DUMP, no kernel scan at exit)
    perf only         dwarf,65528 -F 499, no hooks
    perf only, dwarf,32768 / fp / no stacks / -F 99 / -m 64M   perf alone with one thing changed: which
                      of perf's parts costs the program (the stack copy, the rate, the buffer)
    hooks, no perf    --jit --mxnet's in-process parts (profiler, verbose log, JIT dumps) without perf
    --mxnet hook, no perf (, no verbose log)   --mxnet's in-process parts alone (and with DNNL_VERBOSE=0)
    bulk off, no perf  MXNet's bulk execution off (as --mxnet sets it), nothing else
    streamed          `flamegraph record` (folds while perf records, at most 256 MB of raw data on disk),
                      dwarf,65528 -F 499, no hooks: the folder's `perf script` at idle priority while the
                      spool has room (the default)
    streamed, folder at normal   the same with the folder's `perf script` at normal priority
                      (FLAMEGRAPH_FOLD_PRIORITY=normal: what streaming cost before)
    whole, fold after `flamegraph record --max-spool 0`: recorded whole, folded after the program ended

Beside the program's own figures, each run's CPU seconds per part, polled from /proc (bench/tree_cpu.py):
the program (user+sys, whole process), `perf record`, `perf script` and `perf inject`, our process (the
streamed settings' collapser): what each takes from the two cores, which a loaded machine disturbs far
less than samples/s.

Say the load average (printed) when quoting. `make record-cost` runs it.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.tree_cpu import TreeCpu, role_of  # noqa: E402
from collectors.mlp_log import TrainLog, parse_log  # noqa: E402
from collectors.mnist import prepare_mnist  # noqa: E402
from collectors.recipe import MlpRun, record_mlp  # noqa: E402
from flamegraph.frameworks.jit.hook import JIT_CALL_GRAPH, JitHook  # noqa: E402
from flamegraph.frameworks.mxnet.hook import MxnetHook  # noqa: E402
from flamegraph.frameworks.mxnet.inprocess import BULK_VARIABLES, TRACE_BY_NAME  # noqa: E402
from flamegraph.record import RecordHook, RecordOptions, RecordSpec  # noqa: E402
from flamegraph.record.spec import DEFAULT_MMAP  # noqa: E402

FOLD_PRIORITY = "FLAMEGRAPH_FOLD_PRIORITY"


@dataclass(frozen=True)
class Setting:
    name: str
    call_graph: str | None = JIT_CALL_GRAPH  # None: no stacks
    freq: int = 499
    mmap: str | None = DEFAULT_MMAP
    jit: bool = True
    mxnet: bool = True
    perf: bool = True
    env: tuple[tuple[str, str], ...] = ()
    cli: tuple[str, ...] | None = None  # run through `flamegraph record` with these options (no hooks)


BULK_OFF = tuple((name, "0") for name in BULK_VARIABLES)
SETTINGS = (
    Setting("default"),
    Setting("dwarf,32768", call_graph="dwarf,32768"),
    Setting("dwarf,16384", call_graph="dwarf,16384"),
    Setting("dwarf,8192", call_graph="dwarf,8192"),
    Setting("-F 99", freq=99),
    Setting("no verbose log", env=(("DNNL_VERBOSE", "0"),)),
    Setting("trace to a file", env=((TRACE_BY_NAME, "file"),)),
    Setting("no --mxnet", mxnet=False),
    Setting("no --jit", jit=False),
    Setting("perf only", jit=False, mxnet=False),
    Setting("perf only, dwarf,32768", jit=False, mxnet=False, call_graph="dwarf,32768"),
    Setting("perf only, fp", jit=False, mxnet=False, call_graph="fp"),
    Setting("perf only, no stacks", jit=False, mxnet=False, call_graph=None),
    Setting("perf only, -F 99", jit=False, mxnet=False, freq=99),
    Setting("perf only, -m 64M", jit=False, mxnet=False, mmap="64M"),
    Setting("hooks, no perf", perf=False),
    Setting("--mxnet hook, no perf", jit=False, perf=False),
    Setting("--mxnet hook, no perf, no verbose log", jit=False, perf=False, env=(("DNNL_VERBOSE", "0"),)),
    Setting("bulk off, no perf", jit=False, mxnet=False, perf=False, env=BULK_OFF),
    Setting("streamed", jit=False, mxnet=False, cli=()),
    Setting("streamed, folder at normal", jit=False, mxnet=False, cli=(), env=((FOLD_PRIORITY, "normal"),)),
    Setting("whole, fold after", jit=False, mxnet=False, cli=("--max-spool", "0")),
)
Roles = dict[str, tuple[float, float]]


def hooks_for(setting: Setting, scratch: Path) -> list[RecordHook]:
    hooks: list[RecordHook] = []
    quiet: Callable[[str], None] = lambda line: None  # noqa: E731
    if setting.jit:
        hooks.append(JitHook(scratch / "run.jit", note=quiet, python=False))
    if setting.mxnet:
        hooks.append(MxnetHook(scratch / "run.mxnet", note=quiet))
    return hooks


def run_setting(setting: Setting, mlp: MlpRun, scratch: Path) -> tuple[TrainLog, Roles]:
    """One training run at `setting`; its log (per-epoch samples/s) and the CPU seconds of each part."""
    with TreeCpu(os.getpid(), classify=role_in_bench, skip_root=True) as tree:
        log = _run_setting(setting, mlp, scratch)
    return log, tree.seconds()


def role_in_bench(pid: int, root: int) -> str:
    """This process's children: the flamegraph CLI (streamed settings) is ours, not the program."""
    return role_of(pid, pid)


def _run_setting(setting: Setting, mlp: MlpRun, scratch: Path) -> TrainLog:
    run = MlpRun(mlp.data, mlp.epochs, env={**mlp.env, **dict(setting.env)}, python=mlp.python)
    if setting.cli is not None:
        return run_cli(setting, run, scratch)
    hooks = hooks_for(setting, scratch)
    try:
        if setting.perf:
            how = RecordOptions(call_graph=setting.call_graph, freq=setting.freq, mmap=setting.mmap)
            return record_mlp(run, scratch / "perf.data", how, hooks).log
        spec = RecordSpec(command=run.command(), env=run.environment(), cwd=str(scratch))  # (oneDNN's dumps land there)
        for hook in hooks:
            spec = hook.prepare(spec)
        proc = subprocess.run(
            spec.command, env={**os.environ, **spec.env}, cwd=spec.cwd, capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise SystemExit(f"{setting.name}: training failed: {proc.stderr.strip().splitlines()[-1:]}")
        return parse_log(proc.stdout)
    finally:
        for hook in hooks:
            if isinstance(hook, JitHook):
                hook.cleanup()
        for leftover in scratch.iterdir():
            shutil.rmtree(leftover, ignore_errors=True) if leftover.is_dir() else leftover.unlink(missing_ok=True)


def run_cli(setting: Setting, run: MlpRun, scratch: Path) -> TrainLog:
    """`flamegraph record` of the trainer (the program's output relayed: its log)."""
    out = scratch / "cli"
    assert setting.call_graph is not None, "the CLI settings record stacks"
    command = [
        sys.executable, "-m", "flamegraph", "record", "-F", str(setting.freq), "--call-graph", setting.call_graph,
        *(setting.cli or ()), "--no-python", "-o", str(out / "run.svg"), "--", *run.command(),
    ]  # fmt: skip
    env = {**os.environ, **run.environment(), "TMPDIR": str(scratch)}
    env["PYTHONPATH"] = os.pathsep.join((str(REPO), env.get("PYTHONPATH", "")))
    proc = subprocess.run(command, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{setting.name}: flamegraph record failed: {proc.stderr.strip().splitlines()[-1:]}")
    for line in proc.stderr.splitlines():
        if "dropped" in line or "lost" in line:
            print(f"    {setting.name}: {line}", flush=True)
    return parse_log(proc.stdout)


def baseline(mlp: MlpRun) -> tuple[TrainLog, Roles]:
    with TreeCpu(os.getpid(), classify=role_in_bench, skip_root=True) as tree:
        log = _baseline(mlp)
    return log, tree.seconds()


def _baseline(mlp: MlpRun) -> TrainLog:
    proc = subprocess.run(mlp.command(), env={**os.environ, **mlp.environment()}, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"training without perf failed: {proc.stderr.strip().splitlines()[-1:]}")
    return parse_log(proc.stdout)


def cost(base: TrainLog, run: TrainLog) -> float:
    """Throughput loss in % (mean per-epoch samples/s)."""
    without, with_ = base.mean_rate() or 0.0, run.mean_rate() or 0.0
    return 100.0 * (without - with_) / without if without else float("nan")


def cpu_cost(base: TrainLog, run: TrainLog) -> float:
    """CPU added in % (mean per-epoch CPU seconds of the trainer, all threads: perf's stack copies are the
    sampled threads' system time); a loaded machine disturbs it far less than samples/s."""
    without, with_ = base.mean_cpu(), run.mean_cpu()
    return 100.0 * (with_ - without) / without if without and with_ else float("nan")


def table(costs: dict[str, list[float]], cpu: dict[str, list[float]]) -> list[str]:
    rows = [
        f"| {'setting':<16} | throughput loss, median | spread | CPU added, median | spread | pairs |",
        f"| {'-' * 16} | ---: | --- | ---: | --- | ---: |",
    ]
    for name, values in costs.items():
        if values:
            spread = f"{min(values):+.1f} .. {max(values):+.1f} %"
            c = cpu[name]
            cpu_spread = f"{min(c):+.1f} .. {max(c):+.1f} %"
            rows.append(f"| {name:<16} | {statistics.median(values):+.1f} % | {spread} | "
                        f"{statistics.median(c):+.1f} % | {cpu_spread} | {len(values)} |")  # fmt: skip
    return rows


def parts_table(parts: dict[str, list[Roles]]) -> list[str]:
    """Median CPU seconds per run of each part: the program (user, sys), perf record, the folder."""
    rows = [
        "| setting | program user | program sys | perf record | perf script, inject | ours (collapser) | runs |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]

    def median(runs: list[Roles], role: str, which: int | None = None) -> str:
        values = [sum(r.get(role, (0.0, 0.0))) if which is None else r.get(role, (0.0, 0.0))[which] for r in runs]
        return f"{statistics.median(values):.2f} s" if values else "–"

    for name, runs in parts.items():
        if runs:
            rows.append(f"| {name} | {median(runs, 'workload', 0)} | {median(runs, 'workload', 1)} | "
                        f"{median(runs, 'perf record')} | {median(runs, 'perf script')} | {median(runs, 'ours')} | "
                        f"{len(runs)} |")  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/record_cost.py", description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--setting", action="append", help="a setting's name (repeatable; default: all)")
    p.add_argument("--list", action="store_true", help="list the settings and exit")
    args = p.parse_args(argv)
    if args.list:
        print("\n".join(s.name for s in SETTINGS))
        return 0
    chosen = [s for s in SETTINGS if not args.setting or s.name in args.setting]
    if args.setting and len(chosen) != len(args.setting):
        raise SystemExit(f"unknown setting; known: {', '.join(s.name for s in SETTINGS)}")
    mlp = MlpRun(prepare_mnist(), args.epochs, python=os.environ.get("WORKLOAD_PYTHON") or sys.executable)
    costs: dict[str, list[float]] = {s.name: [] for s in chosen}
    cpu: dict[str, list[float]] = {s.name: [] for s in chosen}
    parts: dict[str, list[Roles]] = {"without perf": [], **{s.name: [] for s in chosen}}
    loads = [os.getloadavg()[0]]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="record-cost-") as tmp:
        scratch = Path(tmp)
        for number in range(1, args.rounds + 1):
            order = random.Random(number).sample(chosen, len(chosen))
            base, roles = baseline(mlp)
            parts["without perf"].append(roles)
            print(f"round {number}: without perf {base.mean_rate() or 0:,.0f} samples/s", flush=True)
            for setting in order:
                log, roles = run_setting(setting, mlp, scratch)
                parts[setting.name].append(roles)
                loss, added = cost(base, log), cpu_cost(base, log)
                costs[setting.name].append(loss)
                cpu[setting.name].append(added)
                print(f"  {setting.name:<16} throughput {loss:+.1f} %, CPU {added:+.1f} %", flush=True)
            loads.append(os.getloadavg()[0])
    print(f"\n{args.rounds} rounds of {args.epochs} epochs in {time.monotonic() - started:.0f} s; load average "
          f"{min(loads):.1f}-{max(loads):.1f} (1 min, {os.cpu_count()} CPUs); cost = throughput loss against "
          "the round's run without perf (samples/s; CPU: per-epoch CPU seconds, all threads)")  # fmt: skip
    print("\n".join(table(costs, cpu)))
    print("\nCPU seconds per run, median (polled from /proc: the program's whole process, import included):")
    print("\n".join(parts_table(parts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
