"""What `record --memory` costs: a malloc-heavy C program and the MXNet MLP, unprobed against the sampling
allocator (`--memory-sample SIZE`: a sample every SIZE bytes on average), and every call probed (`all`).

    python bench/memory_cost.py [--rounds 3] [--modes none,preload,512K/none,512K] [--workloads c,mlp]
                                [--calls 10000000] [--call-graph dwarf,16384] [--mmap 16M] [--max-batches 100]

Modes: none (no perf, nothing preloaded); preload (the sampling allocator preloaded at 512 KiB without
perf: its markers are plain calls, so this is the interposition alone); SIZE[/RATE] (record
--memory-sample SIZE --memory-max-rate RATE; RATE defaults to record's, 1000; none: no limit); all
(every call probed in the C library: slow, not in the defaults).
Each workload runs once per mode and round, the modes of a round back to back and their order rotated
from round to round (none preload 2M ..., preload 2M ... none, ...), so each round's runs share the
machine's load of the moment. A recorded run goes through what `record --memory` does (the probes of
record/memory.py added and deleted around `perf record`, the allocator preloaded); nothing is folded.
Per run:
    c     bench/malloc_heavy.c (CALLS malloc/free pairs): its own CPU time per call, measured inside the
          program (the probe's trap is charged to it; perf's writing is not)
    mlp   collectors.train_mlp on real MNIST: the training throughput (samples/s, the trainer's own clock)
and for both: the CPU time of perf and the program together (our waited-for children), the records perf
wrote and the share it lost, perf.data's size. Each probed run is compared with the unprobed run of its
own round (a pair); the table gives the median of the pairs, their spread (min..max) and their number.
Say the load (printed first and last) when you quote a figure.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.tables import load, spread, table_head  # noqa: E402
from collectors.mnist import prepare_mnist  # noqa: E402
from collectors.recipe import MlpRun, record_mlp, train_without_perf  # noqa: E402
from flamegraph.io.perf import find_perf  # noqa: E402
from flamegraph.record import RecordOptions, RecordSpec, Status, record  # noqa: E402
from flamegraph.record.defaults import MEMORY_MAX_RATE  # noqa: E402
from flamegraph.record.lost import read_lost  # noqa: E402
from flamegraph.record.memory import MemoryRequest, format_size, memory_probes, parse_max_rate, parse_sample  # noqa: E402
from flamegraph.record.sampler import build_sampler, preload_env  # noqa: E402
from flamegraph.record.spec import DEFAULT_CALL_GRAPH, DEFAULT_MMAP, Recording  # noqa: E402

WORKLOADS = ("c", "mlp")
PROGRAM = REPO / "bench" / "malloc_heavy.c"


PRELOAD_MEAN = 512 * 1024


@dataclass(frozen=True, order=True)
class Mode:
    sample: int  # NONE, PRELOAD, ALL (every call probed), or the mean bytes between samples
    limit: int = MEMORY_MAX_RATE  # samples per second per process at most (0: no limit)


NONE, PRELOAD, ALL = Mode(-2), Mode(-1), Mode(0)  # the modes that are not a sampling size


@dataclass(frozen=True)
class Run:
    workload: str
    sample: Mode
    cpu_s: float  # user + sys of perf and the program
    per_call_us: float = 0.0  # c: the program's CPU per malloc/free pair
    rate: float = 0.0  # mlp: training samples/s
    records: int = 0
    lost: float = 0.0  # share of the records perf lost
    mb: float = 0.0  # perf.data


def mode_name(mode: Mode) -> str:
    names = {NONE: "none", PRELOAD: "preloaded, no perf", ALL: "every call"}
    limited = f", ≤ {mode.limit:,}/s" if mode.limit else ", no limit"
    return names.get(mode, f"every {format_size(mode.sample)}{limited}")


def parse_mode(text: str) -> Mode:
    known = {"none": NONE, "preload": PRELOAD}.get(text.strip().lower())
    if known is not None:
        return known
    size, _, rate = text.partition("/")
    sample = parse_sample(size)
    return Mode(sample, parse_max_rate(rate) if rate and sample else MEMORY_MAX_RATE if sample else 0)


def children_cpu() -> float:
    """Of our waited-for children, in µs steps (os.times counts ticks of 10 ms: the C program takes 5 ms)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def compile_program(scratch: Path) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise SystemExit("bench/memory_cost.py: no C compiler (apt-get install gcc)")
    binary = scratch / "malloc_heavy"
    subprocess.run([compiler, "-O2", "-fno-omit-frame-pointer", "-o", str(binary), str(PROGRAM)], check=True)
    return binary


def per_call(lines: list[str], what: str) -> float:
    """µs of the program's CPU per call, from its "calls N cpu_ns T" line."""
    for line in lines:
        fields = line.split()
        if len(fields) == 4 and fields[0] == "calls" and fields[2] == "cpu_ns":
            return int(fields[3]) / 1000 / max(int(fields[1]), 1)
    raise SystemExit(f"bench/memory_cost.py: {what} printed no 'calls N cpu_ns T' line")


def measured(recording: Recording) -> tuple[int, float, float]:
    """Records written, the share lost, perf.data's MB; perf.data removed (an every-call run can be GBs)."""
    size = recording.perf_data.stat().st_size / 1e6
    stats = recording.lost or read_lost(find_perf(), recording.perf_data)  # perf report --stats
    recording.perf_data.unlink()
    return (stats.samples, stats.share, size) if stats is not None else (recording.samples or 0, 0.0, size)


def run_c(binary: Path, calls: int, sample: Mode, scratch: Path, base: RecordOptions) -> Run:
    before = children_cpu()
    if sample.sample < 0:
        preloaded = preload_env(build_sampler(False), PRELOAD_MEAN, 0, {})
        env = {**os.environ, **preloaded} if sample == PRELOAD else None
        done = subprocess.run([str(binary), str(calls)], capture_output=True, text=True, check=True, env=env)
        return Run("c", sample, children_cpu() - before, per_call(done.stdout.splitlines(), str(binary)))
    lines: list[str] = []
    spec = RecordSpec(command=(str(binary), str(calls)), options=base)
    with memory_probes(MemoryRequest("alloc", sample.sample, sample.limit), None, note=lambda line: None) as probes:
        recording = record(probes.apply(spec), scratch / "c.perf.data", on_output=lines.append, status=Status())
    cpu = children_cpu() - before
    records, lost, mb = measured(recording)
    return Run("c", sample, cpu, per_call(lines, str(binary)), records=records, lost=lost, mb=mb)


def run_mlp(mlp: MlpRun, sample: Mode, scratch: Path, base: RecordOptions) -> Run:
    before = children_cpu()
    if sample.sample < 0:
        env = preload_env(build_sampler(False), PRELOAD_MEAN, 0, mlp.env) if sample == PRELOAD else mlp.env
        rate = train_without_perf(replace(mlp, env=env)).mean_rate() or 0.0
        return Run("mlp", sample, children_cpu() - before, rate=rate)
    with memory_probes(MemoryRequest("alloc", sample.sample, sample.limit), None, note=lambda line: None) as probes:
        applied = probes.apply(RecordSpec(command=("x",), options=base, env=mlp.env))
        recorded = record_mlp(replace(mlp, env=applied.env), scratch / "mlp.perf.data", applied.options)
    cpu = children_cpu() - before
    records, lost, mb = measured(recorded.recording)
    return Run("mlp", sample, cpu, rate=recorded.log.mean_rate() or 0.0, records=records, lost=lost, mb=mb)



def table(rounds: list[dict[tuple[str, Mode], Run]]) -> list[str]:
    """One row per workload and mode; each run against the unprobed run (none) of its round."""
    head = ("workload", "mode", "CPU per call", "vs none", "CPU, perf + program (vs none)", "records", "lost",
            "perf.data")  # fmt: skip
    rows = table_head(head)
    keys = sorted({key for found in rounds for key in found})
    for workload, sample in keys:
        runs = [r for r in rounds if (workload, sample) in r]
        mine = [r[(workload, sample)] for r in runs]
        base = [r.get((workload, NONE)) for r in runs]
        pairs = [(m, b) for m, b in zip(mine, base, strict=True) if b is not None]
        compared = sample != NONE
        if workload == "c":
            cost = spread([m.per_call_us * 1000 for m in mine], "{:.1f} ns".format)
            against = [100 * (m.per_call_us / b.per_call_us - 1) for m, b in pairs if b.per_call_us]
            versus = spread(against, "{:+.1f} %".format) if compared else "-"
        else:
            cost = "-"
            loss = [100 * (m.rate / b.rate - 1) for m, b in pairs if b.rate]
            versus = (spread(loss, "{:+.1f} % throughput".format) if compared
                      else spread([m.rate for m in mine], "{:,.0f} samples/s".format))  # fmt: skip
        cpu = spread([m.cpu_s for m in mine], "{:.2f} s".format)
        if compared:
            cpu += " = " + spread([100 * (m.cpu_s / b.cpu_s - 1) for m, b in pairs if b.cpu_s], "{:+.1f} %".format)
        recorded = sample.sample >= 0
        records = spread([float(m.records) for m in mine], "{:,.0f}".format) if recorded else "-"
        lost = spread([100 * m.lost for m in mine], "{:.0f} %".format) if recorded else "-"
        mb = spread([m.mb for m in mine], "{:,.1f} MB".format) if recorded else "-"
        rows.append(f"| {workload} | {mode_name(sample)} | {cost} | {versus} | {cpu} | {records} | {lost} | {mb} |")
    return rows



def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/memory_cost.py", description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3, help="rounds of every mode (pairs per figure)")
    p.add_argument("--modes", default="none,preload,512K/none,512K", help="none, preload, SIZE[/RATE], all")
    p.add_argument("--workloads", default=",".join(WORKLOADS), help="a subset of " + ",".join(WORKLOADS))
    p.add_argument("--calls", type=int, default=10_000_000, help="malloc/free pairs of the C program")
    p.add_argument("--call-graph", default=DEFAULT_CALL_GRAPH, help="what record --memory uses by default")
    p.add_argument("--mmap", default=DEFAULT_MMAP, help="perf's buffer per CPU (-m), as record --memory")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max-batches", type=int, default=100, help="MLP batches per epoch (938 is all of MNIST)")
    p.add_argument("--cache", type=Path, default=None, help="MNIST cache (default ~/.cache/flamegraph)")
    args = p.parse_args(argv)
    samples = [parse_mode(mode) for mode in args.modes.split(",")]
    if NONE not in samples:
        samples.insert(0, NONE)
    workloads = [w for w in WORKLOADS if w in args.workloads.split(",")]
    base = RecordOptions(call_graph=args.call_graph, mmap=args.mmap)
    print(f"load average at start: {load()}; {os.cpu_count()} CPUs; call graph {args.call_graph}, -m {args.mmap}",
          flush=True)  # fmt: skip
    rounds: list[dict[tuple[str, Mode], Run]] = []
    with tempfile.TemporaryDirectory(prefix="memory-cost-") as directory:
        scratch = Path(directory)
        binary = compile_program(scratch) if "c" in workloads else None
        mlp = MlpRun(prepare_mnist(args.cache), epochs=args.epochs, max_batches=args.max_batches)
        for i in range(args.rounds):
            order = samples[i % len(samples) :] + samples[: i % len(samples)]
            found: dict[tuple[str, Mode], Run] = {}
            for workload in workloads:
                for sample in order:
                    if workload == "c":
                        assert binary is not None
                        run = run_c(binary, args.calls, sample, scratch, base)
                    else:
                        run = run_mlp(mlp, sample, scratch, base)
                    found[(workload, sample)] = run
                    print(f"round {i + 1} {workload:3} {mode_name(sample):10} cpu {run.cpu_s:6.2f} s  "
                          f"per call {run.per_call_us:5.2f} µs  rate {run.rate:8,.0f}  records {run.records:9,}  "
                          f"lost {100 * run.lost:3.0f} %  {run.mb:7,.1f} MB  load {load()}", flush=True)  # fmt: skip
            rounds.append(found)
    print(f"load average at end: {load()}")
    print(f"C: {args.calls:,} malloc/free pairs; MLP: {args.epochs} epoch(s) x {args.max_batches} batches of 64; "
          f"call graph {args.call_graph}, -m {args.mmap}")  # fmt: skip
    print("\n".join(table(rounds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
