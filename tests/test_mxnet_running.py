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
from bisect import bisect_right
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.mlp import THREE_EPOCHS as MLP

from flamegraph.folding.grammar import HEADER_OURS
from flamegraph.folding.perf import FoldOptions, PerfCollapser
from flamegraph.frameworks.mxnet import deferred, running
from flamegraph.frameworks.mxnet.clock import Alignment, ClockReading
from flamegraph.frameworks.mxnet.deferred import DeferredJoin, SampleLog
from flamegraph.frameworks.mxnet.dnnl import parse_verbose
from flamegraph.frameworks.mxnet.events import iter_events
from flamegraph.frameworks.mxnet.hook import MxnetHook
from flamegraph.frameworks.mxnet.join import Thinned
from flamegraph.frameworks.mxnet.profile import Pairing
from flamegraph.frameworks.mxnet.running import RunningJoin, join_budget
from flamegraph.frameworks.mxnet.segment_reader import CaughtUp, SegmentStream
from flamegraph.frameworks.mxnet.summary import summarize, summary_lines
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.model import FoldedProfile

FLAMEGRAPH = [sys.executable, "-m", "flamegraph"]
CUT = re.compile(rb"\n\s*\}\s*\n")  # the end of an event object in MXNet's indented trace
TS = re.compile(rb'"ts": (\d+)')


def root_of() -> Callable[[bytes], bytes]:
    naming = PerfCollapser(FoldOptions(), Diagnostics(echo=False))
    return lambda header: naming.root_name(HEADER_OURS.match(header))  # type: ignore[arg-type]


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
    log.watch(16 * 10, lambda log: called.append(len(log.ids)))
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
    """A real MLP run recorded whole (perf.data and the hook's directory), six epochs: long enough that
    samples pass the horizon of every thread (LAG_S)."""
    tmp = tmp_path_factory.mktemp("mxnet-running")
    (tmp / "mlp.py").write_text(MLP.replace("range(3)", "range(6)"))
    argv = [*FLAMEGRAPH, "record", "--mxnet", "--max-spool", "0", "--perf-data", str(tmp / "perf.data"),
            "--no-svg", "--folded", str(tmp / "whole.folded"), "--", sys.executable, str(tmp / "mlp.py")]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=tmp)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tmp


class Written:
    """The run's files as the instruments had written them at a moment: the trace cut after the events it held
    (or inside one), the log after its lines, the sidecar with the clocks read so far (every 0.25 s, as
    inprocess.Session.refresh does every few): what a paused reader and the sidecar show (segment_reader.py)."""

    def __init__(self, directory: Path, facts: dict[str, Any], log: SampleLog, seed: int) -> None:
        self.directory, self.facts, self.log = directory, facts, log
        self.trace = Path(facts["profile"]).read_bytes()
        self.verbose = Path(facts["verbose"]).read_bytes()
        self.rng = random.Random(seed)
        self.cuts = [m.end() for m in CUT.finditer(self.trace)]
        stamps = [(m.start(), int(m.group(1))) for m in TS.finditer(self.trace)]
        positions = [at for at, _ in stamps]
        self.cut_ts = [stamps[bisect_right(positions, cut) - 1][1] if positions[0] < cut else 0 for cut in self.cuts]
        self.lines = [m.end() for m in re.finditer(rb"\n", self.verbose)]
        self.line_end = [_end_ms(line) for line in self.verbose.splitlines()]
        self.at = self.line_at = 0
        self.alignment = Alignment(ClockReading.from_list(facts["clock_start"]),
                                   ClockReading.from_list(facts["clock_end"]))  # fmt: skip
        self.calls = 0

    def catch_up(self) -> CaughtUp:
        """The moment: about when the newest kept sample was taken (the fold lags the run, the dump the
        operators: a second either way), never before the last moment."""
        self.calls += 1
        newest = max(self.log.times) if len(self.log.times) else float(self.facts["clock_start"][0])
        now = newest + self.rng.uniform(-1.0, 1.5)
        realtime = self.alignment.realtime_us(now)
        written = next((i for i, ts in enumerate(self.cut_ts) if ts > realtime), len(self.cuts))
        at = self.cuts[written - 1] if written else 0
        self.at = max(self.at, min(len(self.trace), max(0, at + self.rng.randint(-400, 400))))
        lines = next((i for i, end in enumerate(self.line_end) if end * 1000 > realtime), len(self.lines))
        self.line_at = max(self.line_at, self.lines[lines - 1] if lines else 0)
        pairing = Pairing()
        for event in iter_events(io.BytesIO(self.trace[: self.at]), []):
            pairing.add(event)
        log = parse_verbose(io.BytesIO(self.verbose[: self.line_at]))
        start = float(self.facts["clock_start"][0])
        clocks = [_reading(self.alignment, start + 0.25 * k) for k in range(1, int((now - start) / 0.25) + 1)]
        _write_sidecar(self.directory, {**self.facts, "clocks": clocks, "clock_end": None})
        return CaughtUp({Path(self.facts["profile"]).name: pairing.spans}, {Path(self.facts["verbose"]).name: log})

    def let_go(self) -> None:
        pass


def _end_ms(line: bytes) -> float:
    parts = line.split(b",")
    try:
        return float(parts[1]) + float(parts[-1]) if b"exec" in parts[1:4] else 0.0
    except (ValueError, IndexError):
        return 0.0


def _reading(alignment: Alignment, monotonic: float) -> list[float]:
    return [monotonic, alignment.realtime_us(monotonic) / 1e6, 1e-7]


def _write_sidecar(directory: Path, facts: dict[str, Any]) -> None:
    (directory / f"mxnet-{facts['pid']}.json").write_text(json.dumps(facts))


def _join(directory: Path, data: Path, seed: int | None, lines: list[str]) -> tuple[FoldedProfile, DeferredJoin]:
    """The whole perf.data folded through the streamed path and joined: at the end only (seed None), or also
    whenever the kept samples pass 2 KB (128 samples), the files as written at that moment."""
    from flamegraph.naming.grouping import namer_for_recording
    from flamegraph.naming.observer import FrameObserver
    from flamegraph.record import Recording, RecordSpec, script_args

    hook = MxnetHook(directory, note=lines.append, hooked=True)
    recording = hook.finish(Recording(data, RecordSpec(command=("python",)), {}, 1.0))
    join = DeferredJoin(hook, root_of())
    final = json.loads(next(directory.glob("mxnet-*.json")).read_text())
    if seed is not None:
        join.running = RunningJoin(directory, Written(directory, final, join.log, seed))
        join.log.watch(2048, join.running)
    options = FoldOptions.with_all(frame_hook=FrameObserver(namer_for_recording(str(data))), sample_hook=join.log)
    collapser = PerfCollapser(options, Diagnostics(echo=False))
    join.fold_chunk(collapser, str(data), script_args(recording))
    _write_sidecar(directory, final)  # the process has exited: its last sidecar
    hook.processes = [final]
    profile = collapser.profile()
    join.join(profile, recording)
    return profile, join


@pytest.mark.perf
@pytest.mark.mxnet
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_joined_as_the_run_goes_is_the_deferred_whole_join(recorded: Path, tmp_path: Path, seed: int) -> None:
    directory = tmp_path / "mxnet"
    shutil.copytree(recorded / "perf.data.mxnet", directory)
    (sidecar,) = directory.glob("mxnet-*.json")
    facts = json.loads(sidecar.read_text())
    facts["profile"], facts["verbose"] = (str(directory / Path(facts[key]).name) for key in ("profile", "verbose"))
    alignment = Alignment(ClockReading.from_list(facts["clock_start"]), ClockReading.from_list(facts["clock_end"]))
    start, end = float(facts["clock_start"][0]), float(facts["clock_end"][0])
    facts["clocks"] = [_reading(alignment, start + 0.25 * k) for k in range(1, int((end - start) / 0.25) + 1)]
    facts["segments"] = {"trace": 1 << 20, "verbose": 1 << 20}  # (as a streamed run's; read whole here)
    _write_sidecar(directory, facts)

    said: list[str] = []
    whole, at_end = _join(directory, recorded / "perf.data", None, said)
    said_going: list[str] = []
    going, join = _join(directory, recorded / "perf.data", seed, said_going)
    assert join.running is not None
    assert going.counts == whole.counts and any("[op] FullyConnected" in stack for stack in going.counts)
    total = sum(going.counts.values())
    assert join.running.joins >= 3 and join.running.samples >= total // 2, (join.running.joins, join.running.samples)
    whole_bytes = total * deferred.SAMPLE_BYTES + at_end.log.switch_count * deferred.SWITCH_BYTES
    assert join.log.peak < whole_bytes // 2  # never the whole run held
    assert join.log.switch_count < at_end.log.switch_count // 2  # the switches of spans timed already dropped
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
