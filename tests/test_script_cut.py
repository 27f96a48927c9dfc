"""A chunk's `perf script` killed mid-record (perf's stdout is block-buffered: a SIGKILL cuts it anywhere): no
byte of the record cut short is folded or paired, in the fast path, the line path and the off-CPU stream,
and it is counted as not folded. A fake `perf` on PATH prints a record and a half, then kills itself: the
cut is the same at every run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flamegraph.folding.perf import FoldOptions, PerfCollapser
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.io.perf import ScriptKilled
from flamegraph.record.spool import EVENT_HEADER, HEADER, RECORD_SAMPLE, Chunk, ChunkCounts, Spool
from flamegraph.record.stream import StreamedFold, iter_chunk_lines

pytestmark = pytest.mark.parallel

# perf's text for one sample of `spin` (cpu-clock, a call chain from the leaf to _start).
RECORD = (
    b"spin  4242 100.%06d: cpu-clock: \n"
    b"\t            1139 spin_work+0x9 (/tmp/spin)\n"
    b"\t            1160 main+0x10 (/tmp/spin)\n"
    b"\t           27249 __libc_start_call_main+0x79 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
    b"\t            1071 _start+0x21 (/tmp/spin)\n"
    b"\n"
)
WHOLE_STACK = "spin;_start;__libc_start_call_main;main;spin_work"
# The record cut short: its header and leaf frame whole, perf killed after ...
CUTS = {
    "after a line": b"spin  4242 100.999999: cpu-clock: \n\t            1139 spin_work+0x9 (/tmp/spin)\n",
    "mid-line": b"spin  4242 100.999999: cpu-clock: \n\t            1139 spin_work+0x9 (/tmp/spin)\n\t    11",
}
# A fake perf: `script` of chunk 1 prints $CUT_TEXT and dies of SIGKILL, of any other chunk $WHOLE_TEXT.
FAKE_PERF = """#!/bin/sh
case "$1" in
evlist) echo "$FAKE_EVENT"; exit 0 ;;
script) case "$*" in
    *perf.data.0001*) cat "$CUT_TEXT"; kill -KILL $$ ;;
    *) cat "$WHOLE_TEXT"; exit 0 ;;
    esac ;;
esac
exit 2
"""


def write_chunk(path: Path, samples: int) -> None:
    """A perf.data holding `samples` sample records (all the spool's counting reads)."""
    body = EVENT_HEADER.pack(RECORD_SAMPLE, 0, EVENT_HEADER.size) * samples
    offset = HEADER.size + 104
    path.write_bytes(HEADER.pack(b"PERFILE2", offset, 0, offset, len(body)).ljust(offset, b"\0") + body)


def fake_perf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut: bytes, whole: bytes, event: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "perf").write_text(FAKE_PERF)
    (bin_dir / "perf").chmod(0o755)
    (tmp_path / "cut.txt").write_bytes(cut)
    (tmp_path / "whole.txt").write_bytes(whole)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CUT_TEXT", str(tmp_path / "cut.txt"))
    monkeypatch.setenv("WHOLE_TEXT", str(tmp_path / "whole.txt"))
    monkeypatch.setenv("FAKE_EVENT", event)


def spool_of(tmp_path: Path, samples: list[int]) -> Spool:
    directory = tmp_path / "spool"
    directory.mkdir()
    for number, count in enumerate(samples, 1):
        write_chunk(directory / f"perf.data.{number:04d}", count)
    spool = Spool(directory, cap=10**12)
    spool.ended()
    return spool


@pytest.mark.parametrize("cut", sorted(CUTS))
@pytest.mark.parametrize("path", ["fast", "line"])
def test_a_record_cut_short_is_not_folded_and_counted(
    cut: str, path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunk 1 holds 5 samples, perf script printed 3 and a half; chunk 2 is whole (4 samples)."""
    text = b"".join(RECORD % i for i in range(3))
    fake_perf(tmp_path, monkeypatch, text + CUTS[cut], b"".join(RECORD % i for i in range(10, 14)), "cpu-clock")
    spool = spool_of(tmp_path, [5, 4])
    options = FoldOptions(srcline=path == "line")  # --srcline folds line by line (stage.fold_input)
    diagnostics = Diagnostics(echo=False)
    notes: list[str] = []
    fold = StreamedFold(spool, lambda: PerfCollapser(options, diagnostics), [], note=notes.append)
    fold.start()
    whole = fold.finish()
    assert whole.counts == {WHOLE_STACK: 3 + 4}  # no stack of the leaf alone, nothing of the cut record
    assert (fold.unfolded, fold.unfolded_chunks, fold.unfolded_why) == (2, 1, ["perf script killed by SIGKILL"])
    assert notes == ["warning: chunk 1: perf script killed by SIGKILL: 2 of its 5 samples not folded"]
    assert diagnostics.records == 7 and diagnostics.skipped_records == 0


def test_a_chunk_killed_before_it_printed_a_whole_record_costs_all_its_samples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_perf(tmp_path, monkeypatch, CUTS["after a line"], RECORD % 1, "cpu-clock")
    spool = spool_of(tmp_path, [3, 1])
    notes: list[str] = []
    fold = StreamedFold(spool, lambda: PerfCollapser(FoldOptions(), Diagnostics(echo=False)), [], note=notes.append)
    fold.start()
    assert fold.finish().counts == {WHOLE_STACK: 1}
    assert notes == ["warning: chunk 1: perf script killed by SIGKILL: its 3 samples not folded"]


SWITCH = (
    b"    switcher  4243 100.%06d: sched:sched_switch: prev_comm=switcher prev_pid=4243 prev_prio=120 "
    b"prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n"
    b"\tffffffff82265ec8 __schedule ([kernel.kallsyms])\n"
    b"\t           e1a85 clock_nanosleep (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
    b"\t            1139 main+0x9 (/tmp/switcher)\n"
    b"\n"
    b"    switcher  4243 100.%06d: PERF_RECORD_SWITCH OUT\n"
    b"     swapper     0 100.%06d: PERF_RECORD_SWITCH IN\n"
    b"    switcher  4243 100.%06d: PERF_RECORD_SWITCH IN\n"
    b"    switcher  4243 100.%06d: PERF_RECORD_FORK(4244:4244):(4243:4243)\n"
)


def switches(first: int, count: int) -> bytes:
    return b"".join(SWITCH % ((first + i * 10,) * 5) for i in range(count))


def test_the_offcpu_stream_reads_whole_records_and_counts_the_samples_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Side-band records (4 a sample here) are not samples: the chunk's 6 samples less the 3 printed whole
    are not paired; the record cut short is not handed on (the next chunk's lines would close it), the
    whole side-band lines before it are."""
    cut = switches(0, 3) + (SWITCH % ((900,) * 5))[:200]
    fake_perf(tmp_path, monkeypatch, cut, switches(1000, 2), "sched:sched_switch")
    spool = spool_of(tmp_path, [6, 2])
    told: list[tuple[int, ChunkCounts, int, str]] = []

    def killed(chunk: Chunk, counts: ChunkCounts, printed: int, error: ScriptKilled) -> None:
        told.append((chunk.number, counts, printed, error.how))

    lines = list(iter_chunk_lines(spool, [], killed=killed))
    assert told == [(1, ChunkCounts(samples=6), 3, "killed by SIGKILL")]
    assert b"\n".join(lines) + b"\n" == switches(0, 3) + switches(1000, 2)  # the side-band lines after it too
    assert not list((tmp_path / "spool").iterdir())


def test_without_killed_the_stream_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_perf(tmp_path, monkeypatch, switches(0, 1), switches(10, 1), "sched:sched_switch")
    spool = spool_of(tmp_path, [1])
    with pytest.raises(ScriptKilled):
        list(iter_chunk_lines(spool, []))
