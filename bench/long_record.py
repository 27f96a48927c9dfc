"""Long-recording benchmark: `flamegraph record --every --max-spool` against a plain `perf record`.

    python bench/long_record.py [--seconds 600] [--every 60] [--max-spool 256M] [--call-graph dwarf,65528]

One busy C thread (compiled here), recorded twice one after the other at the same settings (-F 499):
1. plain: `perf record -o - ... | (count the records)`: the samples perf keeps when nothing folds
   (a pipe read as fast as perf writes: no 18 GB file for a 10-minute run);
2. ours: `flamegraph record --every S --max-spool SIZE --duration SECONDS`, with $TMPDIR (where the
   spool lives) polled every 20 ms for the raw data on disk and the flamegraph process's VmRSS polled
   every 0.2 s (perf's own RSS, its ring buffers, is reported apart).
Before them the program runs unrecorded for a quarter of the time: it counts its own rounds, so each run's
throughput (rounds/s) gives the overhead of plain perf and of ours; bench/tree_cpu.py gives each part's CPU
seconds (the program, perf record, the folder). Prints: peak raw data on disk, peak RSS, samples folded /
samples plain perf kept (also per CPU second of the program: a loaded machine gives the two runs different
CPU), overhead over plain, intervals written, against the goals of a long run (≤ 256 MB on disk, ≤ 300 MB
RSS, ≥ 95 % of the samples, within 2 points of plain's overhead). Say the load when quoting.
`make long-bench` runs 600 s; `LONG_SECONDS=60 make long-bench` the short version, which
tests/test_long_record.py runs in `make test` (serial).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.tree_cpu import TreeCpu  # noqa: E402

# The busy program counts its rounds; stopped (SIGINT or SIGTERM: perf's or ours) it writes to argv[1]
# "rounds wall-seconds cpu-seconds": its own throughput, whatever the recorder around it.
BUSY_C = r"""
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static volatile double sink;
static volatile unsigned long rounds;
static struct timespec started;
static const char *volatile report;  /* (read by the handler only: not to be optimised away) */
static double since(clockid_t clock, struct timespec from) {
    struct timespec now; clock_gettime(clock, &now);
    return (now.tv_sec - from.tv_sec) + (now.tv_nsec - from.tv_nsec) / 1e9;
}
static void stop(int sig) {
    struct timespec zero = {0, 0};
    char line[96];
    int n = snprintf(line, sizeof line, "%lu %.6f %.6f\n", rounds, since(CLOCK_MONOTONIC, started),
                     since(CLOCK_PROCESS_CPUTIME_ID, zero));
    FILE *out = fopen(report, "w");
    if (out) { fwrite(line, 1, n, out); fclose(out); }
    _exit(0);
    (void)sig;
}
__attribute__((noinline)) void work_a(void) { for (int i = 0; i < 200000; i++) sink += i * 0.5; }
__attribute__((noinline)) void work_b(void) { for (int i = 0; i < 100000; i++) sink += i * 0.25; }
int main(int argc, char **argv) {
    report = argc > 1 ? argv[1] : "/dev/null";
    clock_gettime(CLOCK_MONOTONIC, &started);
    signal(SIGINT, stop); signal(SIGTERM, stop);
    for (;;) { work_a(); work_b(); rounds++; }
}
"""
RECORD_LOST, RECORD_SAMPLE, RECORD_LOST_SAMPLES = 2, 9, 13
GOAL_DISK, GOAL_RSS, GOAL_KEPT, GOAL_POINTS = 256e6, 300e6, 95.0, 2.0


@dataclass
class Run:
    """One run of the busy program: its own throughput, and what each part of the recording took."""

    rounds: int = 0
    wall: float = 0.0  # the program's own seconds, start to stop
    cpu: float = 0.0  # the program's own CPU seconds
    samples: int = 0  # kept (plain: in perf's pipe; ours: folded)
    lost: int = 0
    roles: dict[str, tuple[float, float]] = field(default_factory=dict)  # (user, sys) CPU seconds per role
    facts: dict[str, object] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.rounds / self.wall if self.wall else 0.0

    def read_report(self, path: Path) -> None:
        try:
            rounds, wall, cpu = path.read_text().split()
        except (OSError, ValueError):
            return  # (killed before it could write: no throughput)
        self.rounds, self.wall, self.cpu = int(rounds), float(wall), float(cpu)


def count_pipe(stream: object) -> tuple[int, int]:
    """Samples and lost samples in perf's pipe format (a 16-byte header, then records)."""
    read = stream.read  # type: ignore[attr-defined]
    read(16)
    samples = lost = 0
    while True:
        head = read(8)
        if len(head) < 8:
            return samples, lost
        kind, _, size = struct.unpack("<IHH", head)
        body = read(size - 8) if size > 8 else b""
        if kind == RECORD_SAMPLE:
            samples += 1
        elif kind == RECORD_LOST and len(body) >= 16:
            lost += struct.unpack_from("<Q", body, 8)[0]
        elif kind == RECORD_LOST_SAMPLES and len(body) >= 8:
            lost += struct.unpack_from("<Q", body, 0)[0]


def unrecorded(busy: Path, seconds: float, work: Path) -> Run:
    report = work / "unrecorded.txt"
    proc = subprocess.Popen([str(busy), str(report)])
    with TreeCpu(proc.pid) as tree:
        time.sleep(seconds)
        proc.send_signal(signal.SIGTERM)
        proc.wait()
    run = Run(roles=tree.seconds())
    run.read_report(report)
    return run


def plain(busy: Path, seconds: float, call_graph: str, work: Path) -> Run:
    """`perf record -o -`, its records counted as they come (no file: 18 GB for 10 minutes)."""
    report = work / "plain.txt"
    perf = subprocess.Popen(
        ["perf", "record", "-N", "-k", "CLOCK_MONOTONIC", "-e", "cpu-clock", "-F", "499", "--call-graph", call_graph,
         "-m", "16M", "-o", "-", "--", str(busy), str(report)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    result: list[tuple[int, int]] = []
    reader = threading.Thread(target=lambda: result.append(count_pipe(perf.stdout)))
    reader.start()
    with TreeCpu(perf.pid) as tree:
        time.sleep(seconds)
        perf.send_signal(signal.SIGINT)
        perf.wait()
    reader.join()
    run = Run(samples=result[0][0], lost=result[0][1], roles=tree.seconds())
    run.read_report(report)
    return run


class Poll:
    """The largest value `measure()` returned, polled every `every` seconds."""

    def __init__(self, measure: Callable[[], int], every: float) -> None:
        self.peak = 0
        self._measure, self._every = measure, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.peak = max(self.peak, self._measure())

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def tree_bytes(root: Path) -> int:
    total = 0
    for dirpath, _, names in os.walk(root):
        for name in names:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def rss(pid: int, name: str = "") -> int:
    """VmRSS of `pid` (name: of its child called so instead), bytes; 0 once gone."""
    try:
        if name:
            for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
                if Path(f"/proc/{child}/comm").read_text().strip() == name:
                    return rss(int(child))
            return 0
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def ours(busy: Path, seconds: float, every: float, spool: str, call_graph: str, work: Path, tag: str) -> Run:
    tmp = work / f"tmp-{tag}"
    tmp.mkdir()
    out = work / f"out-{tag}"
    report = work / f"ours-{tag}.txt"
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "flamegraph", "record", "--every", f"{every:g}", "--max-spool", spool, "--duration",
         f"{seconds:g}", "-F", "499", "--call-graph", call_graph, "-o", str(out / "run.svg"), "--folded",
         str(out / "run.folded"), "--", str(busy), str(report)],
        stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    disk = Poll(lambda: tree_bytes(tmp), 0.02)
    ours_rss = Poll(lambda: rss(proc.pid), 0.2)
    perf_rss = Poll(lambda: rss(proc.pid, "perf"), 0.2)
    with TreeCpu(proc.pid) as tree:
        _, err = proc.communicate()
    folded = 0
    if (out / "run.folded").is_file():
        for line in (out / "run.folded").read_text().splitlines():
            folded += int(line.rpartition(" ")[2])
    run = Run(samples=folded, roles=tree.seconds())
    run.read_report(report)
    run.facts = {
        "exit": proc.returncode,
        "peak disk": disk.stop(),
        "peak rss": ours_rss.stop(),
        "perf rss": perf_rss.stop(),
        "intervals": len(list(out.glob("run-[0-9]*.svg"))),
        "trend": (out / "run-trend.svg").is_file(),
        "stderr": err,
    }
    shutil.rmtree(out, ignore_errors=True)
    return run


def cpu_line(name: str, run: Run) -> str:
    parts = [f"{role} {u:.1f}+{s:.1f}" for role, (u, s) in sorted(run.roles.items())]
    return f"  {name:<18} CPU s (user+sys): {', '.join(parts)}"


def overhead(base: Run, run: Run) -> float:
    """Throughput lost against the unrecorded run, in % (the program's own rounds per second)."""
    return 100.0 * (base.rate - run.rate) / base.rate if base.rate and run.rate else float("nan")


@dataclass
class Result:
    """A long run's figures against the goals (see the module's doc)."""

    seconds: float
    base: Run
    plain: Run
    ours: Run
    loads: list[float]
    plain_seconds: float = 0.0  # how long plain perf recorded (0: as long as ours)

    @property
    def kept(self) -> float:
        """Samples folded / samples plain perf kept in as long a time, in %."""
        scale = (self.plain_seconds or self.seconds) / self.seconds
        return 100.0 * scale * self.ours.samples / self.plain.samples if self.plain.samples else 0.0

    @property
    def kept_per_cpu(self) -> float:
        """The same per CPU second of the program: what we lost (dropped chunks, perf's lost samples), not
        the CPU a loaded machine gave the program in one run and not in the other."""
        if not (self.plain.samples and self.plain.cpu and self.ours.cpu):
            return 0.0
        return 100.0 * (self.ours.samples / self.ours.cpu) / (self.plain.samples / self.plain.cpu)

    @property
    def points_over_plain(self) -> float:
        return overhead(self.base, self.ours) - overhead(self.base, self.plain)


def measure(
    seconds: float,
    every: float,
    spool: str,
    call_graph: str,
    work: Path,
    plain_seconds: float | None = None,
    with_overhead: bool = True,
) -> Result:
    """Unrecorded (a quarter of plain's time: its rate is steady; not run without `with_overhead`: only the
    overhead figures need it), plain perf record (`plain_seconds`, default as long as ours: its rates per second
    are steady too), ours, one after the other."""
    (work / "busy.c").write_text(BUSY_C)
    subprocess.run(["cc", "-O1", "-g", "-o", str(work / "busy"), str(work / "busy.c")], check=True)
    busy = work / "busy"
    loads = [os.getloadavg()[0]]
    plain_seconds = plain_seconds or seconds
    base = unrecorded(busy, plain_seconds / 4, work) if with_overhead else Run()
    loads.append(os.getloadavg()[0])
    kept = plain(busy, plain_seconds, call_graph, work)
    loads.append(os.getloadavg()[0])
    got = ours(busy, seconds, every, spool, call_graph, work, "1")
    loads.append(os.getloadavg()[0])
    return Result(seconds, base, kept, got, loads, plain_seconds)


def report(result: Result, every: float, spool: str, call_graph: str) -> list[str]:
    base, kept, got, facts = result.base, result.plain, result.ours, result.ours.facts
    disk, peak = int(facts["peak disk"]), int(facts["peak rss"])  # type: ignore[call-overload]
    plain_cost, ours_cost = overhead(base, kept), overhead(base, got)
    lines = [
        f"{result.seconds:g} s at {call_graph} -F 499, --every {every:g}, --max-spool {spool}; load average (1 min) "
        f"{' -> '.join(f'{x:.2f}' for x in result.loads)} on {os.cpu_count()} CPUs",
        f"unrecorded: {base.rate:,.0f} rounds/s" if base.rate else "unrecorded: not run (no overhead figures)",
        f"plain perf record ({result.plain_seconds or result.seconds:g} s): {kept.samples:,} samples kept "
        f"({kept.lost:,} lost); {kept.rate:,.0f} rounds/s, "
        f"overhead {plain_cost:+.1f} %",
        f"flamegraph record: exit {facts['exit']}, {facts['intervals']} interval graphs, trend page: {facts['trend']}; "
        f"{got.rate:,.0f} rounds/s, overhead {ours_cost:+.1f} %",
        f"samples kept: {got.samples:,} folded = {result.kept:.1f} % of plain's, {result.kept_per_cpu:.1f} % per CPU "
        f"second of the program (goal >= {GOAL_KEPT:g} %)",
        f"overhead over plain: {result.points_over_plain:+.1f} points (goal <= {GOAL_POINTS:g}; one run each: "
        "say the load)",
        f"peak raw data on disk: {disk / 1e6:.1f} MB (goal <= {GOAL_DISK / 1e6:g} MB; polled every 20 ms; unbounded "
        f"it would be {got.samples * 65.5e3 / 1e9 * int(call_graph.partition(',')[2] or 8192) / 65528:.1f} GB)",
        f"peak RSS: flamegraph {peak / 1e6:.1f} MB (goal <= {GOAL_RSS / 1e6:g} MB), "
        f"perf {int(facts['perf rss']) / 1e6:.1f} MB",  # type: ignore[call-overload]
    ]
    for name, run in (("unrecorded", base), ("plain perf record", kept), ("flamegraph record", got)):
        lines.append(cpu_line(name, run))
    lines += [line for line in str(facts["stderr"]).splitlines() if "recorded" in line or "warning" in line]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--every", type=float, default=60.0)
    parser.add_argument("--max-spool", default="256M")
    parser.add_argument("--call-graph", default="dwarf,65528")
    parser.add_argument("--plain-seconds", type=float, default=None,
                        help="plain perf record's time (default: --seconds); its rates per second are compared")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="long-record-"))
    try:
        result = measure(args.seconds, args.every, args.max_spool, args.call_graph, work, args.plain_seconds)
        print("\n".join(report(result, args.every, args.max_spool, args.call_graph)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
