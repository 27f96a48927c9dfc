"""A recorded `record --mxnet --max-spool 0 --perf-data` run replayed through the streamed path: the fold's
sample log joined at the end only, or also as it goes with the instruments' files read as far as written at
each moment (tests/test_mxnet_running.py, bench/mxnet_running_join.py)."""

from __future__ import annotations

import io
import json
import random
import re
from bisect import bisect_right
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flamegraph.folding.grammar import HEADER_OURS
from flamegraph.folding.perf import FoldOptions, PerfCollapser
from flamegraph.frameworks.mxnet.clock import Alignment, ClockReading
from flamegraph.frameworks.mxnet.deferred import DeferredJoin
from flamegraph.frameworks.mxnet.dnnl import parse_verbose
from flamegraph.frameworks.mxnet.events import iter_events
from flamegraph.frameworks.mxnet.hook import MxnetHook
from flamegraph.frameworks.mxnet.profile import Pairing
from flamegraph.frameworks.mxnet.running import RunningJoin
from flamegraph.frameworks.mxnet.sample_log import SampleLog
from flamegraph.frameworks.mxnet.segment_reader import CaughtUp
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.model import FoldedProfile
from flamegraph.record.chunk_threads import ThreadNames

CUT = re.compile(rb"\n\s*\}\s*\n")  # the end of an event object in MXNet's indented trace
TS = re.compile(rb'"ts": (\d+)')


def root_of() -> Callable[[bytes], bytes]:
    naming = PerfCollapser(FoldOptions(), Diagnostics(echo=False))
    return lambda header: naming.root_name(HEADER_OURS.match(header))  # type: ignore[arg-type]


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
        self.line_end = [end_ms(line) for line in self.verbose.splitlines()]
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
        clocks = [reading(self.alignment, start + 0.25 * k) for k in range(1, int((now - start) / 0.25) + 1)]
        write_sidecar(self.directory, {**self.facts, "clocks": clocks, "clock_end": None})
        return CaughtUp({Path(self.facts["profile"]).name: pairing.spans}, {Path(self.facts["verbose"]).name: log})

    def let_go(self) -> None:
        pass

    def refreshed(self) -> bool:
        return True


def end_ms(line: bytes) -> float:
    parts = line.split(b",")
    try:
        return float(parts[1]) + float(parts[-1]) if b"exec" in parts[1:4] else 0.0
    except (ValueError, IndexError):
        return 0.0


def reading(alignment: Alignment, monotonic: float) -> list[float]:
    return [monotonic, alignment.realtime_us(monotonic) / 1e6, 1e-7]


def write_sidecar(directory: Path, facts: dict[str, Any]) -> None:
    (directory / f"mxnet-{facts['pid']}.json").write_text(json.dumps(facts))


def replay(
    directory: Path, data: Path, seed: int | None, lines: list[str], budget: int = 2048
) -> tuple[FoldedProfile, DeferredJoin]:
    """The whole perf.data folded through the streamed path and joined: at the end only (seed None), or also
    whenever the kept samples pass `budget` bytes, the files as written at that moment (seed < 0: `Streaming`).
    `directory`: the hook's, its sidecar with "clocks" and "segments" (prepare_sidecar)."""
    from flamegraph.naming.grouping import namer_for_recording
    from flamegraph.naming.observer import FrameObserver
    from flamegraph.record import Recording, RecordSpec, script_args

    hook = MxnetHook(directory, note=lines.append, hooked=True)
    recording = hook.finish(Recording(data, RecordSpec(command=("python",)), {}, 1.0))
    join = DeferredJoin(hook, root_of())
    final = json.loads(next(directory.glob("mxnet-*.json")).read_text())
    if seed is not None:
        source = Written(directory, final, join.log, seed) if seed >= 0 else Streaming(directory, final, join.log)
        join.running = RunningJoin(directory, source)
        join.log.watch(budget, join.running)
    options = FoldOptions.with_all(frame_hook=FrameObserver(namer_for_recording(str(data))), sample_hook=join.log)
    collapser = PerfCollapser(options, Diagnostics(echo=False))
    join.fold_chunk(collapser, str(data), script_args(recording), ThreadNames().blocks)
    write_sidecar(directory, final)  # the process has exited: its last sidecar
    hook.processes = [final]
    profile = collapser.profile()
    join.join(profile, recording)
    return profile, join




def prepare_sidecar(directory: Path) -> None:
    """The sidecar of a whole recording as a streamed run's: its files named in `directory`, a clock reading
    every 0.25 s (interpolated between start and end), "segments" set (the files are read whole here)."""
    (sidecar,) = directory.glob("mxnet-*.json")
    facts = json.loads(sidecar.read_text())
    facts["profile"], facts["verbose"] = (str(directory / Path(facts[key]).name) for key in ("profile", "verbose"))
    alignment = Alignment(ClockReading.from_list(facts["clock_start"]), ClockReading.from_list(facts["clock_end"]))
    start, end = float(facts["clock_start"][0]), float(facts["clock_end"][0])
    facts["clocks"] = [reading(alignment, start + 0.25 * k) for k in range(1, int((end - start) / 0.25) + 1)]
    facts["segments"] = {"trace": 1 << 20, "verbose": 1 << 20}
    write_sidecar(directory, facts)


class Streaming:
    """As `Written`, for a long run: the trace's events and the log's lines read on (never again from the start)
    up to the moment (the newest kept sample, plus `ahead` seconds), in file order, as a reader finds them."""

    def __init__(self, directory: Path, facts: dict[str, Any], log: SampleLog, ahead: float = 0.5) -> None:
        self.directory, self.facts, self.log, self.ahead = directory, facts, log, ahead
        self.alignment = Alignment(ClockReading.from_list(facts["clock_start"]),
                                   ClockReading.from_list(facts["clock_end"]))  # fmt: skip
        self.pairing = Pairing()
        self.events = iter_events(open(facts["profile"], "rb"), [])  # noqa: SIM115 - read on as the run goes
        self.next_event: dict[str, Any] | None = next(self.events, None)
        self.lines = open(facts["verbose"], "rb")  # noqa: SIM115
        self.next_line = self.lines.readline()
        self.verbose = parse_verbose([])
        self.calls = 0

    def catch_up(self) -> CaughtUp:
        from flamegraph.frameworks.mxnet.dnnl import Primitive, parse_line

        self.calls += 1
        now = (max(self.log.times) if len(self.log.times) else float(self.facts["clock_start"][0])) + self.ahead
        realtime = self.alignment.realtime_us(now)
        while self.next_event is not None and float(self.next_event.get("ts", 0)) <= realtime:
            self.pairing.add(self.next_event)
            self.next_event = next(self.events, None)
        while self.next_line and end_ms(self.next_line) * 1000 <= realtime:
            parsed = parse_line(self.next_line.rstrip(b"\n"))
            if isinstance(parsed, Primitive):
                self.verbose.add(parsed)
            self.next_line = self.lines.readline()
        start = float(self.facts["clock_start"][0])
        clocks = [reading(self.alignment, start + k) for k in range(1, int(now - start) + 1)]
        write_sidecar(self.directory, {**self.facts, "clocks": clocks, "clock_end": None})
        names = Path(self.facts["profile"]).name, Path(self.facts["verbose"]).name
        return CaughtUp({names[0]: self.pairing.spans}, {names[1]: self.verbose})

    def let_go(self) -> None:
        pass

    def refreshed(self) -> bool:
        return True
