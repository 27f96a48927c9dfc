"""Fuzz targets of the folders: `perf script` text (fold: line path, fast path, --jobs, --compat
against stackcollapse-perf.pl, profiles written as perf script) and sched_switch text (off-CPU)."""

from __future__ import annotations

import math
import re
import subprocess
from pathlib import Path

from flamegraph.analysis.report import FrameObserver, build_report, report_lines, report_metadata
from flamegraph.folding.offcpu import fold_offcpu
from flamegraph.folding.perf import FoldOptions, PerfCollapser
from flamegraph.folding.perf_blocks import fold_blocks
from flamegraph.folding.perf_sched import OffCpuOptions, SchedCollapser
from flamegraph.folding.sched_totals import OffCpuFolder
from flamegraph.folding.stage import fold_perf
from flamegraph.io.diagnostics import Diagnostics, FlamegraphError, StrictFailure
from flamegraph.io.folded import decode
from flamegraph.render import RenderOptions, render_svg
from flamegraph.window import Window

from ..helpers.shared import shared_dir
from .common import check_folded_round_trip, check_svg, folded_bytes, lines_of, scratch_file, small_chunks
from .source import Source

EVENTS = (None, "cpu-clock", "cycles", "sched:sched_switch", "page-faults")


# -- perf script text (flamegraph fold) -----------------------------------------------------------
def fold_options(source: Source) -> tuple[FoldOptions, bool, bool, int]:
    pid, tid, kernel, jit, addrs, compat, per_event, strict = source.flags(8)
    hooked, jobs, _, _, _, _, _, _ = source.flags(8)
    event = source.choice(EVENTS)
    options = FoldOptions(
        pid=pid,
        tid=tid,
        annotate_kernel=kernel,
        annotate_jit=jit,
        addrs=addrs,
        event_filter=event,
        per_event=per_event,
        compat=compat,
        frame_hook=FrameObserver(None) if hooked and not compat else None,
    )
    return options, strict, jobs, 1 + source.byte() % 64


def _fold_lines(options: FoldOptions, data: bytes, strict: bool) -> PerfCollapser | StrictFailure:
    collapser = PerfCollapser(options, Diagnostics(strict=strict, echo=False))
    try:
        collapser.feed(lines_of(data), "in")
    except StrictFailure as err:
        return err
    return collapser


def _fold_in_blocks(options: FoldOptions, data: bytes, strict: bool, block: int) -> PerfCollapser | StrictFailure:
    collapser = PerfCollapser(options, Diagnostics(strict=strict, echo=False))
    try:
        fold_blocks(collapser, [data[i : i + block] for i in range(0, len(data), block)], "in")
    except StrictFailure as err:
        return err
    return collapser


def _state(result: PerfCollapser | StrictFailure) -> object:
    if isinstance(result, StrictFailure):
        return str(result)
    d = result.diagnostics
    return (result.by_event, result.skipped_by_event, d.problems, d.counts, d.records)


def fold_text(data: bytes) -> None:
    """perf script text: the line state machine, the block fast path and --jobs 2 agree; output
    is deterministic and reads back as folded text."""
    source = Source(data)
    options, strict, jobs, block = fold_options(source)
    text = source.rest()
    by_lines = _fold_lines(options, text, strict)
    assert _state(_fold_lines(options._replace(), text, strict)) == _state(by_lines), "not deterministic"
    assert _state(_fold_in_blocks(options, text, strict, block)) == _state(by_lines), "fast path differs"
    if isinstance(by_lines, StrictFailure):
        return
    events = list(by_lines.by_event) if options.per_event else [None]
    for event in events:
        check_folded_round_trip(by_lines.profile(event))
    if isinstance(options.frame_hook, FrameObserver):  # the attribution report (fold --report) of what was folded
        figures, fixes = build_report(by_lines.profile(events[0] if events else None), options.frame_hook)
        assert all(isinstance(line, str) for line in report_lines(figures, fixes))
        assert all(isinstance(v, str) for v in report_metadata(figures, fixes).values())
    if jobs and not strict:
        path = scratch_file("fold.txt", text)
        single = _fold_file(path, options, 1)
        with small_chunks():
            multi = _fold_file(path, options, 2)
        assert multi == single, "--jobs 2 differs from --jobs 1"


def _fold_file(path: Path, options: FoldOptions, jobs: int) -> object:
    diagnostics = Diagnostics(echo=False)
    try:
        result = fold_perf([str(path)], options, diagnostics, jobs=jobs)
    except FlamegraphError as err:
        return ("error", type(err).__name__, str(err))
    per_event = {k: v.counts for k, v in result.per_event.items()}
    return result.profile.counts, per_event, result.skipped_events, diagnostics.problems, diagnostics.records


# Name bytes that every folder keeps as they are: printable, no frame separator, no parameter list,
# quotes, brackets or spaces (tidy rules and the "<addr> <sym> (<dso>)" layout apply to those).
NAME_BYTES = bytes(b for b in range(0x21, 0x7F) if b not in b";()[]'\"<>\\") + bytes(range(0x80, 0x100))


def perf_roundtrip(data: bytes) -> None:
    """A profile written as `perf script` text, in perf's layouts, folds back to itself through the
    production path (block fast path, --jobs 2), with no complaint."""
    source = Source(data)
    with_cpu, with_tid, blank_last, spaces, jobs, pid, _, _ = source.flags(8)
    expected: dict[bytes, int] = {}
    records = []
    for n in range(source.byte() % 12):
        comm = bytes(NAME_BYTES[b % 52] for b in source.text(8).encode("utf-8", "surrogateescape")) or b"c"
        frames = []
        for _ in range(source.byte() % 6):
            raw = source.text(12).encode("utf-8", "surrogateescape")
            name = bytes(NAME_BYTES[b % len(NAME_BYTES)] for b in raw) or b"f"
            frames.append(name.replace(b"->", b"-=").lstrip(b"L") or b"f")
        period = 1 + source.integer(3)
        ids = f"{100 + n}/{200 + n}" if with_tid else f"{100 + n}"
        cpu = " [003]" if with_cpu else ""
        pad = "   " if spaces else " "
        header = f"{pad}{ids}{cpu} {n}.{n:06d}: {period} cpu-clock:{pad}\n".encode()
        lines = [comm + header]
        lines += [b"\t    %x %s+0x%x (/usr/lib/lib%d.so)\n" % (0x400000 + d, f, d, d) for d, f in enumerate(frames)]
        records.append(b"".join(lines))
        # One number on the header is the thread's: its process is unknown (`comm-?`), as in the reference.
        root = comm + ((b"-%d" % (100 + n) if with_tid else b"-?") if pid else b"")
        key = b";".join([root, *frames[::-1]])
        expected[key] = expected.get(key, 0) + period
    text = b"\n".join(records) + (b"\n" if blank_last else b"")
    path = scratch_file("roundtrip.txt", text)
    options = FoldOptions(pid=bool(pid))
    diagnostics = Diagnostics(echo=False)
    with small_chunks():
        try:
            result = fold_perf([str(path)], options, diagnostics, jobs=2 if jobs else 1)
        except FlamegraphError:
            assert not expected, "records lost"
            return
    assert diagnostics.problems == [], diagnostics.problems
    assert result.profile.counts == {decode(k): v for k, v in expected.items()}


def fold_file(data: bytes) -> None:
    """`fold_perf` on a file of any bytes (text, gzip, ...): a result or one of our errors."""
    source = Source(data)
    options, strict, _, _ = fold_options(source)
    raw = source.rest()
    if raw[:8] in (b"PERFILE2", b"2ELIFREP"):
        raw = raw[1:]  # perf.data goes to `perf script`: not this target's business
    path = scratch_file("fold.bin", raw)
    try:
        result = fold_perf([str(path)], options, Diagnostics(strict=strict, echo=False))
    except FlamegraphError:
        return
    check_folded_round_trip(result.profile)


# -- --compat against stackcollapse-perf.pl itself -------------------------------------------------
def reference_script(name: str) -> Path:
    """A reference script from the shared corpus ($FLAMEGRAPH_SHARED, else ../shared)."""
    return shared_dir() / "peer-tests" / "flamegraph-pl" / "bin" / name


def compat_reference(data: bytes) -> None:
    """`fold --compat` prints what stackcollapse-perf.pl prints, byte for byte, on any text."""
    source = Source(data)
    pid, tid, kernel, jit, addrs, _, _, _ = source.flags(8)
    event = source.choice(EVENTS)
    text = source.rest()
    if text[:8] in (b"PERFILE2", b"2ELIFREP") or text[:2] == b"\x1f\x8b":
        text = b"#" + text  # perf.data and gzip are opened by us, never by the reference
    options = FoldOptions(
        pid=pid, tid=tid, annotate_kernel=kernel, annotate_jit=jit, addrs=addrs, event_filter=event, compat=True
    )
    path = scratch_file("compat.txt", text)
    try:
        ours = folded_bytes(fold_perf([str(path)], options, Diagnostics(echo=False)).profile)
    except FlamegraphError:
        ours = b""
    flags = [
        f"--{n}" for n, on in (("pid", pid), ("tid", tid), ("kernel", kernel), ("jit", jit), ("addrs", addrs)) if on
    ]
    flags += [f"--event-filter={event}"] if event else []
    try:
        perl = subprocess.run(["perl", str(reference_script("stackcollapse-perf.pl")), *flags, str(path)],
                              capture_output=True, timeout=30)  # fmt: skip
    except subprocess.TimeoutExpired:
        return  # the reference's own regexes can take forever: nothing to compare with
    assert perl.returncode == 0, perl.stderr[-500:]
    if any(len(count) > 15 or not count.isdigit() for count in re.findall(rb" (\S+)\n", perl.stdout)):
        return  # sums past 2**53, periods past 2**64 (never seen in a recording): Perl prints them as floats
    if re.search(rb";;|; \d+\n", perl.stdout):
        return  # KNOWN, not fixed: a name tidied to nothing (`"`) is an empty frame there, no frame here
    assert ours == perl.stdout, f"ours:\n{ours[:600]!r}\nreference:\n{perl.stdout[:600]!r}"


# -- sched_switch text (flamegraph fold --offcpu, flamegraph offcpu) ------------------------------
def offcpu_options(source: Source) -> OffCpuOptions:
    kernel, annotate, with_states, with_window, with_min, _, _, _ = source.flags(8)
    # Always 12 bytes of options, whatever is used, so the text starts at the same place.
    picked = frozenset(s for s, keep in zip("SDRI?", source.flags(5), strict=True) if keep)
    start, length, tenths = source.integer(4) * 1000, source.integer(4) * 1000, source.integer(2)
    states = picked if with_states else None
    window = Window(start / 1e9, (start + length) / 1e9) if with_window else None  # ns -> seconds
    min_us = tenths / 10 if with_min else 0.0
    return OffCpuOptions(keep_kernel=kernel, annotate_kernel=annotate, states=states, min_us=min_us, window=window)


def offcpu_text(data: bytes) -> None:
    """sched_switch text -> waits -> µs per stack: never negative, deterministic, renders."""
    source = Source(data)
    options = offcpu_options(source)
    text = source.rest()
    profiles = []
    for _ in range(2):
        collapser = SchedCollapser(options, Diagnostics(echo=False))
        folder = OffCpuFolder(options)
        for wait in collapser.iter_waits(lines_of(text), "in"):
            assert wait.ns >= 0, wait
            folder.add(wait)
        totals = folder.totals(collapser.window_ns, collapser.lost, [n for _, n in collapser.silent])
        profiles.append(folder.profile(totals))
    profile = profiles[0]
    assert profiles[1] == profile, "not deterministic"
    assert all(w > 0 and math.isfinite(w) for w in profile.counts.values()), profile.counts
    check_folded_round_trip(profile)
    if profile.counts:
        check_svg(render_svg(profile, RenderOptions()), profile.total)
    if text[:2] == b"\x1f\x8b" or text[:8] in (b"PERFILE2", b"2ELIFREP"):
        return  # a file starting so is opened as gzip or perf.data, not as this text
    path = scratch_file("offcpu.bin", text)
    try:
        from_file = fold_offcpu([str(path)], options, Diagnostics(echo=False))
    except FlamegraphError:
        assert not profile.counts
        return
    assert from_file == profile
