"""The instruments' files in segments (`record --mxnet` streamed), through the real hook with the stand-in
`mxnet` of test_mxnet_inprocess.py: read and deleted as the program writes them, the same spans and
executions as one whole file, the disk bounded by the caps; a reader that falls behind stops the instruments
at the cap as before, and says so."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

from helpers.mxnet_standin import setup, sidecar

from flamegraph.frameworks.mxnet.dnnl import read_verbose
from flamegraph.frameworks.mxnet.hook import cap_line
from flamegraph.frameworks.mxnet.limit import capped_text
from flamegraph.frameworks.mxnet.profile import read_profile
from flamegraph.frameworks.mxnet.segment_reader import LAZY_SHARE, Pressure, SegmentReaders, SegmentStream
from flamegraph.frameworks.mxnet.segments import parse_byte_pair, present

LINES, SPANS = "20000", "4000"  # ~1.8 MB of verbose lines, ~1 MB of trace


def disk_peak(directory: Path, stop: threading.Event, peak: list[int]) -> None:
    """The largest number of bytes of segments on disk at once, polled."""
    while not stop.wait(0.005):
        total = 0
        for entry in os.scandir(directory) if directory.is_dir() else []:
            if entry.name[-7:].isdigit():
                try:
                    total += entry.stat().st_size
                except FileNotFoundError:
                    continue
        peak[0] = max(peak[0], total)


WAIT_FOR_STOP = """
deadline = time.time() + 30
while time.time() < deadline and "state stop" not in open(os.environ["STANDIN_LOG"]).read():
    time.sleep(0.05)
"""


def run(
    tmp_path: Path, caps: str | None, segments: str | None, read: bool, budget: int | None = None,
    lazy: bool = True, tail: str = "time.sleep(1.5)\n",
) -> tuple[Path, SegmentReaders, int, dict[str, int]]:
    """The stand-in run through the hook (caps and segment sizes as "TRACE,LOG"), its segments read by our
    readers (when `read`) as the disk needs (not `lazy`: as written, the readers not told the caps); the
    program ends with `tail`; the readers' `during` figures taken as it ended."""
    argv, env, directory = setup(tmp_path)
    env = {**env, "STANDIN_LINES": LINES, "STANDIN_SPANS": SPANS}
    env.update({name: value for name, value in (("FLAMEGRAPH_MXNET_CAPS", caps),
                                                 ("FLAMEGRAPH_MXNET_SEGMENTS", segments)) if value})  # fmt: skip
    program = tmp_path / "train.py"
    program.write_text(program.read_text() + tail)  # (the limits' watch polls while it runs)
    readers = SegmentReaders(directory, parse_byte_pair(caps) if lazy else None, budget)
    if read:
        readers.start()
    stop, peak = threading.Event(), [0]
    watcher = threading.Thread(target=disk_peak, args=(directory, stop, peak))
    watcher.start()
    try:
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    finally:
        stop.set()
        watcher.join()
    assert proc.returncode == 0, proc.stderr
    during = {name: reader.stream.during for name, reader in readers.readers.items()}  # as the program ended
    if read:
        readers.finish()
    return directory, readers, peak[0], during


def test_segments_are_read_as_written_and_give_the_whole_files(tmp_path: Path) -> None:
    """Each segment read and deleted as it comes, the spans and executions those of one whole file."""
    whole, _, _, _ = run(tmp_path / "whole", None, None, read=False)
    facts = sidecar(whole)
    expected_trace = read_profile(str(facts["profile"]))
    expected_log = read_verbose(str(facts["verbose"]))
    # Read as written (the readers not told the caps), caps far above the files: no stop however loaded the machine.
    directory, readers, peak, _ = run(tmp_path / "segments", "20000000,20000000", "60000,50000", True, lazy=False)
    facts = sidecar(directory)
    assert facts["segments"] == {"trace": 60000, "verbose": 50000} and facts["capped"] is None
    trace, log = readers.trace(str(facts["profile"])), readers.verbose(str(facts["verbose"]))
    assert trace is not None and log is not None
    assert {tid: index.spans for tid, index in trace.threads.items()} == {
        tid: index.spans for tid, index in expected_trace.threads.items()
    } and trace.problems == expected_trace.problems == []
    assert trace.spans == int(SPANS) + 1 and log.primitives == expected_log.primitives
    assert len(log.primitives) == int(LINES) + 1
    streams = {name: reader.stream for name, reader in readers.readers.items()}
    assert all(stream.segments >= 3 for stream in streams.values()), {n: s.segments for n, s in streams.items()}
    assert not present(str(directory), f"profile-{facts['pid']}.json")  # every segment deleted once read
    assert not present(str(directory), f"dnnl-verbose-{facts['pid']}.log")
    assert peak <= 6_000_000


def test_a_run_under_the_caps_is_read_only_after_it_ends(tmp_path: Path) -> None:
    """Caps far above what the program writes: no byte is read while it runs (its CPU is the program's), all of
    it after, with the same spans and executions, every segment deleted."""
    directory, readers, _, during = run(tmp_path, "50000000,50000000", "60000,50000", read=True)
    facts = sidecar(directory)
    assert len(during) == 2 and during == dict.fromkeys(during, 0), during  # both files seen, neither read yet
    trace, log = readers.trace(str(facts["profile"])), readers.verbose(str(facts["verbose"]))
    assert trace is not None and log is not None and facts["capped"] is None
    assert trace.spans == int(SPANS) + 1 and len(log.primitives) == int(LINES) + 1
    assert all(reader.stream.segments >= 3 for reader in readers.readers.values())
    assert not present(str(directory), f"dnnl-verbose-{facts['pid']}.log")


def test_the_pressure_reads_past_half_the_cap_or_when_growth_leaves_too_little(tmp_path: Path) -> None:
    """Lazy: a segment is due only above LAZY_SHARE of the cap, or sooner when the file grows so fast that the
    limits' headroom (limit.py) would stop the instruments before a reader caught up."""
    cap = 1000
    segment = tmp_path / "log.000001"

    def due(size: int, pressure: Pressure) -> bool:
        segment.write_bytes(b"x" * size)
        return pressure.due()

    long_ago = time.monotonic() - 100  # the file began then: it grew slowly
    assert not due(int(cap * LAZY_SHARE) - 50, Pressure(str(tmp_path), "log", cap, long_ago))
    assert due(int(cap * LAZY_SHARE) + 50, Pressure(str(tmp_path), "log", cap, long_ago))
    fast = Pressure(str(tmp_path), "log", cap)  # the file begins now
    assert due(int(cap * LAZY_SHARE) - 50, fast)  # 450 bytes within a second: 1.5 s of that twice leaves nothing
    assert due(1, Pressure(str(tmp_path), "log", None))  # no cap: read as written


def test_the_stream_waits_until_due_while_the_writer_runs(tmp_path: Path) -> None:
    ended, due = threading.Event(), threading.Event()
    stream = SegmentStream(str(tmp_path), "log", ended, due.is_set)
    (tmp_path / "log.000001").write_bytes(b"abc")
    (tmp_path / "log.000002").write_bytes(b"d")
    got = bytearray(16)
    threading.Timer(0.3, due.set).start()
    assert stream.readinto(memoryview(got)) == 3 and stream.during == 3  # only once due
    due.clear()
    ended.set()  # the writer has ended: the rest is read whatever the pressure
    assert stream.readinto(memoryview(got)) == 1 and stream.readinto(memoryview(got)) == 0
    assert stream.bytes == 4 and stream.during == 3 and not list(tmp_path.iterdir())


def test_readers_over_their_memory_budget_stop_the_instruments_and_say_so(tmp_path: Path) -> None:
    """What the readers hold passes the budget while the program runs: they ask for the stop, the hooked process
    stops both instruments as at a cap (the profiler stopped and dumped, the sidecar's moment), the line says it."""
    budget = 500_000  # ~15,000 executions of the 20,000
    directory, readers, _, _ = run(tmp_path, "20000000,20000000", "60000,50000", True, budget, lazy=False,
                                   tail=WAIT_FOR_STOP)  # (the program runs until the stop: a loaded machine too)
    facts = sidecar(directory)
    capped = facts["capped"]
    assert readers.requested is not None and readers.requested[0] > budget and readers.requested[1] == budget
    assert isinstance(capped, dict) and capped["requested"] is True, capped
    assert (tmp_path / "log.txt").read_text().splitlines().count("dump") == 1  # dumped at the stop, not again at exit
    line = cap_line(facts, readers)
    assert line is not None and "flamegraph's readers held" in line and "over their 0.5 MB budget" in line, line


def test_a_reader_that_falls_behind_stops_the_instruments_at_the_cap(tmp_path: Path) -> None:
    """Nobody reads: the segments pile up to the cap, where both instruments stop as without segments; the
    drainer writes no byte past it, and the line says the reader fell behind."""
    cap = 300_000
    directory, _, peak, _ = run(tmp_path, f"50000000,{cap}", "40000,40000", read=False)
    facts = sidecar(directory)
    capped = facts["capped"]
    assert isinstance(capped, dict) and capped["file"] == "oneDNN's verbose log" and capped["segments"] is True
    on_disk = sum(p.stat().st_size for p in directory.glob(f"dnnl-verbose-{facts['pid']}.log.*"))
    assert on_disk <= cap and peak <= cap + 50_000_000
    line = capped_text(capped, 5.0)
    assert "the segments not read yet neared the" in line and "fell behind" in line


def test_the_stream_reads_segments_in_order_and_waits_for_the_next(tmp_path: Path) -> None:
    """A segment is read to its end once the next exists; the last one once the writer has ended."""
    ended = threading.Event()
    stream = SegmentStream(str(tmp_path), "log", ended)
    (tmp_path / "log.000001").write_bytes(b"abc")
    got = bytearray(16)
    assert stream.readinto(memoryview(got)) == 3
    writer = threading.Timer(0.3, lambda: ((tmp_path / "log.000001").open("ab").write(b"d"),
                                          (tmp_path / "log.000002").write_bytes(b"ef")))  # fmt: skip
    writer.start()
    assert stream.readinto(memoryview(got)) == 1 and got[:1] == b"d"  # waited; the rest of the first
    assert stream.readinto(memoryview(got)) == 2 and got[:2] == b"ef" and not (tmp_path / "log.000001").exists()
    ended.set()
    assert stream.readinto(memoryview(got)) == 0 and not (tmp_path / "log.000002").exists()
    assert stream.bytes == 6 and stream.segments == 2


def test_a_writer_that_dropped_bytes_at_its_cap_writes_no_more_even_when_room_comes_back(tmp_path: Path) -> None:
    """A hole in the middle would read as whole (two log lines glued, a span lost before the cap's moment):
    once bytes went to /dev/null, the segments are final, whatever the reader deletes later."""
    from flamegraph.frameworks.mxnet.drain import Segmented, Writer
    from flamegraph.frameworks.mxnet.segments import segment_name
    from flamegraph.io.private import create_file

    base = "dnnl-verbose-1.log"
    writer = Writer(create_file(str(tmp_path), segment_name(base, 1)), 100, Segmented(str(tmp_path), base, 50))

    def push(data: bytes) -> None:
        into, size = writer.next_size()
        assert size >= len(data) or into == 1
        written = os.write(into, data[:size]) if into != 1 else len(data)
        writer.wrote(into, written)

    push(b"a" * 50)
    push(b"b" * 50)
    push(b"c" * 30)  # past the cap: dropped
    os.unlink(tmp_path / segment_name(base, 1))  # the reader read and deleted the first segment
    push(b"d" * 30)
    assert writer.next_size()[0] == 1
    kept = b"".join((tmp_path / name).read_bytes() for name in sorted(os.listdir(tmp_path)))
    assert kept == b"b" * 50
