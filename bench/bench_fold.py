"""Benchmark: our folder against stackcollapse-perf.pl, same inputs, same run.

    python bench/bench_fold.py [--repeat 3] [--jobs 2] FILE...

For each input it runs, interleaved, `perl stackcollapse-perf.pl FILE`, `flamegraph fold FILE`
and `flamegraph fold -j JOBS FILE`, checks that our --compat output equals the reference's
byte for byte, and prints the median wall time, MB/s, records/s, peak RSS and the ratio.
The reference script is found via $FLAMEGRAPH_DIR (a checkout of brendangregg/FlameGraph,
kept outside this repository); without it only our figures are printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PEER = Path(os.environ.get("FLAMEGRAPH_DIR", "/work/peer")) / "stackcollapse-perf.pl"
FOLD = [sys.executable, "-m", "flamegraph", "fold"]


def run(command: list[str], stdout: int | None = subprocess.DEVNULL) -> tuple[float, int, bytes]:
    """Wall seconds and peak RSS (KiB) of one child, measured with wait4 (per child, not cumulative)."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE if stdout is None else stdout, stderr=subprocess.DEVNULL)
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(command)}")
    return elapsed, usage.ru_maxrss, out


def count_records(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for line in f if line[:1] not in (b"\t", b" ", b"\n", b"#"))


def bench(path: Path, repeat: int, jobs: int) -> None:
    size_mb = path.stat().st_size / 1e6
    records = count_records(path)
    contenders = {"ours": [*FOLD, str(path)], f"ours -j{jobs}": [*FOLD, "-j", str(jobs), str(path)]}
    if PEER.exists():
        contenders = {"stackcollapse-perf.pl": ["perl", str(PEER), str(path)], **contenders}
        reference = run(["perl", str(PEER), str(path)], stdout=None)[2]
        ours = run([*FOLD, "--compat", str(path)], stdout=None)[2]
        same = "identical" if ours == reference else "DIFFERENT"
        print(f"# {path.name}: --compat output vs reference: {same}")
    times: dict[str, list[float]] = {name: [] for name in contenders}
    rss: dict[str, int] = dict.fromkeys(contenders, 0)
    for _ in range(repeat):  # interleaved, so machine noise hits every contender alike
        for name, command in contenders.items():
            elapsed, peak, _ = run(command)
            times[name].append(elapsed)
            rss[name] = max(rss[name], peak)
    base = statistics.median(times["stackcollapse-perf.pl"]) if PEER.exists() else None
    for name in contenders:
        median = statistics.median(times[name])
        ratio = f"{base / median:5.2f}x" if base else "   -  "
        print(
            f"{path.name:28} {size_mb:8.1f} MB {name:22} {median:7.2f} s {size_mb / median:7.1f} MB/s "
            f"{records / median / 1e3:8.1f} k rec/s {rss[name] / 1024:7.1f} MB RSS  {ratio}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    if not PEER.exists():
        print(f"# reference not found at {PEER}: set FLAMEGRAPH_DIR to a FlameGraph checkout", file=sys.stderr)
    print(f"# python {sys.version.split()[0]} ({sys.executable}), {os.cpu_count()} CPUs, median of {args.repeat}")
    for path in args.files:
        bench(path, args.repeat, args.jobs)


if __name__ == "__main__":
    main()
