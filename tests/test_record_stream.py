"""`record --max-spool/--every`: folded while perf records, raw data on disk bounded, a graph per interval,
the trend page; the spool's chunk counting and drop policy without perf; the trend page's escaping."""

from __future__ import annotations

import json
import os
import re
import signal
import struct
import subprocess
import sys
import threading
import time
import xml.dom.minidom
from pathlib import Path

import pytest
from helpers.children import ended, interruptible
from helpers.programs import compile_c

from flamegraph.io.diagnostics import EXIT_USAGE, Diagnostics
from flamegraph.io.folded import read_folded
from flamegraph.model import FoldedProfile
from flamegraph.record.spool import (
    EVENT_HEADER,
    HEADER,
    MISC_MMAP_BUILD_ID,
    RECORD_LOST,
    RECORD_LOST_SAMPLES,
    RECORD_MMAP2,
    RECORD_SAMPLE,
    ChunkCounts,
    Spool,
    parse_size,
    read_chunk,
    read_chunk_counts,
)
from flamegraph.render.trend import render_trend, trend_rows

FLAMEGRAPH = [sys.executable, "-m", "flamegraph"]
# Phase A for the first argv[1] seconds, then phase B: the intervals must tell them apart.
PHASES_C = r"""
#include <stdlib.h>
#include <time.h>
static volatile double sink;
__attribute__((noinline)) void phase_a(void) { for (int i = 0; i < 200000; i++) sink += i * 0.5; }
__attribute__((noinline)) void phase_b(void) { for (int i = 0; i < 200000; i++) sink += i * 0.25; }
int main(int argc, char **argv) {
    double switch_at = atof(argv[1]);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        double elapsed = (now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9;
        if (elapsed < switch_at) phase_a(); else phase_b();
    }
}
"""

# Its perf tests bound the disk and count the samples, not time: they pass beside two busy loops (a folder
# that falls behind drops chunks, said and counted), so they run in make test's first part.
pytestmark = pytest.mark.parallel


def load(path: Path) -> FoldedProfile:
    with open(path, "rb") as f:
        return read_folded(f, str(path), Diagnostics())


def self_share(profile: FoldedProfile, leaf: str) -> float:
    return sum(w for s, w in profile.counts.items() if s.rpartition(";")[2] == leaf) / profile.total


# -- the spool without perf ---------------------------------------------------------------------


def write_perf_data(path: Path, records: list[tuple[int, bytes]], pad: int = 0, misc: int = 0) -> None:
    """A minimal perf.data: the file header, then records (type, body); `pad` bytes of zeros after."""
    body = b"".join(EVENT_HEADER.pack(kind, misc, EVENT_HEADER.size + len(data)) + data for kind, data in records)
    offset = HEADER.size + 104  # a header as long as perf's (the feature bitmap after ours)
    header = HEADER.pack(b"PERFILE2", offset, 0, offset, len(body)).ljust(offset, b"\0")
    path.write_bytes(header + body + b"\0" * pad)


def test_chunk_counts_read_samples_and_both_kinds_of_lost(tmp_path: Path) -> None:
    data = tmp_path / "perf.data.1"
    lost = struct.pack("<QQ", 7, 40)  # {id, lost}
    write_perf_data(
        data,
        [(RECORD_SAMPLE, b"x" * 24), (3, b"comm"), (RECORD_SAMPLE, b""), (RECORD_LOST, lost),
         (RECORD_LOST_SAMPLES, struct.pack("<Q", 5)), (RECORD_SAMPLE, b"y" * 8)],
    )  # fmt: skip
    assert read_chunk_counts(data) == ChunkCounts(samples=3, lost=45, lost_records=1)


def mmap2(name: bytes, build_id: bytes) -> bytes:
    """An MMAP2 body with a build-id (perf record --buildid-mmap): pid, tid, start, len, pgoff, the id, prot,
    flags, the file name (NUL-padded to 8 bytes)."""
    ids = struct.pack("<BBH20s", len(build_id), 0, 0, build_id)
    return struct.pack("<IIQQQ", 1, 1, 0x1000, 0x2000, 0) + ids + struct.pack("<II", 5, 2) + name + b"\0" * 8


def test_chunk_build_ids_come_from_the_mmap2_records(tmp_path: Path) -> None:
    data = tmp_path / "perf.data.1"
    libc = bytes(range(20))
    write_perf_data(
        data,
        [(RECORD_MMAP2, mmap2(b"/usr/lib/libc.so.6", libc)),
         (RECORD_MMAP2, mmap2(b"[kernel.kallsyms]_text", b"\1" * 20)),
         (RECORD_MMAP2, mmap2(b"/usr/lib/libc.so.6", libc))],
        misc=MISC_MMAP_BUILD_ID,
    )  # fmt: skip
    counts, build_ids = read_chunk(data)
    assert counts == ChunkCounts()
    assert build_ids == {b"/usr/lib/libc.so.6": frozenset({libc.hex()}), b"[kernel.kallsyms]": frozenset({"01" * 20})}
    write_perf_data(data, [(RECORD_MMAP2, mmap2(b"/usr/lib/libc.so.6", libc))])  # no build-id (device, inode)
    assert read_chunk(data)[1] == {}


def test_chunk_counts_stop_at_a_torn_record_and_never_raise(tmp_path: Path) -> None:
    data = tmp_path / "perf.data.1"
    write_perf_data(data, [(RECORD_SAMPLE, b"")])
    raw = bytearray(data.read_bytes())
    struct.pack_into("<Q", raw, 48, 64)  # the data section says 64 bytes: the rest is a zero-sized record
    data.write_bytes(bytes(raw) + b"\0" * 64)
    assert read_chunk_counts(data).samples == 1
    (tmp_path / "junk").write_bytes(b"not perf")
    assert read_chunk_counts(tmp_path / "junk") == ChunkCounts()
    assert read_chunk_counts(tmp_path / "missing") == ChunkCounts()


@pytest.mark.parametrize(
    ("text", "size"),
    [("256M", 256_000_000), ("1g", 1_000_000_000), ("64k", 64_000), ("1000", 1000), ("1.5MB", 1_500_000)],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "M", "lots", "-1M", "nan", "1T"])
def test_bad_sizes(text: str) -> None:
    with pytest.raises(ValueError, match="expected a number"):
        parse_size(text)


def test_spool_over_its_cap_drops_the_newest_waiting_chunks_and_counts_them(tmp_path: Path) -> None:
    notes: list[str] = []
    spool = Spool(tmp_path, cap=16_000_000, note=notes.append)  # chunks of 2.7 MB
    for i in range(1, 5):  # four finished chunks of ~5 MB, 10 samples each, none folded yet
        write_perf_data(tmp_path / f"perf.data.{i:04d}", [(RECORD_SAMPLE, b"")] * 10, pad=5_000_000)
    spool.ended()  # perf is done: the chunks are queued, over the cap
    kept: list[tuple[str, bool]] = []
    while (chunk := spool.next_chunk()) is not None:
        kept.append((chunk.path.name, chunk.dropped))
        assert chunk.path.exists() != chunk.dropped
        spool.done(chunk)
    # 5 + 5 MB waiting and room for the open chunk to grow to two chunks (2 x 16/6 MB) fit in 16 MB; the third
    # would pass it (dropped), and so would the last, which ends the recording: dropped too, but queued as a
    # marker (its file gone).
    assert [name for name, _ in kept] == ["perf.data.0001", "perf.data.0002", "perf.data.0004"]
    assert [dropped for _, dropped in kept] == [False, False, True]
    assert spool.dropped == ChunkCounts(samples=20) and spool.dropped_chunks == 2
    assert len(notes) == 2 and "dropped a chunk of 10 samples unfolded" in notes[0] and "16 MB" in notes[0]
    assert "(20 so far)" in notes[1]
    assert not list(tmp_path.iterdir())


def test_dropped_chunks_are_said_three_times_then_counted_and_a_passed_cap_is_said(tmp_path: Path) -> None:
    """newcomer10 b-21: a 16 MB cap on a busy machine dropped dozens of chunks, one warning line each (36 in
    one run); and a peak over the cap read as if the cap had held."""
    notes: list[str] = []
    spool = Spool(tmp_path, cap=16_000_000, note=notes.append)
    for i in range(1, 9):  # eight finished chunks of ~5 MB: two fit, six are dropped
        write_perf_data(tmp_path / f"perf.data.{i:04d}", [(RECORD_SAMPLE, b"")] * 10, pad=5_000_000)
    spool.ended()
    while (chunk := spool.next_chunk()) is not None:
        spool.done(chunk)
    assert spool.dropped_chunks == 6 and spool.dropped == ChunkCounts(samples=60)  # all counted
    assert len(notes) == 3 and all("dropped a chunk of 10 samples" in note for note in notes)
    assert notes[2].endswith("(30 so far); more are only counted, their total said at the end")
    spool.peak = 9_800_000
    assert spool.bound_text() == "raw data on disk at most 9.8 MB, --max-spool 16.0 MB"
    spool.peak = 21_500_000
    assert spool.bound_text().startswith("raw data on disk at most 21.5 MB, --max-spool 16.0 MB: passed, ")


# A perf that ignores the first SIGUSR2 (perf 6.1 does until its record loop runs, seconds after it
# created the file on a loaded machine), then switches on each one: perf.data -> perf.data.<n>.
LATE_PERF = """
import os, signal, sys, time
os.chdir(sys.argv[1]); open("perf.data", "wb").close()
seen = []
def switch(*_):
    seen.append(1)
    if len(seen) > 1:
        os.rename("perf.data", f"perf.data.{len(seen):04d}"); open("perf.data", "wb").close()
signal.signal(signal.SIGUSR2, switch)
time.sleep(30)
"""


def test_a_switch_perf_ignored_is_asked_again(tmp_path: Path) -> None:
    perf = subprocess.Popen([sys.executable, "-c", LATE_PERF, str(tmp_path)])
    spool = Spool(tmp_path, cap=16_000_000, every=0.2)
    try:
        while not (tmp_path / "perf.data").exists():
            time.sleep(0.01)
        spool.started(perf.pid)
        chunk = spool.next_chunk(timeout=10)  # the first switch was lost: without a second, none would come
        assert chunk is not None and chunk.path.name == "perf.data.0002" and chunk.closes
        spool.done(chunk)
    finally:
        perf.kill()
        perf.wait()
        spool.ended()


# -- the trend page -----------------------------------------------------------------------------


def test_trend_rows_are_self_shares_per_interval() -> None:
    one = FoldedProfile({"main;a": 3, "main;b": 1})
    two = FoldedProfile({"main;b": 2, "main;b;c": 2})
    rows = {name: (selfs, totals) for name, selfs, totals in trend_rows([(1, one), (2, two)])}
    assert rows["a"] == ([0.75, 0.0], [0.75, 0.0])
    assert rows["b"] == ([0.25, 0.5], [0.25, 1.0])
    assert rows["c"] == ([0.0, 0.5], [0.0, 0.5])
    assert list(rows)[:2] == ["a", "b"]  # the most self time over the run first (0.75 each, then by name)


def test_trend_page_is_escaped_svg_without_script() -> None:
    hostile = "std::vector<int>::at&</text><script>alert(1)</script>"
    image = render_trend(
        [(1, FoldedProfile({f"main;{hostile}": 5})), (2, FoldedProfile({"main;other": 5}))],
        "t<&>", "flamegraph diff a-001.folded a-002.folded",
    )  # fmt: skip
    document = xml.dom.minidom.parseString(image)
    assert not document.getElementsByTagName("script")
    text = image.decode()
    assert "std::vector&lt;int&gt;::at&amp;&lt;/text&gt;" in text and "t&lt;&amp;&gt;" in text
    assert "flamegraph diff a-001.folded a-002.folded" in text
    assert "100.0" in text  # the share printed in its cell: readable as an image


def test_streaming_is_the_default_and_what_needs_the_whole_file_says_why() -> None:
    from flamegraph.io.diagnostics import BadOption
    from flamegraph.record.streaming import WHY, Plan, python_frames_on, streaming_plan

    assert streaming_plan(None, None, []) == Plan(256_000_000)  # no option: folded while recording, 256 MB
    assert streaming_plan("64M", None, []) == Plan(64_000_000)
    assert streaming_plan("0", None, ["--jit --pid"]) == Plan(None)  # asked to record whole: nothing to say
    default = streaming_plan(None, None, ["--jit --pid", "--memory"])
    assert default.cap is None and default.note is not None
    assert default.note.startswith("note: recorded whole, not folded while recording, the raw data on disk is not")
    assert "--jit --pid: a running process's kernels" in default.note
    assert "--memory: the allocation probes" in default.note
    assert "--mxnet" not in WHY  # streamed, its operators joined after the run (test_mxnet_streamed.py)
    assert "--jit" not in WHY and "Python frames" in WHY  # a launched --jit streams; offcpu's Python frames not
    asked = streaming_plan("64M", None, ["--perf-data"])
    assert asked.cap is None and asked.note is not None and "--max-spool not applied" in asked.note
    with pytest.raises(BadOption, match="not with --memory"):
        streaming_plan(None, 60.0, ["--memory"])
    with pytest.raises(BadOption, match="not with --max-spool 0"):
        streaming_plan("0", 60.0, [])
    assert not python_frames_on(None, ()) and not python_frames_on(False, ("python3.12", "x.py"))
    assert not python_frames_on(None, ("/bin/sh", "-c", "true"))  # not Python: streamed


def test_offcpu_options_that_need_the_whole_file_are_read_from_the_spec() -> None:
    from flamegraph.record.offcpu import offcpu_spec
    from flamegraph.record.streaming import offcpu_blockers

    plain, wakers = offcpu_spec(None, ("sleep", "1")), offcpu_spec(None, ("sleep", "1"), wakers=True)
    assert offcpu_blockers(plain, False, False, None) == []
    assert offcpu_blockers(wakers, False, False, None) == ["--wakers"]
    assert offcpu_blockers(plain, True, True, False) == ["--perf-data", "exports"]


@pytest.mark.perf
def test_the_offcpu_pipeline_records_wakers_whole_whatever_cap_its_caller_gives(tmp_path: Path) -> None:
    """The pipeline's own guard missed --wakers (each wait is joined to its waker over the whole file): a
    library caller's cap streamed it. It is now the CLI's guard, and says so as the CLI does."""
    import io

    from flamegraph.folding.perf_sched import OffCpuOptions
    from flamegraph.pipeline.offcpu import OffCpuRequest, record_offcpu_graph
    from flamegraph.pipeline.outputs import Outputs
    from flamegraph.record import Status
    from flamegraph.record.offcpu import offcpu_spec

    said = io.BytesIO()
    spec = offcpu_spec(None, ("sleep", "0.3"), wakers=True)
    request = OffCpuRequest(spec, OffCpuOptions(), max_spool=64_000_000)
    record_offcpu_graph(request, Outputs(folded=tmp_path / "w.folded"), Status(said, io.BytesIO()))
    notes = said.getvalue().decode()
    assert "note: recorded whole, --max-spool not applied, the raw data on disk is not bounded (--wakers: " in notes
    assert "paired as recorded" not in notes and load(tmp_path / "w.folded").total > 0


# -- the CLI's mistakes (no perf) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--every", "5", "--jit", "--pid", "1"], "not with --jit --pid (a running process's kernels are located"),
        (["--every", "5", "--perf-data", "x.data", "--mxnet"], "not with --perf-data (keeps the whole"),
        (["--every", "5", "--max-spool", "0"], "not with --max-spool 0"),
        (["--max-spool", "1M"], "less than 16M"),
        (["--max-spool", "lots"], "expected a number"),
        (["--every", "0.5"], "less than 1"),
    ],
)
def test_streamed_mistakes_are_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [*FLAMEGRAPH, "record", *args, "-o", str(tmp_path / "x.svg"), *([] if "--pid" in args else ["--", "true"])],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == EXIT_USAGE, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr


# -- with perf ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def phases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_c(tmp_path_factory.mktemp("phases"), "phases", PHASES_C)


class DiskWatch:
    """Polls the bytes under a directory (the spool's $TMPDIR) every 20 ms; `peak` is the largest seen."""

    def __init__(self, root: Path) -> None:
        self.root, self.peak, self.polls = root, 0, 0
        self.held = 0  # the most deleted spool files some process still mapped (their disk space not freed)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            total = 0
            for dirpath, _, names in os.walk(self.root):
                for name in names:
                    try:
                        total += os.lstat(os.path.join(dirpath, name)).st_size
                    except OSError:
                        pass
            self.peak, self.polls = max(self.peak, total), self.polls + 1
            if self.polls % 25 == 0:
                self.held = max(self.held, self._deleted_but_mapped())

    def _deleted_but_mapped(self) -> int:
        held = 0
        for maps in Path("/proc").glob("[0-9]*/maps"):
            try:
                text = maps.read_text()
            except OSError:
                continue
            held += sum(1 for line in text.splitlines() if str(self.root) in line and line.endswith("(deleted)"))
        return held

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


@pytest.mark.perf
def test_every_interval_drawn_disk_bounded_totals_add_up(phases: Path, tmp_path: Path) -> None:
    """15 s at dwarf,65528 -F 499 (~30 MB/s of raw data, ~450 MB unbounded) under a 32 MB spool."""
    spool_root = tmp_path / "tmp"
    spool_root.mkdir()
    watch = DiskWatch(spool_root)
    out = tmp_path / "out"
    proc = subprocess.run(
        [*FLAMEGRAPH, "record", "--every", "5", "--duration", "15", "--max-spool", "32M",
         "--call-graph", "dwarf,65528", "-F", "499", "-o", str(out / "run.svg"), "--folded", str(out / "run.folded"),
         "--", str(phases), "7.5"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "TMPDIR": str(spool_root)},
    )  # fmt: skip
    peak = watch.stop()
    assert proc.returncode == 0, proc.stderr
    assert watch.polls > 100 and 0 < peak <= 32_000_000, (peak, proc.stderr)
    assert watch.held == 0  # perf 6.1's build-id pass at each switch kept every chunk mapped: not used
    assert not list(spool_root.iterdir())  # nothing raw outlives the run
    # An interval without a sample writes nothing; chunks dropped (the folding behind on a loaded machine) are
    # said and counted, never silent: every sample is folded or dropped.
    recorded = int(proc.stderr.split("recorded ")[1].split(" samples")[0].replace(",", ""))
    whole_facts = json.loads((out / "run.folded.json").read_text())["metadata"]
    dropped = int(whole_facts.get("samples dropped unfolded", "0 of 0").split(" of ")[0].replace(",", ""))
    assert (dropped > 0) == ("warning: folding could not keep up" in proc.stderr), proc.stderr
    whole = load(out / "run.folded")
    assert recorded == whole.total + dropped
    numbers = [n for n in (1, 2, 3) if (out / f"run-{n:03d}.folded").exists()]
    assert numbers and not (out / "run-004.folded").exists(), proc.stderr
    intervals = [load(out / f"run-{n:03d}.folded") for n in numbers]
    assert all((out / f"run-{n:03d}.svg").is_file() for n in numbers)
    assert sum(p.total for p in intervals) == whole.total
    assert whole_facts["raw data on disk"].startswith("at most ")
    if dropped or whole.total < 15 * 50:
        return  # what follows needs every interval folded, and a program that ran (at load 12: 13 samples/s)
    assert numbers == [1, 2, 3], proc.stderr
    # Phase A for the program's first 7.5 s, then B: B's share grows (perf may start the program a little
    # late on a loaded machine, shifting the switch later).
    shares = [self_share(p, "phase_b") for p in intervals]
    assert shares == sorted(shares) and shares[0] < 0.1 and shares[-1] > 0.5, shares
    facts = json.loads((out / "run-003.folded.json").read_text())["metadata"]
    start_s, end_s = (float(t) for t in re.findall(r"([0-9.]+) s (?:to|of)", facts["interval"]))
    assert facts["interval"].startswith("3 (every 5 s): ") and "s of the recording, " in facts["interval"]
    assert start_s == pytest.approx(10.0, abs=0.3)  # a switch: ~50 ms, later when perf switches late
    trend = (out / "run-trend.svg").read_text()
    assert "phase_a" in trend and "phase_b" in trend
    assert f"flamegraph diff {out}/run-001.folded {out}/run-003.folded" in trend  # as -o was given


@pytest.mark.perf
def test_ctrl_c_leaves_the_finished_intervals_and_the_whole_run(phases: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [*FLAMEGRAPH, "record", "--every", "2", "--call-graph", "dwarf,8192", "-o", str(out / "run.svg"),
         "--folded", str(out / "run.folded"), "--", str(phases), "100"],
        stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=interruptible,
    )  # fmt: skip
    with ended(proc):
        deadline = time.monotonic() + 60
        while not (out / "run-001.folded").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    written = sorted(p.name for p in out.glob("run-0*.folded"))
    assert written[0] == "run-001.folded"  # the finished ones, and the one Ctrl-C cut unless it had no sample
    whole = load(out / "run.folded")
    assert sum(load(out / name).total for name in written) == whole.total
    assert (out / "run.svg").is_file() and (out / "run-trend.svg").is_file()
    assert "stopping the recording (Ctrl-C received)" in err


@pytest.mark.perf
def test_max_spool_with_perf_data_records_the_whole_file_and_says_so(phases: Path, tmp_path: Path) -> None:
    data = tmp_path / "keep.data"
    proc = subprocess.run(
        [*FLAMEGRAPH, "record", "--max-spool", "64M", "--perf-data", str(data), "--duration", "2",
         "-o", str(tmp_path / "x.svg"), "--", str(phases), "100"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stderr.splitlines() if line.startswith("note: recorded whole")]
    assert said == [
        "note: recorded whole, --max-spool not applied, the raw data on disk is not bounded "
        "(--perf-data: keeps the whole raw recording, as asked)"
    ], proc.stderr
    assert data.is_file() and (tmp_path / "x.svg").is_file()


@pytest.mark.perf
@pytest.mark.serial  # "in 1 chunk": not so beside two busy loops (load 5), alone then
def test_record_streams_by_default_and_max_spool_0_records_whole(phases: Path, tmp_path: Path) -> None:
    """No option: folded while recording, under the default 256 MB cap; --max-spool 0: one perf.data."""
    streamed = subprocess.run(
        [*FLAMEGRAPH, "record", "--duration", "2", "--folded", str(tmp_path / "s.folded"),
         "-o", str(tmp_path / "s.svg"), "--", str(phases), "100"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert streamed.returncode == 0, streamed.stderr
    assert "folded as recorded in 1 chunk (raw data on disk at most" in streamed.stderr
    assert "--max-spool 256.0 MB)" in streamed.stderr and "recorded whole" not in streamed.stderr
    assert json.loads((tmp_path / "s.folded.json").read_text())["metadata"]["raw data on disk"].startswith("at most")
    whole = subprocess.run(
        [*FLAMEGRAPH, "record", "--max-spool", "0", "--duration", "2", "--folded", str(tmp_path / "w.folded"),
         "-o", str(tmp_path / "w.svg"), "--", str(phases), "100"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert whole.returncode == 0, whole.stderr
    assert "folded as recorded" not in whole.stderr and "recorded whole" not in whole.stderr  # asked: no note
    assert "raw data on disk" not in json.loads((tmp_path / "w.folded.json").read_text())["metadata"]
    assert load(tmp_path / "w.folded").total > 0 and load(tmp_path / "s.folded").total > 0


@pytest.mark.perf  # beside two busy loops: 9 s (36 s while the last chunk's perf script stayed idle behind the target)
def test_pid_streams_and_leaves_the_process_running(phases: Path, tmp_path: Path) -> None:
    """--pid with the spool: the process's samples folded as recorded, the process left running."""
    target = subprocess.Popen([str(phases), "100"])
    try:
        time.sleep(0.3)
        proc = subprocess.run(
            [*FLAMEGRAPH, "record", "--pid", str(target.pid), "--duration", "3", "--every", "1", "-F", "199",
             "--max-spool", "16M", "--folded", str(tmp_path / "p.folded"), "-o", str(tmp_path / "p.svg")],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert target.poll() is None  # attached and detached: still running
        whole = load(tmp_path / "p.folded")
        assert whole.total > 0 and all(stack.startswith("phases") for stack in whole.counts), list(whole.counts)[:3]
        assert self_share(whole, "phase_a") > 0.5  # the program's first phase: its own frames, unwound
        intervals = sorted(tmp_path.glob("p-0*.folded"))
        assert intervals and sum(load(p).total for p in intervals) == whole.total, proc.stderr
        assert "folded as recorded in" in proc.stderr and (tmp_path / "p-trend.svg").is_file()
    finally:
        target.kill()
        target.wait()


# -- off-CPU: one pairing across chunks ---------------------------------------------------------

WAITER = """
import threading, time, sys
done = threading.Event()
def waiter():
    while not done.wait(1.5):  # waits of 1.5 s: each spans several chunks switched every 0.3 s
        pass
threading.Thread(target=waiter, daemon=True).start()
time.sleep(float(sys.argv[1]))
done.set()
"""


@pytest.mark.perf
def test_offcpu_pairs_a_wait_across_chunks_as_one_wait(tmp_path: Path) -> None:
    from flamegraph.folding.offcpu import SCRIPT_OPTIONS, fold_offcpu_sources, fold_offcpu_totals
    from flamegraph.folding.offcpu_stream import STREAM_LABEL
    from flamegraph.folding.sched_totals import OPEN_AT_START
    from flamegraph.record.stream import iter_chunk_lines

    script = tmp_path / "waiter.py"
    script.write_text(WAITER)
    spool_dir = tmp_path / "spool"
    spool_dir.mkdir()
    perf = subprocess.Popen(
        ["perf", "record", "-e", "sched:sched_switch", "--switch-events", "--call-graph", "dwarf,8192", "-k",
         "CLOCK_MONOTONIC", "--switch-output", "-o", str(spool_dir / "perf.data"), "--", sys.executable, str(script),
         "4"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    while perf.poll() is None:  # a chunk every 0.3 s, as the spool switches a busy recording
        time.sleep(0.3)
        if (spool_dir / "perf.data").exists():
            perf.send_signal(signal.SIGUSR2)
    chunks = sorted(str(p) for p in spool_dir.glob("perf.data.*"))
    assert len(chunks) >= 4
    alone = fold_offcpu_totals(chunks).totals  # each chunk paired by itself: waits cut at every switch
    spool = Spool(spool_dir, cap=10**12)
    spool.ended()
    chained = fold_offcpu_sources([(STREAM_LABEL, iter_chunk_lines(spool, SCRIPT_OPTIONS))], STREAM_LABEL).totals
    assert not list(spool_dir.iterdir())  # each chunk deleted once read
    # Two threads blocked ~4 s each (the main thread's sleep, the waiter's 1.5 s waits): paired across the
    # chunks, ~8 s, none cut; each chunk alone sees only the waits that end within it, clipped to its records.
    assert OPEN_AT_START not in chained.by_kind and chained.window_ns > 3.5e9
    assert chained.total_ns > 7e9
    assert alone.total_ns < chained.total_ns / 2 and OPEN_AT_START in alone.by_kind


@pytest.mark.perf
def test_offcpu_max_spool_draws_the_waits_with_the_disk_bounded(tmp_path: Path) -> None:
    script = tmp_path / "waiter.py"
    script.write_text(WAITER)
    proc = subprocess.run(
        [*FLAMEGRAPH, "offcpu", "--max-spool", "16M", "--folded", str(tmp_path / "w.folded"),
         "-o", str(tmp_path / "w.svg"), "--", sys.executable, str(script), "3"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "TMPDIR": str(tmp_path)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "paired as recorded (raw data on disk at most" in proc.stderr
    facts = json.loads((tmp_path / "w.folded.json").read_text())["metadata"]
    assert facts["raw data on disk"].startswith("at most ") and "--max-spool 16.0 MB" in facts["raw data on disk"]
    assert load(tmp_path / "w.folded").total > 5e6  # µs: two threads blocked ~3 s each
    assert not list(tmp_path.glob("flamegraph-spool-*"))


# Two threads switching out 10,000 times a second each: ~90 MB/s of sched_switch records with their stacks.
SLEEPERS_C = r"""
#include <pthread.h>
#include <unistd.h>
static void *worker(void *p) { (void)p; for (int i = 0; i < 20000; i++) usleep(100); return NULL; }
int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, worker, 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    return 0;
}
"""


@pytest.mark.perf
def test_offcpu_of_a_fast_writer_stays_under_max_spool_and_says_its_drops_once(tmp_path: Path) -> None:
    """newcomer10 b-21: 'raw data on disk at most 21.5 MB, --max-spool 16.0 MB' (now said as passed, not held).
    perf switched a poll and its own reaction late (9 MB chunks for 2.7 MB asked) and wrote its 16M rings'
    halves in one go: now it switches itself at the chunk size, its rings cut to the cap."""
    program = compile_c(tmp_path, "sleepers", SLEEPERS_C, "-pthread")
    spool_root = tmp_path / "tmp"
    spool_root.mkdir()
    watch = DiskWatch(spool_root)
    proc = subprocess.run(
        [*FLAMEGRAPH, "offcpu", "--max-spool", "16M", "--folded", str(tmp_path / "s.folded"),
         "-o", str(tmp_path / "s.svg"), "--", str(program)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "TMPDIR": str(spool_root)},
    )  # fmt: skip
    peak = watch.stop()
    assert proc.returncode == 0, proc.stderr
    assert watch.polls > 50 and 0 < peak <= 16_000_000, (peak, proc.stderr)
    said = float(re.findall(r"raw data on disk at most ([0-9.]+) MB", proc.stderr)[0])
    assert said <= 16.0, proc.stderr
    assert len(re.findall("dropped a chunk", proc.stderr)) <= 3, proc.stderr  # (then only counted)
    if os.geteuid() == 0:  # root: perf's 16M rings would pass the cap in one drain; cut, and said
        assert "note: perf's buffers cut from 16M to " in proc.stderr, proc.stderr
    assert load(tmp_path / "s.folded").total > 0


def test_a_dropped_chunk_that_ends_an_interval_still_ends_it(tmp_path: Path) -> None:
    from flamegraph.folding.perf import FoldOptions, PerfCollapser
    from flamegraph.record.stream import Interval, StreamedFold

    spool = Spool(tmp_path, cap=16_000_000, every=5.0)
    write_perf_data(tmp_path / "perf.data.0001", [(RECORD_SAMPLE, b"")] * 7, pad=20_000_000)  # past the cap alone
    seen: list[Interval] = []
    fold = StreamedFold(spool, lambda: PerfCollapser(FoldOptions(), Diagnostics()), [], on_interval=seen.append)
    fold.start()
    spool.ended()
    assert fold.finish().counts == {}
    assert [(i.number, i.profile.counts) for i in seen] == [(1, {})]  # the interval ended, with nothing folded
    assert spool.dropped == ChunkCounts(samples=7) and not list(tmp_path.iterdir())


# -- thread names across chunks -----------------------------------------------------------------

# Two threads named by themselves, started at once and spinning through every chunk; the first renames
# itself halfway (a COMM record in the chunk where it happens, none in the later ones).
NAMED_THREADS_C = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
static double seconds;
static volatile double sink;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
__attribute__((noinline)) static void spin(double until) {
    while (now() < until) for (int i = 0; i < 100000; i++) sink += i * 0.5;
}
static void *worker(void *name) {
    pthread_setname_np(pthread_self(), name);
    double start = now();
    spin(start + seconds / 2);
    if (((char *)name)[5] == 'a') pthread_setname_np(pthread_self(), "spin-a2");
    spin(start + seconds);
    return NULL;
}
int main(int argc, char **argv) {
    seconds = atof(argv[1]);
    pthread_t t[2];
    pthread_create(&t[0], 0, worker, "spin-a");
    pthread_create(&t[1], 0, worker, "spin-b");
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    return 0;
}
"""


def test_thread_names_carry_to_later_chunks_as_perf_named_them_before() -> None:
    from flamegraph.record.chunk_threads import ThreadNames

    names = ThreadNames()
    first = (b"prog  100/100   1.0: cpu-clock: \n\tf\n\n"
             b"spin-a  100/101   1.1: cpu-clock: \n\tf\n\nspin-b  100/102   1.2: cpu-clock: \n\tf\n\n")  # fmt: skip
    assert b"".join(names.blocks([first])) == first  # named by perf: learned, unchanged
    # The next chunk: perf has no COMM of 101/102; 103 it never named; 102's tid now in another process; a
    # thread named ':7' is taken as named so (its id is not 7). Blocks cut anywhere, a header across two.
    later = (b":101  100/101   2.0: cpu-clock: \n\tf\n\n:102  200/102   2.1: cpu-clock: \n\tf\n\n"
             b":103  100/103   2.2: cpu-clock: \n\tf\n\n:7  100/101   2.3: cpu-clock: \n\tf\n\n"
             b"     :101   101  2.4: sched:sched_switch: prev_comm=x\n")  # fmt: skip
    out = b"".join(names.blocks([later[:5], later[5:50], later[50:]]))
    assert out.splitlines()[::3] == [
        b"spin-a  100/101   2.0: cpu-clock: ", b":102  200/102   2.1: cpu-clock: ",
        b":103  100/103   2.2: cpu-clock: ", b":7  100/101   2.3: cpu-clock: ",
        b"     spin-a   101  2.4: sched:sched_switch: prev_comm=x",
    ]  # fmt: skip
    # A rename (prctl: a COMM record, then the new name) is the name carried on.
    names.blocks([b"spin-a2  100/101   3.0: cpu-clock: \n\tf\n\n"]).__next__()
    assert next(names.blocks([b":101  100/101   4.0: cpu-clock: \n"])) == b"spin-a2  100/101   4.0: cpu-clock: \n"


@pytest.fixture(scope="module")
def named_threads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_c(tmp_path_factory.mktemp("named"), "named", NAMED_THREADS_C, "-pthread")


def roots(profile: FoldedProfile) -> set[str]:
    return {stack.split(";")[0] for stack in profile.counts}


@pytest.mark.perf
def test_threads_started_in_an_earlier_chunk_keep_their_names(named_threads: Path, tmp_path: Path) -> None:
    """newcomer10 b-20: from the second chunk on, perf 6.1 printed the threads as `:TID` (no COMM record of
    them in that chunk): 85 % of the whole graph and every later interval rooted at a bare thread id."""

    def run(name: str, *options: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [*FLAMEGRAPH, "record", *options, "--folded", str(tmp_path / f"{name}.folded"),
             "-o", str(tmp_path / f"{name}.svg"), "--", str(named_threads), "4"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return proc

    streamed = run("s", "--every", "1")
    run("w", "--max-spool", "0")
    run("t", "--every", "1", "--threads")
    intervals = [load(path) for path in sorted(tmp_path.glob("s-0*.folded"))]
    assert len(intervals) >= 3, streamed.stderr  # the threads ran through several chunks
    expected = {"spin-a", "spin-a2", "spin-b"}
    assert roots(load(tmp_path / "w.folded")) == expected  # one perf.data: perf names them all
    assert roots(load(tmp_path / "s.folded")) == expected
    for interval in intervals:
        assert roots(interval) <= expected, roots(interval)
    assert "spin-a" not in roots(intervals[-1])  # renamed halfway: its later chunks carry the new name
    # --threads: one root per thread (it was two, `spin-b-PID/TID` and `:TID-PID/TID`), the renamed one two.
    by_tid: dict[str, set[str]] = {}
    for root in roots(load(tmp_path / "t.folded")):
        name, _, ids = root.rpartition("-")
        by_tid.setdefault(ids, set()).add(name)
    assert sorted(by_tid.values(), key=sorted) == [{"spin-a", "spin-a2"}, {"spin-b"}], by_tid
