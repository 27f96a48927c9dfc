"""What `flamegraph convert` reads: folded stacks, `perf script` text (plain or gzip) or perf.data,
on-CPU or off-CPU, sniffed from the content (never trusted from the name).

    python;main;compute 42                               <- folded
    python 4242/4243 [001] 100.000001: cpu-clock:        <- perf script, on-CPU
    python 4243 [001] 100.2: sched:sched_switch: prev_comm=python prev_pid=4243 ...   <- off-CPU

Folded input gives a FoldedProfile only (no time); `perf script` input gives both a FoldedProfile
(through the same folders as `flamegraph fold`) and a Timeline (for the Chrome trace).
"""

from __future__ import annotations

import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, NamedTuple

from ..folding.grammar import RECORD_TIME, is_non_sample, read_header, starts_sample
from ..io.diagnostics import Diagnostics, InputMissing, NoSamples
from ..io.folded import decode, parse_count
from ..io.inputs import GZIP_MAGIC, STDIN, kind_of, label, open_stream

# perf itself, recordings and timelines are imported where they are used: `flamegraph convert
# perf.txt out.svg` sniffs and folds text, and its start-up is part of what it is timed by.
if TYPE_CHECKING:
    from ..folding.perf import FoldOptions
    from ..folding.perf_sched import OffCpuOptions
    from ..record import Recording
    from ..window import Window
    from .timeline import Timeline

# Off-CPU recordings: sched_switch, and the wakeup tracepoints `offcpu --wakers` records beside it.
OFFCPU_EVENTS = frozenset({"sched:sched_switch", "sched:sched_waking", "sched:sched_wakeup"})
SNIFF_LINES = 200
SNIFF_BYTES = 1 << 16


class Source(NamedTuple):
    """One input: its path and what it holds (a NamedTuple: see export.formats.ExportRequest)."""

    path: str
    kind: str  # "folded", "perf" (on-CPU perf script / perf.data) or "offcpu"
    perf_data: bool = False


def sniff(path: str, event: str | None = None) -> Source:
    """What `path` holds: perf.data by its magic bytes, text by its first record. Perf input is off-CPU
    when the event a fold keeps is sched_switch (or a wakeup tracepoint, recorded beside it only):
    `event` (-e/--event) if given, else the first sample's, as `fold` picks (folding.stage.first_event)."""
    if path != STDIN and kind_of(path) == "perf.data":
        from ..folding.first_event import first_event
        from ..folding.options import FoldOptions

        chosen = event if event is not None else first_event([path], FoldOptions())
        return Source(path, _kind_of_event(chosen), perf_data=True)
    perf_script = False
    lines = _head_lines(path)
    for line, following in zip(lines, [*lines[1:], b""], strict=False):
        text = line.strip()
        if not text or text.startswith(b"#"):
            continue
        if is_non_sample(text):
            perf_script = True  # perf's own records (COMM, FORK, SWITCH) come before the first sample
            continue
        if starts_sample(line, following):  # any layout fold reads (-F comm,tid,ip,sym: no time nor event)
            header = read_header(line)
            if event is None and header is not None and header.event is not None:
                event = decode(header.event)
            return Source(path, _kind_of_event(event))
        if line[:1] in (b"\t", b" "):
            perf_script = True  # a frame line
            continue
        _, sep, count = text.rpartition(b" ")
        if not perf_script and sep and parse_count(count) is not None:
            return Source(path, "folded")
    # Nothing recognisable: the reader that follows reports what it finds.
    return Source(path, "perf" if perf_script else "folded")


def _kind_of_event(event: str | None) -> str:
    return "offcpu" if event in OFFCPU_EVENTS else "perf"


def _head_lines(path: str) -> list[bytes]:
    """The first lines of a text input (gunzipped), read without consuming stdin."""
    if path == STDIN:
        if sys.stdin is None:
            return []  # stdin closed (`<&-`): the opener that follows says so
        peek = getattr(sys.stdin.buffer, "peek", None)
        data = peek(SNIFF_BYTES) if peek is not None else b""
    else:
        try:
            with open(path, "rb") as raw:
                data = raw.read(SNIFF_BYTES)
        except OSError:
            return []  # the reader that follows says what is wrong with it
    if data[:2] == GZIP_MAGIC:
        try:
            data = zlib.decompressobj(wbits=31).decompress(data, SNIFF_BYTES)
        except zlib.error:
            return []
    return data.splitlines()[:SNIFF_LINES]


@contextmanager
def open_script(source: Source) -> Iterator[IO[bytes]]:
    """The `perf script` text of an on-CPU source (perf.data scripted with record's fields)."""
    if source.perf_data:
        from ..io.perf import script_command, stream_script
        from ..record import ONCPU_FIELDS

        command = script_command(source.path, extra=["-F", ONCPU_FIELDS])
        with stream_script(command, source.path) as stream:
            yield stream
        return
    with open_text(source.path) as stream:
        yield stream


@contextmanager
def open_text(path: str) -> Iterator[IO[bytes]]:
    """A text input (plain, gzip or stdin); a corrupt gzip or a failed read is one clear error (exit 4)."""
    try:
        with open_stream(path) as stream:
            yield stream
    except EOFError as err:
        raise InputMissing(f"{label(path)}: truncated or corrupt gzip data: {err}") from None
    except OSError as err:
        gzip = sys.modules.get("gzip")  # imported by the opener for gzip input only: else no error is gzip's
        if gzip is not None and isinstance(err, gzip.BadGzipFile):
            raise InputMissing(f"{label(path)}: truncated or corrupt gzip data: {err}") from None
        raise InputMissing(f"{label(path)}: read failed: {err.strerror or err}") from None


def read_source_timeline(
    source: Source, options: FoldOptions, diagnostics: Diagnostics, interval_ns: int | None = None
) -> Timeline:
    """The samples (or waits) of a `perf script` source in time order."""
    from .timeline import read_offcpu_timeline, read_timeline

    if source.kind == "offcpu":
        from ..folding.offcpu import open_offcpu

        with open_offcpu(source.path) as stream:
            timeline = read_offcpu_timeline(stream, label(source.path), diagnostics=diagnostics)
    else:
        if not source.perf_data:
            _refuse_untimed(source.path)
        with open_script(source) as stream:
            timeline = read_timeline(stream, label(source.path), options, diagnostics, interval_ns)
    diagnostics.finish()
    if not timeline.spans:
        raise NoSamples(f"{label(source.path)}: no samples with a time found")
    return timeline


def _refuse_untimed(path: str) -> None:
    """Text whose sample headers lack the time or the event (-F comm,tid,ip,sym: fold reads it): one line
    saying so, rather than a report per record."""
    lines = _head_lines(path)
    for line, following in zip(lines, [*lines[1:], b""], strict=False):
        if line[:1] == b"#" or is_non_sample(line) or not starts_sample(line, following):
            continue
        header = read_header(line)
        if header is None:
            return
        there = {"time": header.time_ns is not None or RECORD_TIME.match(line.lstrip()) is not None,
                 "event": header.event is not None}  # fmt: skip
        lacking = [field for field, found in there.items() if not found]
        if lacking:
            raise NoSamples(
                f"{label(path)}: perf script printed no {' nor '.join(lacking)} field: a Chrome trace places each "
                f"sample by its time and event (plain `perf script` prints them; or add {','.join(lacking)} to -F)"
            )
        return


def recording_timeline(
    recording: Recording,
    options: FoldOptions,
    window: Window | None = None,
    offcpu: OffCpuOptions | None = None,
    pid: int = 0,
) -> Timeline:
    """The samples (or waits) of a fresh recording in time order: a second `perf script` pass with the
    options the fold used (fields, --time window, what hooks asked for), so both see the same samples."""
    from ..io.perf import script_command, stream_script
    from ..record import script_args
    from .formats import sampling_interval_ns
    from .timeline import read_offcpu_timeline, read_timeline

    path = str(recording.perf_data)
    quiet = Diagnostics(echo=False)  # the fold has reported the input's problems already
    if offcpu is not None:
        from ..folding.offcpu import open_offcpu

        with open_offcpu(path) as stream:
            timeline = read_offcpu_timeline(stream, path, offcpu, quiet, pid)
    else:
        command = script_command(path, extra=script_args(recording, window))
        with stream_script(command, path) as stream:
            timeline = read_timeline(stream, path, options, quiet, sampling_interval_ns(recording.metadata))
    timeline.metadata.update(recording.metadata)
    return timeline
