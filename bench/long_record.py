"""Long-recording benchmark: `flamegraph record --every --max-spool` against a plain `perf record`.

    python bench/long_record.py [--seconds 600] [--every 60] [--max-spool 256M] [--call-graph dwarf,65528]

One busy C thread (compiled here), recorded twice one after the other at the same settings (-F 499):
1. plain: `perf record -o - ... | (count the records)`: the samples perf keeps when nothing folds
   (a pipe read as fast as perf writes: no 18 GB file for a 10-minute run);
2. ours: `flamegraph record --every S --max-spool SIZE --duration SECONDS`, with $TMPDIR (where the
   spool lives) polled every 20 ms for the raw data on disk and the flamegraph process's VmRSS polled
   every 0.2 s (perf's own RSS, its ring buffers, is reported apart).
Prints: peak raw data on disk, peak RSS, samples folded / samples plain perf kept, intervals written, and
the goals of a long run (≤ 256 MB on disk, ≤ 300 MB RSS, ≥ 95 % of the samples). Say the load when quoting.
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
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BUSY_C = r"""
static volatile double sink;
__attribute__((noinline)) void work_a(void) { for (int i = 0; i < 200000; i++) sink += i * 0.5; }
__attribute__((noinline)) void work_b(void) { for (int i = 0; i < 100000; i++) sink += i * 0.25; }
int main(void) { for (;;) { work_a(); work_b(); } }
"""
RECORD_LOST, RECORD_SAMPLE, RECORD_LOST_SAMPLES = 2, 9, 13


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


def plain(busy: Path, seconds: float, call_graph: str) -> tuple[int, int]:
    perf = subprocess.Popen(
        ["perf", "record", "-N", "-k", "CLOCK_MONOTONIC", "-e", "cpu-clock", "-F", "499", "--call-graph", call_graph,
         "-m", "16M", "-o", "-", "--", str(busy)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    result: list[tuple[int, int]] = []
    reader = threading.Thread(target=lambda: result.append(count_pipe(perf.stdout)))
    reader.start()
    time.sleep(seconds)
    perf.send_signal(signal.SIGINT)
    perf.wait()
    reader.join()
    return result[0]


class Poll:
    """The largest value `measure()` returned, polled every `every` seconds."""

    def __init__(self, measure: object, every: float) -> None:
        self.peak = 0
        self._measure, self._every = measure, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.peak = max(self.peak, self._measure())  # type: ignore[operator]

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


def ours(busy: Path, seconds: float, every: float, spool: str, call_graph: str, work: Path) -> dict[str, object]:
    tmp = work / "tmp"
    tmp.mkdir()
    out = work / "out"
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "flamegraph", "record", "--every", f"{every:g}", "--max-spool", spool, "--duration",
         f"{seconds:g}", "-F", "499", "--call-graph", call_graph, "-o", str(out / "run.svg"), "--folded",
         str(out / "run.folded"), "--", str(busy)],
        stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    disk = Poll(lambda: tree_bytes(tmp), 0.02)
    ours_rss = Poll(lambda: rss(proc.pid), 0.2)
    perf_rss = Poll(lambda: rss(proc.pid, "perf"), 0.2)
    _, err = proc.communicate()
    folded = 0
    for line in (out / "run.folded").read_text().splitlines():
        folded += int(line.rpartition(" ")[2])
    return {
        "exit": proc.returncode,
        "peak disk": disk.stop(),
        "peak rss": ours_rss.stop(),
        "perf rss": perf_rss.stop(),
        "folded": folded,
        "intervals": len(list(out.glob("run-[0-9]*.svg"))),
        "trend": (out / "run-trend.svg").is_file(),
        "stderr": err,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--every", type=float, default=60.0)
    parser.add_argument("--max-spool", default="256M")
    parser.add_argument("--call-graph", default="dwarf,65528")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="long-record-"))
    try:
        (work / "busy.c").write_text(BUSY_C)
        subprocess.run(["cc", "-O1", "-g", "-o", str(work / "busy"), str(work / "busy.c")], check=True)
        load = os.getloadavg()[0]
        kept, lost = plain(work / "busy", args.seconds, args.call_graph)
        got = ours(work / "busy", args.seconds, args.every, args.max_spool, args.call_graph, work)
        share = 100 * int(got["folded"]) / kept if kept else 0.0  # type: ignore[call-overload]
        disk, peak = int(got["peak disk"]), int(got["peak rss"])  # type: ignore[call-overload]
        print(f"{args.seconds:g} s at {args.call_graph} -F 499, --every {args.every:g}, --max-spool {args.max_spool}; "
              f"load average {load:.2f} before, {os.getloadavg()[0]:.2f} after")  # fmt: skip
        print(f"plain perf record: {kept:,} samples kept ({lost:,} lost)")
        print(f"flamegraph record: exit {got['exit']}, {got['folded']:,} samples folded = {share:.1f} % of plain "
              f"(goal >= 95 %), {got['intervals']} interval graphs, trend page: {got['trend']}")  # fmt: skip
        print(f"peak raw data on disk: {disk / 1e6:.1f} MB (goal <= 256 MB; polled every 20 ms)")
        print(f"peak RSS: flamegraph {peak / 1e6:.1f} MB (goal <= 300 MB), perf {int(got['perf rss']) / 1e6:.1f} MB")  # type: ignore[call-overload]
        summary = [line for line in str(got["stderr"]).splitlines() if "recorded" in line or "warning" in line]
        print("\n".join(summary))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
