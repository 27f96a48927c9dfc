"""`record --mxnet` streamed, joined while the run goes (running.py): on a real recorded MLP run replayed with
the trace and the log read only as far as written at arbitrary moments (the sidecar likewise), the kept
samples joined whenever they pass a small budget give exactly the deferred whole join's profile, stacks,
counts and tables; the pieces it rests on (the clock readings, the order-free thinning, the readers' pause)."""

from __future__ import annotations

import io
import json
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers.mlp import THREE_EPOCHS as MLP
from helpers.mxnet_replay import prepare_sidecar, replay

from flamegraph.frameworks.mxnet import running, sample_log
from flamegraph.frameworks.mxnet.clock import Alignment, ClockReading
from flamegraph.frameworks.mxnet.join import Thinned
from flamegraph.frameworks.mxnet.running import join_budget
from flamegraph.frameworks.mxnet.sample_log import SampleLog
from flamegraph.frameworks.mxnet.segment_reader import SegmentStream
from flamegraph.frameworks.mxnet.summary import summarize, summary_lines

FLAMEGRAPH = [sys.executable, "-m", "flamegraph"]
CUT = re.compile(rb"\n\s*\}\s*\n")  # the end of an event object in MXNet's indented trace
TS = re.compile(rb'"ts": (\d+)')


# -- the pieces --------------------------------------------------------------------------------------------


def test_a_clock_reading_later_changes_no_time_before_it() -> None:
    """Interpolated between neighbouring readings: the times before a reading convert the same once more
    readings come; with none between start and end, as the two-point alignment always did."""
    start, end = ClockReading(100.0, 1000.0, 1e-7), ClockReading(200.0, 1100.004, 1e-7)
    middle = (ClockReading(150.0, 1050.001, 1e-7),)
    so_far, final = Alignment(start, None, middle), Alignment(start, end, (*middle, ClockReading(180.0, 1080.003, 0)))
    assert so_far.latest == 150.0 and final.latest == 200.0
    for t in (90.0, 100.0, 120.5, 149.999, 150.0):
        assert so_far.realtime_us(t) == final.realtime_us(t)
    assert final.offset(190.0) == pytest.approx(900.0035)  # between the last middle reading and the end
    assert Alignment(start, end).offset(150.0) == pytest.approx(900.002)


def test_thinned_keeps_the_same_values_in_any_order_and_merged() -> None:
    values = [1000.0 + 0.37 * i for i in range(5000)]
    one = Thinned(limit=300)
    for value in values:
        one.add(value)
    shuffled = values[:]
    random.Random(4).shuffle(shuffled)
    parts = [Thinned(limit=300) for _ in range(3)]
    for i, value in enumerate(shuffled):
        parts[i % 3].add(value)
    merged = Thinned(limit=300)
    for part in parts:
        merged.merge(part)
    assert sorted(merged.values) == sorted(one.values)
    assert 150 <= len(one.values) < 300 and one.stride > 1


def test_the_budget_comes_from_the_environment_or_the_spool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(running.JOIN_BYTES, raising=False)
    assert join_budget(256_000_000) == 16_000_000 and join_budget(None) is None
    monkeypatch.setenv(running.JOIN_BYTES, "4096")
    assert join_budget(None) == 4096
    monkeypatch.setenv(running.JOIN_BYTES, "lots")
    assert join_budget(64_000_000) == 4_000_000


def test_a_log_under_its_budget_never_calls_for_a_join() -> None:
    called: list[int] = []
    log = SampleLog(lambda header: b"python")
    log.watch(16 * 10, lambda log: called.append(len(log.ids)) is None)
    for i in range(10):
        log(f"python 1/2 {100 + i}.5: cpu-clock:".encode(), [b"leaf"])
    assert not called and log.held() == 160
    for i in range(2):
        log(f"python 1/2 {200 + i}.5: cpu-clock:".encode(), [b"leaf"])
    assert called == [12]  # looked at every 2nd sample (a quarter of the budget): over it at the 12th
    assert log.threshold == 12 * 16 + 40  # nothing joined: not tried again before a quarter of the budget more
    for i in range(4):
        log(f"python 1/2 {300 + i}.5: cpu-clock:".encode(), [b"leaf"])
    assert called == [12, 16] and log.peak == 16 * 16


def test_a_stream_asked_to_catch_up_reads_all_there_is_then_rests(tmp_path: Path) -> None:
    """Lazy (nothing due), it still reads everything written when asked, says so, reads nothing more until let
    go, then goes on lazily."""
    (tmp_path / "log.000001").write_bytes(b"one\ntwo\n")
    ended = threading.Event()
    stream = SegmentStream(str(tmp_path), "log", ended, lambda: False)
    lines: list[bytes] = []
    reader = threading.Thread(target=lambda: lines.extend(io.BufferedReader(stream, 1 << 20)), daemon=True)
    reader.start()
    time.sleep(0.3)
    assert lines == [] and stream.bytes == 0  # lazy: nothing due
    assert stream.catch_up(5.0)
    assert lines == [b"one\n", b"two\n"]
    with open(tmp_path / "log.000001", "ab") as f:
        f.write(b"three\n")
    time.sleep(0.3)
    assert lines == [b"one\n", b"two\n"]  # at rest while held
    stream.let_go()
    assert stream.catch_up(5.0) and lines[-1] == b"three\n"
    stream.let_go()
    ended.set()
    reader.join(5.0)
    assert not reader.is_alive() and lines == [b"one\n", b"two\n", b"three\n"]


# -- a real run replayed -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real MLP run recorded whole (perf.data and the hook's directory), 20 epochs (~6 s on a quiet machine,
    an epoch ~0.3 s): long enough that most samples pass the horizon of every thread (LAG_S, 3 s) whatever the
    machine's speed (6 epochs on a quiet one left half the run within the last 3 s: the bounds failed)."""
    tmp = tmp_path_factory.mktemp("mxnet-running")
    (tmp / "mlp.py").write_text(MLP.replace("range(3)", "range(20)"))
    argv = [*FLAMEGRAPH, "record", "--mxnet", "--max-spool", "0", "--perf-data", str(tmp / "perf.data"),
            "--no-svg", "--folded", str(tmp / "whole.folded"), "--", sys.executable, str(tmp / "mlp.py")]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=tmp)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tmp


@pytest.mark.perf
@pytest.mark.mxnet
@pytest.mark.parametrize("seed", [1, 2])
def test_joined_as_the_run_goes_is_the_deferred_whole_join(recorded: Path, tmp_path: Path, seed: int) -> None:
    directory = tmp_path / "mxnet"
    shutil.copytree(recorded / "perf.data.mxnet", directory)
    prepare_sidecar(directory)

    said: list[str] = []
    whole, at_end = replay(directory, recorded / "perf.data", None, said)
    said_going: list[str] = []
    going, join = replay(directory, recorded / "perf.data", seed, said_going)
    assert join.running is not None
    assert going.counts == whole.counts and any("[op] FullyConnected" in stack for stack in going.counts)
    total = sum(going.counts.values())
    assert join.running.joins >= 3 and join.running.samples >= total // 2, (join.running.joins, join.running.samples)
    whole_bytes = total * sample_log.SAMPLE_BYTES + at_end.log.switch_count * sample_log.SWITCH_BYTES
    assert join.log.peak < whole_bytes // 2  # never the whole run held
    # The switches of spans timed already are dropped; a thread that runs no operator keeps its own to the end
    # (docs/record.md: 60 % of them in a 9 s run on a quiet machine, where half had been asked for)
    assert join.log.switch_count < at_end.log.switch_count
    assert join.running.spans_timed and all(done > 0 for _, done, _ in join.running.spans_timed.values())
    assert len(join.running.found) < join.running.samples  # counted together, not kept one by one
    timing = ("mxnet: join while recording", "mxnet: join after the run")  # (what it cost: not the same twice)
    assert [line for line in said_going if not line.startswith(timing)] == [
        line for line in said if not line.startswith(timing)
    ]
    assert any(line.startswith("MXNet operators") for line in said)
    assert going.metadata.get("MXNet coverage") == whole.metadata.get("MXNet coverage")
    assert "samples in" in going.metadata["MXNet join while recording"]
    whole_summary = at_end.hook.last
    assert whole_summary is not None and join.hook.last is not None
    assert summary_lines(join.hook.last) == summary_lines(whole_summary)


def test_a_summary_of_nothing_joined_is_unchanged() -> None:
    """(summarize reads the joiner's thinned times: an empty joiner still reports nothing.)"""
    from flamegraph.frameworks.mxnet.join import Joiner
    from flamegraph.frameworks.mxnet.profile import ProfilerTrace
    from flamegraph.frameworks.mxnet.threads import ThreadMap

    joiner = Joiner(ProfilerTrace(), None, Alignment(ClockReading(0.0, 0.0, 0.0)), ThreadMap())
    assert summarize(joiner).operators == []


def test_the_sidecar_is_refreshed_when_asked_and_the_fold_never_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The readers ask (a file in the directory) and answer False until the process has written its sidecar
    (inprocess.Session.refresh: a clock reading, the thread map, then the request removed); a process that
    never answers is given up on after REFRESH_S."""
    import os

    from flamegraph.frameworks.mxnet import segment_reader
    from flamegraph.frameworks.mxnet.inprocess import Session
    from flamegraph.frameworks.mxnet.segment_reader import SegmentReaders
    from flamegraph.frameworks.mxnet.segments import REFRESH_REQUEST

    class Watch:
        scans = 1

        def update(self) -> None:
            self.scans += 1

        def facts(self) -> dict[str, object]:
            return {"map": {"12": [os.getpid()]}, "python": [], "problem": None}

    directory = tmp_path / "mx"
    directory.mkdir(mode=0o700)
    session, watch = Session(str(directory)), Watch()
    session.refresh(watch)  # type: ignore[arg-type]  # not asked: nothing written
    assert not list(directory.glob("mxnet-*.json"))
    readers = SegmentReaders(directory)
    assert not readers.refreshed() and (directory / REFRESH_REQUEST).exists()
    assert not readers.refreshed()  # not answered yet
    session.refresh(watch)  # type: ignore[arg-type]
    assert readers.refreshed() and not (directory / REFRESH_REQUEST).exists()
    facts = json.loads(next(directory.glob("mxnet-*.json")).read_text())
    assert len(facts["clocks"]) == 1 and facts["threads"]["map"] == {"12": [os.getpid()]} and watch.scans == 2
    monkeypatch.setattr(segment_reader, "REFRESH_S", 0.05)
    assert not readers.refreshed()
    time.sleep(0.1)
    assert readers.refreshed()  # (nobody answered)
