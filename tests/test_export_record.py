"""`record` and `offcpu` writing speedscope, pprof and Chrome-trace files beside the SVG, with real perf."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
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


SPIN_C = """
#include <time.h>
#ifndef SECONDS
#define SECONDS 1
#endif
static double spin(double x) { for (int i = 0; i < 2000000; i++) x = x * 1.0000001 + 1e-9; return x; }
int main(void) {
    struct timespec t0, t; double x = 1; clock_gettime(CLOCK_MONOTONIC, &t0);
    do { x = spin(x); clock_gettime(CLOCK_MONOTONIC, &t); } while (t.tv_sec - t0.tv_sec < SECONDS);
    return x < 0;
}
"""


def test_a_program_whose_name_is_not_utf8_gets_every_output(tmp_path: Path) -> None:
    """b-3: the program `a<b>&"q'` + byte 0xff: every file is written and valid UTF-8 (the byte as `\\xff`)."""
    from helpers.programs import compile_c, need_perf

    need_perf()
    built = compile_c(tmp_path, "spin", SPIN_C, "-fno-omit-frame-pointer")
    odd = tmp_path / ("a<b>&\"q'" + "\udcff")  # the byte 0xff, as Python holds a file name that is not UTF-8
    built.rename(odd)
    names = ("o.speedscope.json", "o.pb.gz", "o.trace.json", "o.folded", "o.svg", "o.png")
    out = {name: tmp_path / name.replace("o.", "o\udcff.", 1) for name in names}  # the outputs' names too
    png = ["--png", str(out["o.png"])] if importlib.util.find_spec("cairosvg") else []
    done = run_cli("record", "-o", str(out["o.svg"]), "--folded", str(out["o.folded"]), *png,
                   "--speedscope", str(out["o.speedscope.json"]), "--pprof", str(out["o.pb.gz"]),
                   "--chrome-trace", str(out["o.trace.json"]), "--", str(odd))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    for name in names[: 6 if png else 5]:  # each said as the SVG shows such a byte
        assert f"wrote {tmp_path}/{name.replace('o.', 'o' + chr(92) + 'xff.', 1)}" in done.stderr, done.stderr
    folded = load(out["o.folded"])
    assert all(stack.startswith("a<b>&\"q'\udcff;") for stack in folded.counts)  # the comm, byte for byte
    for path in (out["o.speedscope.json"], out["o.trace.json"], Path(f"{out['o.folded']}.json")):
        json.loads(path.read_bytes().decode("utf-8"))  # strict UTF-8: no raw 0xff, no surrogate
    speedscope = json.loads(out["o.speedscope.json"].read_bytes())
    frames = [import_name(f["name"]) for f in speedscope["shared"]["frames"]]
    assert "a<b>&\"q'\udcff" in frames  # the root frame, read back exact
    assert "a<b>&\"q'\\xff" in speedscope["profiles"][0]["name"]  # the command, as the SVG shows it
    trace = json.loads(out["o.trace.json"].read_bytes())
    assert "a<b>&\"q'\\xff" in {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M"}
    from flamegraph.export.pprof_schema import message_classes

    pprof = message_classes()["Profile"]()
    pprof.ParseFromString(gzip.decompress(out["o.pb.gz"].read_bytes()))
    # a-F11: mapping 1 (what `go tool pprof` calls "File:") is the program, not a library of it
    assert pprof.string_table[pprof.mapping[0].filename] == "a<b>&\"q'\\xff"
    svg = out["o.svg"].read_bytes().decode("utf-8")
    assert "a&lt;b&gt;&amp;&#34;q&#39;\\xff" in svg


def test_intervals_and_the_trend_page_of_such_a_program_are_utf8(tmp_path: Path) -> None:
    """b-3: `record --every` of the same program: interval SVGs, their capture facts and the trend page."""
    import xml.dom.minidom

    from helpers.programs import compile_c, need_perf

    need_perf()
    built = compile_c(tmp_path, "spin", SPIN_C, "-fno-omit-frame-pointer", "-DSECONDS=3")
    odd = tmp_path / ("odd" + "\udcff")
    built.rename(odd)
    done = run_cli("record", "--every", "1", "-o", str(tmp_path / "r.svg"), "--", str(odd))
    assert done.returncode == 0, done.stderr
    intervals = sorted(tmp_path.glob("r-[0-9][0-9][0-9].svg"))
    assert intervals and (tmp_path / "r-trend.svg").is_file(), done.stderr
    for page in [*intervals, tmp_path / "r-trend.svg"]:
        xml.dom.minidom.parseString(page.read_bytes().decode("utf-8"))
    assert "odd\\xff" in (tmp_path / "r-trend.svg").read_text()  # the program's name as the graph shows it
    facts = list(tmp_path.glob("r-[0-9][0-9][0-9].folded.json"))
    assert facts
    for path in facts:
        json.loads(path.read_bytes().decode("utf-8"))


@pytest.mark.parametrize("command", ["record", "offcpu"])
def test_speedscope_help_says_when_there_is_a_profile_per_thread(command: str) -> None:
    """a-F12: `record --speedscope` gave one profile for a two-thread program while its help said "per thread"."""
    done = subprocess.run([sys.executable, "-m", "flamegraph", command, "--help"], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"}, timeout=60)  # fmt: skip
    said = " ".join(done.stdout.split("--speedscope", 1)[1].split("--pprof", 1)[0].split())
    expected = {"record": "(one profile; one per thread: --threads)",
                "offcpu": "(µs; one profile per thread while every root is a thread, else one)"}  # fmt: skip
    assert said.endswith(expected[command]), said


def test_record_speedscope_is_one_profile_without_threads(tmp_path: Path) -> None:
    """What the help says: two threads, no --threads: one profile, named after the recording."""
    out = tmp_path / "r.speedscope.json"
    done = run_cli("record", "--no-svg", "--speedscope", str(out), "--", sys.executable, "-c", TWO_THREADS)
    assert done.returncode == 0, done.stderr
    profiles = json.loads(out.read_bytes())["profiles"]
    assert len(profiles) == 1 and "cpu-clock, samples" in profiles[0]["name"]
