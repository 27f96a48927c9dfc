"""`record` and `offcpu` writing speedscope, pprof and Chrome-trace files beside the SVG, with real perf."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from flamegraph.export.names import import_name
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.io.folded import read_folded
from flamegraph.model import FoldedProfile

pytestmark = [pytest.mark.perf, pytest.mark.parallel]  # proven beside two busy loops

TWO_THREADS = """
import threading, zlib
data = bytes(range(256)) * 4096
def work():
    for _ in range(80):
        zlib.compress(data, 6)
worker = threading.Thread(target=work, name="worker")
worker.start(); work(); worker.join()
"""
SLEEPER = "import time\nfor _ in range(6):\n    time.sleep(0.05)\n"


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "flamegraph", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=cwd)


def load(path: Path) -> FoldedProfile:
    with open(path, "rb") as f:
        return read_folded(f, str(path), Diagnostics())


def test_record_writes_every_export_of_the_same_samples(tmp_path: Path) -> None:
    out = {name: tmp_path / name for name in ("r.speedscope.json", "r.pb.gz", "r.json", "r.folded")}
    done = run_cli("record", "--threads", "--title", "two threads", "-o", str(tmp_path / "r.svg"),
                   "--folded", str(out["r.folded"]), "--speedscope", str(out["r.speedscope.json"]),
                   "--pprof", str(out["r.pb.gz"]), "--chrome-trace", str(out["r.json"]),
                   "--", sys.executable, "-c", TWO_THREADS)  # fmt: skip
    assert done.returncode == 0, done.stderr
    for path in out.values():
        assert f"wrote {path}" in done.stderr
    folded = load(out["r.folded"])
    roots = {stack.split(";", 1)[0] for stack in folded.counts}
    assert len(roots) >= 2  # the main thread and the worker, one root each

    speedscope = json.loads(out["r.speedscope.json"].read_bytes())
    frames = [import_name(f["name"]) for f in speedscope["shared"]["frames"]]
    stacks = Counter({";".join(frames[i] for i in s): w for p in speedscope["profiles"]
                      for s, w in zip(p["samples"], p["weights"], strict=True)})  # fmt: skip
    assert stacks == Counter(folded.counts)
    assert {p["name"] for p in speedscope["profiles"]} == roots
    assert speedscope["name"].startswith("two threads - cpu-clock, samples")
    assert speedscope["metadata"]["frequency"] == "499 Hz"

    assert gzip.decompress(out["r.pb.gz"].read_bytes())

    trace = json.loads(out["r.json"].read_bytes())
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    outermost = Counter()
    for event in slices:
        if event["name"] in roots:
            outermost[event["name"]] += event["dur"]
    assert set(outermost) == roots  # every thread has its track, rooted as in the folded stacks
    interval_us = 1e6 / 499
    for root, on_cpu_us in outermost.items():  # a sample stands for at most 1.5 sampling intervals
        samples = sum(w for stack, w in folded.counts.items() if stack.startswith(root + ";") or stack == root)
        assert samples * interval_us * 0.5 <= on_cpu_us <= samples * interval_us * 1.5 + 1
    assert trace["otherData"]["frequency"] == "499 Hz"


def test_record_no_svg_with_only_an_export(tmp_path: Path) -> None:
    target = tmp_path / "only.speedscope.json"
    command = ("--", sys.executable, "-c", "sum(range(10**6))")
    done = run_cli("record", "--no-svg", "--speedscope", str(target), *command, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["only.speedscope.json"]  # no SVG, nothing else
    assert json.loads(target.read_bytes())["profiles"]


def test_offcpu_writes_waits_in_microseconds_and_their_timeline(tmp_path: Path) -> None:
    speedscope, trace = tmp_path / "w.speedscope.json", tmp_path / "w.json"
    done = run_cli("offcpu", "--no-svg", "--speedscope", str(speedscope), "--chrome-trace", str(trace),
                   "--", sys.executable, "-c", SLEEPER)  # fmt: skip
    assert done.returncode == 0, done.stderr
    document = json.loads(speedscope.read_bytes())
    assert {p["unit"] for p in document["profiles"]} == {"microseconds"}
    sleeps = [e for e in json.loads(trace.read_bytes())["traceEvents"] if e["ph"] == "X" and e["name"] == "[S]"]
    long_ones = [e for e in sleeps if 45_000 <= e["dur"] <= 80_000]  # the six 50 ms sleeps
    assert len(long_ones) >= 5 and {e["cat"] for e in sleeps} == {"off-cpu"}
